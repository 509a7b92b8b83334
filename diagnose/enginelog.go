package diagnose

import (
	"io"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/bringup-tool/bringup/analyze/pytrace"
	"github.com/bringup-tool/bringup/analyze/timeline"
	"github.com/bringup-tool/bringup/analyze/versions"
	"github.com/bringup-tool/bringup/diagnose/fatal"
	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/ingest/stackdump"
	"github.com/bringup-tool/bringup/litscan"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
)

// KindEngineLog is the built-in input kind: engine / launcher / PyTorch logs.
const KindEngineLog = "enginelog"

// KindStacks is the kind of a stack dump input (py-spy dump, bringup
// stacks --json, watch's *.stacks.json).
const KindStacks = stackdump.FormatName

// maxEvidenceText bounds one evidence line so a 50 MB line stays out of the report.
const maxEvidenceText = 400

// logResult is what one engine log yielded; results are merged in input order.
type logResult struct {
	input      Input
	hits       *rules.Collector
	tracebacks []pytrace.Traceback
	phases     []record.Phase
	gaps       []timeline.Gap
	versions   map[string]string
	gpuUtil    string // gpu_memory_utilization as printed, "" when not seen
	// fatals are the fatal lines (diagnose/fatal), once per kind, rank
	// and text, in order of first appearance.
	fatals []fatalLine
	// ruleLines are where error-level text rules matched, up to
	// maxRuleLines per rule: an error traceback near one is the error
	// the rule explains.
	ruleLines map[*rules.Rule][]ruleLine
	// advice are the lines that print a workaround (printedNear), in
	// line order, up to maxAdviceLines distinct.
	advice []adviceLine
	// ended are the launcher's lines that say a rank's process ended
	// (shardsEnded), up to maxAdviceLines.
	ended []endedLine
	// pidRanks: the indices that an error of a process names beside its
	// pid (Ray's "(RayWorkerWrapper pid=1061) [rank2]:[E212 …] Gloo
	// connectFullMesh failed"), for that process's errors that name only
	// the pid; a pid seen with two identities maps to NoRank. Built by the
	// floor from the log's tracebacks and fatal lines (notePIDRanks), not
	// while streaming.
	pidRanks map[int]record.Rank
}

// notePIDRanks builds res.pidRanks from the ranks of its tracebacks and
// fatal lines.
func (res *logResult) notePIDRanks() {
	res.pidRanks = map[int]record.Rank{}
	note := func(r record.Rank) {
		if r.PID <= 0 || r.Key() == "" {
			return
		}
		r.Role = ""
		if old, ok := res.pidRanks[r.PID]; !ok && len(res.pidRanks) < maxRanks {
			res.pidRanks[r.PID] = r
		} else if ok && old != r {
			res.pidRanks[r.PID] = record.NoRank
		}
	}
	for i := range res.tracebacks {
		note(res.tracebacks[i].Rank)
	}
	for i := range res.fatals {
		note(res.fatals[i].rank)
	}
}

// pidRankOf is rk with the indices another error of its process named,
// when it names a pid and no index itself.
func (res *logResult) pidRankOf(rk record.Rank) record.Rank {
	if rk.PID <= 0 || rk.Key() != "" {
		return rk
	}
	if r, ok := res.pidRanks[rk.PID]; ok && r != record.NoRank {
		r.Role, r.PID = rk.Role, rk.PID
		return r
	}
	return rk
}

// fatalLine is one distinct fatal line of a log.
type fatalLine struct {
	hit   fatal.Hit
	rank  record.Rank
	line  int
	end   int // the last line of the record that continues it (fatalTail)
	count int
}

// fatalTail is how many lines of its record after a fatal line still
// belong to it: a rule that matched there matched inside the error.
const fatalTail = 3

// ruleLine is where a text rule matched.
type ruleLine struct {
	line int
	rank string
}

const (
	maxFatalLines = 1024
	maxRuleLines  = 64
)

var gpuUtilRe = regexp.MustCompile(`gpu_memory_utilization[=:]?\s*\(?\s*([0-9]*\.?[0-9]+)`)

