package tracehtml

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/ingest/torchtrace"
)

// The pages beside the summary: failures and restarts, symbolic shapes,
// Inductor provenance, and one landing page per input of a multi-rank
// report, all reached from the rank switcher and the summary's sections.

// navLink is one entry of the rank switcher.
type navLink struct {
	Name, Href string
	Here       bool
}

// switcher lists the summary and each input's landing page (none for a
// report of one input); here names the page it is on.
func (s *site) switcher(root, here string) []navLink {
	if len(s.rankPages) == 0 {
		return nil
	}
	out := []navLink{{Name: "all inputs", Href: root + "index.html", Here: here == ""}}
	for _, in := range s.res.Inputs {
		if f, ok := s.rankPages[in.Path]; ok {
			out = append(out, navLink{Name: in.Label, Href: root + f, Here: here == in.Label})
		}
	}
	return out
}

// rankPageFiles names the landing page of each input of a report of
// several: units/<input dir>/index.html, beside that input's unit pages.
func (s *site) rankPageFiles() {
	if len(s.res.Inputs) < 2 {
		return
	}
	s.rankPages = map[string]string{}
	for _, in := range s.res.Inputs {
		s.rankPages[in.Path] = "units/" + s.inputDir[in.Path] + "/index.html"
	}
}

// refHref links a unit named by id and occurrence on an input ("" when it
// has no page).
func (s *site) refHref(root, path, id string, occ int) string {
	list := s.byKey[key(path, unitID(id))]
	for _, u := range list {
		if s.units[u].C.Occurrence == occ {
			return root + s.units[u].File
		}
	}
	if len(list) > 0 {
		return root + s.units[list[0]].File
	}
	return ""
}

// trieNode is one frame of the call stacks that led to compiles (tlparse's
// stack trie): the compile units whose dynamo_start stack ends here, and
// the frames called from here.
type trieNode struct {
	// Frames are this node's frame and, folded into it, the frames below
	// it that have no unit and one callee: a chain reads as a list, not
	// as a staircase.
	Frames   []codeRef
	Units    []unitRow
	Children []*trieNode
	index    map[string]*trieNode
}

// fold merges each chain of single callees without units into one node.
func (n *trieNode) fold() {
	for len(n.Units) == 0 && len(n.Children) == 1 {
		c := n.Children[0]
		n.Frames = append(n.Frames, c.Frames...)
		n.Units, n.Children = c.Units, c.Children
	}
	for _, c := range n.Children {
		c.fold()
	}
}

// maxTrieNodes bounds the stack trie (a huge trace of distinct stacks
// would otherwise be most of the page); the note says what was left out.
const maxTrieNodes = 5000

// stackTrie places each compile unit under the user call stack that led
// to it, outermost frame first, shared prefixes merged.
func (s *site) stackTrie(sc scope, root string) ([]*trieNode, string) {
	top := &trieNode{index: map[string]*trieNode{}}
	nodes, units, left := 0, 0, 0
	for i := range s.units {
		u := &s.units[i]
		c := u.C
		if c == nil || !sc.has(u.Path) || len(c.Stack) == 0 {
			continue
		}
		n := top
		ok := true
		for j := len(c.Stack) - 1; j >= 0; j-- { // outermost first
			f := c.Stack[j]
			k := f.String()
			child := n.index[k]
			if child == nil {
				if nodes >= maxTrieNodes {
					ok = false
					break
				}
				nodes++
				child = &trieNode{Frames: []codeRef{userCode(k)}, index: map[string]*trieNode{}}
				n.index[k] = child
				n.Children = append(n.Children, child)
			}
			n = child
		}
		if !ok {
			left++
			continue
		}
		units++
		n.Units = append(n.Units, unitRow{ID: compiles.Label(c.ID, c.Occurrence), Href: root + u.File,
			Status: statusWord(c.Status), StatusClass: statusClass(c.Status), Meta: u.Label})
	}
	if units == 0 {
		return nil, ""
	}
	note := fmt.Sprintf("%s under %s", plural(units, "compile unit", "compile units"), plural(nodes, "frame", "frames"))
	if left > 0 {
		note += fmt.Sprintf("; %d more units' stacks were past the %d-frame bound", left, maxTrieNodes)
	}
	for _, c := range top.Children {
		c.fold()
	}
	return top.Children, note
}

