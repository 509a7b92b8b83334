package diagnose

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/bringup-tool/bringup/analyze/pytrace"
	"github.com/bringup-tool/bringup/ingest"
	"github.com/bringup-tool/bringup/input"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
)

// Options configure a run.
type Options struct {
	Rules   *rules.Set // nil: the builtin knowledge base
	Workers int        // inputs read at once; 0: GOMAXPROCS
	Stdin   io.Reader  // read for the path "-"
	// TorchDir is the torch package the boot used (its graph-break
	// registry explains a GB id); "": the one the log's frames lie in,
	// when it exists here.
	TorchDir string
	// Probe is the exception probe's reports of the boot; nil: those of
	// a run directory given as a path (RUN_DIR/probe), if any.
	Probe *ProbeInput
	// Stacks is what the boot's stack captures showed (watch's own);
	// nil: the stack dumps among the inputs, if any. A log rule that
	// guesses a stack signature is judged by them (ConfirmByStacks).
	Stacks *Stacks
	// Name, when set, gives the name an input file is reported by
	// (inputs, evidence, errors, timeline) instead of its path; the file
	// is still read at its path. Logs gathered from nodes are named
	// NODE/FILE this way.
	Name func(path string) string

	// checks (tests): the engine-log reading without its literal gates,
	// every record shown to every analyzer with a Text of its own, and
	// the parser's batches poisoned as they are released. The results
	// must be the same as without.
	checks readChecks
}

// readChecks are Options.checks.
type readChecks struct {
	forceAll, poison bool
}

// reading is what every input's reader is given: the rules and the
// checks.
type reading struct {
	set *rules.Set
	readChecks
}

// ErrNoInput is returned when not a single input could be read.
var ErrNoInput = errors.New("no readable input")

// Run diagnoses paths (files, directories walked recursively, "-" for
// stdin). Unreadable or unrecognised inputs are noted in Inputs and the
// rest is still diagnosed; Run fails only when a path does not exist at
// all or nothing could be read.
func Run(paths []string, opt Options) (*Diagnosis, error) {
	set := opt.Rules
	if set == nil {
		var err error
		if set, err = rules.Builtin(); err != nil {
			return nil, err
		}
	}
	files, err := expand(paths)
	if err != nil {
		return nil, err
	}
	// A watch run directory given as a path: its probe reports and its
	// run.json are read as what they are (expand leaves them out).
	pr := opt.Probe
	var runs []runDir
	for _, p := range paths {
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			continue
		}
		if pr == nil {
			pr = ReadProbe(p)
		}
		if rf, in := readRunFacts(p); in != nil {
			runs = append(runs, runDir{p, rf, in})
		}
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	results := make([]fileResult, len(files))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				name := files[i]
				if opt.Name != nil && name != "-" {
					name = opt.Name(name)
				}
				results[i] = analyzeFile(files[i], name, reading{set, opt.checks}, opt.Stdin)
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	d := assemble(results, set, opt.TorchDir, pr, opt.Stacks)
	for _, r := range runs {
		applyRun(d, r.dir, r.rf, r.in, set)
	}
	if formHang(d, runs) {
		d.Status, d.Verdict = verdict(d)
	}
	used := 0
	for _, in := range d.Inputs {
		if in.Error == "" || in.Records > 0 {
			used++
		}
	}
	if used == 0 {
		return d, ErrNoInput
	}
	return d, nil
}

// runDir is a watch run directory given as a path, with its run.json's
// facts (nil: unreadable; in says why).
type runDir struct {
	dir string
	rf  *RunFacts
	in  *Input
}