// Literal groups: which analyzers a record's text concerns. The parser
// scans every line once for all their literals in its parallel stage
// (enginelog.Options.Scan); the analyzers test bits instead of scanning
// the text again, and a record no analyzer reads needs no Text string.
const (
	gRules     uint64 = 1 << iota // a rule's prefilter literal
	gVersions                     // versions.GateLiterals
	gTraceback                    // pytrace.GateLiterals
	gTimeline                     // timeline.Markers
	gGPU                          // gpuUtilWord
	gFatal                        // fatal.Literals
	gAdvice                       // adviceLiterals
	gEnded                        // endedLiterals
	gAll       = gRules | gVersions | gTraceback | gTimeline | gGPU | gFatal | gAdvice | gEnded
)

// leadTraceback marks a line whose body starts an exception printed
// without a traceback (pytrace.LeadsException) for the traceback reader,
// and one that starts with a short fatal word (fatal.Leads).
func leadTraceback(body []byte) uint64 {
	var m uint64
	if pytrace.LeadsException(body) {
		m |= gTraceback
	}
	if fatal.Leads(body) {
		m |= gFatal
	}
	return m
}

// leadsTraceback: record i of b is logged at a level the extractor reads
// in the line before a traceback: at error level, the message logging's
// exception() printed before it (Traceback.Before); as a warning or
// info, one that may say the program went on (its exc_info traceback is
// the warning's, pytrace's wentOn).
func leadsTraceback(b *enginelog.Batch, i int) bool {
	rec, _, _ := b.At(i)
	switch rec.Level {
	case record.LevelError, record.LevelCritical, record.LevelWarning, record.LevelInfo:
		return true
	}
	return false
}

// gpuUtilWord gates gpuUtilRe.
const gpuUtilWord = "gpu_memory_utilization"

// gate is the per-line literal scan for one rules.Set: scan finds the
// literals of every group not in always; the groups in always (a literal
// that cannot be found line by line, or rules that must see every text)
// are set on every record.
type gate struct {
	scan   *litscan.Grouped
	always uint64
	rules  []string // the rules' literals it was built from
	lits   []string // every literal of the scan (for tests)
}

// gates caches a gate per rules.Set: a directory of thousands of small
// logs would otherwise compile one per file.
var gates sync.Map // *rules.Set -> *gate

func gateFor(set *rules.Set) *gate {
	rl, rulesAlways := set.TextLiterals()
	if g, ok := gates.Load(set); ok {
		if g := g.(*gate); sameSlice(g.rules, rl) {
			return g
		}
	}
	g := &gate{rules: rl}
	var lits []string
	var masks []uint64
	add := func(bit uint64, ls []string) {
		for _, l := range ls {
			// A literal that could span lines or be only blanks
			// (trimmed off a record's end) cannot be found line by line.
			if strings.ContainsRune(l, '\n') || strings.TrimSpace(l) == "" {
				g.always |= bit
				return
			}
		}
		for _, l := range ls {
			lits = append(lits, l)
			masks = append(masks, bit)
		}
	}
	if rulesAlways {
		g.always |= gRules
	} else {
		add(gRules, rl)
	}
	add(gVersions, versions.GateLiterals())
	add(gTraceback, pytrace.GateLiterals())
	add(gTimeline, timeline.Markers())
	add(gGPU, []string{gpuUtilWord})
	add(gFatal, fatal.Literals())
	add(gAdvice, adviceLiterals)
	add(gEnded, endedLiterals())
	g.scan = litscan.NewGrouped(lits, masks)
	g.lits = lits
	if g.scan == nil {
		g.always = gAll
	}
	gates.Store(set, g)
	return g
}