// shapeKindWhat says what each symbolic-shape kind is, for the summary.
var shapeKindWhat = map[string]string{
	compiles.ShapeCreateSymbol:   "symbols created for dynamic sizes",
	compiles.ShapeCreateUnbacked: "unbacked symbols (data-dependent sizes)",
	compiles.ShapeSpecialization: "dynamic sizes specialised to a constant",
	compiles.ShapeGuardAdded:     "guards added on sizes",
	compiles.ShapeGuardAddedFast: "guards added (fast path)",
	compiles.ShapeRealTensors:    "data-dependent expressions decided by real tensors (export)",
}

var shapeOrder = []string{compiles.ShapeSpecialization, compiles.ShapeGuardAdded, compiles.ShapeGuardAddedFast,
	compiles.ShapeCreateSymbol, compiles.ShapeCreateUnbacked, compiles.ShapeRealTensors}

func (s *site) shapeCounts(sc scope) []shapeCount {
	n := map[string]int{}
	for _, se := range s.res.Shapes {
		if sc.has(se.Path) {
			n[se.Kind]++
		}
	}
	var out []shapeCount
	for _, k := range shapeOrder {
		if n[k] > 0 {
			out = append(out, shapeCount{Kind: k, What: shapeKindWhat[k], N: n[k]})
		}
	}
	return out
}

// shapesPage is shapes.html: one table per kind of symbolic-shape event.
type shapesPage struct {
	Page    pageMeta
	Tables  []shapeTable
	Dropped int
}

type shapeTable struct {
	Kind, What string
	Rows       []shapeRow
	More       int
}

type shapeRow struct {
	Input, ID, Href string
	// What is the symbol or the guard expression, Value its value, Detail
	// the sources, range or reason.
	What, Value, Detail string
	Code                codeRef
	Source, Where       string
}

func (s *site) shapesView() shapesPage {
	p := shapesPage{Page: pageMeta{Title: s.opts.Title + " — symbolic shapes", Subtitle: s.opts.Title, Footer: s.opts.Footer, Back: true,
		Switch: s.switcher("", "\x00")}, Dropped: s.res.ShapesDropped}
	by := map[string]*shapeTable{}
	for _, k := range shapeOrder {
		t := &shapeTable{Kind: k, What: shapeKindWhat[k]}
		by[k] = t
	}
	for _, se := range s.res.Shapes {
		t := by[se.Kind]
		if t == nil {
			continue
		}
		if len(t.Rows) >= s.opts.MaxRows {
			t.More++
			continue
		}
		row := shapeRow{Input: s.label(se.Path), ID: compiles.Label(se.CompileID, se.Occurrence),
			Href: s.refHref("", se.Path, se.CompileID, se.Occurrence), What: se.Symbol, Value: se.Value,
			Code: userCode(se.UserCode), Source: se.Code, Where: fmt.Sprintf("%s:%d", shortPath(se.Path), se.Line)}
		if se.Expr != "" {
			row.What = se.Expr
		}
		var detail []string
		if len(se.Sources) > 0 {
			detail = append(detail, "sources: "+strings.Join(se.Sources, ", "))
		}
		if se.Range != "" {
			detail = append(detail, "range "+se.Range)
		}
		if se.Prefix != "" {
			detail = append(detail, "prefix "+se.Prefix)
		}
		if se.Reason != "" {
			detail = append(detail, se.Reason)
		}
		row.Detail = strings.Join(detail, "; ")
		t.Rows = append(t.Rows, row)
	}
	for _, k := range shapeOrder {
		if t := by[k]; len(t.Rows) > 0 {
			p.Tables = append(p.Tables, *t)
		}
	}
	return p
}

// failuresPage is failures.html, tlparse's failures_and_restarts.html: every
// failed compile and every restart, with the user code it came from.
type failuresPage struct {
	Page     pageMeta
	Failures []failureRow
	Restarts []restartRow
	More     int
}

type restartRow struct {
	Rank, ID, Href, Reason string
	Code                   codeRef
}

func (s *site) failuresView(sc scope) failuresPage {
	p := failuresPage{Page: pageMeta{Title: s.opts.Title + " — failures and restarts", Subtitle: s.opts.Title, Footer: s.opts.Footer, Back: true,
		Switch: s.switcher("", "\x00")}}
	for i := range s.res.Compiles {
		c := &s.res.Compiles[i]
		if !sc.has(c.Path) {
			continue
		}
		if c.Status == compiles.StatusFailed {
			if len(p.Failures) >= s.opts.MaxRows {
				p.More++
				continue
			}
			p.Failures = append(p.Failures, s.failureRow("", c))
		}
		for _, r := range c.RestartReasons {
			if len(p.Restarts) >= s.opts.MaxRows {
				p.More++
				continue
			}
			p.Restarts = append(p.Restarts, restartRow{Rank: s.label(c.Path), ID: compiles.Label(c.ID, c.Occurrence),
				Href: s.refHref("", c.Path, c.ID, c.Occurrence), Reason: strings.TrimSpace(r), Code: userCode(c.UserCode)})
		}
	}
	return p
}

