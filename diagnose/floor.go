package diagnose

import (
	"fmt"
	"hash/maphash"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/bringup-tool/bringup/analyze/pytrace"
	"github.com/bringup-tool/bringup/analyze/timeline"
	"github.com/bringup-tool/bringup/diagnose/fatal"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
)

// The floor: every fatal error of the inputs — a traceback's root
// exception, an exception printed without frames, a fatal line (native
// crash, OOM kill, GPU runtime error, collective error, a child's exit) —
// is matched against the rules, and one that no error-level rule explains
// becomes a finding of a catch-all rule of its own. A rule explains an
// error when it matched the error itself, or when its text matched inside
// the error's traceback or shortly before it on the same rank; then the
// rule's finding carries the concrete error (Finding.Root, RaisedIn) and
// the phase the evidence shows.

// occurrence is one fatal error of one log.
type occurrence struct {
	log  *logResult
	tb   *pytrace.Traceback // a Python exception (with or without frames)
	root pytrace.Exception
	fl   *fatalLine // a fatal line
	// line..end are the lines it covers; rank as printed.
	line, end int
	rank      record.Rank
	wrapper   bool // only reports another error
	dupOf     int  // index+1 of the occurrence this one repeats (same error printed again without frames), 0 none
	errIndex  int  // its entry in the errors listed
	// frames: for an exception printed without frames, the frames of a
	// traceback cut before its exception line right after it on the same
	// rank (an engine printing the error, then its traceback; a paste that
	// put the message first), nil when none.
	frames record.Stack
	// peerFrames: frames are those of a peer worker's traceback (another
	// rank of o's role) printed right before it, not o's own rank's.
	peerFrames bool
	// crash: index+1 of the native crash this error only told the
	// reason of (see diagnosticOf), 0 none.
	crash int
	// cut: a traceback cut off before its exception line.
	cut bool
	// mask is the exception that hid root while re-raising it ("TypeError:
	// __init__() missing … 'inner_exception'"), "" when none.
	mask string
	// sameWork: for a watchdog line, the lines of the log's other
	// watchdog lines about the same collective (fatal.Work): a rule that
	// explained one of them explains it, on whichever rank.
	sameWork []int
	// sub and added: the subject matched and the rules it was added to.
	sub   rules.Subject
	added []*rules.Rule
}

var (
	// rankInText: "[Rank 3]", "[Rank:0]" (Gaudi's bridge), and
	// ProcessGroupNCCL's log prefix, which names the process group before
	// the rank: "[PG 1 Rank 3]", "[PG 0 (default_pg) Rank 1]", "[PG ID 0
	// PG GUID 0(default_pg) Rank 1]".
	rankInText   = regexp.MustCompile(`\[(?:PG [^\]\n]{0,160}? )?(?:Rank|rank|RANK)[ :]?(\d+)\]`)
	workerInText = regexp.MustCompile(`\b(VllmWorker-\d+|Worker_TP\d+|VllmWorker TP\d+|VllmWorker rank=\d+)\b`)
)

// attachConsequences gives the error before a consequence what the
// consequence tells of it: a traceback on another rank cut before its
// exception line (SGLang's schedulers each print the failure) adds that
// rank; a launcher's word that a named worker died names the rank of an
// error that was printed without one.
func attachConsequences(occs []occurrence, hits *rules.Collector) {
	for i := range occs {
		o := &occs[i]
		if !o.wrapper || o.dupOf > 0 || len(o.added) > 0 {
			continue
		}
		var target *occurrence // the error printed last before it
		for j := range occs {
			p := &occs[j]
			// (A wrapper was matched only when no root error was found:
			// then it is what the consequence tells of.)
			if p.log == o.log && len(p.added) > 0 && p.line <= o.line && (target == nil || p.line > target.line) {
				target = p
			}
		}
		if target == nil && o.headerOnly() {
			// A report whose traceback is not shown, before any error: the
			// error printed next (a paste that split one rank's traceback
			// from its header).
			for j := range occs {
				p := &occs[j]
				if p.log == o.log && len(p.added) > 0 && p.line > o.line && (target == nil || p.line < target.line) {
					target = p
				}
			}
		}
		if o.crash > 0 {
			target = &occs[o.crash-1] // the crash it told the reason of
		}
		if target == nil || len(target.added) == 0 {
			continue
		}
		sub := target.sub
		switch {
		case o.crash > 0:
			sub.Evidence = record.Evidence{Path: o.tb.Source, Line: o.line, Rank: o.rank.String(), Text: o.root.Type + ": " + firstLine(o.root.Message)}
		case o.tb != nil && o.cut && o.rank.String() != "" && o.rank.String() != target.rank.String():
			ev := record.Evidence{Path: o.tb.Source, Line: o.tb.Line, Rank: o.rank.String(), Text: "a traceback on " + o.rank.String() + " too, cut off before its exception line"}
			if o.tb.Before != "" {
				ev.Text = clip(o.tb.Before + " (on " + o.rank.String() + " too; its traceback is cut off before its exception line)")
			} else if o.headerOnly() && o.tb.Head != "" {
				ev.Text = clip(o.tb.Head + " (on " + o.rank.String() + " too; nothing of its traceback follows)")
			}
			sub.Evidence = ev
		case o.fl != nil && target.rank.String() == "":
			m := workerInText.FindString(o.fl.hit.Text)
			if m == "" {
				continue
			}
			sub.Evidence = record.Evidence{Path: o.log.input.Path, Line: o.fl.line, Rank: m, Text: o.fl.hit.Text}
		default:
			continue
		}
		for _, r := range target.added {
			hits.Add(r, sub)
		}
	}
}

// cutInTracing marks sub, a traceback cut off before its exception line
// inside Dynamo's tracing (its frames say so) in a log with nothing else
// fatal and no serving engine, for the rule that says what the log shows
// (traceback-cut-in-dynamo-tracing): Dynamo was tracing and raised, and
// the raise is not shown. Outside fullgraph=True (which vLLM and SGLang
// use, hence no engine) Dynamo takes an error in tracing for a graph
// break and runs that code eagerly: the finding is a warning, as a graph
// break's is, and no error is listed.
func cutInTracing(sub *rules.Subject) {
	sub.Fields = maps.Clone(sub.Fields)
	sub.Fields["cut_in"] = "dynamo-tracing"
}