func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// analyzeLog streams one engine log through the parser, the traceback
// extractor, the timeline and version detectors and the text rules. Only
// rule hits, tracebacks and phases are kept: memory does not grow with the
// size of the log.
//
// The parser's peelers batch records; three consumers read every batch
// in order, one matching rules and detecting versions, one extracting
// tracebacks (after it, with the texts it copied), one building the
// timeline, so a multi-core machine runs them side by side. The parser's
// literal masks say which records each analyzer must read: an ordinary
// line costs the consumers a few compares.
func analyzeLog(path string, r io.Reader, rd reading) logResult {
	set := rd.set
	// forceAll (a check): every record concerns every analyzer, as if no
	// gate existed, and every analyzer gets a Text of its own (none
	// borrows the batch's memory); the results must be the same.
	forceAll := rd.forceAll
	res := logResult{input: Input{Path: path, Kind: KindEngineLog}, hits: rules.NewCollector()}
	g := gateFor(set)
	always := g.always
	scan := g.scan
	if forceAll {
		always, scan = gAll, nil
	}
	// Batches are built by the parser's peelers and handed on in input
	// order; each consumer releases what it read.
	toMatch := make(chan *enginelog.Batch, 4)
	toFacts := make(chan *enginelog.Batch, 4)
	// The match goroutine hands each batch on to the traceback goroutine
	// with the texts it copied, so a record both read is copied once.
	toTrace := make(chan copied, 4)

	var wg sync.WaitGroup
	wg.Add(3)
	x := pytrace.NewExtractor()
	tl := timeline.New()
	var vd versions.Detector
	go func() { // rules and versions
		defer wg.Done()
		defer close(toTrace)
		m := matcher{set: set, res: &res, fields: map[string]string{}, ranks: map[record.Rank]string{}}
		res.ruleLines = map[*rules.Rule][]ruleLine{}
		fatals := map[fatalKey]int{}
		advSeen := map[adviceKey]bool{}
		if !forceAll { // the reference path matches every text afresh
			m.memo = map[string]map[string]*memoEntry{}
			m.fatalMemo = map[string][]fatal.Hit{}
			m.loggedMemo = map[string][]fatal.Hit{}
		}
		for b := range toMatch {
			c := copied{b: b}
			for i := 0; i < b.Len(); i++ {
				mask := b.Mask(i) | always
				if mask&(gRules|gVersions|gGPU|gFatal|gAdvice|gEnded) == 0 {
					continue // the common case: nothing here reads this record
				}
				rec, _, text := b.At(i)
				// A copy with a Text of its own: the timeline's goroutine
				// reads the batch too, and what the analyzers keep of the
				// text must outlive the batch.
				r := *rec
				// A text the rules memo holds is not copied again: a
				// crash loop repeats the same records, and the memo's
				// copy serves them all.
				e := m.memoed(rec.Rank.Role, text, mask)
				if e != nil {
					r.Text = e.text
				} else {
					r.Text = string(text)
				}
				if c.texts == nil {
					c.texts = make([]string, b.Len())
				}
				c.texts[i] = r.Text
				m.match(&r, mask, e)
				if mask&gFatal != 0 {
					m.fatal(&r, fatals)
				}
				if mask&gAdvice != 0 {
					res.advice = noteAdvice(res.advice, &r, m.rankString(r.Rank), advSeen)
				}
				if mask&gEnded != 0 {
					res.ended = noteEnded(res.ended, &r)
				}
				if mask&gVersions != 0 {
					vd.Feed(&r)
				}
			}
			toTrace <- c
		}
	}()
	go func() { // tracebacks
		defer wg.Done()
		// One record for all: the Extractor keeps no pointer to what it is
		// fed, and a record of each would be allocated (Feed's recursion
		// hides that from escape analysis).
		var r record.Record
		// The log's first record is read whatever its words: an excerpt
		// may start inside a frame cut before its "File \"" (pytrace).
		firstRec := true
		for c := range toTrace {
			b := c.b
			if x.Full() {
				// A crash loop past pytrace.MaxTracebacks: what Finish
				// returns is settled, reading more would change nothing.
				b.Release()
				continue
			}
			for i, n := 0, b.Len(); i < n; i++ {
				mask := b.Mask(i) | always
				if firstRec {
					mask |= gTraceback
					firstRec = false
				}
				before := false
				if mask&gTraceback == 0 {
					// (The next record's mask first: most records are
					// not followed by a traceback. The batch's last one
					// is read when its level may lead one: the next
					// record is in the next batch. Also while another
					// rank's traceback is open.)
					before = (i+1 == n || b.Mask(i+1)&gTraceback != 0) && leadsTraceback(b, i)
					if !before && x.Idle(path) {
						continue // the common case, told without reading the record
					}
				}
				rec, _, text := b.At(i)
				if mask&gTraceback == 0 && !before && x.Skip(rec) {
					continue
				}
				r = *rec
				if c.texts != nil && (c.texts[i] != "" || len(text) == 0) {
					r.Text = c.texts[i]
				} else {
					r.Text = string(text)
				}
				x.Feed(&r)
			}
			b.Release()
		}
	}()
	go func() { // timeline
		defer wg.Done()
		for b := range toFacts {
			for i := 0; i < b.Len(); i++ {
				rec, mask, t := b.At(i)
				switch {
				case (mask|always)&gTimeline == 0:
					tl.Feed(rec, false)
				case forceAll:
					tl.FeedText(rec, string(t)) // the reference path borrows nothing
				case len(t) > 0:
					// The Builder keeps nothing of the text: it may
					// point into the batch, which outlives the call.
					tl.FeedText(rec, unsafe.String(&t[0], len(t)))
				default:
					tl.FeedText(rec, "")
				}
			}
			b.Release()
		}
	}()

	st, err := enginelog.ParseBatches(r, path, enginelog.Options{Scan: scan, Lead: leadTraceback, Critical: gFatal, PoisonReleased: rd.poison}, func(b *enginelog.Batch) {
		b.Hold()
		toMatch <- b
		b.Hold()
		toFacts <- b
	})
	close(toMatch)
	close(toFacts)
	wg.Wait()

	res.input.Bytes, res.input.Records, res.input.Skipped = st.Bytes, st.Records, st.Skipped
	res.input.SkipSamples = append(res.input.SkipSamples, st.SkipSamples...)
	if err != nil {
		res.input.Error = err.Error()
	}
	res.tracebacks = x.Finish()
	res.phases, res.gaps = tl.Finish()
	res.versions = vd.Versions()
	return res
}