// expand turns the given paths into the list of input files, walking
// directories in lexical order. A missing path is an error (a typo should
// not silently diagnose nothing); unreadable entries inside a directory
// are kept so they are reported as inputs.
func expand(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if p == "-" {
			out = append(out, p)
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, errors.Unwrap(err))
		}
		if !fi.IsDir() {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
			continue
		}
		root := p
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
			// WalkDir does not enter a root that is a symlink; walk its
			// target but report paths under the name given.
			root = real
		}
		err = filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
			if root != p {
				if rel, rerr := filepath.Rel(root, path); rerr == nil {
					path = filepath.Join(p, rel)
				}
			}
			if err != nil {
				if path != p && path != root {
					out = append(out, path) // reported as unreadable
					if de != nil && de.IsDir() {
						return fs.SkipDir
					}
					return nil
				}
				return err
			}
			if de.IsDir() {
				if path != p && (strings.HasPrefix(de.Name(), ".") || isProbeDir(path)) {
					return fs.SkipDir // .git and friends; the probe's code and reports (read as the probe's input)
				}
				return nil
			}
			if notALogName(de.Name()) {
				return nil
			}
			regular := de.Type().IsRegular()
			if de.Type()&fs.ModeSymlink != 0 {
				fi, err := os.Stat(path) // a link to a log file is a log file; links to directories are not followed
				regular = err == nil && fi.Mode().IsRegular()
			}
			if regular && !notALog[strings.ToLower(filepath.Ext(path))] && !slices.Contains(out, path) {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// notALog are extensions of source and documentation files, skipped when
// found while walking a directory (a file named explicitly is always read):
// a folder of logs often carries the scripts and notes that produced it.
var notALog = map[string]bool{".md": true, ".py": true, ".go": true, ".sh": true, ".c": true, ".h": true,
	".cc": true, ".cpp": true, ".rs": true, ".patch": true, ".diff": true, ".html": true, ".css": true, ".js": true}

// notALogName: files a watch run directory (or a store's) holds beside
// the logs that are never logs when found while walking a directory: the
// run's record (run.json, whose facts `bringup runs show` gives), the
// HTML and Perfetto renderings, and the SQLite store with its journal.
func notALogName(name string) bool {
	n := strings.ToLower(name)
	switch {
	case n == "run.json", strings.HasSuffix(n, ".perfetto.json"), strings.HasSuffix(n, ".trace.json"),
		strings.HasSuffix(n, ".htm"), strings.HasSuffix(n, ".db"), strings.HasSuffix(n, ".db-wal"),
		strings.HasSuffix(n, ".db-shm"), strings.HasSuffix(n, ".db-journal"), strings.HasSuffix(n, ".sqlite"):
		return true
	}
	return false
}

// fileResult is the outcome of one input of any kind.
type fileResult struct {
	log      *logResult // engine logs
	input    Input
	analysis *Analysis // other kinds
}

func analyzeFile(open, path string, rd reading, stdin io.Reader) fileResult {
	var r io.Reader
	if open == "-" {
		if stdin == nil {
			stdin = os.Stdin
		}
		r = stdin
	} else {
		f, err := input.Open(open) // a FIFO or a device is refused, not read
		if err != nil {
			return fileResult{input: Input{Path: path, Error: reason(err)}}
		}
		defer f.Close()
		r = f
	}
	br := bufio.NewReaderSize(r, ingest.HeadSize)
	head, err := br.Peek(ingest.HeadSize)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return fileResult{input: Input{Path: path, Error: reason(err)}}
	}
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		// A gzipped log (rotated, or collected with gzip): read through it.
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fileResult{input: Input{Path: path, Error: "gzip: " + err.Error()}}
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, ingest.HeadSize)
		head, err = br.Peek(ingest.HeadSize)
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return fileResult{input: Input{Path: path, Error: "gzip: " + err.Error()}}
		}
	}
	if len(head) == 0 {
		return fileResult{input: Input{Path: path, Error: "empty file"}}
	}
	k := detect(path, head)
	if k == nil {
		return fileResult{input: Input{Path: path, Error: "not a recognised input (binary or unknown format)"}}
	}
	return k.analyze(path, br, head, rd)
}

