package rules

import (
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/record"
)

// MaxEvidence is how many evidence lines a Finding keeps.
const MaxEvidence = 5

// Collector turns rule hits into Findings: one per rule, with the ranks of
// every hit unioned, a count, and the first few distinct pieces of evidence.
type Collector struct {
	byRule map[string]*collected // by rule id, or id and Subject.Key
	seq    int
}

type collected struct {
	rule  *Rule
	key   string // the byRule key
	first int
	f     record.Finding
	ranks map[string]bool
	seen  map[seenKey]bool // evidence already kept, by path:line
	// maxLine is at least the line of every key in seen: a log's hits
	// come in line order, so most are past it and need no lookup.
	maxLine int
}

// see notes k in seen while it has room.
func (col *collected) see(k seenKey) {
	if len(col.seen) < maxSeen {
		col.seen[k] = true
		col.maxLine = max(col.maxLine, k.line)
	}
}

// seenKey is where a piece of evidence is: path, line and rank.
type seenKey struct {
	path string
	line int
	rank string
}

func NewCollector() *Collector { return &Collector{byRule: map[string]*collected{}} }

// Add records that r matched sub.
//
// The first subject of a finding also brings what its evidence says
// (Subject.Phase, Root, RaisedIn, Cause, Remedy; see Enrich).
func (c *Collector) Add(r *Rule, sub Subject) {
	key := r.ID
	if sub.Key != "" {
		key += "\x00" + sub.Key
	}
	col := c.byRule[key]
	if col == nil {
		c.seq++
		col = &collected{rule: r, key: key, first: c.seq, ranks: map[string]bool{}, seen: map[seenKey]bool{},
			f: record.Finding{
				Rule: r.ID, Title: r.Title, Severity: record.Severity(r.SeverityFor(&sub)), Phase: r.Phase,
				Cause: strings.TrimSpace(r.Cause), Remedy: r.Remedy, References: r.References,
				Confidence: r.Confidence, Ranks: []string{}, Evidence: []record.Evidence{},
			}}
		if col.f.References == nil {
			col.f.References = []string{}
		}
		cause, remedy := r.causeAndRemedyFor(&sub)
		col.f.Cause, col.f.Remedy = strings.TrimSpace(cause), remedy
		enrich(&col.f, sub, col.rule)
		c.byRule[key] = col
	}
	if col.f.Root == "" && sub.Root != "" {
		enrich(&col.f, sub, col.rule) // the error behind a finding a text line opened
	}
	if sev := record.Severity(r.SeverityFor(&sub)); sev.Weight() > col.f.Severity.Weight() {
		col.f.Severity = sev // a fatal wording (or a real error) after a non-fatal one
	}
	ev := sub.Evidence
	if ev.Rank != "" {
		col.ranks[ev.Rank] = true
	}
	// The same line reached twice (as a log record and as the root of a
	// traceback) is one occurrence. Past maxSeen distinct lines every hit
	// counts, so memory stays bounded on a log that repeats an error forever.
	if ev.Path != "" || ev.Line != 0 {
		key := seenKey{ev.Path, ev.Line, ev.Rank}
		if key.line <= col.maxLine && col.seen[key] {
			return
		}
		col.see(key)
	}
	col.f.Count++
	if len(col.f.Evidence) < MaxEvidence && (ev.Path != "" || ev.Text != "") {
		col.f.Evidence = append(col.f.Evidence, ev)
	}
}

const maxSeen = 4096

// Enrich gives the findings of rule id what sub's evidence says, where
// they do not say it yet: the concrete error (Root, RaisedIn), the phase
// (refined, see RefinePhase), a printed cause and remedies. diagnose calls
// it when a text rule matched inside the traceback of an error.
func (c *Collector) Enrich(id string, sub Subject) {
	for _, col := range c.byRule {
		if col.rule.ID == id {
			enrich(&col.f, sub, col.rule)
		}
	}
}

// WeakPhase starts the PhaseWhy of a phase read from an error's words
// only: it refines the phase of a catch-all rule, or a rule's generic one
// (runtime: the rule's error may come up in any phase), not a rule's own.
const WeakPhase = "the error's words"