// matcher matches log records against the text rules.
type matcher struct {
	set    *rules.Set
	res    *logResult
	fields map[string]string // reused: Match does not keep it
	// memo: the rules a text matched and where, by role and text (nil:
	// none kept). What a text rule matches depends on these two alone,
	// and a crash loop repeats the same error lines again and again.
	memo  map[string]map[string]*memoEntry
	nmemo int
	// fatalMemo: the fatal lines of a text, by text (nil: none kept);
	// loggedMemo the same for texts logged at error level.
	fatalMemo, loggedMemo map[string][]fatal.Hit
	// ranks: Rank.String by rank, up to maxRanks (a log names few).
	ranks map[record.Rank]string
	// lastRank's string is lastString (when lastSet).
	lastRank   record.Rank
	lastString string
	lastSet    bool
}

// copied is a batch and the texts the match goroutine copied of it, by
// record ("" where none was; nil when none at all).
type copied struct {
	b     *enginelog.Batch
	texts []string
}

const maxRanks = 256

// rankString is r.String(), kept for the ranks a log repeats.
func (m *matcher) rankString(r record.Rank) string {
	if m.lastSet && r == m.lastRank {
		return m.lastString // the rank of the record before, most often
	}
	s, ok := m.ranks[r]
	if !ok {
		s = r.String()
		if len(m.ranks) < maxRanks {
			m.ranks[r] = s
		}
	}
	m.lastRank, m.lastString, m.lastSet = r, s, true
	return s
}

type fatalKey struct {
	kind fatal.Kind
	rank string
	text string
}

// fatal notes the fatal lines of rec, once per kind, rank and text. A
// record logged as a warning, info or debug line holds none: warnings
// stay warnings ("NCCL error … falling back", a retried download).
func (m *matcher) fatal(rec *record.Record, seen map[fatalKey]int) {
	switch rec.Level {
	case record.LevelWarning, record.LevelInfo, record.LevelDebug:
		return
	}
	// A line logged at error level may say in words that a component
	// failed (fatal.ErrorLine); the memo keeps such texts apart.
	logged := rec.Level == record.LevelError || rec.Level == record.LevelCritical
	fm := m.fatalMemo
	if logged {
		fm = m.loggedMemo
	}
	memo := fm != nil && len(rec.Text) <= maxMemoText
	var hits []fatal.Hit
	var ok bool
	if memo {
		hits, ok = fm[rec.Text]
	}
	if !ok {
		if logged {
			hits = fatal.ScanLogged(rec.Text)
		} else {
			hits = fatal.Scan(rec.Text)
		}
		for i := range hits {
			hits[i].Text = clipAround(hits[i].Text, hits[i].Match)
		}
		if memo && len(fm) < maxMemoTexts {
			fm[rec.Text] = hits
		}
	}
	if len(hits) == 0 && rec.Level == record.LevelCritical {
		hits = fatal.Critical(rec.Text)
		for i := range hits {
			hits[i].Text = clip(hits[i].Text)
		}
	}
	if len(hits) == 0 {
		return
	}
	rank := m.rankString(rec.Rank)
	for _, h := range hits {
		k := fatalKey{h.Kind, rank, h.Text}
		if i, ok := seen[k]; ok {
			m.res.fatals[i].count++
			continue
		}
		if len(m.res.fatals) >= maxFatalLines {
			continue
		}
		seen[k] = len(m.res.fatals)
		line := rec.Line + h.Line
		// The lines that continue it in the same record, a few at most
		// (NCCL's "Last error:" and the reason under its error).
		end := min(rec.Line+strings.Count(rec.Text, "\n"), line+fatalTail)
		m.res.fatals = append(m.res.fatals, fatalLine{hit: h, rank: rec.Rank, line: line, end: end, count: 1})
	}
}