// reason is an OS error without the path (inputs[] already has it).
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// assemble merges per-input results in input order and concludes.
func assemble(results []fileResult, set *rules.Set, torchDir string, pr *ProbeInput, st *Stacks) *Diagnosis {
	d := &Diagnosis{Schema: Schema, Inputs: []Input{}, Versions: map[string]string{},
		Findings: []record.Finding{}, Errors: []Error{}, Timeline: []record.Phase{}, Gaps: []Gap{}}
	hits := rules.NewCollector()
	gpuUtil := mergeInputs(d, results, hits)
	v := rules.Versions(d.Versions)
	shown := matchSubjects(results, set, v, hits)

	// The floor: every fatal error, explained by a rule or on its own.
	d.Errors = floor(results, set, v, hits, torchDir)
	d.Inputs = append(d.Inputs, registryInputs(torchDir, d.Errors)...)

	addTimeline(d, results, set, v, hits, gpuUtil)
	d.Findings = append(d.Findings, gatedFindings(hits, v)...)
	if st == nil {
		st = stacksOf(results, shown)
	}
	if st == nil {
		st = &Stacks{}
	}
	ConfirmByStacks(d, *st)
	addProbe(d, pr)
	if len(d.Findings) > 0 {
		d.Root, d.RaisedIn, d.PhaseWhy = d.Findings[0].Root, d.Findings[0].RaisedIn, d.Findings[0].PhaseWhy
	}
	d.Status, d.Verdict = verdict(d)
	return d
}

// mergeInputs puts every input, its facts and its versions (the first
// input to tell one wins) into d, and the logs' streaming rule hits into
// hits; it returns the first gpu_memory_utilization a log printed.
func mergeInputs(d *Diagnosis, results []fileResult, hits *rules.Collector) (gpuUtil string) {
	for _, fr := range results {
		d.Inputs = append(d.Inputs, fr.input)
		// A stack dump may be read as a log too (readBoth): both count,
		// the dump's first (it tells Python's exact version).
		var vs []map[string]string
		if fr.log != nil {
			vs = append(vs, fr.log.versions)
			hits.Merge(fr.log.hits)
			if gpuUtil == "" {
				gpuUtil = fr.log.gpuUtil
			}
		}
		if fr.analysis != nil {
			vs = append([]map[string]string{fr.analysis.Versions}, vs...)
			if fr.analysis.Facts != nil {
				if d.Facts == nil {
					d.Facts = map[string]any{}
				}
				d.Facts[fr.input.Path] = fr.analysis.Facts
			}
		}
		for _, m := range vs {
			for k, v := range m {
				if d.Versions[k] == "" && v != "" {
					d.Versions[k] = v
				}
			}
		}
	}
	return gpuUtil
}

// matchSubjects matches the subjects of the kinds other than logs, now
// that the run's versions are known; it returns the stack rules the stack
// dumps show.
func matchSubjects(results []fileResult, set *rules.Set, v rules.Versions, hits *rules.Collector) (shown map[string]bool) {
	shown = map[string]bool{}
	for _, fr := range results {
		if fr.analysis == nil {
			continue
		}
		for _, sub := range fr.analysis.Subjects {
			for _, r := range set.Match(sub, v) {
				hits.Add(r, sub)
				if fr.input.Kind == KindStacks && r.Allows(v) {
					shown[r.ID] = true
				}
			}
		}
	}
	return shown
}

