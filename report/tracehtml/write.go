// Package tracehtml writes the HTML report of `bringup trace`: a directory
// that opens from file:// with no network, made of an index (verdict,
// timeline of compile phases per rank, compile-unit tree, failures, graph
// breaks, recompiles, caches, divergence across ranks) and one page per
// compile unit with its graphs, guards, output code and metrics.
//
// It renders a compiles.Result and never parses a trace: payloads are
// streamed from the trace file through the parser's payload reference
// (torchtrace.CopyPayload) straight into the page file, one at a time, so
// memory does not grow with the trace. All text goes through html/template
// or template.HTMLEscape; pages carry a Content-Security-Policy that allows
// only the report's own stylesheet and script.
package tracehtml

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/atomicfile"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

//go:embed assets/report.css assets/report.js
var assetFS embed.FS

// pages are the parsed templates, parsed when a page is first written (a
// diagnose or stacks run never writes one).
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").ParseFS(templateFS, "templates/*.tmpl"))
})

// Options tune the report. The zero value is fine.
type Options struct {
	// Title heads every page; default "bringup trace".
	Title string
	// Footer is printed at the bottom of every page (e.g. the bringup
	// version and command); default names bringup.
	Footer string
	// MaxInline caps how many payload bytes one artifact shows inline on
	// its unit page; a larger payload is also written whole to a .txt file
	// beside the page and linked. Default 512 KiB.
	MaxInline int64
	// MaxPageInline caps the inline payload bytes of one unit page, so that
	// a unit with thousands of artifacts still opens; artifacts past it
	// continue on further pages (unit_0_0_p2.html …). Default 16 MiB.
	MaxPageInline int64
	// MaxRows caps the rows of each index table (the JSON report has all).
	// Default 1000.
	MaxRows int
	// templates (tests): every page by its template, not its Go twin, to
	// compare the two (TestGoRenderSameAsTemplates).
	templates bool
}

func (o Options) withDefaults() Options {
	if o.Title == "" {
		o.Title = "bringup trace"
	}
	if o.Footer == "" {
		o.Footer = "Written by bringup trace. Self-contained: no network, open index.html from disk."
	}
	if o.MaxInline <= 0 {
		o.MaxInline = 512 << 10
	}
	if o.MaxPageInline <= 0 {
		o.MaxPageInline = 16 << 20
	}
	if o.MaxRows <= 0 {
		o.MaxRows = 1000
	}
	return o
}

// pageMeta is what the shared head and foot templates need.
type pageMeta struct {
	Title, Subtitle string
	Root            string // relative path from the page to the report root, "" or "../../"
	Footer          string
	Back            bool
	// Switch is the rank switcher of a report of several inputs: the
	// summary, then each input's landing page.
	Switch []navLink
}

// Write renders res as a report in dir. The report is built in a new
// directory beside dir and put in dir's place once complete
// (atomicfile.CreateDir): a reader sees the old report or the new one, an
// earlier report is replaced whole (none of its unit pages stays behind),
// and a symbolic link inside dir is never followed (it goes with the old
// directory). dir may be absent, empty, or an earlier report; a directory
// that holds anything else, a symbolic link or a file is refused. It
// returns the first error that stops it, and dir is then as it was; a
// payload that cannot be read is noted on its page instead.
func Write(dir string, res *compiles.Result, opts Options) error {
	if res == nil {
		return errors.New("tracehtml: no analysis result to render")
	}
	opts = opts.withDefaults()
	if err := replaceable(dir); err != nil {
		return err
	}
	d, err := atomicfile.CreateDir(dir)
	if err != nil {
		return err
	}
	if err := write(d.Path(), res, opts); err != nil {
		d.Abort()
		return err
	}
	if err := d.Commit(); err != nil {
		return fmt.Errorf("put the report in place: %w", err)
	}
	return nil
}

// reportEntries are the names a report has at its top.
var reportEntries = map[string]bool{"index.html": true, "assets": true, "units": true, "payloads": true,
	"failures.html": true, "shapes.html": true, "provenance.html": true}

// replaceable says why dir may not be replaced by a new report: it holds
// something that is not a report's (a directory of the user's own files
// given by mistake must not be swept away).
func replaceable(dir string) error {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return nil // absent, a link, not a directory: CreateDir says what it is
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	index := false
	for _, e := range entries {
		if !reportEntries[e.Name()] {
			return fmt.Errorf("%s holds %s, which is not part of a bringup report: give a new or empty directory, or one an earlier bringup trace --html wrote (it is replaced whole)", dir, e.Name())
		}
		// Of any type: a link planted in the old report goes with it.
		index = index || e.Name() == "index.html"
	}
	if !index {
		return fmt.Errorf("%s has no index.html: it is not a bringup report; give a new or empty directory", dir)
	}
	return nil
}

// write renders the report into dir, a new directory of its own.
func write(dir string, res *compiles.Result, opts Options) error {
	if err := os.Mkdir(filepath.Join(dir, "assets"), 0o755); err != nil {
		return fmt.Errorf("create report directory: %w", err)
	}
	for _, name := range []string{"report.css", "report.js"} {
		b, _ := assetFS.ReadFile("assets/" + name)
		if err := writeFile(filepath.Join(dir, "assets", name), func(w io.Writer) error {
			_, err := w.Write(b)
			return err
		}); err != nil {
			return fmt.Errorf("write report asset: %w", err)
		}
	}
	s := newSite(res, opts)
	if err := s.parallel(len(s.sharedList), func(i int) error { return s.writeShared(dir, s.sharedList[i]) }); err != nil {
		return err
	}
	if err := s.parallel(len(s.units), func(i int) error { return s.writeUnit(dir, i) }); err != nil {
		return err
	}
	if err := s.writeViews(dir); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "index.html"), func(w io.Writer) error {
		return pages().ExecuteTemplate(w, "index", s.indexView(nil, "", ""))
	})
}

// parallel runs write(0..n-1) on a few goroutines (the unit pages, the
// shared payload pages): pages are independent, and each holds one payload
// at a time, so memory stays flat. It returns the first error.
func (s *site) parallel(n int, write func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), 4, max(n, 1))
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := write(i); err != nil {
					errs <- err
					for range next { // drain so the sender finishes
					}
					return
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs // nil when none
}

// writers are the 256 KiB write buffers, reused: a report is thousands of
// files, most of them a few KiB (a fresh buffer per file was most of the
// bytes the report allocated, and their GC).
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 256<<10) }}

func getWriter(w io.Writer) *bufio.Writer {
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(w)
	return bw
}

func putWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	writers.Put(bw)
}

// writeFile creates path, a new file of the report being built, and hands
// fill a buffered writer on it.
func writeFile(path string, fill func(w io.Writer) error) error {
	f, err := createNew(path)
	if err != nil {
		return err
	}
	bw := getWriter(f)
	err = fill(bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	putWriter(bw)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// createNew creates a file of the report being built, and the directories
// above it: exclusively, never through a symbolic link.
func createNew(p string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	return atomicfile.CreateNew(p)
}

// unit is one page: a compile unit, or the events of one input that belong
// to no compile.
type unit struct {
	C         *compiles.Compile // nil for the "outside any compile" page
	Rank      int
	Path      string
	ID        string // compile id without attempt; "" outside
	Label     string // input label: "rank 0", or a file name
	File      string // page path relative to the report root
	Artifacts []int  // indexes into Result.Artifacts
}

// site holds the indexes the pages are built from.
type site struct {
	res      *compiles.Result
	opts     Options
	units    []unit
	byKey    map[string][]int // path + "\x00" + unit id → indexes in units, in log order
	inputDir map[string]string
	labels   map[string]string // path → input label
	// phases and open are, per index in units, its indexes in res.Spans
	// and res.OpenSpans; phaseUnit and openUnit the reverse (-1: none).
	phases, open        [][]int
	phaseUnit, openUnit []int
	// shared maps the MD5 of a payload shown on more than one page (every
	// rank's copy of a graph, a repeated or concatenated log) to the index
	// of the artifact it is written from, once, as payloads/<md5>.html;
	// sharedTimes is how many artifacts show it.
	shared      map[string]int
	sharedList  []string // the keys of shared, in first-seen order
	sharedTimes map[string]int
	keys        []string // per artifact, its content key ("": none)
	// rankOf is each input's rank, runs the number of runs in the inputs,
	// rankPages each input's landing page (reports of several inputs).
	rankOf    map[string]int
	runs      int
	rankPages map[string]string
	// artifactUnit is, per artifact, the index in units of its page (-1).
	artifactUnit []int
	// byRank finds the units of a rank by id and occurrence.
	byRank map[rankRef][]int
}

type rankRef struct {
	rank int
	id   string
	occ  int
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// unitID strips the attempt suffix: "0/0_1" → "0/0".
func unitID(id string) string {
	if i := strings.LastIndexByte(id, '_'); i > 0 && !strings.ContainsAny(id[i+1:], "/!") {
		if _, err := strconv.Atoi(id[i+1:]); err == nil {
			return id[:i]
		}
	}
	return id
}

func key(path, id string) string { return path + "\x00" + id }

func newSite(res *compiles.Result, opts Options) *site {
	s := &site{res: res, opts: opts, byKey: map[string][]int{}, inputDir: map[string]string{},
		labels: map[string]string{}, rankOf: map[string]int{}}
	runs := map[string]bool{}
	for _, in := range res.Inputs {
		s.rankOf[in.Path] = in.Rank
		runs[in.Run] = true
	}
	s.runs = len(runs)
	// One directory per input: rank_N when the rank is known and unique.
	rankUse := map[int]int{}
	for _, in := range res.Inputs {
		rankUse[in.Rank]++
	}
	for i, in := range res.Inputs {
		d := fmt.Sprintf("rank_%d", in.Rank)
		if in.Rank < 0 || rankUse[in.Rank] > 1 {
			d = fmt.Sprintf("input_%d_%s", i, unsafeName.ReplaceAllString(strings.TrimSuffix(filepath.Base(in.Path), filepath.Ext(in.Path)), "_"))
		}
		s.inputDir[in.Path] = d
		s.labels[in.Path] = in.Label
		if in.Label == "" {
			s.labels[in.Path] = filepath.Base(in.Path)
		}
	}
	dirOf := func(path string) string {
		if d, ok := s.inputDir[path]; ok {
			return d
		}
		d := "input_" + unsafeName.ReplaceAllString(filepath.Base(path), "_")
		s.inputDir[path] = d
		return d
	}
	// File names: unit_<frame>_<compile>.html; a compile id that repeats in
	// one input (several runs) gets _r2, _r3 … by occurrence. A counter per
	// base name settles any other clash in constant time.
	used := map[string]bool{}
	next := map[string]int{}
	fileFor := func(path, id string, occurrence int) string {
		name := "outside_compiles"
		if id != "" {
			name = "unit_" + strings.Trim(unsafeName.ReplaceAllString(strings.ReplaceAll(id, "!", "ca"), "_"), "_")
		}
		if occurrence > 0 {
			name += fmt.Sprintf("_r%d", occurrence+1)
		}
		base := "units/" + dirOf(path) + "/" + name
		f := base + ".html"
		for used[f] {
			next[base]++
			f = fmt.Sprintf("%s_%d.html", base, next[base]+1)
		}
		used[f] = true
		return f
	}
	claimed := make([]bool, len(res.Artifacts))
	for i := range res.Compiles {
		c := &res.Compiles[i]
		u := unit{C: c, Rank: c.Rank, Path: c.Path, ID: c.ID, Label: s.label(c.Path), File: fileFor(c.Path, c.ID, c.Occurrence)}
		for _, a := range c.Artifacts {
			if a >= 0 && a < len(res.Artifacts) {
				u.Artifacts = append(u.Artifacts, a)
				claimed[a] = true
			}
		}
		s.byKey[key(c.Path, c.ID)] = append(s.byKey[key(c.Path, c.ID)], len(s.units))
		s.units = append(s.units, u)
	}
	// Artifacts no compile claims (export and AOTInductor logs, events
	// outside any compile) get one page per input.
	outside := map[string]int{}
	for i := range res.Artifacts {
		if claimed[i] {
			continue
		}
		a := &res.Artifacts[i]
		j, ok := outside[a.Path]
		if !ok {
			j = len(s.units)
			outside[a.Path] = j
			s.units = append(s.units, unit{Rank: a.Rank, Path: a.Path, Label: s.label(a.Path), File: fileFor(a.Path, "", 0)})
		}
		s.units[j].Artifacts = append(s.units[j].Artifacts, i)
	}
	for _, list := range s.byKey { // log order, so occurrences line up
		sort.SliceStable(list, func(i, j int) bool { return s.units[list[i]].C.Line < s.units[list[j]].C.Line })
	}
	s.byRank = map[rankRef][]int{}
	for i := range s.units {
		if c := s.units[i].C; c != nil {
			k := rankRef{c.Rank, c.ID, c.Occurrence}
			s.byRank[k] = append(s.byRank[k], i)
		}
	}
	s.artifactUnit = make([]int, len(res.Artifacts))
	for i := range s.artifactUnit {
		s.artifactUnit[i] = -1
	}
	for ui := range s.units {
		for _, ai := range s.units[ui].Artifacts {
			s.artifactUnit[ai] = ui
		}
	}
	s.rankPageFiles()
	s.findShared()
	s.phases, s.open = make([][]int, len(s.units)), make([][]int, len(s.units))
	s.phaseUnit = s.assignPhases(res.Spans, s.phases)
	s.openUnit = s.assignPhases(res.OpenSpans, s.open)
	return s
}

func (s *site) label(path string) string {
	if l, ok := s.labels[path]; ok {
		return l
	}
	return filepath.Base(path)
}

// assignPhases gives each phase its unit: the unit of its input, process
// and compile id with the phase's occurrence (compiles.Span.Occurrence
// tells the compiles of a repeated id apart), -1 when it has none.
func (s *site) assignPhases(phases []compiles.Span, per [][]int) []int {
	unitOf := make([]int, len(phases))
	for i := range phases {
		p := &phases[i]
		unitOf[i] = -1
		list := s.byKey[key(p.Path, unitID(p.CompileID))]
		for _, u := range list {
			if c := s.units[u].C; c.Occurrence == p.Occurrence && c.PID == p.PID {
				unitOf[i] = u
				break
			}
		}
		if unitOf[i] < 0 {
			for _, u := range list {
				if s.units[u].C.Occurrence == p.Occurrence {
					unitOf[i] = u
					break
				}
			}
		}
		if unitOf[i] < 0 && len(list) > 0 {
			unitOf[i] = list[0]
		}
		if u := unitOf[i]; u >= 0 {
			per[u] = append(per[u], i)
		}
	}
	return unitOf
}

// unitAt finds the unit of a compile id on an input that was live at a log
// line: the last occurrence that began at or before it (else the first).
func (s *site) unitAt(path, id string, line int) int {
	list := s.byKey[key(path, unitID(id))]
	if len(list) == 0 {
		return -1
	}
	best := list[0]
	for _, u := range list {
		if s.units[u].C.Line <= line {
			best = u
		}
	}
	return best
}

// unitHref links a compile id of an input, live at a log line, to its page
// ("" when it has none).
func (s *site) unitHref(root, path, id string, line int) string {
	if u := s.unitAt(path, id, line); u >= 0 {
		return root + s.units[u].File
	}
	return ""
}

// unitHrefByRank finds a unit by rank when the path is not known.
func (s *site) unitHrefByRank(root string, rank int, id string) string {
	if l := s.byRank[rankRef{rank, unitID(id), 0}]; len(l) > 0 {
		return root + s.units[l[0]].File
	}
	return ""
}

// escapeText writes b as HTML element text: & < > become entities and NUL
// the replacement character. Quotes need no escaping outside attributes, and
// leaving them keeps JSON payloads (all quotes) readable in the page source
// and a fifth of the size.
func escapeText(w io.Writer, b []byte) {
	for len(b) > 0 {
		i := bytes.IndexAny(b, "&<>\x00")
		if i < 0 {
			w.Write(b)
			return
		}
		w.Write(b[:i])
		switch b[i] {
		case '&':
			io.WriteString(w, "&amp;")
		case '<':
			io.WriteString(w, "&lt;")
		case '>':
			io.WriteString(w, "&gt;")
		default:
			io.WriteString(w, "\uFFFD")
		}
		b = b[i+1:]
	}
}

// escapeWriter HTML-escapes what it is given into w until limit bytes have
// passed, and copies everything, unescaped, to full when set.
type escapeWriter struct {
	w     io.Writer
	full  io.Writer
	limit int64
	n     int64
	err   error
}

func (e *escapeWriter) Write(p []byte) (int, error) {
	if e.full != nil {
		if _, err := e.full.Write(p); err != nil && e.err == nil {
			e.err = err
		}
	}
	if e.n < e.limit {
		escapeText(e.w, p[:min(int64(len(p)), e.limit-e.n)])
	}
	e.n += int64(len(p))
	return len(p), e.err
}