// ruleAt is a rule that matched a text, and where (see locate).
type ruleAt struct {
	rule *rules.Rule
	off  int
}

// The memo keeps up to maxMemoTexts texts of up to maxMemoText bytes.
const (
	maxMemoText  = 2048
	maxMemoTexts = 4096
)

// memoEntry is what the rules memo holds of a text: the text (a copy
// that outlives the batch) and the rules it matched.
type memoEntry struct {
	text string
	hits []ruleAt
}

// memoed returns the memo's entry for a record of role whose text is
// text and whose literal groups are mask, nil when there is none (or no
// memo, or the text is not one hitsOf would keep).
func (m *matcher) memoed(role string, text []byte, mask uint64) *memoEntry {
	if m.memo == nil || mask&gRules == 0 || len(text) > maxMemoText || len(text) == 0 {
		return nil
	}
	return m.memo[role][unsafe.String(&text[0], len(text))]
}

// hitsOf returns the text rules rec matches, each with where it matched,
// leaving out rules that matched only source code a traceback quotes; e
// is the memo's entry for rec's text when memoed found one.
func (m *matcher) hitsOf(rec *record.Record, e *memoEntry) []ruleAt {
	if e != nil {
		return e.hits
	}
	memo := m.memo != nil && len(rec.Text) <= maxMemoText
	if memo {
		if e, ok := m.memo[rec.Rank.Role][rec.Text]; ok {
			return e.hits
		}
	}
	m.fields["role"] = rec.Rank.Role
	var hs []ruleAt
	for _, rule := range m.set.Match(rules.Subject{Text: rec.Text, Fields: m.fields}, nil) {
		if off := locate(rule, rec.Text); off != -2 { // -2: only quoted source code of a traceback matched
			hs = append(hs, ruleAt{rule, off})
		}
	}
	if memo && m.nmemo < maxMemoTexts {
		byText := m.memo[rec.Rank.Role]
		if byText == nil {
			byText = map[string]*memoEntry{}
			m.memo[rec.Rank.Role] = byText
		}
		byText[rec.Text] = &memoEntry{rec.Text, hs}
		m.nmemo++
	}
	return hs
}