// provenancePage is provenance.html: per graph, each generated kernel with
// the post-grad nodes it computes and the pre-grad nodes they came from,
// and the kernels' user stack traces when the trace logged them.
type provenancePage struct {
	Page   pageMeta
	Graphs []provGraph
}

type provGraph struct {
	Anchor, Input, ID, Href string
	Kernels                 []compiles.KernelProvenance
	Traces                  []kernelTrace
	Note                    string
}

type kernelTrace struct {
	Kernel string
	Text   string
}

func provAnchor(p compiles.Provenance) string {
	return "g-" + unsafeName.ReplaceAllString(fmt.Sprintf("%s-%s-%d-%d", filepath.Base(p.Path), compiles.Ref(p.CompileID, p.Occurrence), p.Rank, p.Line), "_")
}

// maxTraceBytes bounds the stack-trace text shown per graph.
const maxTraceBytes = 1 << 20

func (s *site) provenanceView() provenancePage {
	p := provenancePage{Page: pageMeta{Title: s.opts.Title + " — Inductor provenance", Subtitle: s.opts.Title, Footer: s.opts.Footer, Back: true,
		Switch: s.switcher("", "\x00")}}
	for _, pv := range s.res.Provenance {
		g := provGraph{Anchor: provAnchor(pv), Input: s.label(pv.Path), ID: compiles.Label(pv.CompileID, pv.Occurrence),
			Href: s.refHref("", pv.Path, pv.CompileID, pv.Occurrence), Kernels: pv.Kernels}
		if pv.EmptyMappings > 0 && len(pv.Kernels) == 0 {
			g.Note = "Its node mappings were logged with no payload (as a graph loaded from the FX-graph cache logs them): nothing to map."
		}
		if pv.CompileID == "" {
			g.Href = s.outsideHref(pv.Path)
		}
		for _, ai := range pv.Artifacts {
			a := &s.res.Artifacts[ai]
			if a.Name != "inductor_provenance_tracking_kernel_stack_traces" || a.Length > maxTraceBytes {
				continue
			}
			text, err := torchtrace.ReadPayload(a.PayloadRef)
			if err != nil {
				g.Note = "stack traces could not be read: " + err.Error()
				continue
			}
			var m map[string][]string
			if json.Unmarshal([]byte(text), &m) != nil {
				g.Note = "stack traces are not the JSON object expected (kernel → traces)"
				continue
			}
			names := make([]string, 0, len(m))
			for k := range m {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				var parts []string
				for _, t := range m[k] {
					// The producer escapes the traces' newlines once more.
					parts = append(parts, strings.TrimRight(strings.ReplaceAll(t, `\n`, "\n"), "\n"))
				}
				g.Traces = append(g.Traces, kernelTrace{Kernel: k, Text: strings.Join(parts, "\n\n")})
			}
		}
		p.Graphs = append(p.Graphs, g)
	}
	return p
}

// outsideHref links the page of an input's events outside any compile.
func (s *site) outsideHref(path string) string {
	for i := range s.units {
		if s.units[i].C == nil && s.units[i].Path == path {
			return s.units[i].File
		}
	}
	return ""
}

// writeViews writes the pages beside the summary.
func (s *site) writeViews(dir string) error {
	page := func(name, tmpl string, data any) error {
		return writeFile(filepath.Join(dir, filepath.FromSlash(name)), func(w io.Writer) error {
			return pages().ExecuteTemplate(w, tmpl, data)
		})
	}
	if fv := s.failuresView(nil); len(fv.Failures)+len(fv.Restarts) > 0 {
		if err := page("failures.html", "failures", fv); err != nil {
			return err
		}
	}
	if len(s.res.Shapes) > 0 {
		if err := page("shapes.html", "shapes", s.shapesView()); err != nil {
			return err
		}
	}
	if len(s.res.Provenance) > 0 {
		if err := page("provenance.html", "provenance", s.provenanceView()); err != nil {
			return err
		}
	}
	for _, in := range s.res.Inputs {
		f, ok := s.rankPages[in.Path]
		if !ok {
			continue
		}
		root := strings.Repeat("../", strings.Count(f, "/"))
		v := s.indexView(scope{in.Path: true}, root, in.Label)
		if err := page(f, "index", v); err != nil {
			return err
		}
	}
	return nil
}