// diagnosticOf marks each error printed without frames under a log word
// ("error: failed to legalize operation 'tt.load' …", MLIR's diagnostic)
// whose message runs on over a native crash of the same rank (LLVM's
// "LLVM ERROR: …" abort) as that crash's diagnostic: the process died at
// the crash, and the word only said why. The crash is the error; the
// diagnostic becomes its evidence (attachConsequences). occs are one
// log's, the first at index base.
//
// Likewise a faulthandler report of a fatal signal ("Fatal Python error:
// Aborted") a few lines after a GPU runtime error or a native crash line
// of the same rank (ROCm's "HSA_STATUS_ERROR_EXCEPTION", then the abort)
// reports that error's abort: the earlier line is the error.
func diagnosticOf(occs []occurrence, base int) {
	// The crash and GPU-error lines (fatal lines are few: one per kind,
	// rank and text), looked at for each error that may be their report.
	var crashes []int
	for j := range occs {
		if c := &occs[j]; c.fl != nil && (c.fl.hit.Kind == fatal.DeviceError || c.fl.hit.Kind == fatal.NativeCrash) {
			crashes = append(crashes, j)
		}
	}
	if len(crashes) == 0 {
		return
	}
	for i := range occs {
		o := &occs[i]
		if o.tb != nil && o.tb.Frameless && o.root.Type == "Fatal Python error" {
			for _, j := range crashes {
				c := &occs[j]
				if c.line < o.line && c.line >= o.line-abortAfterLines && (c.rank == o.rank || !c.rank.Known() || !o.rank.Known()) {
					o.wrapper, o.crash = true, base+j+1
					break
				}
			}
			continue
		}
		if o.tb == nil || !o.tb.Frameless || !logWord(o.root.Type) {
			continue
		}
		_, rest, ok := strings.Cut(o.root.Message, "\n")
		if !ok {
			continue
		}
		for _, j := range crashes {
			c := &occs[j]
			if c.fl.hit.Kind == fatal.NativeCrash && c.line > o.line &&
				(c.rank == o.rank || !c.rank.Known()) && strings.Contains(rest, c.fl.hit.Match) {
				o.wrapper, o.crash = true, base+j+1
				break
			}
		}
	}
}

// locationOnly reports whether a message line is only a source location,
// after an optional "[tag] ": "path/file.cu:540", "[AITER] /x/y.cpp:12".
func locationOnly(line string) bool {
	// c10's enforce report cut after its location: "[enforce fail at
	// …/gloo/transport/tcp/device.cc:84]", the condition on the next line.
	if l, ok := strings.CutPrefix(line, "[enforce fail at "); ok && strings.HasSuffix(l, "]") {
		line = strings.TrimSuffix(l, "]")
	}
	if strings.HasPrefix(line, "[") {
		if k := strings.Index(line, "] "); k > 0 {
			line = line[k+2:]
		}
	}
	colon := strings.LastIndexByte(line, ':')
	if colon <= 0 || colon == len(line)-1 || strings.ContainsAny(line, " \t") || strings.Trim(line[colon+1:], "0123456789") != "" {
		return false
	}
	dot := strings.LastIndexByte(line[:colon], '.')
	return dot > 0 && dot < colon-1 && !strings.ContainsAny(line[dot+1:colon], "/\\")
}

// abortAfterLines is how far after the error that made a process abort
// its faulthandler report may come (the runtime's report of the error
// takes a few lines: the kernel's name, the fault's address).
const abortAfterLines = 8