// match matches rec, whose literal groups are mask.
func (m *matcher) match(rec *record.Record, mask uint64, e *memoEntry) {
	if mask&gGPU != 0 && m.res.gpuUtil == "" {
		if g := gpuUtilRe.FindStringSubmatch(rec.Text); g != nil {
			m.res.gpuUtil = g[1]
		}
	}
	if mask&gRules == 0 {
		return
	}
	// Versions are not final while streaming: match without them and
	// apply the gates once the whole run is read (Rule.Allows).
	hits := m.hitsOf(rec, e)
	if len(hits) == 0 {
		return
	}
	m.fields["role"] = rec.Rank.Role
	delete(m.fields, rules.Recovered)
	// A text logged as a warning did not end the boot by itself: Dynamo's
	// compile error it suppressed (convert_frame's warning, traceback and
	// all), a sentence that the program went on without something
	// ("Failed to import from vllm._C with ImportError(…)"). An error
	// rule's finding for it is a warning; when an error follows, the
	// floor's finding for that error carries the rule (nearRules) at the
	// error's severity. Another warning that prints a traceback or starts
	// with an exception line keeps the rule's severity: torch logs some
	// compile failures at W before raising them.
	if rec.Level == record.LevelWarning && (strings.Contains(rec.Emitter, "convert_frame") ||
		!strings.Contains(rec.Text, "\n") && !pytrace.LeadsException([]byte(rec.Text))) {
		m.fields[rules.Recovered] = "true"
	}
	sub := rules.Subject{Text: rec.Text, Fields: m.fields}
	sub.Phase, sub.PhaseWhy = causedByPhase(rec.Text)
	printedInRecord(&sub, rec.Text)
	for _, h := range hits {
		ev := record.Evidence{Path: rec.Source, Line: rec.Line}
		ev.Line, ev.Text, ev.Col = lineAt(*rec, h.off)
		rank := m.rankString(rankNamed(rec.Rank, ev.Text))
		ev.Rank = rank
		sub.Evidence = ev
		m.res.hits.Add(h.rule, sub)
		if h.rule.Severity == "error" {
			if len(m.res.ruleLines[h.rule]) < maxRuleLines {
				m.res.ruleLines[h.rule] = append(m.res.ruleLines[h.rule], ruleLine{ev.Line, rank})
			}
		}
	}
	// (m.fields outlives the record: the floor's subjects start from it.)
	delete(m.fields, rules.Recovered)
}

// locate finds where a rule's text matched, skipping matches on the source
// lines a traceback quotes under each frame (`raise RuntimeError(f"Failed
// to run autotuning code block: {e}")` is code, not the error). It returns
// -1 for a rule without text and -2 when every match was quoted code.
func locate(r *rules.Rule, text string) int {
	off := r.Locate(text)
	for off >= 0 && isQuotedCode(text, off) {
		end := strings.IndexByte(text[off:], '\n')
		if end < 0 {
			return -2
		}
		off = r.LocateFrom(text, off+end+1)
		if off < 0 {
			return -2
		}
	}
	return off
}

// isQuotedCode: the line holding off quotes an error rather than raising
// it: a source line under a `File "…", line N, in f` line, or vLLM's
// collective_rpc re-raise of a worker's error ("Worker failed with error
// '…', please check the stack trace above for the root cause"), whose rank
// is the engine process, not a rank that failed.
func isQuotedCode(text string, off int) bool {
	start := strings.LastIndexByte(text[:off], '\n')
	end := strings.IndexByte(text[off:], '\n')
	if end < 0 {
		end = len(text)
	} else {
		end += off
	}
	if strings.Contains(text[start+1:end], "please check the stack trace above for the root cause") {
		return true
	}
	if start < 0 {
		return false
	}
	prev := text[:start]
	prev = prev[strings.LastIndexByte(prev, '\n')+1:]
	return strings.HasPrefix(strings.TrimSpace(prev), `File "`)
}

// lineAt turns a byte offset in a (joined, multi-line) record into the
// physical line number and that line's text.
func lineAt(rec record.Record, off int) (int, string, int) {
	text := rec.Text
	if off < 0 || off > len(text) {
		off = 0
	}
	n := strings.Count(text[:off], "\n")
	start := strings.LastIndexByte(text[:off], '\n') + 1
	end := strings.IndexByte(text[off:], '\n')
	if end < 0 {
		end = len(text)
	} else {
		end += off
	}
	line := text[start:end]
	trimmed := strings.TrimLeft(line, " \t")
	col := max(0, off-start-(len(line)-len(trimmed)))
	return rec.Line + n, clip(strings.TrimSpace(line)), col
}

func clip(s string) string { return clipTo(s, maxEvidenceText) }

// clipAround is clip(s) that keeps match, the words that made s fatal:
// when they lie past the clip (a launcher's line that lists a whole
// command line before "exits with return code = -9"), s is cut before
// them instead, from a little ahead of them.
func clipAround(s, match string) string {
	k := strings.Index(s, match)
	if len(s) <= maxEvidenceText || k < 0 || k+len(match) < maxEvidenceText-1 {
		return clip(s)
	}
	return clip(aheadOf(s, k, 60))
}

// aheadOf is s from lead bytes ahead of offset k (at a rune's start),
// marked as cut: "…" and the rest.
func aheadOf(s string, k, lead int) string {
	from := max(0, k-lead)
	for from > 0 && !utf8.RuneStart(s[from]) {
		from--
	}
	return "…" + s[from:]
}
