package tracehtml

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/ingest/torchtrace"
)

type kv struct{ K, V string }

type frameRow struct{ Func, Where string }

type unitTop struct {
	Page         pageMeta
	Status       string
	StatusClass  string
	VerdictClass string
	Headline     string
	Points       []string
	Facts        []kv
	Timeline     *timelineView
	PhaseNote    string
	Stack        []frameRow
	Inner        frameRow // the innermost frame, shown when the stack is folded
	Metrics      []kv
	Links        []kv // `link` events: name → URL, shown as text to copy
	Artifacts    []artifactHead
}

type artifactHead struct {
	Anchor string
	Href   string // where the table of contents links: "#a3" or "unit_0_0_p2.html#a3"
	Name   string
	Meta   string
	Open   bool
}

type artifactTail struct {
	Full  string // relative link to the whole payload, when not all shown inline
	Shown string
	Err   string
}

// statusClass maps a compile status to its pill colour.
func statusClass(st string) string {
	switch st {
	case compiles.StatusOK:
		return "s-ok"
	case compiles.StatusFailed:
		return "s-error"
	case compiles.StatusRestarted:
		return "s-break"
	case compiles.StatusEmpty:
		return "s-empty"
	case compiles.StatusRunning:
		return "s-running"
	}
	return "s-missing"
}

// statusWord is the status as the pill reads.
func statusWord(st string) string {
	switch st {
	case compiles.StatusNoMetrics:
		return "no metrics"
	case compiles.StatusRestarted:
		return "graph break"
	case "":
		return "unknown"
	}
	return st
}

// openByDefault are the artifacts a reader looks at first.
var openByDefault = map[string]bool{
	"dynamo_output_graph": true, "dynamo_error": true, "dynamo_graph_break_reason": true, "recompile_reasons": true,
}