// addTimeline adds the logs' startup timeline and silent gaps to d, and
// matches each rank's last unfinished phase as a fact.
func addTimeline(d *Diagnosis, results []fileResult, set *rules.Set, v rules.Versions, hits *rules.Collector, gpuUtil string) {
	engine := ""
	for _, e := range rules.Engines {
		if v[e] != "" {
			engine = e
			break
		}
	}
	for _, fr := range results {
		if fr.log == nil {
			continue
		}
		// Where a rank stopped is its most recently opened unfinished phase
		// (an umbrella phase such as "compile" stays open around it).
		last := map[string]int{}
		for i, p := range fr.log.phases {
			if j, ok := last[p.Rank]; p.Status == "unfinished" && (!ok || p.Line >= fr.log.phases[j].Line) {
				last[p.Rank] = i
			}
		}
		for i, p := range fr.log.phases {
			ph := p
			if ph.Status == record.PhaseUnfinished {
				ph.Until = UntilLastLine
			}
			d.Timeline = append(d.Timeline, ph)
			if j, ok := last[p.Rank]; !ok || j != i {
				continue
			}
			sub := unfinishedSubject(p, engine, gpuUtil)
			for _, r := range specific(set.Match(sub, v)) {
				hits.Add(r, sub)
			}
		}
		for _, g := range fr.log.gaps {
			d.Gaps = append(d.Gaps, Gap{Path: g.Source, Line: g.Line, Start: g.Start, Seconds: g.Seconds})
		}
	}
	sort.SliceStable(d.Gaps, func(i, j int) bool { return d.Gaps[i].Seconds > d.Gaps[j].Seconds })
}

// unfinishedSubject is the fact of a phase a rank opened and never finished.
func unfinishedSubject(p record.Phase, engine, gpuUtil string) rules.Subject {
	fields := map[string]string{"phase": p.Name, "rank": p.Rank,
		"seconds": strconv.FormatFloat(p.Seconds, 'f', 0, 64)}
	if engine != "" {
		fields["engine"] = engine
	}
	if gpuUtil != "" {
		fields["gpu_memory_utilization"] = gpuUtil
	}
	text := fmt.Sprintf("phase %s opened here and did not finish before the log ends (%.0f s later)", p.Name, p.Seconds)
	if gpuUtil != "" {
		text += "; gpu_memory_utilization " + gpuUtil
	}
	return rules.Subject{Fact: "timeline.unfinished", Fields: fields,
		Evidence: record.Evidence{Path: p.Path, Line: p.Line, Rank: p.Rank, Text: text}}
}

// gatedFindings are the collected findings whose rules allow the run's
// versions, catch-all findings after the specific ones of their severity.
func gatedFindings(hits *rules.Collector, v rules.Versions) []record.Finding {
	var out, general []record.Finding
	for _, f := range hits.Findings() {
		r := hits.Rule(f.Rule)
		if r != nil && !r.Allows(v) {
			continue
		}
		if r != nil && r.CatchAll {
			general = append(general, f)
			continue
		}
		out = append(out, f)
	}
	for _, g := range general {
		k := len(out)
		for k > 0 && out[k-1].Severity.Weight() < g.Severity.Weight() {
			k--
		}
		out = slices.Insert(out, k, g)
	}
	return out
}

// exceptionSubject describes a root exception for the rules, including the
// `def …(` source line of the innermost frame that shows one: compiled
// code reports an inlined callee's exception at the def line of the
// compiled function (log-formats.md §2.7).
func exceptionSubject(tb pytrace.Traceback, root pytrace.Exception) rules.Subject {
	text := root.Type
	if root.Message != "" {
		text += ": " + root.Message
	}
	fields := map[string]string{"type": root.Type, "role": tb.Rank.Role}
	if len(root.Frames) > 0 {
		fields["innermost_file"] = root.Frames[0].File // where it was raised
	}
	for i, f := range root.Frames {
		src := ""
		if i < len(root.Code) {
			src = strings.TrimSpace(root.Code[i])
		}
		if src == "" {
			src = localSourceLine(f.File, f.Line)
		}
		if strings.HasPrefix(src, "def ") {
			fields["def_line_source"] = src
			fields["def_line_frame"] = fmt.Sprintf("%s:%d", f.File, f.Line)
			fields["def_line_func"] = f.Func
			break
		}
	}
	line := root.Line
	if line == 0 {
		line = tb.Line
	}
	first, _, _ := strings.Cut(text, "\n")
	first = clip(first)
	if root.FromSource {
		// The exception line was cut off: say what it was read from.
		src := tb.Head
		if len(root.Code) > 0 {
			src = strings.TrimSpace(root.Code[0])
		}
		if src != "" {
			first += "  (read from the source line `" + clip(src) + "`)"
		}
	}
	if root.TypeRead != "" {
		first += "  (its exception line was not printed: the type is read from " + root.TypeRead + ")"
	}
	if fr := fields["def_line_frame"]; fr != "" {
		first += fmt.Sprintf("  (innermost frame with source: %s `%s`)", fr, fields["def_line_source"])
	}
	return rules.Subject{Text: text, Frames: root.Frames, Fact: "exception", Fields: fields,
		Evidence: record.Evidence{Path: tb.Source, Line: line, Rank: tb.Rank.String(), Text: first}}
}