func enrich(f *record.Finding, sub Subject, r *Rule) {
	if f.Root == "" && sub.Root != "" {
		f.Root, f.RaisedIn = sub.Root, sub.RaisedIn
	}
	parts, known := refines[f.Phase]
	weak := strings.HasPrefix(sub.PhaseWhy, WeakPhase) && !r.CatchAll && !(known && parts == nil)
	if sub.Phase != "" && sub.Phase != "unknown" && f.PhaseWhy == "" && !weak {
		if p := RefinePhase(f.Phase, sub.Phase); p != f.Phase || f.Phase == sub.Phase {
			f.Phase, f.PhaseWhy = p, sub.PhaseWhy
		}
	}
	if sub.Cause != "" && !strings.Contains(f.Cause, sub.Cause) {
		f.Cause = strings.TrimSpace(sub.Cause + "\n\n" + f.Cause)
	}
	if len(sub.Remedy) > 0 {
		var rs []string
		for _, r := range sub.Remedy {
			if !contains(f.Remedy, r) {
				rs = append(rs, r)
			}
		}
		switch {
		case len(rs) == 0:
		case r.CatchAll: // what was printed is more to the point than a general remedy
			f.Remedy = append(rs, f.Remedy...)
		default: // the rule's own remedy first, then what was printed
			f.Remedy = append(append([]string{}, f.Remedy...), rs...)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Findings returns the findings, most important first: severity, then
// phase in startup order (an early failure explains later ones), then the
// order they were first seen.
func (c *Collector) Findings() []record.Finding {
	cols := make([]*collected, 0, len(c.byRule))
	for _, col := range c.byRule {
		if !c.gaveWay(col) {
			cols = append(cols, col)
		}
	}
	sort.Slice(cols, func(i, j int) bool {
		a, b := cols[i], cols[j]
		if wa, wb := a.f.Severity.Weight(), b.f.Severity.Weight(); wa != wb {
			return wa > wb
		}
		if pa, pb := phaseOrder(a.f.Phase), phaseOrder(b.f.Phase); pa != pb {
			return pa < pb
		}
		return a.first < b.first
	})
	out := make([]record.Finding, len(cols))
	for i, col := range cols {
		f := col.f
		f.Ranks = sortedRanks(col.ranks)
		out[i] = f
	}
	return out
}

// gaveWay: every line col's rule matched, a rule it gives way to (Unless)
// matched too, as another subject (a log record holds the error's first
// line, the error's own subject all of it), or matched the same words
// elsewhere in the file (the error printed by another rank, which the
// errors group under one): that rule explains them.
func (c *Collector) gaveWay(col *collected) bool {
	if len(col.rule.Unless) == 0 || len(col.f.Evidence) == 0 || col.f.Count > len(col.f.Evidence) {
		return false
	}
	for _, o := range c.byRule {
		if o == col || !contains(col.rule.Unless, o.rule.ID) {
			continue
		}
		all := true
		for _, e := range col.f.Evidence {
			if !o.seen[seenKey{e.Path, e.Line, e.Rank}] && !sameWords(o.f.Evidence, e) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// sameWords: evs holds e's text in e's file.
func sameWords(evs []record.Evidence, e record.Evidence) bool {
	for _, o := range evs {
		if o.Path == e.Path && e.Text != "" && strings.TrimSpace(o.Text) == strings.TrimSpace(e.Text) {
			return true
		}
	}
	return false
}

// sortedRanks orders rank names naturally ("TP2" before "TP10").
func sortedRanks(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return naturalLess(out[i], out[j]) })
	return out
}

func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		if da && db {
			na, ra := leadingNumber(a)
			nb, rb := leadingNumber(b)
			if na != nb {
				return na < nb
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func leadingNumber(s string) (int, string) {
	n, i := 0, 0
	for i < len(s) && isDigit(s[i]) {
		n = n*10 + int(s[i]-'0')
		i++
	}
	return n, s[i:]
}

// Merge adds everything o collected after what c holds, as if o's hits had
// been added to c in order: per-input collectors run concurrently and are
// merged in input order so the result does not depend on scheduling.
func (c *Collector) Merge(o *Collector) {
	cols := make([]*collected, 0, len(o.byRule))
	for _, col := range o.byRule {
		cols = append(cols, col)
	}
	sort.Slice(cols, func(i, j int) bool { return cols[i].first < cols[j].first })
	for _, oc := range cols {
		col := c.byRule[oc.key]
		if col == nil {
			c.seq++
			cp := *oc
			cp.first = c.seq
			cp.ranks = map[string]bool{}
			cp.seen, cp.maxLine = map[seenKey]bool{}, 0
			cp.f.Evidence = append([]record.Evidence{}, oc.f.Evidence...)
			cp.f.Count = 0
			col = &cp
			c.byRule[oc.key] = col
		} else {
			more := Subject{Root: oc.f.Root, RaisedIn: oc.f.RaisedIn}
			if oc.f.PhaseWhy != "" {
				more.Phase, more.PhaseWhy = oc.f.Phase, oc.f.PhaseWhy
			}
			enrich(&col.f, more, col.rule)
			if oc.f.Severity.Weight() > col.f.Severity.Weight() {
				col.f.Severity = oc.f.Severity // a fatal wording in a later input
			}
			for _, ev := range oc.f.Evidence {
				if len(col.f.Evidence) < MaxEvidence {
					col.f.Evidence = append(col.f.Evidence, ev)
				}
			}
		}
		col.f.Count += oc.f.Count
		for r := range oc.ranks {
			col.ranks[r] = true
		}
		for k := range oc.seen {
			col.see(k)
		}
	}
}

// Rule returns the rule behind a finding collected here, or nil.
func (c *Collector) Rule(id string) *Rule {
	if col := c.byRule[id]; col != nil {
		return col.rule
	}
	for _, col := range c.byRule {
		if col.rule.ID == id {
			return col.rule
		}
	}
	return nil
}