func fmtSize(n int64) string {
	switch {
	case n < 10<<10:
		return fmt.Sprintf("%d B", n)
	case n < 10<<20:
		return fmt.Sprintf("%.0f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func (s *site) writeUnit(dir string, ui int) error {
	u := &s.units[ui]
	root := strings.Repeat("../", strings.Count(u.File, "/"))
	top := unitTop{Page: pageMeta{Root: root, Footer: s.opts.Footer, Back: true, Switch: s.switcher(root, u.Label)}}
	if c := u.C; c != nil {
		top.Page.Title = fmt.Sprintf("%s on %s", compiles.Label(c.ID, c.Occurrence), u.Label)
		top.Page.Subtitle = s.opts.Title
		top.Status, top.StatusClass = statusWord(c.Status), statusClass(c.Status)
		top.Headline, top.VerdictClass, top.Points = unitVerdict(c)
		top.Facts = unitFacts(c, u)
		for i := len(c.Stack) - 1; i >= 0; i-- { // Python prints outermost first
			f := c.Stack[i]
			top.Stack = append(top.Stack, frameRow{Func: f.Func, Where: fmt.Sprintf("%s:%d", f.File, f.Line)})
		}
		if len(top.Stack) > 0 {
			top.Inner = top.Stack[len(top.Stack)-1]
		}
		top.Metrics = secondsRows(c.Seconds)
		for _, l := range s.res.Links {
			if l.Rank == c.Rank && unitID(l.CompileID) == c.ID {
				top.Links = append(top.Links, kv{l.Name, l.URL})
			}
		}
	} else {
		top.Page.Title = "Outside any compile on " + u.Label
		top.Page.Subtitle = s.opts.Title
		top.Status, top.StatusClass, top.VerdictClass = "no compile id", "s-empty", "warn"
		top.Headline = fmt.Sprintf("%d events of %s carry no compile id (export, AOTInductor, or events outside torch.compile).", len(u.Artifacts), u.Label)
		top.Facts = []kv{{"input", u.Path}, {"rank", rankWord(u.Rank)}}
	}
	if len(s.phases[ui])+len(s.open[ui]) > 0 {
		var lane tlLane
		lane.Name = "[" + orDash(u.ID) + "]"
		for _, i := range s.phases[ui] {
			lane.Phases = append(lane.Phases, tlPhase{P: &s.res.Spans[i]})
		}
		for _, i := range s.open[ui] {
			lane.Phases = append(lane.Phases, tlPhase{P: &s.res.OpenSpans[i], Open: true})
		}
		if len(lane.Phases) > 0 {
			top.Timeline = layoutTimeline([]tlLane{lane})
			top.PhaseNote = fmt.Sprintf("%d closed, %d open", len(s.phases[ui]), len(s.open[ui]))
		}
	}
	heads := make([]artifactHead, len(u.Artifacts))
	for j, ai := range u.Artifacts {
		a := &s.res.Artifacts[ai]
		meta := fmt.Sprintf("%s:%d", filepath.Base(a.Path), a.Line)
		if a.CompileID != "" && a.CompileID != u.ID {
			meta = "[" + a.CompileID + "] " + meta
		}
		if a.Kind != a.Name && a.Kind != "" {
			meta = a.Kind + " · " + meta
		}
		if a.Length > 0 && !a.Envelope {
			meta += " · " + fmtSize(a.Length)
		}
		if !a.MD5OK && a.Length > 0 && !a.Envelope {
			meta += " · payload MD5 does not match the envelope"
		}
		heads[j] = artifactHead{Anchor: fmt.Sprintf("a%d", j), Name: a.Name, Meta: meta, Open: openByDefault[a.Name] || openByDefault[a.Kind]}
	}
	pageOf, npages := s.unitPages(ui)
	stem := strings.TrimSuffix(u.File, ".html")
	pageFile := func(k int) string { return s.unitPageFile(ui, k) }
	for j := range heads {
		heads[j].Href = "#" + heads[j].Anchor
		if pageOf[j] > 0 {
			heads[j].Href = path.Base(pageFile(pageOf[j])) + "#" + heads[j].Anchor
		}
	}
	top.Artifacts = heads
	for k := 0; k < npages; k++ {
		k := k
		var cont contView
		if npages > 1 {
			cont = contView{Page: top.Page, Unit: path.Base(u.File), N: k + 1, Of: npages}
			cont.Page.Title = top.Page.Title + fmt.Sprintf(" — page %d of %d", k+1, npages)
			for q := 0; q < npages; q++ {
				cont.Pages = append(cont.Pages, pageLink{N: q + 1, Href: path.Base(pageFile(q)), Here: q == k})
			}
		}
		err := writeFile(filepath.Join(dir, filepath.FromSlash(pageFile(k))), func(w io.Writer) error {
			tmpl, data := "unit_top", any(top)
			if k > 0 {
				tmpl, data = "unit_cont_top", cont
			}
			if err := s.renderPage(w, tmpl, data); err != nil {
				return err
			}
			for j, ai := range u.Artifacts {
				if pageOf[j] != k {
					continue
				}
				a := &s.res.Artifacts[ai]
				if md5 := s.sharedOf(ai); md5 != "" {
					if err := s.writeSharedArtifact(w, root, md5, a, heads[j]); err != nil {
						return err
					}
					continue
				}
				if err := s.writeArtifact(w, dir, stem, j, a, heads[j]); err != nil {
					return err
				}
			}
			if npages > 1 {
				if err := pages().ExecuteTemplate(w, "unit_pages", cont); err != nil {
					return err
				}
			}
			return s.renderPage(w, "unit_bottom", top)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// unitPages places a unit's artifacts on pages: the unit page, then
// continuation pages once the inline budget is spent, so every artifact is
// on some page and no page grows past about MaxPageInline (a unit of a
// concatenated or export log can hold thousands of artifacts).
func (s *site) unitPages(ui int) (pageOf []int, npages int) {
	u := &s.units[ui]
	pageOf = make([]int, len(u.Artifacts))
	npages, used := 1, int64(0)
	for j, ai := range u.Artifacts {
		n := min(s.opts.MaxInline, s.res.Artifacts[ai].Length)
		if s.sharedOf(ai) != "" {
			n = 0 // embedded, not inline
		}
		if used > 0 && used+n > s.opts.MaxPageInline {
			npages, used = npages+1, 0
		}
		used += n
		pageOf[j] = npages - 1
	}
	return pageOf, npages
}

// unitPageFile is page k of a unit, relative to the report root.
func (s *site) unitPageFile(ui, k int) string {
	u := &s.units[ui]
	if k == 0 {
		return u.File
	}
	return fmt.Sprintf("%s_p%d.html", strings.TrimSuffix(u.File, ".html"), k+1)
}

// artifactHref links artifact ai on the page of unit ui that shows it.
func (s *site) artifactHref(ui, ai int) string {
	pageOf, _ := s.unitPages(ui)
	for j, x := range s.units[ui].Artifacts {
		if x == ai {
			return s.unitPageFile(ui, pageOf[j]) + fmt.Sprintf("#a%d", j)
		}
	}
	return s.units[ui].File
}

type contView struct {
	Page  pageMeta
	Unit  string // file name of the unit's first page
	N, Of int
	Pages []pageLink
}

type pageLink struct {
	N    int
	Href string
	Here bool
}

// writeArtifact streams one artifact into a page: its payload escaped, at
// most MaxInline of it; a larger payload is also written whole, unescaped,
// to a .txt file beside the page (stem/) and linked.
func (s *site) writeArtifact(w io.Writer, dir, stem string, j int, a *compiles.Artifact, head artifactHead) error {
	if err := s.renderPage(w, "artifact_open", head); err != nil {
		return err
	}
	var tail artifactTail
	if a.Length == 0 {
		io.WriteString(w, "(this event has no payload)")
	} else {
		name := sideName(j, a.Name)
		var err error
		tail, err = s.streamPayload(w, a, filepath.Join(dir, filepath.FromSlash(stem), name), path.Base(stem)+"/"+name)
		if err != nil {
			return err
		}
	}
	return s.renderPage(w, "artifact_close", tail)
}

// streamPayload writes a's payload to w escaped, at most MaxInline of it;
// a longer payload is also written whole, unescaped, to the file side,
// which the page links as href. The tail says what was shown, and a
// payload that could not be read; the error is a write error.
func (s *site) streamPayload(w io.Writer, a *compiles.Artifact, side, href string) (artifactTail, error) {
	var tail artifactTail
	limit := s.opts.MaxInline
	ew := &escapeWriter{w: w, limit: limit}
	var f *os.File
	var fb *bufio.Writer
	if a.Length > limit {
		var err error
		if f, err = createNew(side); err != nil {
			return tail, err
		}
		fb = getWriter(f)
		ew.full = fb
		tail.Full = href
		tail.Shown = fmtSize(limit)
	}
	if err := fetch(ew, a); err != nil {
		tail.Err = err.Error()
	}
	if f != nil {
		if err := fb.Flush(); err != nil && ew.err == nil {
			ew.err = err
		}
		putWriter(fb)
		if err := f.Close(); err != nil && ew.err == nil {
			ew.err = err
		}
	}
	return tail, ew.err
}

// sideName is the file beside a unit page that holds artifact j whole.
func sideName(j int, name string) string {
	return fmt.Sprintf("%d_%s.txt", j, unsafeName.ReplaceAllString(name, "_"))
}

// fetch streams what an artifact refers to: its payload, or for a
// payload-less event (compilation_metrics, link …) its metadata, indented.
func fetch(w io.Writer, a *compiles.Artifact) error {
	if !a.Envelope {
		return torchtrace.CopyPayload(w, a.PayloadRef)
	}
	meta, ok, err := torchtrace.EnvelopeValue(a.PayloadRef, a.Kind)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s:%d: envelope has no %q key", filepath.Base(a.Path), a.Line, a.Kind)
	}
	var buf bytes.Buffer
	if json.Indent(&buf, meta, "", "  ") != nil {
		_, err = w.Write(meta)
		return err
	}
	_, err = buf.WriteTo(w)
	return err
}

func rankWord(r int) string {
	if r < 0 {
		return "unknown"
	}
	return fmt.Sprint(r)
}

// unitVerdict says in one line what happened to a compile.
func unitVerdict(c *compiles.Compile) (headline, class string, points []string) {
	fn := c.Frame.Func
	if fn == "" {
		fn = "this frame"
	}
	switch c.Status {
	case compiles.StatusFailed:
		// The exception that was raised, then what wrapped it: the first
		// line of the reason alone is often "backend='…' raised:".
		chain := c.FailChain
		if len(chain) == 0 {
			chain = []string{orDash(c.FailType)}
		}
		headline, class = fmt.Sprintf("Compiling %s failed: %s", fn, firstLine(chain[0], 300)), "err"
		if c.FailPhase != "" {
			headline += " (in " + c.FailPhase + ")"
		}
		for _, outer := range chain[1:] {
			points = append(points, "raised through "+firstLine(outer, 300))
		}
		if c.UserCode != "" {
			points = append(points, "user code: "+shortFrame(c.UserCode))
		}
	case compiles.StatusRunning:
		headline, class = fmt.Sprintf("Compiling %s had not finished when the log ended", fn), "err"
	case compiles.StatusNoMetrics:
		headline, class = fmt.Sprintf("No compilation_metrics for %s: it never finished, or was not logged", fn), "warn"
	case compiles.StatusRestarted:
		headline, class = fmt.Sprintf("Compiled %s after %d restart(s) (graph breaks)", fn, max(c.Attempts-1, len(c.RestartReasons))), "warn"
	case compiles.StatusEmpty:
		headline, class = fmt.Sprintf("Compiled %s, but the graph has no ops", fn), "warn"
	default:
		headline, class = fmt.Sprintf("Compiled %s", fn), "ok"
	}
	if c.Seconds.Total > 0 {
		headline += fmt.Sprintf(" in %s", fmtDur(c.Seconds.Total))
	}
	for _, r := range c.RestartReasons {
		points = append(points, "restart: "+firstLine(r, 300))
	}
	for _, r := range c.RecompileReasons {
		points = append(points, "recompiled because: "+firstLine(r, 300))
	}
	if len(points) > 8 {
		points = append(points[:8], fmt.Sprintf("… and %d more", len(points)-8))
	}
	return headline, class, points
}

func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

func unitFacts(c *compiles.Compile, u *unit) []kv {
	f := []kv{{"compile id", compiles.Label(c.ID, c.Occurrence)}, {"input", u.Path}, {"rank", rankWord(c.Rank)}, {"status", statusWord(c.Status)}}
	if c.Occurrence > 0 {
		f = append(f, kv{"occurrence", fmt.Sprintf("%d (earlier compiles in this input had the same id: torch._dynamo.reset() or several runs)", c.Occurrence+1)})
	}
	if c.Frame.Func != "" || c.Frame.File != "" {
		f = append(f, kv{"user frame", c.Frame.String()})
	}
	if c.UserCode != "" && c.UserCode != c.Frame.String() {
		f = append(f, kv{"user code", c.UserCode})
	}
	f = append(f, kv{"attempts", fmt.Sprint(c.Attempts)}, kv{"graph breaks", fmt.Sprint(c.GraphBreaks)})
	if c.FailType != "" {
		f = append(f, kv{"fail type", c.FailType})
	}
	for i, e := range c.FailChain {
		name := "raised through"
		if i == 0 {
			name = "exception"
		}
		f = append(f, kv{name, e})
	}
	if c.FailPhase != "" {
		f = append(f, kv{"failed in", c.FailPhase})
	}
	if c.FailReason != "" {
		f = append(f, kv{"fail reason", c.FailReason})
	}
	if c.FailUserFrame != "" {
		f = append(f, kv{"failed at", c.FailUserFrame})
	}
	opt := func(name string, p *int) {
		if p != nil {
			f = append(f, kv{name, fmt.Sprint(*p)})
		}
	}
	opt("graph ops", c.GraphOps)
	opt("guards", c.GuardCount)
	opt("cache size", c.CacheSize)
	f = append(f, kv{"first event", fmt.Sprintf("%s:%d", filepath.Base(c.Path), c.Line)})
	if c.MetricsLine > 0 {
		f = append(f, kv{"compilation_metrics", fmt.Sprintf("%s:%d", filepath.Base(c.Path), c.MetricsLine)})
	}
	return f
}

// secondsRows lists the logged time breakdown, largest first as logged.
func secondsRows(s compiles.Seconds) []kv {
	var rows []kv
	add := func(name string, v float64) {
		if v > 0 {
			rows = append(rows, kv{name, fmtDur(v)})
		}
	}
	add("entire frame", s.Total)
	add("dynamo", s.Dynamo)
	add("before restart", s.BeforeRestart)
	add("backend compile", s.Backend)
	add("AOTAutograd", s.AOTAutograd)
	add("inductor", s.Inductor)
	add("pre-grad passes", s.PreGrad)
	add("joint-graph passes", s.JointGraph)
	add("post-grad passes", s.PostGrad)
	add("code gen", s.CodeGen)
	add("triton compile", s.Triton)
	add("autotune", s.Autotune)
	add("cudagraphify", s.Cudagraphify)
	add("gc", s.GC)
	if len(rows) > 0 && s.Source != "" {
		unit := map[string]string{"us": "microsecond fields", "s": "older seconds fields"}[s.Source]
		rows = append(rows, kv{"from", "compilation_metrics " + unit})
	}
	return rows
}