// localSourceLine reads line n of a model file when it exists on this
// machine, which settles whether a frame points at a def line even when the
// traceback printed no source. Library files (torch, site-packages) are
// not read: the artifact concerns compiled model code.
func localSourceLine(path string, n int) string {
	if n <= 0 || path == "" || strings.HasPrefix(path, "<") || strings.Contains(path, "site-packages/torch/") ||
		strings.Contains(path, "dist-packages/torch/") {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for i := 1; sc.Scan(); i++ {
		if i == n {
			return strings.TrimSpace(sc.Text())
		}
	}
	return ""
}

// specific drops catch-all rules when a specific rule matched too.
func specific(rs []*rules.Rule) []*rules.Rule {
	if !explained(rs) {
		return rs
	}
	out := rs[:0:0]
	for _, r := range rs {
		if !r.CatchAll {
			out = append(out, r)
		}
	}
	return out
}

// isWrapper: an exception raised only to report an earlier failure
// (signatures.md §2), including vLLM's collective_rpc re-raise.
func isWrapper(e pytrace.Exception) bool {
	return pytrace.IsWrapper(e) || strings.Contains(e.Message, "please check the stack trace above for the root cause") ||
		strings.Contains(e.Message, "See root cause above")
}

// explained: some rule other than the catch-all accounts for the exception.
func explained(rs []*rules.Rule) bool {
	for _, r := range rs {
		if !r.CatchAll {
			return true
		}
	}
	return false
}

func innermost(st record.Stack) string {
	if len(st) == 0 {
		return ""
	}
	return st[0].String()
}

// verdict states the outcome in one sentence, most important finding first.
func verdict(d *Diagnosis) (string, string) {
	if d.hangLine != "" {
		return "failed", d.hangLine
	}
	if len(d.Findings) == 0 {
		if len(d.Errors) > 0 {
			return "failed", "failed with an exception (see errors)"
		}
		return "ok", "no known failure signature found"
	}
	f := d.Findings[0]
	where := ""
	if len(f.Ranks) > 0 {
		where = " on " + rankList(f.Ranks)
	}
	phase := ""
	if f.Phase != "" {
		phase = " in phase " + f.Phase
		if why := shortWhy(f.PhaseWhy); why != "" {
			phase += " (" + why + ")"
		}
	}
	switch f.Severity {
	case record.SeverityError:
		if strings.HasPrefix(f.Rule, "probe-") && f.Root != "" {
			return "failed", probeVerdict(phase, where, f)
		}
		if stuck(d, f) {
			// A hang is not a crash: say that the phase was still running.
			return "failed", fmt.Sprintf("STUCK%s%s (still running when the log ends): %s [%s]", phase, where, f.Title, f.Rule)
		}
		if what := happened(f); what != "" {
			return "failed", fmt.Sprintf("FAILED%s%s: %s: %s [%s]", phase, where, f.Title, what, f.Rule)
		}
		return "failed", fmt.Sprintf("FAILED%s%s: %s [%s]", phase, where, f.Title, f.Rule)
	case record.SeverityWarning:
		return "warnings", fmt.Sprintf("no error-level finding; warning%s%s: %s [%s]", phase, where, f.Title, f.Rule)
	}
	return "ok", fmt.Sprintf("no error-level finding; note: %s [%s]", f.Title, f.Rule)
}

// happened is what the evidence shows happened, for the verdict next to
// the rule's title: the concrete error (the finding's root, else the line
// the rule matched), clipped, and where it was raised. A rule's title says
// what the failure is; this says which one the log holds (the exception
// and its message, the raising frame), whatever rule explained it. "" when
// the finding knows neither, or its title already quotes the line.
func happened(f record.Finding) string {
	what := strings.TrimSpace(firstMsgLine(f.Root))
	if what == "" && len(f.Evidence) > 0 {
		what = strings.TrimSpace(firstMsgLine(f.Evidence[0].Text))
	}
	if strings.Contains(f.Title, what) {
		what = ""
	}
	if len(what) > maxVerdictRoot && len(f.Evidence) > 0 {
		// A long line whose rule matched past the clip (a server's
		// "model_lifecycle.cc:596] failed to load '…' version 1: Internal:
		// Unable to initialize shared memory …"): quote it from a little
		// ahead of the rule's words.
		if ev := f.Evidence[0]; ev.Col > maxVerdictRoot/2 && strings.HasPrefix(what, ev.Text[:min(len(ev.Text), 40)]) && ev.Col < len(what) {
			what = aheadOf(what, ev.Col, 20)
		}
	}
	what = clipTo(what, maxVerdictRoot)
	switch {
	case f.RaisedIn == "":
	case what == "":
		what = "raised in " + f.RaisedIn
	default:
		what += " (raised in " + f.RaisedIn + ")"
	}
	return what
}

// maxVerdictRoot bounds the concrete error quoted in the verdict (the
// finding and errors[] hold it whole).
const maxVerdictRoot = 160

// shortWhy is the evidence for a finding's phase in a few words for the
// verdict ("frame vllm/v1/worker/gpu_model_runner.py:3106 _dummy_run",
// "log marker at line 40"); "" when the phase is the rule's own.
func shortWhy(why string) string {
	switch {
	case strings.HasPrefix(why, "frame "):
		if k := strings.Index(why, ": "); k > 0 {
			return why[:k]
		}
		return why
	case strings.HasPrefix(why, "the log's own marker"):
		if k := strings.Index(why, "opened at line "); k > 0 {
			n := why[k+len("opened at line "):]
			n, _, _ = strings.Cut(n, " ")
			return "log marker at line " + n
		}
		return "log marker"
	case strings.HasPrefix(why, rules.WeakPhase):
		return "by the error's words"
	case strings.Contains(why, "raised while importing"):
		return why
	}
	return ""
}

// stuck: the finding's phase is still open at the end of the log on one
// of its ranks and failed on none of them, and the finding holds no
// concrete error: the boot hung there rather than crashed.
func stuck(d *Diagnosis, f record.Finding) bool {
	if f.Phase == "" || f.Root != "" {
		// A finding with a concrete error (an exception, a crash line) says
		// how the phase ended: not a hang.
		return false
	}
	ranks := map[string]bool{}
	for _, r := range f.Ranks {
		ranks[r] = true
	}
	open := false
	for _, p := range d.Timeline {
		if p.Name != f.Phase || (len(ranks) > 0 && !ranks[p.Rank]) {
			continue
		}
		switch p.Status {
		case "failed":
			return false
		case "unfinished":
			open = true
		}
	}
	return open
}

func rankList(rs []string) string {
	if len(rs) <= 6 {
		return strings.Join(rs, ", ")
	}
	return fmt.Sprintf("%s … %s (%d ranks)", strings.Join(rs[:3], ", "), rs[len(rs)-1], len(rs))
}
