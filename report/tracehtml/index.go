package tracehtml

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/analyze/compiles"
)

type indexPage struct {
	Page pageMeta
	// Scope names the input a per-rank page is about ("" on the summary
	// of every input).
	Scope        string
	Verdict      verdictView
	Findings     []findingView
	Stats        []statView
	Timeline     *timelineView
	TimelineNote string
	Trie         []*trieNode
	TrieNote     string
	Tree         []rankTree
	UnitRows     []unitRow
	Failures     []failureRow
	FailuresMore int
	Restarts     int
	FailuresHref string
	Breaks       []breakRow
	Recompiles   []recompileRow
	// RecompilesMore and CacheMore count rows left out by Options.MaxRows.
	RecompilesMore int
	Shapes         []shapeCount
	ShapesHref     string
	Exports        []exportView
	Provenance     []provRow
	ProvHref       string
	Cache          []cacheRow
	CacheMore      int
	RankCount      int
	RankRows       []compiles.RankSummary
	Divergence     []divergenceView
	DivergenceNone string
	Sources        []sourceRow
}

type findingView struct {
	Severity, Class string
	Title, Rule     string
	Phase           string
	Cause           string
	Remedy          []string
	Ranks           string
	Count           int
	Evidence        []evidenceView
	References      []string
}

// evidenceView is one piece of evidence: where (file:line, the file's base
// name shown, its path as the title) and what.
type evidenceView struct {
	Where, Path, Text string
}

type verdictView struct {
	Class    string // "", "warn", "err"
	Headline string
	// Error is the failure the headline is about, whole: the exception
	// chain innermost first, the phase that raised, the user code.
	Error  *failureRow
	Points []string
}

type statView struct{ Label, Value, Class string }

type rankTree struct {
	Name, Summary, Href string
	Frames              []frameNode
}

type frameNode struct {
	Frame  string
	Where  codeRef
	Note   string
	Search string
	Units  []unitRow
}

type unitRow struct {
	ID, Href            string
	Status, StatusClass string
	Code                codeRef
	Meta                string
	Search              string
	Attempts            []unitRow
}

// codeRef is a user frame as a table shows it: "fn (file.py:12)", the whole
// path as the title.
type codeRef struct{ Short, Full string }

func userCode(s string) codeRef {
	if s == "" {
		return codeRef{Short: "-"}
	}
	return codeRef{Short: shortFrame(s), Full: s}
}

// shortFrame cuts the directories of the file in "fn (/a/b/file.py:12)" or
// "/a/b/file.py:12".
func shortFrame(s string) string {
	if i := strings.LastIndex(s, " ("); i >= 0 && strings.HasSuffix(s, ")") {
		return s[:i] + " (" + shortPath(s[i+2:len(s)-1]) + ")"
	}
	return shortPath(s)
}

func shortPath(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 && i < len(p)-1 {
		return p[i+1:]
	}
	return p
}

type failureRow struct {
	Rank, ID, Href string
	Type           string
	Chain          []string // innermost first
	Phase          string
	Reason         string
	Code           codeRef
}

type unitLink struct{ ID, Href string }

type breakRow struct {
	Count  int
	Reason string
	Code   codeRef
	Ranks  string
	Units  []unitLink
	More   int
}

type recompileRow struct {
	Rank, ID, Href, Reason string
	Code                   codeRef
	// Earlier are the guard failures against older cache entries that
	// PyTorch lists after the first (the one against the newest entry).
	Earlier []string
}

type cacheRow struct {
	Rank, ID, Href, Cache, Outcome, Class, Detail string
}

type divergenceView struct {
	Class, Title, Detail string
	Groups               []divGroupView
}

type divGroupView struct{ Ranks, Value string }

type sourceRow struct {
	Path, Name, Rank, Run, Problems string
	Lines, Events                   int
}

type shapeCount struct {
	Kind, What string
	N          int
}

type exportView struct {
	Input    string
	Programs []unitLink
	Issues   []exportRow
}

type exportRow struct {
	Type, What, Reason, Where string
	Code                      codeRef
}

type provRow struct {
	Input, ID, Href string
	Kernels, Traces int
}

