package compiles

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/bringup-tool/bringup/ingest/torchtrace"
)

// MaxShapes caps Result.Shapes (ShapesDropped counts the rest).
const MaxShapes = 100_000

// Symbolic-shape event kinds (ShapeEvent.Kind), as PyTorch's ShapeEnv logs
// them.
const (
	ShapeCreateSymbol   = "create_symbol"
	ShapeCreateUnbacked = "create_unbacked_symbol"
	ShapeSpecialization = "symbolic_shape_specialization"
	ShapeGuardAdded     = "guard_added"
	ShapeGuardAddedFast = "guard_added_fast"
	ShapeRealTensors    = "propagate_real_tensors_provenance"
)

// shapeKinds are the events a ShapeEvent is made of.
var shapeKinds = map[string]bool{
	ShapeCreateSymbol: true, ShapeCreateUnbacked: true, ShapeSpecialization: true,
	ShapeGuardAdded: true, ShapeGuardAddedFast: true, ShapeRealTensors: true,
}

// ShapeEvent is one symbolic-shape event: a symbol created for a dynamic
// size, a dynamic size specialised to a constant, a guard added on sizes,
// or (export) a data-dependent expression decided by real tensors.
type ShapeEvent struct {
	Rank       int    `json:"rank"`
	Path       string `json:"path"`
	Line       int    `json:"line"`
	CompileID  string `json:"compile_id"` // "" outside any compile (export)
	Occurrence int    `json:"occurrence,omitempty"`
	Kind       string `json:"kind"`
	Symbol     string `json:"symbol,omitempty"`
	// Expr is the guard expression (guard_added*, and the decided
	// expression of propagate_real_tensors_provenance).
	Expr string `json:"expr,omitempty"`
	// Value is the symbol's example value (create_symbol), the constant a
	// symbol was specialised to, or the value real tensors gave Expr.
	Value   string   `json:"value,omitempty"`
	Range   string   `json:"range,omitempty"` // value range (vr)
	Sources []string `json:"sources,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	// Prefix is guard_added's prefix: "eval" for a guard evaluated during
	// export (a possible constraint violation).
	Prefix string `json:"prefix,omitempty"`
	// UserCode is the innermost frame of the event's user stack, "fn (file:line)".
	UserCode string `json:"user_code,omitempty"`
	// Code is that frame's source line, as the trace logged it.
	Code string `json:"code,omitempty"`
}

// Export issue types, as tlparse's draft-export report names them.
const (
	ExportGuardEvaluated  = "Guard Evaluated"
	ExportDataDependent   = "Data Dependent Error"
	ExportMissingFake     = "Missing Fake Kernel"
	ExportMismatchedFake  = "Mismatched Fake Kernel"
	maxExportIssuesPerRun = 10_000
)

// ExportReport is what an export (torch.export, draft export) logged in
// one input: the exported programs and the issues it ran into.
type ExportReport struct {
	Rank int    `json:"rank"`
	Path string `json:"path"`
	// Programs index Result.Artifacts: the exported_program payloads.
	Programs []int `json:"programs"`
	// Issues, in log order: guards evaluated during export (a possible
	// constraint violation), data-dependent expressions specialised by
	// real tensors (asserts inserted), custom ops without (or with a
	// wrong) fake kernel.
	Issues []ExportIssue `json:"issues"`
}

// ExportIssue is one problem an export logged.
type ExportIssue struct {
	Line     int    `json:"line"`
	Type     string `json:"type"`
	Expr     string `json:"expr,omitempty"`
	Result   string `json:"result,omitempty"` // what the expression was specialised to
	Op       string `json:"op,omitempty"`
	Reason   string `json:"reason,omitempty"`
	UserCode string `json:"user_code,omitempty"`
}

// Provenance maps the kernels Inductor generated for one graph to the
// post-grad FX nodes they compute and those to the pre-grad (user-level)
// nodes they came from, from the inductor_provenance_tracking_* artifacts.
type Provenance struct {
	Rank       int    `json:"rank"`
	Path       string `json:"path"`
	CompileID  string `json:"compile_id"` // "" outside any compile (AOTInductor)
	Occurrence int    `json:"occurrence,omitempty"`
	Line       int    `json:"line"`
	// Kernels in name order, capped at maxProvenanceKernels.
	Kernels []KernelProvenance `json:"kernels"`
	// StackTraces counts the kernels with a user stack trace
	// (inductor_provenance_tracking_kernel_stack_traces).
	StackTraces int `json:"stack_traces,omitempty"`
	// NodeMappings counts the inductor_provenance_tracking_node_mappings
	// events of the graph, EmptyMappings those with no payload (a graph
	// loaded from the FX-graph cache logs them so).
	NodeMappings  int `json:"node_mappings"`
	EmptyMappings int `json:"empty_mappings,omitempty"`
	// Artifacts index Result.Artifacts: the provenance payloads read.
	Artifacts []int `json:"artifacts"`

	fromMappings bool // Kernels came with their pre-grad nodes
}

// KernelProvenance is one generated kernel and where it came from.
type KernelProvenance struct {
	Kernel   string   `json:"kernel"`
	PostGrad []string `json:"post_grad"`
	PreGrad  []string `json:"pre_grad"`
}

const maxProvenanceKernels = 10_000

// provenanceArtifacts are the artifacts Provenance is read from.
var provenanceArtifacts = map[string]bool{
	"inductor_provenance_tracking_node_mappings": true, "inductor_triton_kernel_to_post_grad_nodes": true,
	"inductor_post_to_pre_grad_nodes": true, "inductor_provenance_tracking_kernel_stack_traces": true,
}

// userCode is the innermost frame of a logged stack (a JSON list of
// {line, name, filename, loc}, outermost first, file names interned), as
// "fn (file:line)", and its source line. A user stack ends in user code; a
// full stack (skipTorch) ends inside PyTorch, so its innermost frame
// outside torch/ is taken. Only the frames looked at are decoded: export
// stacks run to a hundred frames and every guard logs one.
func (f *fileAnalysis) userCode(list []byte, skipTorch bool) (string, string) {
	frames := f.frameScratch[:0]
	torchtrace.EachElement(list, func(v []byte) { frames = append(frames, v) })
	f.frameScratch = frames[:0]
	for i := len(frames) - 1; i >= 0; i-- {
		var line int
		var name, file, loc string
		torchtrace.EachFieldBytes(frames[i], func(k, v []byte) {
			switch string(k) {
			case "line":
				line, _ = torchtrace.IntValue(v)
			case "name":
				name = f.internValue(v)
			case "loc":
				loc, _ = torchtrace.StringValue(v)
			case "filename":
				if n, ok := torchtrace.IntValue(v); ok {
					if file = f.str(n); file == "" {
						file = fmt.Sprintf("<interned %d>", n)
					}
				} else {
					file = f.internValue(v)
				}
			}
		})
		if skipTorch && i > 0 && (strings.Contains(file, "/torch/") || strings.HasPrefix(file, "torch/")) {
			continue
		}
		return f.intern(name + " (" + file + ":" + strconv.Itoa(line) + ")"), loc
	}
	return "", ""
}

// scalarText prints a JSON value as the producer meant it: a string as
// is, anything else as JSON.
func scalarText(raw []byte) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if s, ok := torchtrace.StringValue(raw); ok {
		return s
	}
	return string(raw)
}

// shape reads a symbolic-shape event (and, for export, its issue) by field
// lookups: its stacks are most of its bytes and only one frame is used.
func (f *fileAnalysis) shape(rank int, u *unit, ev *torchtrace.Event, cid string) {
	se := ShapeEvent{Rank: rank, Path: f.in.Path, Line: ev.Line, CompileID: cid, Kind: ev.Kind}
	var val, value, result, userStack, stack []byte
	ok := torchtrace.EachFieldBytes(ev.Meta, func(k, v []byte) {
		switch string(k) {
		case "symbol":
			se.Symbol = f.intern(scalarText(v))
		case "expr":
			se.Expr = f.intern(scalarText(v))
		case "val":
			val = v
		case "value":
			value = v
		case "result":
			result = v
		case "vr":
			se.Range = f.intern(scalarText(v))
		case "source":
			if s := scalarText(v); s != "" {
				se.Sources = append(se.Sources, f.intern(s))
			}
		case "sources":
			for _, s := range stringList(v) {
				se.Sources = append(se.Sources, f.intern(s))
			}
		case "reason":
			se.Reason = f.intern(scalarText(v))
		case "prefix":
			se.Prefix = f.intern(scalarText(v))
		case "user_stack":
			userStack = v
		case "stack":
			stack = v
		}
	})
	if !ok {
		return
	}
	if u != nil {
		se.Occurrence = u.c.Occurrence
	}
	for _, v := range [][]byte{val, value, result} {
		if se.Value == "" {
			se.Value = f.intern(scalarText(v))
		}
	}
	if len(userStack) > 2 {
		se.UserCode, se.Code = f.userCode(userStack, false)
	} else {
		se.UserCode, se.Code = f.userCode(stack, true)
	}
	se.Code = f.intern(se.Code)
	if len(f.shapes) < f.maxShapes {
		f.shapes = append(f.shapes, se)
	} else {
		f.shapesDrop++
	}
	switch {
	case ev.Kind == ShapeGuardAdded && se.Prefix == "eval":
		f.exportIssue(ExportIssue{Line: ev.Line, Type: ExportGuardEvaluated, Expr: se.Expr, UserCode: se.UserCode,
			Reason: "this guard was evaluated during export and may have produced a constraint violation"})
	case ev.Kind == ShapeRealTensors:
		f.exportIssue(ExportIssue{Line: ev.Line, Type: ExportDataDependent, Expr: se.Expr, Result: se.Value, UserCode: se.UserCode,
			Reason: "export could not tell whether the expression always holds; it was specialised to the value real tensors gave, and asserts were inserted into the graph"})
	}
}

// fakeKernel reads missing_fake_kernel / mismatched_fake_kernel.
func (f *fileAnalysis) fakeKernel(ev *torchtrace.Event) {
	var m struct {
		Op     string `json:"op"`
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(ev.Meta, &m)
	is := ExportIssue{Line: ev.Line, Op: m.Op, Reason: m.Reason}
	if ev.Kind == "missing_fake_kernel" {
		is.Type = ExportMissingFake
		if is.Reason == "" {
			is.Reason = "torch.ops." + orDash(m.Op) + " has no fake kernel (register one with torch.library.register_fake)"
		}
	} else {
		is.Type = ExportMismatchedFake
	}
	f.exportIssue(is)
}

// exportReport is the file's export report, begun at its first event.
func (f *fileAnalysis) exportReport() *ExportReport {
	if f.export == nil {
		f.export = &ExportReport{Path: f.in.Path, Programs: []int{}, Issues: []ExportIssue{}}
	}
	return f.export
}

func (f *fileAnalysis) exportIssue(is ExportIssue) {
	if e := f.exportReport(); len(e.Issues) < maxExportIssuesPerRun {
		e.Issues = append(e.Issues, is)
	}
}

// exportedProgram notes an exported_program artifact (index art, -1 when
// it was over the artifact cap).
func (f *fileAnalysis) exportedProgram(art int) {
	if e := f.exportReport(); art >= 0 {
		e.Programs = append(e.Programs, art)
	}
}

// provenance reads one provenance artifact into its graph's Provenance.
func (f *fileAnalysis) provenance(rank int, u *unit, ev *torchtrace.Event, cid string, art int) {
	key := cid
	if u != nil {
		key = Ref(u.c.ID, u.c.Occurrence)
	}
	p := f.prov[key]
	if p == nil {
		p = &Provenance{Rank: rank, Path: f.in.Path, CompileID: unitOf(cid), Line: ev.Line, Artifacts: []int{}}
		if u != nil {
			p.CompileID, p.Occurrence = u.c.ID, u.c.Occurrence
		}
		if f.prov == nil {
			f.prov = map[string]*Provenance{}
		}
		f.prov[key] = p
		f.provOrder = append(f.provOrder, key)
	}
	if art >= 0 {
		p.Artifacts = append(p.Artifacts, art)
	}
	if ev.ArtifactName == "inductor_provenance_tracking_node_mappings" {
		p.NodeMappings++
		if ev.HasPayload == "" {
			p.EmptyMappings++
		}
	}
	if ev.BodyTruncated || ev.HasPayload == "" {
		return
	}
	switch ev.ArtifactName {
	case "inductor_provenance_tracking_node_mappings":
		// Every rank and every repeated compile logs the same mappings:
		// the kernels of a payload seen before are shared, not parsed again.
		if k, ok := f.provMemo[provKey{ev.ArtifactName, string(ev.Body)}]; ok {
			p.Kernels, p.fromMappings = k.([]KernelProvenance), true
			return
		}
		var m map[string]map[string][]string
		if json.Unmarshal(ev.Body, &m) != nil {
			return
		}
		toPost := map[string][]string{}
		for _, k := range []string{"cppCodeToPost", "pyCodeToPost"} {
			for kernel, nodes := range m[k] {
				toPost[kernel] = append(toPost[kernel], nodes...)
			}
		}
		p.setKernels(toPost, m["postToPre"])
		f.remember(ev, p.Kernels)
	case "inductor_triton_kernel_to_post_grad_nodes":
		if len(p.Kernels) > 0 {
			return // the node mappings said it all
		}
		toPost, ok := f.provMemo[provKey{ev.ArtifactName, string(ev.Body)}].(map[string][]string)
		if !ok {
			if json.Unmarshal(ev.Body, &toPost) != nil {
				return
			}
			f.remember(ev, toPost)
		}
		p.setKernels(toPost, f.postToPre[key])
	case "inductor_post_to_pre_grad_nodes":
		pre, ok := f.provMemo[provKey{ev.ArtifactName, string(ev.Body)}].(map[string][]string)
		if !ok {
			var m map[string][]struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(ev.Body, &m) != nil {
				return
			}
			pre = map[string][]string{}
			for post, list := range m {
				for _, n := range list {
					pre[post] = appendNew(pre[post], n.Name)
				}
			}
			f.remember(ev, pre)
		}
		if f.postToPre == nil {
			f.postToPre = map[string]map[string][]string{}
		}
		f.postToPre[key] = pre
		if len(p.Kernels) > 0 && !p.fromMappings {
			for i := range p.Kernels {
				k := &p.Kernels[i]
				for _, post := range k.PostGrad {
					for _, n := range pre[post] {
						k.PreGrad = appendNew(k.PreGrad, n)
					}
				}
			}
		}
	case "inductor_provenance_tracking_kernel_stack_traces":
		if n, ok := f.provMemo[provKey{ev.ArtifactName, string(ev.Body)}].(int); ok {
			p.StackTraces = n
			return
		}
		n := 0
		if torchtrace.EachFieldBytes(ev.Body, func(k, v []byte) { n++ }) {
			p.StackTraces = n
			f.remember(ev, n)
		}
	}
}

// provKey names a provenance payload already parsed: its artifact name and
// its bytes.
type provKey struct{ name, body string }

// remember keeps what a provenance payload parsed to, for the next copy of
// it (every rank, every repeated compile logs the same), within the bytes
// the cache-payload memo may hold. What is kept is only read after.
func (f *fileAnalysis) remember(ev *torchtrace.Event, v any) {
	if f.provMemoB+len(ev.Body) > provMemoBytes {
		return
	}
	if f.provMemo == nil {
		f.provMemo = map[provKey]any{}
	}
	f.provMemo[provKey{ev.ArtifactName, string(ev.Body)}] = v
	f.provMemoB += len(ev.Body)
}

// setKernels fills the kernels from kernel → post-grad nodes and post-grad
// → pre-grad nodes.
func (p *Provenance) setKernels(toPost, postToPre map[string][]string) {
	names := make([]string, 0, len(toPost))
	for k := range toPost {
		names = append(names, k)
	}
	sort.Strings(names)
	p.Kernels = nil // a fresh list: another Provenance may share the old one
	for i, k := range names {
		if i == maxProvenanceKernels {
			break
		}
		kp := KernelProvenance{Kernel: k, PostGrad: []string{}, PreGrad: []string{}}
		for _, post := range toPost[k] {
			kp.PostGrad = appendNew(kp.PostGrad, post)
			for _, pre := range postToPre[post] {
				kp.PreGrad = appendNew(kp.PreGrad, pre)
			}
		}
		p.Kernels = append(p.Kernels, kp)
	}
	p.fromMappings = postToPre != nil
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