// logWord reports whether an exception type is a log's word that
// introduces an error ("error", "ERROR", "FATAL", "Error") rather than a
// Python class: one word, no '.', no capital inside but all capitals.
func logWord(t string) bool {
	if t == "" || strings.ContainsRune(t, '.') {
		return false
	}
	upper := strings.ToUpper(t) == t
	for k := 1; k < len(t); k++ {
		if c := t[k]; !upper && c >= 'A' && c <= 'Z' || !isWordByte(c) {
			return false
		}
	}
	return isWordByte(t[0])
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// rankNamed is r, with the global rank a line names ("[Rank 3] Watchdog
// caught …") when r has no index of its own.
func rankNamed(r record.Rank, line string) record.Rank {
	if r.TP < 0 && r.Global < 0 && r.PP < 0 && strings.Contains(line, "ank") {
		if m := rankInText.FindStringSubmatch(line); m != nil {
			r.Global = atoi(m[1])
		}
	}
	return r
}

// rankOfFields is r, when it has no index of its own, with the rank that
// the lines after the first of the error's message name, when they name
// one: a Rust tracing span's " rank=0" on a line of its own (TGI's shard
// manager prints the Python error, then the span's fields), a worker's
// name that a supervisor prints under the error ("backend worker
// freetoken-TP0-scheduler"), both of which a message printed without
// frames runs on over. Names are read as record.ScanRankTokens reads
// them in process names, from words that join parts with '-' or '_';
// lines that name different ranks name none.
func rankOfFields(r record.Rank, msg string) record.Rank {
	if r.Known() {
		return r
	}
	_, rest, ok := strings.Cut(msg, "\n")
	if !ok {
		return r
	}
	if !strings.Contains(rest, "rank=") && !hasRankName(rest) {
		return r // (most messages: a cheap look first)
	}
	found := record.NoRank
	for l := range strings.SplitSeq(rest, "\n") {
		l = strings.TrimSpace(l)
		if n, ok := strings.CutPrefix(l, "rank="); ok && n != "" && strings.Trim(n, "0123456789") == "" && len(n) < 6 {
			got := record.NoRank
			got.Global = atoi(n)
			if found.Known() && found != got {
				return r
			}
			found = got
			continue
		}
		for _, tok := range strings.Fields(l) {
			// A process's name: parts joined by '-' or '_' (a word such as
			// "rank=0" in a sentence is not one: "Shard terminated rank=0").
			got := record.NoRank
			if !strings.ContainsAny(tok, "-_") || strings.Contains(tok, "=") || !record.ScanRankTokens(tok, &got) {
				continue
			}
			if found.Known() && found != got {
				return r // two ranks: the lines are not one process's
			}
			found = got
		}
	}
	if found.Known() {
		found.Role, found.PID = r.Role, r.PID
		return found
	}
	return r
}

// hasRankName: s holds a name record.ScanRankTokens reads a rank from
// ("TP0", "DP1", "rank3"), by a look for the names alone.
func hasRankName(s string) bool {
	for _, n := range [...]string{"TP", "DP", "PP", "EP", "rank", "RANK", "Rank"} {
		if strings.Contains(s, n) {
			return true
		}
	}
	return false
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// nearLines is how far before an error a text rule's match on the same
// rank still explains it (an ERROR line naming the failure, then the
// traceback).
const nearLines = 100

// errorLineBefore is the fatal line of lg that says a component failed
// (fatal.ErrorLine, logged at error level) at most errorLineGap lines
// before line, the nearest; nil when there is none.
func errorLineBefore(lg *logResult, line int) *fatalLine {
	var best *fatalLine
	for i := range lg.fatals {
		fl := &lg.fatals[i]
		if fl.hit.Kind == fatal.ErrorLine && fl.line < line && fl.line >= line-errorLineGap && (best == nil || fl.line > best.line) {
			best = fl
		}
	}
	return best
}

// errorLineGap: how far above a cut traceback an error line may be to
// say what failed (the engine's one-line report may stand between).
const errorLineGap = 3

// maxFloorFindings bounds the catch-all findings: past it, unexplained
// errors join the last one.
const maxFloorFindings = 12

// floor turns the fatal errors of results into subjects, matches them and
// adds the hits to hits; it returns the root errors for Diagnosis.Errors.
func floor(results []fileResult, set *rules.Set, v rules.Versions, hits *rules.Collector, torchDir string) []Error {
	n := 0
	for _, fr := range results {
		if fr.log != nil {
			n += len(fr.log.tracebacks) + len(fr.log.fatals)
		}
	}
	occs := make([]occurrence, 0, n)
	for _, fr := range results {
		if fr.log == nil {
			continue
		}
		lg := fr.log
		lg.notePIDRanks()
		first := len(occs)
		for i := range lg.tracebacks {
			tb := &lg.tracebacks[i]
			switch tb.Level {
			case record.LevelWarning, record.LevelInfo, record.LevelDebug:
				// Logged as a warning: recovered from (a graph break Dynamo
				// fell back from, suppress_errors). Warnings stay warnings.
				continue
			}
			if tb.Ignored {
				continue // "Exception ignored in …": Python went on
			}
			root := tb.Root()
			mask := ""
			if hidden, m, ok := unmask(tb, root); ok {
				root, mask = hidden, m
			}
			cut := false
			if root.Type == "" {
				// Frames and no exception line: the excerpt ends inside a
				// traceback. Fatal, but the error may be told elsewhere.
				root.Type, root.Message, cut = "Traceback", "cut off before its exception line", true
				if tb.Before != "" {
					// The error's text as the process logged it before
					// the traceback (logging's exception()).
					root.Type, root.Message = "Error", tb.Before
				} else if fl := errorLineBefore(lg, tb.Line); fl != nil {
					// A library's error line a few lines above (a C++
					// logger's "E0605 … Failed to register memory …: Invalid
					// argument [22]", then the engine's report of the
					// failure and its cut traceback): what failed.
					root.Type, root.Message = "Error", fl.hit.Text
				}
			}
			line := root.Line
			if line == 0 {
				line = tb.Line
			}
			end := max(tb.EndLine, line)
			if tb.Frameless && len(tb.Chain) <= 1 {
				end = line // the lines after it are its message at most
			}
			rank := rankOfFields(tb.Rank, root.Message)
			if cut && tb.Before != "" {
				rank = rankNamed(rank, tb.Before) // "[Rank:0] FATAL ERROR :: …"
			}
			occs = append(occs, occurrence{log: lg, tb: tb, root: root, line: tb.Line, end: end,
				rank: lg.pidRankOf(rank), wrapper: cut || isWrapper(root) || isChildFailed(root), mask: mask, cut: cut})
		}
		for i := first; i < len(occs); i++ {
			if o := &occs[i]; o.tb.Frameless {
				// Tracebacks are listed about in line order: look at the
				// neighbours only (a crash loop prints thousands).
				o.frames, o.peerFrames = cutFramesAfter(occs[max(first, i-maxCutNeighbours):min(len(occs), i+maxCutNeighbours+1)], o)
			}
		}
		// An exception printed without frames that repeats one with frames
		// (a parent process re-printing its child's error) is that error.
		framed := map[[2]string]int{} // type and first message line -> first occurrence with frames
		for i := first; i < len(occs); i++ {
			if o := &occs[i]; !o.tb.Frameless {
				k := [2]string{o.root.Type, firstLine(o.root.Message)}
				if _, ok := framed[k]; !ok {
					framed[k] = i
				}
			}
		}
		for i := first; i < len(occs); i++ {
			if o := &occs[i]; o.tb.Frameless {
				if j, ok := framed[[2]string{o.root.Type, firstLine(o.root.Message)}]; ok {
					o.dupOf = j + 1
				}
			}
		}
		cov := newCoverage(occs[first:])
		var works map[string][]int // see sameWork
		firstObserved(lg)
		for i := range lg.fatals {
			fl := &lg.fatals[i]
			if cov.covers(fl) {
				continue
			}
			rank := lg.pidRankOf(rankNamed(fl.rank, fl.hit.Text))
			o := occurrence{log: lg, fl: fl, line: fl.line, end: max(fl.line, fl.end), rank: rank,
				wrapper: fl.hit.Kind.Consequence(), sameWork: sameWork(lg.fatals, i, &works)}
			if !o.wrapper {
				// A traceback cut before its exception line right after
				// the line (NCCL's "Cuda failure …", then the Python frames
				// that were capturing) says what was running: its phase.
				o.frames = framesAfterLine(occs[first:], &o)
			}
			occs = append(occs, o)
		}
		buildReports(occs[first:])
		diagnosticOf(occs[first:], first)
	}

	// A wrapper, or a launcher's word that a child died, is the error only
	// when nothing else fatal was found.
	// Among wrappers, a traceback cut off at its header (an engine's
	// "Scheduler hit an exception:" and nothing after it) tells only who
	// reported an error: it is the error only when nothing else is, and
	// otherwise names its rank on the error before it (attachConsequences).
	onlyWrappers, onlyHeaders := true, true
	for i := range occs {
		if o := &occs[i]; o.dupOf == 0 {
			if !o.wrapper {
				onlyWrappers = false
			}
			if !o.headerOnly() {
				onlyHeaders = false
			}
		}
	}
	var errs []listed
	errIdx := map[string]int{}
	floorKeys := map[string]bool{}
	memo := map[uint64]*derived{}
	near := printedNear(occs, onlyWrappers)
	for i := range occs {
		o := &occs[i]
		sub, dv := o.subject(torchDir, memo)
		if rs := near[i]; len(rs) > 0 {
			sub.Remedy = append(slices.Clone(sub.Remedy), rs...)
		}
		if v["vllm"] != "" {
			sub.Fields["vllm"] = v["vllm"]
		}
		for _, e := range rules.Engines {
			if v[e] != "" {
				sub.Fields["engine"] = e
				break
			}
		}
		tracing := o.cut && onlyWrappers && sub.Phase == timeline.PhaseDynamo && sub.Fields["engine"] == ""
		if tracing {
			cutInTracing(&sub)
		}
		var matched []*rules.Rule
		if o.dupOf == 0 && (!o.wrapper || onlyWrappers && (onlyHeaders || !o.headerOnly())) {
			if !dv.haveMatched {
				dv.matched, dv.haveMatched = set.Match(sub, v), true
			}
			matched = dv.matched
			explainedBy := slices.Clone(specific(matched)) // (matched is shared by the occurrences of one error)
			if !explainedByError(explainedBy) {
				for _, r := range o.nearRules(v) {
					explainedBy = append(explainedBy, r)
					hits.Enrich(r.ID, sub)
				}
			}
			if !explainedByError(explainedBy) {
				sub.Fields["unexplained"] = "true"
				key := sub.Root
				if !floorKeys[key] && len(floorKeys) >= maxFloorFindings {
					key = "more"
				}
				floorKeys[key] = true
				sub.Key = key
				if !dv.haveUnx {
					dv.unexplained, dv.haveUnx = set.Match(sub, v), true
					if o.tb != nil {
						if ks, km := kindCatchAll(set, v, sub, o.root); km != nil {
							dv.kindSub, dv.unexplained = ks, km
						}
					}
				}
				if dv.kindSub != nil {
					ks := *dv.kindSub
					ks.Evidence, ks.Key, ks.Remedy = sub.Evidence, sub.Key, sub.Remedy
					sub = ks
				}
				matched = dv.unexplained
			} else {
				matched = explainedBy
			}
			for _, r := range matched {
				hits.Add(r, sub)
			}
			o.sub, o.added = sub, matched
		}
		if tracing {
			o.errIndex = -1
			continue // not an error: the finding says what it is (cutInTracing)
		}
		errs = o.addError(errs, errIdx, matched, occs)
	}
	if !onlyWrappers || !onlyHeaders {
		attachConsequences(occs, hits)
	}
	attachEnded(occs, hits)
	// A wrapper is listed only when no root error was found at all, a
	// header alone only when nothing else was.
	if !onlyWrappers || !onlyHeaders {
		kept := errs[:0]
		for _, e := range errs {
			if !e.wrapper || onlyWrappers && !e.header {
				kept = append(kept, e)
			}
		}
		errs = kept
	}
	out := make([]Error, len(errs))
	for i, e := range errs {
		out[i] = e.Error
	}
	return out
}

// listed is an Error and whether it only wraps another, or is a
// traceback cut off at its header (occurrence.headerOnly).
type listed struct {
	Error
	wrapper, header bool
}

// headerOnly: o is a traceback cut off right after the line it started
// on (its header, or an engine's report line), with no frame shown.
func (o *occurrence) headerOnly() bool {
	return o.cut && len(o.root.Frames) == 0 && len(o.frames) == 0
}

// addError lists the occurrence's error, once per distinct error with
// every rank that raised it; a repeat without frames only counts.
func (o *occurrence) addError(errs []listed, idx map[string]int, matched []*rules.Rule, occs []occurrence) []listed {
	if o.dupOf > 0 {
		if k := occs[o.dupOf-1].errIndex; k >= 0 && k < len(errs) {
			errs[k].Count++
		}
		o.errIndex = -1
		return errs
	}
	var typ, msg string
	frames := record.Stack{}
	line := o.line
	src := o.log.input.Path
	if o.tb != nil {
		typ, msg = o.root.Type, o.root.Message
		if o.root.Frames != nil {
			frames = o.root.Frames
		}
		if o.root.Line != 0 {
			line = o.root.Line
		}
		src = o.tb.Source
	} else {
		typ, msg = string(o.fl.hit.Kind), o.fl.hit.Text
	}
	key := typ + "\x00" + firstLine(msg) + "\x00" + innermost(frames)
	i, ok := idx[key]
	if !ok {
		i = len(errs)
		idx[key] = i
		errs = append(errs, listed{Error: Error{Rank: o.rank.String(), PID: o.rank.PID, Ranks: []string{},
			Exception: typ, Message: msg, Frames: frames, Path: src, Line: line, Rules: []string{}}, wrapper: o.wrapper, header: o.headerOnly()})
	}
	o.errIndex = i
	e := &errs[i]
	e.Count++
	if o.fl != nil {
		e.Count += o.fl.count - 1
	}
	if rk := o.rank.String(); rk != "" && !slices.Contains(e.Ranks, rk) {
		e.Ranks = append(e.Ranks, rk)
	}
	for _, r := range matched {
		if !slices.Contains(e.Rules, r.ID) {
			e.Rules = append(e.Rules, r.ID)
		}
	}
	return errs
}

// subject is the occurrence as the rules see it, with what its evidence
// says: root, where it was raised, phase and why, and what PyTorch or the
// engine printed about it.
func (o *occurrence) subject(torchDir string, memo map[uint64]*derived) (rules.Subject, *derived) {
	var sub rules.Subject
	var d *derived
	if o.tb != nil {
		key := o.key()
		if d = memo[key]; d == nil {
			d = &derived{sub: o.content(torchDir)}
			d.framePhase, d.frameWhy = o.contentPhase()
			d.wordPhase, d.wordWhy = o.wordPhase()
			if len(memo) < maxMemoErrors {
				memo[key] = d
			}
		}
		sub = d.sub
		sub.Fields = maps.Clone(d.sub.Fields)
		line := o.root.Line
		if line == 0 {
			line = o.tb.Line
		}
		sub.Evidence = record.Evidence{Path: o.tb.Source, Line: line, Rank: o.rank.String(), Text: d.sub.Evidence.Text}
		if o.cut && o.tb.Head != "" {
			// Cut before its exception line: the line it started on is
			// the log's own words for it (who reported it).
			sub.Evidence.Text = clip(o.tb.Head)
		}
		if sub.RaisedIn == "" && len(o.frames) > 0 && !o.peerFrames {
			// Printed without frames, then its traceback cut before its
			// exception line: raised in a call at or below the last frame
			// shown. (A peer's traceback says where the peer was, not this.)
			sub.RaisedIn = "a call at or below " + timeline.ShortFrame(o.frames[0]) + " (its traceback, printed right after it, is cut there)"
		}
	} else {
		h := o.fl.hit
		fact := "fatal"
		if h.Kind == fatal.ErrorLine {
			// An error the engine logged in words: as the rules see it, an
			// exception printed without frames (the catch-all for one
			// names it when no rule knows it).
			fact = "exception"
		}
		sub = rules.Subject{Text: h.Text, Fact: fact,
			Fields:   map[string]string{"kind": string(h.Kind), "role": o.rank.Role},
			Evidence: record.Evidence{Path: o.log.input.Path, Line: o.fl.line, Rank: o.rank.String(), Text: h.Text}}
		// A compiler's error on a source an installed package ships: the
		// package, as for a Python error; the root is the diagnostic from
		// the file's name on (the whole line is the evidence).
		if p := h.ShippedCUDA(); p != "" {
			sub.Fields["source_package"] = p
		}
		if sub.Root = h.Diagnostic(); sub.Root == "" {
			sub.Root = h.Text
		}
		d = &derived{}
		d.wordPhase, d.wordWhy = o.wordPhase()
	}
	sub.Phase, sub.PhaseWhy = o.phase(d)
	return sub, d
}

// derived is what an error's own text and frames say, the same for every
// occurrence of it (a crash loop prints one traceback thousands of times),
// and the rules it matched.
type derived struct {
	sub                  rules.Subject // but Evidence's place
	framePhase, frameWhy string
	wordPhase, wordWhy   string
	matched, unexplained []*rules.Rule
	haveMatched, haveUnx bool
	// kindSub: the subject as the fatal line its message is (kindCatchAll),
	// when that gave the catch-all; nil otherwise.
	kindSub *rules.Subject
}

// kindCatchAll: an exception no rule explains whose message is a fatal
// line of diagnose/fatal ("RuntimeError: CUDA error: an illegal memory
// access …", "RuntimeError: [gloo/…/pair.cc:598] Connection closed by
// peer", a failed build command) is that kind of failure: the kind's
// catch-all (GPU runtime error, collective error, …) and its remedies say
// more than the exception's. It returns the subject as that fatal line
// (the exception's root, frames and phase kept) and the rules it matched,
// or nil when the message is no fatal line of a kind with a catch-all of
// error severity. (A launcher's word that a child exited is no such kind:
// the exception is not a consequence.)
func kindCatchAll(set *rules.Set, v rules.Versions, sub rules.Subject, root pytrace.Exception) (*rules.Subject, []*rules.Rule) {
	h, ok := fatal.Classify(root.Type + ": " + firstLine(root.Message))
	if !ok || h.Kind.Consequence() {
		return nil, nil
	}
	ks := sub
	ks.Fact = "fatal"
	ks.Fields = maps.Clone(sub.Fields)
	ks.Fields["kind"] = string(h.Kind)
	// The catch-alls match the fact and its fields only (no text rule
	// explained the exception): matched without text and frames, the set
	// tries no rule's patterns.
	probe := ks
	probe.Text, probe.Frames = "", nil
	m := set.Match(probe, v)
	for _, r := range m {
		if r.CatchAll && r.Severity == "error" && r.ID != "unrecognised-exception" {
			return &ks, m
		}
	}
	return nil, nil
}

// maxMemoErrors bounds the distinct errors remembered.
const maxMemoErrors = 4096

// key identifies an occurrence's content: its role, root, mask, frames
// and chain (a hash: the memo is per run).
func (o *occurrence) key() uint64 {
	var h maphash.Hash
	h.SetSeed(keySeed)
	h.WriteString(o.tb.Rank.Role)
	h.WriteByte(0)
	h.WriteString(o.mask)
	h.WriteByte(0)
	h.WriteString(o.root.Type)
	h.WriteByte(0)
	h.WriteString(o.root.Message)
	h.WriteByte(0)
	var n [8]byte
	num := func(v int) {
		for i := range n {
			n[i] = byte(v >> (8 * i))
		}
		h.Write(n[:])
	}
	for _, f := range o.root.Frames {
		h.WriteString(f.File)
		num(f.Line)
		h.WriteString(f.Func)
		h.WriteByte(1)
	}
	for _, e := range o.tb.Chain {
		h.WriteString(e.Type)
		num(len(e.Frames))
		h.WriteByte(3)
	}
	return h.Sum64()
}

var keySeed = maphash.MakeSeed()

// content is the subject of a Python error from its text and frames.
func (o *occurrence) content(torchDir string) rules.Subject {
	sub := exceptionSubject(*o.tb, o.root)
	sub.Root = clip(rootText(o.root))
	if p := printedLine(o.tb, o.root); p != "" {
		sub.Evidence.Text = clip(p) // the line as the log shows it
		sub.Fields["printed"] = p
	}
	if f := sub.Fields["def_line_frame"]; f != "" {
		sub.RaisedIn = "code Dynamo generated for " + timeline.ShortFrame(record.Frame{File: frameFile(f), Line: frameLine(f), Func: sub.Fields["def_line_func"]})
	} else if len(o.root.Frames) > 0 && o.cut {
		// The innermost frame shown is not where it was raised.
		sub.RaisedIn = "a call at or below " + timeline.ShortFrame(o.root.Frames[0]) + " (the traceback is cut there)"
	} else if len(o.root.Frames) > 0 {
		sub.RaisedIn = timeline.ShortFrame(o.root.Frames[0])
	}
	user := o.root.UserCode
	if len(user) == 0 && len(o.root.Frames) == 0 {
		user = causedUserCode(o.tb, o.root)
	}
	switch c, ok := callerOfDynamo(o.tb, o.root); {
	case len(user) > 0 && sub.RaisedIn == "":
		sub.RaisedIn = "user code " + timeline.ShortFrame(user[0])
	case len(user) > 0:
		sub.RaisedIn += " (user code " + timeline.ShortFrame(user[0]) + ")"
	case ok:
		sub.RaisedIn += " (compiling the call at " + timeline.ShortFrame(c) + ")"
	}
	printed(&sub, o.root, torchDir)
	if o.mask != "" {
		sub.Fields["masked_by"] = o.mask
		if o.mask == sub.Root {
			sub.Cause = "This error is a mask: it was raised while the engine re-raised an earlier error (its wrapper could not be built), and that error is not in the log. Look for the first error of this process before it."
		} else {
			sub.Cause = "The error finally printed, " + o.mask + ", is a mask: it was raised while the engine re-raised this one, which it hid."
		}
	}
	if p := packageOf(o.root.Frames); p != "" {
		sub.Fields["package"] = p
	}
	return sub
}

// causedUserCode is the user code of the exception root caused, for a root
// printed without frames (the first of a chain whose own traceback was not
// printed, as Dynamo shows an Observed exception: "KeyError('down')", then
// "Unsupported: Observed exception" with "from user code:"): Dynamo's
// user-code section names the line it was tracing when the error was
// raised. Nil when no later exception of the chain has one.
func causedUserCode(tb *pytrace.Traceback, root pytrace.Exception) record.Stack {
	after := false
	for _, e := range tb.Chain {
		switch {
		case !after:
			after = sameRaise(e, root)
		case len(e.UserCode) > 0:
			return e.UserCode
		}
	}
	return nil
}

// callerOfDynamo: the root was raised inside Dynamo itself (its innermost
// frame is in torch/_dynamo, e.g. exc.py's unimplemented), which says
// nothing of the user's code; the call being compiled is the innermost
// frame outside torch, installed packages and the standard library, of
// the root or of the exceptions the chain raised after it.
func callerOfDynamo(tb *pytrace.Traceback, root pytrace.Exception) (record.Frame, bool) {
	if len(root.Frames) == 0 || !strings.Contains(root.Frames[0].File, "/torch/_dynamo/") {
		return record.Frame{}, false
	}
	stacks := []record.Stack{root.Frames}
	after := false
	for _, e := range tb.Chain {
		if after {
			stacks = append(stacks, e.Frames)
		}
		after = after || sameRaise(e, root)
	}
	for _, st := range stacks {
		for _, f := range st {
			if !userFrame(f.File) {
				continue
			}
			return f, true
		}
	}
	return record.Frame{}, false
}

// sameRaise: e is the exception root of its chain (same type, message and
// line).
func sameRaise(e, root pytrace.Exception) bool {
	return e.Type == root.Type && e.Message == root.Message && e.Line == root.Line
}

// userFrame: a frame file is the user's own code, not torch, an installed
// package, the standard library or generated code ("<eval_with_key>").
func userFrame(file string) bool {
	return !strings.Contains(file, "/torch/") && !strings.Contains(file, "site-packages/") &&
		!strings.Contains(file, "dist-packages/") && !strings.Contains(file, "/lib/python3") && !strings.HasPrefix(file, "<")
}

// libraries are the packages a frame path is read for (packageOf), as
// their directories are named.
var libraries = []string{"aiter", "sgl_kernel", "flash_attn", "xformers", "vllm_ascend", "torch_npu", "deep_gemm",
	"flashinfer", "transformer_engine", "mamba_ssm", "causal_conv1d", "apex", "bitsandbytes", "triton", "vllm", "sglang", "atom", "transformers"}

// packageOf is the package (as pip names it) of the innermost frame in a
// known library, or in an installed package other than torch.
func packageOf(st record.Stack) string {
	for _, f := range st {
		for _, lib := range libraries {
			if strings.Contains(f.File, "/"+lib+"/") || strings.HasPrefix(f.File, lib+"/") {
				return strings.ReplaceAll(lib, "_", "-")
			}
		}
		for _, root := range []string{"site-packages/", "dist-packages/"} {
			if k := strings.LastIndex(f.File, root); k >= 0 {
				pkg, _, _ := strings.Cut(f.File[k+len(root):], "/")
				if pkg != "torch" && !strings.HasSuffix(pkg, ".py") {
					return strings.ReplaceAll(pkg, "_", "-")
				}
			}
		}
	}
	return ""
}

// masks are exceptions raised while an engine re-raised another one, which
// they hide: the wrapper class could not be built with the arguments its
// re-raise passed.
var masks = []*regexp.Regexp{
	regexp.MustCompile(`__init__\(\) missing \d+ required (?:positional|keyword-only) arguments?: .*'(?:inner_exception|original_exception|exc|exception|cause)'`),
	regexp.MustCompile(`__init__\(\) takes \d+ positional arguments? but \d+ were given`),
	regexp.MustCompile(`(?i)exception must derive from BaseException`),
}

// unmask: when the exception finally printed is a known mask (a
// TypeError raised while building the exception that re-raises another),
// the root is the exception it hid, when the chain shows it; the mask is
// returned in words either way.
func unmask(tb *pytrace.Traceback, root pytrace.Exception) (pytrace.Exception, string, bool) {
	final := tb.Final()
	if !strings.HasSuffix(final.Type, "TypeError") {
		return root, "", false
	}
	hit := false
	for _, re := range masks {
		hit = hit || re.MatchString(final.Message)
	}
	if !hit {
		return root, "", false
	}
	mask := final.Type + ": " + firstLine(final.Message)
	if root.Line != final.Line || root.Type != final.Type {
		return root, mask, true // Root already stands before the mask
	}
	for j := len(tb.Chain) - 2; j >= 0; j-- {
		if e := tb.Chain[j]; e.Type != "" {
			if in, ok := pytrace.Unwrap(e); ok {
				e = in
			}
			return e, mask, true
		}
	}
	return root, mask, true
}

// rootText is the root error in one line: "Type: message", the message's
// first line that says something (an ImportError whose message starts on
// the next line), the engine's own report as it printed it, and a "Root
// cause:" line that the engine printed under it.
func rootText(e pytrace.Exception) string {
	msg := e.Message
	first := ""
	for _, l := range strings.Split(msg, "\n") {
		if first = strings.TrimSpace(l); first != "" {
			break
		}
	}
	text := e.Type
	switch {
	case e.Reported:
		text = first
	case first != "":
		text += ": " + first
	case len(e.Code) > 0 && strings.HasPrefix(e.Code[0], "assert ") && (e.Type == "AssertionError" || strings.HasSuffix(e.Type, ".AssertionError")):
		// An assert without a message: the statement that failed is
		// what it says ("AssertionError (assert
		// is_fa_version_supported(self.fa_version))").
		text += " (" + e.Code[0] + ")"
	}
	lines := strings.Split(msg, "\n")
	// A message whose first line only says where ("[AITER]
	// /csrc/opus_gemm/opus_gemm.cu:540", a C++ check's file:line) says
	// what on the next: that line is part of the root.
	if locationOnly(first) {
		seen := false
		for _, l := range lines {
			t := strings.TrimSpace(l)
			if t == first && !seen {
				seen = true
				continue
			}
			if seen && t != "" {
				text += " — " + t
				break
			}
		}
	}
	for _, l := range lines {
		t := strings.TrimLeft(strings.TrimSpace(l), "-*• ")
		if k := strings.Index(strings.ToLower(t), "root cause:"); k >= 0 && k < 8 {
			if rc := strings.TrimSpace(t[k+len("root cause:"):]); rc != "" && !strings.Contains(text, rc) {
				text += " — root cause: " + rc
			}
			break
		}
	}
	// NCCL's errors end in "Last error:" and, on that line or the next,
	// what NCCL saw fail ("Failed to bind NVLink SHARP (NVLS) Multicast
	// memory …"): the cause; the words before it only classify it.
	for i, l := range lines {
		t := strings.TrimSpace(l)
		rest, ok := strings.CutPrefix(t, "Last error:")
		if !ok {
			continue
		}
		rest = strings.TrimSpace(rest)
		for j := i + 1; rest == "" && j < len(lines) && j <= i+2; j++ {
			rest = strings.TrimSpace(lines[j])
		}
		if rest != "" && !strings.Contains(text, rest) {
			text += " — last error: " + rest
		}
		break
	}
	return text
}

// printedLine is the exception line as the log printed it, when the root
// was unwrapped from a wrapper's ("torch._inductor.exc.InductorError:
// AssertionError:"); "" when it is the root's own.
func printedLine(tb *pytrace.Traceback, root pytrace.Exception) string {
	for _, e := range tb.Chain {
		if e.Line == root.Line && e.Type != root.Type {
			l := e.Type
			if m := firstLine(e.Message); m != "" {
				l += ": " + m
			}
			return l
		}
	}
	return ""
}

// phase: what the frames say (the frame table), else the phase the log's
// markers had open on that rank at that line, else runtime for an
// exception raised in frames no table row knows, else unknown.
func (o *occurrence) phase(d *derived) (string, string) {
	if d.framePhase != "" {
		return d.framePhase, d.frameWhy
	}
	if p, why := timeline.PhaseOfFrames(o.frames); p != "" {
		if o.peerFrames {
			return p, "frame " + why + " (of the traceback a peer worker printed right before it, cut before its exception line)"
		}
		return p, "frame " + why + " (of the traceback printed right after it, cut before its exception line)"
	}
	if p, at := timeline.OpenAt(o.log.phases, o.log.input.Path, o.rank.String(), o.line); p != "" {
		return p, fmt.Sprintf("the log's own marker: phase %s opened at line %d and had not finished", p, at)
	}
	if p, at := timeline.OpenAt(o.log.phases, o.log.input.Path, "", o.line); p != "" {
		return p, fmt.Sprintf("the log's own marker: phase %s opened at line %d (another rank) and had not finished", p, at)
	}
	if at := timeline.ReadyBefore(o.log.phases, o.log.input.Path, o.line); at > 0 {
		return timeline.PhaseRuntime, fmt.Sprintf("the log's own marker: the engine was up (line %d) before it", at)
	}
	if d.wordPhase != "" {
		return d.wordPhase, d.wordWhy
	}
	if o.tb != nil && len(o.root.Frames) > 0 {
		return timeline.PhaseRuntime, "no frame of a known startup phase"
	}
	return timeline.PhaseUnknown, "neither frames nor phase markers in the log"
}

// contentPhase is what a Python error's frames (or its type) say.
func (o *occurrence) contentPhase() (string, string) {
	if p, why := timeline.PhaseOfFrames(o.root.Frames); p != "" {
		return p, "frame " + why
	}
	// The outer exceptions of the chain hold the frames that led to it.
	for i := len(o.tb.Chain) - 1; i >= 0; i-- {
		if p, why := timeline.PhaseOfFrames(o.tb.Chain[i].Frames); p != "" {
			return p, "frame " + why
		}
	}
	if p, why := causedByPhase(o.root.Message); p != "" {
		return p, why
	}
	if p := phaseOfType(o.root); p != "" {
		return p, o.root.Type + " is raised while importing"
	}
	// Inductor wraps what is raised during its compile in its own types:
	// the wrapper says where, whatever the inner error's words name. The
	// generated C++ failing to build is its code generation's output.
	for _, t := range []string{printedLine(o.tb, o.root), o.root.Type} {
		if strings.Contains(t, "CppCompileError") {
			return timeline.PhaseInductorCodegen, "CppCompileError: the C++ that Inductor generated did not compile"
		}
		if w := inductorWrapper.FindString(t); w != "" {
			return timeline.PhaseInductor, w + " wraps the error: it was raised during Inductor's compile"
		}
	}
	// Triton's CompilationError says where in the kernel's source it
	// failed ("at 8:11:"): the kernel's compile, whatever the inner
	// error is and whether or not frames were kept.
	for _, e := range append([]pytrace.Exception{o.root}, o.tb.Chain...) {
		if tritonCompileError(e) {
			return timeline.PhaseTritonCompile, e.Type + " at a line of the kernel's source: Triton's compiler raised it"
		}
	}
	return "", ""
}

// tritonCompileError: Triton's compiler error, by its module or by the
// kernel position its message starts with.
func tritonCompileError(e pytrace.Exception) bool {
	if e.Type != "CompilationError" && !strings.HasSuffix(e.Type, ".CompilationError") {
		return false
	}
	return strings.HasPrefix(e.Type, "triton.") || tritonKernelAt.MatchString(e.Message)
}

// tritonKernelAt: "at 8:11:", where Triton's message starts.
var tritonKernelAt = regexp.MustCompile(`^at \d+:\d+:`)

// inductorWrapper: the exception types Inductor raises around an error of
// its compile.
var inductorWrapper = regexp.MustCompile(`^(?:torch\._inductor\.exc\.)?(?:InductorError|LoweringException)\b`)

// wordPhase is what the error's words name (weak: see rules.WeakPhase).
func (o *occurrence) wordPhase() (string, string) {
	if p, why := timeline.PhaseOfText(o.text()); p != "" {
		return p, rules.WeakPhase + ": " + why
	}
	return "", ""
}

// text is the error's own words: its exception line and message, or the
// fatal line.
func (o *occurrence) text() string {
	if o.tb != nil {
		return printedLine(o.tb, o.root) + "\n" + o.root.Type + ": " + o.root.Message
	}
	return o.fl.hit.Text
}

// phaseOfType: exceptions that by their type happen in one phase.
func phaseOfType(e pytrace.Exception) string {
	short := e.Type[strings.LastIndexByte(e.Type, '.')+1:]
	switch {
	case short == "ImportError" || short == "ModuleNotFoundError":
		return timeline.PhaseImport
	case strings.Contains(e.Message, "undefined symbol"):
		return timeline.PhaseImport
	}
	return ""
}

// nearRules are the error-level text rules that matched inside the
// occurrence's lines, or up to nearLines before it on the same rank.
func (o *occurrence) nearRules(v rules.Versions) []*rules.Rule {
	var out []*rules.Rule
	rank := o.rank.String()
	for r, ls := range o.log.ruleLines {
		if r.CatchAll || !r.Allows(v) {
			continue
		}
		for _, l := range ls {
			in := l.line >= o.line && l.line <= o.end || slices.Contains(o.sameWork, l.line)
			before := l.line < o.line && l.line >= o.line-nearLines && (l.rank == rank || l.rank == "" || rank == "")
			if in || before {
				out = append(out, r)
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b *rules.Rule) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// sameWork is, for fatals[i], the lines of the log's other collective
// lines that name the collective it names (fatal.Work), nil when it names
// none: a rank whose excerpt shows only the watchdog's report of the work
// it aborted on ("[PG 1 Rank 3] Exception (either an error or timeout)
// detected by watchdog at work: 1580") failed on the collective whose
// timeout other ranks printed ("WorkNCCL(SeqNum=1580, …) ran for 600060
// milliseconds"). works is the log's index of them, built on first use.
func sameWork(fatals []fatalLine, i int, works *map[string][]int) []int {
	fl := &fatals[i]
	if fl.hit.Kind != fatal.Collective {
		return nil
	}
	w := fatal.Work(fl.hit.Text)
	if w == "" {
		return nil
	}
	if *works == nil {
		*works = map[string][]int{}
		for j := range fatals {
			if o := &fatals[j]; o.hit.Kind == fatal.Collective {
				if k := fatal.Work(o.hit.Text); k != "" && len((*works)[k]) < maxSameWork {
					(*works)[k] = append((*works)[k], j)
				}
			}
		}
	}
	var out []int
	for _, j := range (*works)[w] {
		if j != i {
			out = append(out, fatals[j].line)
		}
	}
	return out
}

// maxSameWork bounds the lines sameWork lists for one collective (a rule
// that explained any of them explains the rest).
const maxSameWork = 16

// cutFramesAfter: the frames of a traceback cut before its exception line
// that starts within a few lines after o ends, on o's rank; else those of
// one that a peer worker (another rank of o's role: the workers of a TP
// group run the same code and fail alike) printed ending right before o
// (an excerpt that kept one worker's frames and the next one's exception
// line), with peer set.
func cutFramesAfter(occs []occurrence, o *occurrence) (frames record.Stack, peer bool) {
	for j := range occs {
		c := &occs[j]
		if c.tb == nil || !c.cut || len(c.root.Frames) == 0 {
			continue
		}
		if c.rank == o.rank && c.line > o.end && c.line <= o.end+maxCutGap {
			return c.root.Frames, false
		}
	}
	for j := range occs {
		c := &occs[j]
		if c.tb == nil || !c.cut || len(c.root.Frames) == 0 || c.rank == o.rank ||
			c.rank.Role == "" || c.rank.Role != o.rank.Role || c.rank.Key() == "" || o.rank.Key() == "" {
			continue
		}
		if c.tb.EndLine < o.line && c.tb.EndLine >= o.line-maxCutGap {
			return c.root.Frames, true
		}
	}
	return nil, false
}

// buildReports marks as a wrapper a build command's exception
// (subprocess.CalledProcessError of ninja, gcc or nvcc; torch's "Error
// building extension") printed after the compiler's or linker's own error
// on its rank: that line says why, the exception only reports the exit.
func buildReports(occs []occurrence) {
	for i := range occs {
		o := &occs[i]
		if o.tb == nil || o.wrapper || !strings.HasSuffix(o.root.Type, "CalledProcessError") && !strings.Contains(o.root.Message, "Error building extension") {
			continue
		}
		for j := range occs {
			c := &occs[j]
			if c.fl != nil && c.fl.hit.Compiler() && c.line < o.line && c.line >= o.line-maxBuildGap && (c.rank == o.rank || c.rank.Key() == "") {
				o.wrapper = true
				break
			}
		}
	}
}

// maxBuildGap is how many lines before a build command's exception the
// compiler's error it reports may be (the build's other output between).
const maxBuildGap = 60

// framesAfterLine is, for a fatal line, the frames of a traceback cut
// before its exception line that starts right after it, on its rank or
// printed with no rank at all (a library's own line prefix, then Python's
// traceback unprefixed); nil when none.
func framesAfterLine(tbs []occurrence, o *occurrence) record.Stack {
	for j := range tbs {
		c := &tbs[j]
		if c.tb == nil || !c.cut || len(c.root.Frames) == 0 || c.line <= o.line || c.line > o.end+maxCutGap {
			continue
		}
		if c.rank == o.rank || c.rank.Key() == "" {
			return c.root.Frames
		}
	}
	return nil
}

// maxCutGap is how many lines after an exception printed without frames
// its cut traceback may start; maxCutNeighbours how many listed tracebacks
// either side are looked at.
const (
	maxCutGap        = 8
	maxCutNeighbours = 8
)

// coverage tells whether a fatal line is a Python error's: inside its
// traceback, or its words held by the error's message.
type coverage struct {
	spans [][2]int // traceback line spans, by start
	msgs  []covMsg // distinct messages with their rank
}

type covMsg struct {
	msg       string
	rank      record.Rank
	frameless bool
}

func newCoverage(occs []occurrence) *coverage {
	c := &coverage{}
	seen := map[covMsg]bool{}
	for _, o := range occs {
		if o.tb == nil {
			continue
		}
		c.spans = append(c.spans, [2]int{o.tb.Line, o.end})
		m := covMsg{o.root.Message, o.rank, o.tb.Frameless}
		if !seen[m] && len(seen) < maxMemoErrors {
			seen[m] = true
			c.msgs = append(c.msgs, m)
		}
	}
	slices.SortFunc(c.spans, func(a, b [2]int) int { return a[0] - b[0] })
	return c
}

func (c *coverage) covers(fl *fatalLine) bool {
	// The spans that start at or before the line: the last few may hold it.
	k, _ := slices.BinarySearchFunc(c.spans, fl.line+1, func(s [2]int, line int) int { return s[0] - line })
	for j := k - 1; j >= 0 && j >= k-8; j-- {
		if fl.line <= c.spans[j][1] {
			return true
		}
	}
	for _, m := range c.msgs {
		if m.frameless && fl.hit.Kind.Consequence() {
			continue // a launcher's line under an error printed without frames is its own
		}
		if m.frameless && fl.hit.Kind == fatal.NativeCrash && !strings.Contains(firstLine(m.msg), fl.hit.Match) {
			// A crash report on a later line of a message printed without
			// frames is a line of its own that the message ran on over
			// (MLIR's "error: …" diagnostics, then LLVM's abort): the
			// process died there.
			continue
		}
		if strings.Contains(m.msg, fl.hit.Match) && (m.rank == fl.rank || !fl.rank.Known()) {
			return true
		}
	}
	return false
}

func sameError(a, b pytrace.Exception) bool {
	return a.Type == b.Type && firstLine(a.Message) == firstLine(b.Message)
}

// isChildFailed: torchrun's ChildFailedError only reports a child's exit.
func isChildFailed(e pytrace.Exception) bool {
	return strings.HasSuffix(e.Type, "ChildFailedError") || strings.HasSuffix(e.Type, "ProcessExitedException") ||
		strings.HasSuffix(e.Type, "ProcessRaisedException")
}

func explainedByError(rs []*rules.Rule) bool {
	for _, r := range rs {
		if !r.CatchAll && r.Severity == "error" {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// frameFile and frameLine split "path:line".
func frameFile(s string) string {
	if k := strings.LastIndexByte(s, ':'); k > 0 {
		return s[:k]
	}
	return s
}

func frameLine(s string) int {
	n := 0
	if k := strings.LastIndexByte(s, ':'); k > 0 {
		fmt.Sscanf(s[k+1:], "%d", &n)
	}
	return n
}