func ranksWord(rs []int) string {
	var b []string
	for _, r := range rs {
		b = append(b, rankWord(r))
	}
	return strings.Join(b, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// scope restricts a page to some inputs (nil: all).
type scope map[string]bool

func (sc scope) has(path string) bool { return sc == nil || sc[path] }

// indexView is the summary page: of every input (sc nil, root "") or of
// one input (a per-rank landing page, root the way back to the report).
func (s *site) indexView(sc scope, root, title string) indexPage {
	res := s.res
	p := indexPage{Page: pageMeta{Title: s.opts.Title, Footer: s.opts.Footer, Root: root, Switch: s.switcher(root, title)}}
	var inputs []compiles.Input
	for _, in := range res.Inputs {
		if sc.has(in.Path) {
			inputs = append(inputs, in)
		}
	}
	var sub []string
	for _, in := range inputs {
		sub = append(sub, filepath.Base(in.Path))
	}
	if len(sub) > 4 {
		sub = append(sub[:3], fmt.Sprintf("and %d more", len(sub)-3))
	}
	p.Page.Subtitle = strings.Join(sub, ", ")
	if sc != nil {
		p.Scope = title
		p.Page.Title = s.opts.Title + " — " + title
		p.Page.Back = true
	}
	p.RankCount = len(inputs)

	k := s.indexCounts(sc, inputs)
	s.indexVerdict(&p.Verdict, root, inputs, k)
	s.indexFindings(&p, sc)
	p.Stats = indexStats(inputs, k)
	s.indexTimeline(&p, sc, root, inputs)
	p.Trie, p.TrieNote = s.stackTrie(sc, root)
	p.Tree, p.UnitRows = s.unitTree(sc, root)
	s.indexCompileRows(&p, sc, root, k)
	s.indexArtifactRows(&p, sc, root, k)
	s.indexRanks(&p, sc, inputs, k)
	s.indexSources(&p, sc, inputs)
	return p
}

// indexCounts is what the verdict, the stat cards and the tables of an
// index page count: the facts of the result in scope.
type indexCounts struct {
	failed, restarted, running, noMetrics []*compiles.Compile
	total                                 float64
	nCompiles                             int
	openPhases                            []*compiles.Span
	gbs                                   []*compiles.GraphBreak
	breaks                                int
	recs                                  []*compiles.Recompile
	hit, miss, bypass                     int
	limitHit                              int
	divs                                  []compiles.Divergence
	exports                               []compiles.ExportReport
	issues                                int
}

func (s *site) indexCounts(sc scope, inputs []compiles.Input) *indexCounts {
	res := s.res
	var failed, restarted, running, noMetrics []*compiles.Compile
	var total float64
	nCompiles := 0
	for i := range res.Compiles {
		c := &res.Compiles[i]
		if !sc.has(c.Path) {
			continue
		}
		nCompiles++
		total += c.Seconds.Total
		switch c.Status {
		case compiles.StatusFailed:
			failed = append(failed, c)
		case compiles.StatusRestarted:
			restarted = append(restarted, c)
		case compiles.StatusRunning:
			running = append(running, c)
		case compiles.StatusNoMetrics:
			noMetrics = append(noMetrics, c)
		}
	}
	var openPhases []*compiles.Span
	for i := range res.OpenSpans {
		if sc.has(res.OpenSpans[i].Path) {
			openPhases = append(openPhases, &res.OpenSpans[i])
		}
	}
	var gbs []*compiles.GraphBreak
	breaks := 0
	for i := range res.GraphBreaks {
		g := &res.GraphBreaks[i]
		if sc == nil || s.breakIn(g, sc) {
			gbs = append(gbs, g)
			breaks += g.Count
		}
	}
	var recs []*compiles.Recompile
	for i := range res.Recompiles {
		if sc.has(res.Recompiles[i].Evidence.Path) {
			recs = append(recs, &res.Recompiles[i])
		}
	}
	var hit, miss, bypass int
	for _, ce := range res.Cache {
		if !sc.has(ce.Path) {
			continue
		}
		switch ce.Outcome {
		case compiles.OutcomeHit:
			hit++
		case compiles.OutcomeMiss:
			miss++
		case compiles.OutcomeBypass:
			bypass++
		}
	}
	limitHit := 0
	for _, f := range res.Frames {
		if f.LimitHit && sc.has(f.Path) {
			limitHit++
		}
	}
	var divs []compiles.Divergence
	for _, d := range res.Divergence {
		if sc == nil || divergenceIn(d, inputs) {
			divs = append(divs, d)
		}
	}
	var exports []compiles.ExportReport
	issues := 0
	for _, e := range res.Exports {
		if sc.has(e.Path) {
			exports = append(exports, e)
			issues += len(e.Issues)
		}
	}
	return &indexCounts{failed: failed, restarted: restarted, running: running, noMetrics: noMetrics, total: total, nCompiles: nCompiles,
		openPhases: openPhases, gbs: gbs, breaks: breaks, recs: recs, hit: hit, miss: miss, bypass: bypass, limitHit: limitHit,
		divs: divs, exports: exports, issues: issues}
}

// indexVerdict writes the page's headline and its points.
func (s *site) indexVerdict(v *verdictView, root string, inputs []compiles.Input, k *indexCounts) {
	res := s.res
	ranks := plural(len(inputs), "input", "inputs")
	switch {
	case len(k.failed) > 0:
		c := k.failed[0]
		v.Class = "err"
		fr := s.failureRow(root, c)
		v.Error = &fr
		v.Headline = fmt.Sprintf("%s of %d failed — first: %s on %s", plural(len(k.failed), "compile", "compiles"), k.nCompiles,
			compiles.Label(c.ID, c.Occurrence), s.label(c.Path))
	case len(k.running) > 0 || len(k.openPhases) > 0:
		v.Class = "err"
		v.Headline = fmt.Sprintf("The log ends inside a compile: %s still open", plural(len(k.openPhases), "phase", "phases"))
	case k.issues > 0:
		v.Class = "warn"
		v.Headline = fmt.Sprintf("Draft export: %s found during export; it could not soundly produce a graph", plural(k.issues, "issue", "issues"))
	case len(k.divs) > 0:
		v.Class = "warn"
		v.Headline = fmt.Sprintf("Ranks disagree: %s — a classic precursor of a distributed hang", k.divs[0].Summary)
	case k.limitHit > 0:
		v.Class = "warn"
		v.Headline = fmt.Sprintf("%s hit the recompile limit and now run eagerly", plural(k.limitHit, "frame", "frames"))
	case k.breaks > 0 || len(k.recs) > 0:
		v.Class = "warn"
		v.Headline = fmt.Sprintf("%d compiles finished, with %s and %s", k.nCompiles, plural(k.breaks, "graph break", "graph breaks"), plural(len(k.recs), "recompile", "recompiles"))
	case k.nCompiles == 0 && len(k.exports) > 0:
		v.Headline = fmt.Sprintf("Export finished without issues: %s", plural(len(k.exports[0].Programs), "exported program", "exported programs"))
	case k.nCompiles == 0 && len(res.Provenance) > 0:
		v.Headline = fmt.Sprintf("No torch.compile units: an AOTInductor build with provenance for %s", plural(len(res.Provenance), "graph", "graphs"))
	case k.nCompiles == 0:
		v.Class = "warn"
		v.Headline = fmt.Sprintf("No compile units in %s", ranks)
	default:
		v.Headline = fmt.Sprintf("All %d compiles on %s finished without failure, graph break or recompile", k.nCompiles, ranks)
	}
	for _, op := range k.openPhases {
		if op.Innermost && len(v.Points) < 6 {
			pt := fmt.Sprintf("%s stopped inside %s %s (line %d)", s.label(op.Path), op.Name, compiles.Label(op.CompileID, op.Occurrence), op.Line)
			if op.DurUs > 0 {
				pt += ", open for " + fmtDur(op.DurUs/1e6)
			}
			v.Points = append(v.Points, pt)
		}
	}
	// The same failure repeated (several runs in one log, every rank) is
	// one bullet with its count; the first is the headline's.
	var failPoints []string
	failCount := map[string]int{}
	for _, c := range k.failed[min(1, len(k.failed)):] {
		pt := fmt.Sprintf("%s on %s failed: %s", compiles.Label(c.ID, c.Occurrence), s.label(c.Path), firstLine(compiles.FailHeadline(c), 300))
		if failCount[pt] == 0 {
			failPoints = append(failPoints, pt)
		}
		failCount[pt]++
	}
	for _, pt := range failPoints {
		if len(v.Points) >= 8 {
			break
		}
		if n := failCount[pt]; n > 1 {
			pt += fmt.Sprintf(" (%d times)", n)
		}
		v.Points = append(v.Points, pt)
	}
	for _, d := range k.divs {
		if len(v.Points) >= 10 {
			break
		}
		if v.Class != "warn" || d.Summary != k.divs[0].Summary {
			v.Points = append(v.Points, "divergence: "+runPrefix(d.Run)+d.Summary)
		}
	}
	if k.limitHit > 0 && len(k.failed) > 0 {
		v.Points = append(v.Points, fmt.Sprintf("%s hit the recompile limit (later calls run eagerly)", plural(k.limitHit, "frame", "frames")))
	}
}

// indexFindings lists the rule findings in scope; they raise the
// verdict's class when it says less.
func (s *site) indexFindings(p *indexPage, sc scope) {
	res, v := s.res, &p.Verdict
	errs, shownFindings := 0, 0
	for _, f := range res.Findings {
		fv := findingView{Severity: string(f.Severity), Class: "s-" + string(f.Severity), Title: f.Title, Rule: f.Rule, Phase: f.Phase,
			Cause: f.Cause, Remedy: f.Remedy, Ranks: strings.Join(f.Ranks, ", "), Count: f.Count, References: f.References}
		in := sc == nil
		for _, e := range f.Evidence {
			in = in || sc.has(e.Path)
			where := shortPath(e.Path)
			if e.Line > 0 {
				where += fmt.Sprintf(":%d", e.Line)
			}
			if e.Rank != "" {
				where += " (" + e.Rank + ")"
			}
			fv.Evidence = append(fv.Evidence, evidenceView{Where: where, Path: e.Path, Text: firstLine(e.Text, 600)})
		}
		if !in {
			continue
		}
		if f.Severity == "error" {
			fv.Class = "s-error"
			errs++
		}
		shownFindings++
		p.Findings = append(p.Findings, fv)
	}
	if warns := shownFindings - errs; errs == 0 && warns > 0 && v.Class == "" {
		v.Class = "warn"
		v.Points = append(v.Points, fmt.Sprintf("%s below: %s", plural(warns, "finding", "findings"), p.Findings[0].Title))
	}
	if errs > 0 && v.Class != "err" {
		v.Class = "err"
		v.Points = append([]string{fmt.Sprintf("%s: %s", plural(errs, "error-level finding", "error-level findings"), p.Findings[0].Title)}, v.Points...)
	}
}

// indexStats are the stat cards.
func indexStats(inputs []compiles.Input, k *indexCounts) []statView {
	cls := func(bad bool, c string) string {
		if bad {
			return c
		}
		return "ok"
	}
	stats := []statView{
		{"inputs", fmt.Sprint(len(inputs)), ""},
		{"compile units", fmt.Sprint(k.nCompiles), ""},
		{"failed", fmt.Sprint(len(k.failed)), cls(len(k.failed) > 0, "err")},
		{"graph breaks", fmt.Sprint(k.breaks), cls(k.breaks > 0, "warn")},
		{"recompiles", fmt.Sprint(len(k.recs)), cls(len(k.recs) > 0, "warn")},
		{"open phases", fmt.Sprint(len(k.openPhases)), cls(len(k.openPhases) > 0, "err")},
		{"cache hit / miss / bypass", fmt.Sprintf("%d / %d / %d", k.hit, k.miss, k.bypass), ""},
		{"compile time (sum)", fmtDur(k.total), ""},
	}
	if len(k.noMetrics) > 0 {
		stats = append(stats, statView{"without metrics", fmt.Sprint(len(k.noMetrics)), "warn"})
	}
	if k.issues > 0 {
		stats = append(stats, statView{"export issues", fmt.Sprint(k.issues), "warn"})
	}
	return stats
}

// indexTimeline lays out the phases, one lane per input.
func (s *site) indexTimeline(p *indexPage, sc scope, root string, inputs []compiles.Input) {
	res := s.res
	lanes := make([]tlLane, 0, len(inputs))
	laneOf := map[string]int{}
	for _, in := range inputs {
		laneOf[in.Path] = len(lanes)
		lanes = append(lanes, tlLane{Name: s.label(in.Path)})
	}
	addPhase := func(ph *compiles.Span, open bool, u int) {
		if !sc.has(ph.Path) {
			return
		}
		j, ok := laneOf[ph.Path]
		if !ok {
			j = len(lanes)
			laneOf[ph.Path] = j
			lanes = append(lanes, tlLane{Name: s.label(ph.Path)})
		}
		href := ""
		if u >= 0 {
			href = root + s.units[u].File
		}
		lanes[j].Phases = append(lanes[j].Phases, tlPhase{P: ph, Open: open, Href: href})
	}
	nph := 0
	for i := range res.Spans {
		addPhase(&res.Spans[i], false, s.phaseUnit[i])
	}
	for i := range res.OpenSpans {
		addPhase(&res.OpenSpans[i], true, s.openUnit[i])
	}
	for _, l := range lanes {
		nph += len(l.Phases)
	}
	p.Timeline = layoutTimeline(lanes)
	p.TimelineNote = fmt.Sprintf("%d phases from chromium events; hover a bar for its name and times, click it for its compile unit", nph)
	if res.SpansDropped > 0 {
		p.TimelineNote += fmt.Sprintf("; %d more were over the analysis cap", res.SpansDropped)
	}
}

// indexCompileRows are the tables of failures, graph breaks and
// recompiles.
func (s *site) indexCompileRows(p *indexPage, sc scope, root string, k *indexCounts) {
	for i, c := range k.failed {
		if i >= s.opts.MaxRows {
			p.FailuresMore = len(k.failed) - i
			break
		}
		p.Failures = append(p.Failures, s.failureRow(root, c))
	}
	for _, c := range k.restarted {
		p.Restarts += len(c.RestartReasons)
	}
	if len(k.failed)+p.Restarts > 0 {
		p.FailuresHref = root + "failures.html"
	}

	for _, g := range k.gbs {
		r := breakRow{Count: g.Count, Reason: g.Reason, Code: userCode(breakCode(g)), Ranks: ranksWord(g.Ranks)}
		if g.GBID != "" {
			r.Reason = g.GBID + ": " + r.Reason
			if g.GBType != "" && g.GBType != g.Reason {
				r.Reason = g.GBID + " " + g.GBType + ": " + g.Reason
			}
		}
		for _, ref := range g.CompileIDs {
			if len(r.Units) >= 12 {
				r.More++
				continue
			}
			r.Units = append(r.Units, unitLink{ID: compiles.RefLabel(ref), Href: s.breakUnitHref(root, g, ref, sc)})
		}
		p.Breaks = append(p.Breaks, r)
	}
	sort.SliceStable(p.Breaks, func(i, j int) bool { return p.Breaks[i].Count > p.Breaks[j].Count })

	for i, rc := range k.recs {
		if i >= s.opts.MaxRows {
			p.RecompilesMore = len(k.recs) - i
			break
		}
		href := s.refHref(root, rc.Evidence.Path, rc.CompileID, rc.Occurrence)
		if href == "" {
			href = s.unitHrefByRank(root, rc.Rank, rc.CompileID)
		}
		row := recompileRow{Rank: s.label(rc.Evidence.Path), ID: compiles.Label(rc.CompileID, rc.Occurrence), Href: href, Code: userCode(rc.Frame)}
		if len(rc.Reasons) > 0 {
			row.Reason, row.Earlier = rc.Reasons[0], rc.Reasons[1:]
		}
		p.Recompiles = append(p.Recompiles, row)
	}
}

// indexArtifactRows are the tables of shapes, exports, provenance and
// cache outcomes.
func (s *site) indexArtifactRows(p *indexPage, sc scope, root string, k *indexCounts) {
	res := s.res
	p.Shapes = s.shapeCounts(sc)
	if len(p.Shapes) > 0 {
		p.ShapesHref = root + "shapes.html"
	}
	for _, e := range k.exports {
		ev := exportView{Input: s.label(e.Path)}
		for _, ai := range e.Programs {
			if u := s.artifactUnit[ai]; u >= 0 {
				ev.Programs = append(ev.Programs, unitLink{ID: fmt.Sprintf("%s:%d", shortPath(e.Path), s.res.Artifacts[ai].Line),
					Href: root + s.artifactHref(u, ai)})
			}
		}
		for _, is := range e.Issues {
			ev.Issues = append(ev.Issues, exportRow{Type: is.Type, What: exportWhat(is), Reason: is.Reason,
				Where: fmt.Sprintf("%s:%d", shortPath(e.Path), is.Line), Code: userCode(is.UserCode)})
		}
		p.Exports = append(p.Exports, ev)
	}
	for _, pv := range res.Provenance {
		if !sc.has(pv.Path) {
			continue
		}
		p.Provenance = append(p.Provenance, provRow{Input: s.label(pv.Path), ID: compiles.Label(pv.CompileID, pv.Occurrence),
			Href: root + "provenance.html#" + provAnchor(pv), Kernels: len(pv.Kernels), Traces: pv.StackTraces})
	}
	if len(p.Provenance) > 0 {
		p.ProvHref = root + "provenance.html"
	}

	for _, ce := range res.Cache {
		if !sc.has(ce.Path) {
			continue
		}
		if len(p.Cache) >= s.opts.MaxRows {
			p.CacheMore++
			continue
		}
		detail := ce.Reason
		if ce.Key != "" {
			detail = strings.TrimSpace(ce.Key + "  " + detail)
		}
		if ce.TimeSavedMs > 0 {
			detail += fmt.Sprintf("  (saved %s)", fmtDur(ce.TimeSavedMs/1e3))
		}
		if d := ce.Differs; d != nil && len(d.Components) > 0 {
			detail += fmt.Sprintf("  — differs from %s on %s in: %s", compiles.Label(d.CompileID, d.Occurrence), s.label(d.Path), strings.Join(d.Components, ", "))
		}
		p.Cache = append(p.Cache, cacheRow{Rank: s.label(ce.Path), ID: compiles.Label(ce.CompileID, ce.Occurrence),
			Href:  s.refHref(root, ce.Path, ce.CompileID, ce.Occurrence),
			Cache: ce.Kind, Outcome: ce.Outcome, Class: "c-" + ce.Outcome, Detail: detail})
	}
}

// indexRanks are the rank table and the divergences across ranks.
func (s *site) indexRanks(p *indexPage, sc scope, inputs []compiles.Input, k *indexCounts) {
	res := s.res
	if len(res.Ranks) > 1 {
		for _, rs := range res.Ranks {
			for _, path := range rs.Paths {
				if sc.has(path) {
					p.RankRows = append(p.RankRows, rs)
					break
				}
			}
		}
	}
	for _, d := range k.divs {
		dv := divergenceView{Title: runPrefix(d.Run) + d.Summary, Detail: d.Kind}
		for _, g := range d.Groups {
			rs := strings.Join(g.Labels, ", ")
			if rs == "" {
				rs = ranksWord(g.Ranks)
			}
			dv.Groups = append(dv.Groups, divGroupView{Ranks: rs, Value: firstLine(g.Value, 400)})
		}
		p.Divergence = append(p.Divergence, dv)
	}
	switch {
	case len(inputs) < 2 && sc == nil:
		p.DivergenceNone = "One input only: nothing to compare across ranks."
	case sc != nil:
		p.DivergenceNone = "This input agrees with the other ranks of its run on everything compared."
	case s.runs > 1:
		p.DivergenceNone = fmt.Sprintf("The ranks of each of the %d runs agree on compile ids, cache hit/miss patterns, collective schedules and execution order (runs are not compared with each other).", s.runs)
	default:
		p.DivergenceNone = fmt.Sprintf("The %d inputs agree on compile ids, cache hit/miss patterns, collective schedules and execution order.", len(inputs))
	}
}

// indexSources is the table of inputs and what was wrong with them.
func (s *site) indexSources(p *indexPage, sc scope, inputs []compiles.Input) {
	res := s.res
	for _, in := range inputs {
		row := sourceRow{Path: in.Path, Name: shortPath(in.Path), Rank: rankWord(in.Rank) + " (from " + in.RankFrom + ")", Run: in.Run}
		if st := res.Counts[in.Path]; st != nil {
			row.Lines, row.Events = st.Lines, st.Records
			var probs []string
			add := func(n int, what string, lines []int) {
				if n > 0 {
					s := fmt.Sprintf("%d %s", n, what)
					if len(lines) > 0 {
						s += fmt.Sprintf(" (first at line %d)", lines[0])
					}
					probs = append(probs, s)
				}
			}
			add(st.Corrupted, "bad envelopes", st.CorruptedLines.Lines())
			add(st.NonGlog, "non-trace lines", st.NonGlogLines.Lines())
			add(st.PayloadMD5Mismatch, "payload MD5 mismatches", st.MD5MismatchLines.Lines())
			add(st.OrphanPayloadLines, "orphan payload lines", nil)
			if len(st.Unknown) > 0 {
				probs = append(probs, fmt.Sprintf("%d unknown event kinds", len(st.Unknown)))
			}
			if st.ReadError != "" {
				probs = append(probs, "read error: "+st.ReadError)
			}
			if st.Records == 0 && st.NotTrace != "" {
				probs = append(probs, st.NotTrace)
			}
			row.Problems = strings.Join(probs, "; ")
		}
		if row.Problems == "" {
			row.Problems = "none"
		}
		p.Sources = append(p.Sources, row)
	}
	if sc == nil {
		for _, ig := range res.Ignored {
			p.Sources = append(p.Sources, sourceRow{Path: ig.Path, Name: shortPath(ig.Path), Rank: "-", Problems: "not read: " + ig.Reason})
		}
	}
}

func runPrefix(run string) string {
	if run == "" {
		return ""
	}
	return run + ": "
}

// divergenceIn says whether one of the inputs is in a divergence's groups.
func divergenceIn(d compiles.Divergence, inputs []compiles.Input) bool {
	for _, in := range inputs {
		if d.Run != in.Run {
			continue
		}
		for _, g := range d.Groups {
			for _, l := range g.Labels {
				if l == in.Label {
					return true
				}
			}
		}
		if d.Kind == compiles.DivMissingRank {
			return true
		}
	}
	return false
}

// breakIn says whether a distinct graph break occurred in a unit of the
// scope's inputs.
func (s *site) breakIn(g *compiles.GraphBreak, sc scope) bool {
	if sc.has(g.Evidence.Path) {
		return true
	}
	for _, ref := range g.CompileIDs {
		id, _ := compiles.ParseRef(ref)
		for path := range sc {
			if len(s.byKey[key(path, id)]) > 0 {
				for _, r := range g.Ranks {
					if r == s.rankOf[path] {
						return true
					}
				}
			}
		}
	}
	return false
}

// breakUnitHref links one unit of a graph break: on its own input when the
// break names it, else on the first of its ranks that has that unit.
func (s *site) breakUnitHref(root string, g *compiles.GraphBreak, ref string, sc scope) string {
	id, occ := compiles.ParseRef(ref)
	if h := s.refHref(root, g.Evidence.Path, id, occ); h != "" && sc.has(g.Evidence.Path) {
		return h
	}
	for _, rk := range g.Ranks {
		for _, i := range s.byRank[rankRef{rk, id, occ}] {
			if u := &s.units[i]; sc.has(u.Path) {
				return root + u.File
			}
		}
	}
	return ""
}

func breakCode(g *compiles.GraphBreak) string {
	switch {
	case g.UserCode != "":
		return g.UserCode
	case g.UserFrame != "":
		return g.UserFrame
	}
	return g.Function
}

func exportWhat(is compiles.ExportIssue) string {
	switch {
	case is.Op != "":
		return "torch.ops." + is.Op
	case is.Result != "":
		return is.Expr + " → " + is.Result
	}
	return is.Expr
}

// failureRow is a failed compile as tables and headlines show it.
func (s *site) failureRow(root string, c *compiles.Compile) failureRow {
	chain := c.FailChain
	if len(chain) == 0 {
		chain = []string{orDash(c.FailType)}
	}
	return failureRow{Rank: s.label(c.Path), ID: compiles.Label(c.ID, c.Occurrence),
		Href: s.refHref(root, c.Path, c.ID, c.Occurrence), Type: orDash(c.FailType), Chain: chain,
		Phase: c.FailPhase, Reason: strings.TrimSpace(c.FailReason), Code: userCode(c.UserCode)}
}

// unitTree groups compile units by input, then by Dynamo frame.
func (s *site) unitTree(sc scope, root string) ([]rankTree, []unitRow) {
	var trees []rankTree
	var all []unitRow
	treeOf := map[string]int{}
	frameOf := map[string]int{}
	frameInfo := map[string]compiles.FrameSummary{}
	for _, f := range s.res.Frames {
		frameInfo[key(f.Path, fmt.Sprint(f.FrameID))] = f
	}
	newTree := func(u *unit) int {
		ti := len(trees)
		treeOf[u.Path] = ti
		t := rankTree{Name: u.Label}
		if sc == nil && len(s.rankPages) > 0 {
			t.Href = root + s.rankPages[u.Path]
		}
		trees = append(trees, t)
		return ti
	}
	for i := range s.units {
		u := &s.units[i]
		c := u.C
		if c == nil || !sc.has(u.Path) {
			continue
		}
		ti, ok := treeOf[u.Path]
		if !ok {
			ti = newTree(u)
		}
		fr := "-"
		if c.FrameID != nil {
			fr = fmt.Sprint(*c.FrameID)
		}
		if c.AutogradID != nil {
			fr = fmt.Sprintf("compiled autograd %d / %s", *c.AutogradID, fr)
		}
		fk := key(u.Path, fr)
		fi, ok := frameOf[fk]
		if !ok {
			fi = len(trees[ti].Frames)
			frameOf[fk] = fi
			fn := frameNode{Frame: fr}
			if c.Frame.Func != "" {
				fn.Where = userCode(c.Frame.String())
			}
			if info, ok := frameInfo[fk]; ok && info.LimitHit {
				fn.Note = fmt.Sprintf("recompile limit (%d) hit: later calls run eagerly", info.Limit)
			}
			fn.Search = strings.ToLower(u.Label + " " + fr + " " + fn.Where.Full + " " + fn.Note)
			trees[ti].Frames = append(trees[ti].Frames, fn)
		}
		meta := []string{}
		if c.Occurrence > 0 {
			meta = append(meta, fmt.Sprintf("occurrence %d of this id (the log holds several runs)", c.Occurrence+1))
		}
		if c.Seconds.Total > 0 {
			meta = append(meta, fmtDur(c.Seconds.Total))
		}
		if c.Attempts > 1 {
			meta = append(meta, fmt.Sprintf("%d attempts", c.Attempts))
		}
		if c.GraphBreaks > 0 {
			meta = append(meta, plural(c.GraphBreaks, "graph break", "graph breaks"))
		}
		if len(c.FailChain) > 0 {
			meta = append(meta, firstLine(c.FailChain[0], 160))
		} else if c.FailType != "" {
			meta = append(meta, c.FailType)
		}
		if len(c.RecompileReasons) > 0 {
			meta = append(meta, "recompile: "+firstLine(c.RecompileReasons[0], 120))
		}
		row := unitRow{ID: compiles.Label(c.ID, c.Occurrence), Href: root + u.File, Status: statusWord(c.Status), StatusClass: statusClass(c.Status),
			Code: userCode(c.UserCode), Meta: strings.Join(meta, " · ")}
		row.Search = strings.ToLower(strings.Join([]string{u.Label, row.ID, row.Status, c.UserCode, row.Meta}, " "))
		trees[ti].Frames[fi].Units = append(trees[ti].Frames[fi].Units, row)
		trees[ti].Frames[fi].Search += " " + row.Search
		all = append(all, row)
	}
	for i := range trees {
		n, bad := 0, 0
		for _, f := range trees[i].Frames {
			for _, u := range f.Units {
				n++
				if u.StatusClass == "s-error" || u.StatusClass == "s-running" {
					bad++
				}
			}
		}
		trees[i].Summary = fmt.Sprintf("%s, %s", plural(len(trees[i].Frames), "frame", "frames"), plural(n, "unit", "units"))
		if bad > 0 {
			trees[i].Summary += fmt.Sprintf(", %d not finished or failed", bad)
		}
	}
	// Pages for events outside any compile are linked from the tree too.
	for i := range s.units {
		u := &s.units[i]
		if u.C != nil || !sc.has(u.Path) {
			continue
		}
		ti, ok := treeOf[u.Path]
		if !ok {
			ti = newTree(u)
			trees[ti].Summary = "no compile units"
		}
		row := unitRow{ID: "no compile id", Href: root + u.File, Status: "outside", StatusClass: "s-empty",
			Meta: plural(len(u.Artifacts), "event", "events") + " outside any compile"}
		row.Search = strings.ToLower(u.Label + " outside " + row.Meta)
		trees[ti].Frames = append(trees[ti].Frames, frameNode{Frame: "-", Note: "events without a compile id", Search: row.Search, Units: []unitRow{row}})
	}
	return trees, all
}
