package compiles

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/ingest/torchtrace"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// The failure chain names each exception of a reason, innermost first,
// for the shapes PyTorch writes: a custom backend, Inductor's nested
// wrappers, a fake-tensor failure, a Dynamo graph break under fullgraph.
func TestFailChainAndPhase(t *testing.T) {
	for _, tc := range []struct {
		failType, reason string
		phases           PhaseTimes
		chain            []string
		phase            string
	}{
		{"BackendCompilerFailed", "backend='broken_backend' raised:\nRuntimeError: broken backend",
			nil, []string{"RuntimeError: broken backend", "BackendCompilerFailed: backend='broken_backend' raised:"}, FailBackend},
		{"BackendCompilerFailed", "backend='inductor' raised:\nLoweringException: NotImplementedError: could not find kernel for aten.foo\n  target: aten.foo.default\n  args[0]: TensorBox(...)\n\nSet TORCH_LOGS=\"+dynamo\" and TORCHDYNAMO_VERBOSE=1 for more information",
			nil, []string{"NotImplementedError: could not find kernel for aten.foo", "LoweringException", "BackendCompilerFailed: backend='inductor' raised:"}, FailInductor},
		{"InductorError", "CompilationError: at 12:4:\n    x = tl.load(ptr)\nout of resource: shared memory",
			nil, []string{"CompilationError: at 12:4:", "InductorError"}, FailInductor},
		{"BackendCompilerFailed", "backend='aot_eager' raised:\nAssertionError: mutated input",
			nil, []string{"AssertionError: mutated input", "BackendCompilerFailed: backend='aot_eager' raised:"}, FailAOTAutograd},
		{"BackendCompilerFailed", "backend='inductor' raised:\nAssertionError: x",
			PhaseTimes{{"create_aot_dispatcher_function", 1}}, []string{"AssertionError: x", "BackendCompilerFailed: backend='inductor' raised:"}, FailAOTAutograd},
		{"TorchRuntimeError", "Dynamo failed to run FX node with fake tensors: call_function <built-in function add>(*(FakeTensor(..., size=(2,)), FakeTensor(..., size=(3,))), **{}): got RuntimeError('The size of tensor a (2) must match the size of tensor b (3)')\n\nfrom user code:\n   File \"/srv/m.py\", line 7, in forward\n    return x + y",
			nil, []string{"RuntimeError: The size of tensor a (2) must match the size of tensor b (3)",
				"TorchRuntimeError: Dynamo failed to run FX node with fake tensors: call_function <built-in function add>(*(FakeTensor(..., size=(2,)), FakeTensor(..., size=(3,))), **{}): got RuntimeError('The size of tensor a (2) must match the size of tensor b (3)')"}, FailDynamo},
		{"Unsupported", "Graph break under GenericContextWrappingVariable\n  Explanation: Attempted to graph break in an active context manager\n  Hint: Move the offending context manager(s) to outside the compiled region",
			nil, []string{"Unsupported: Graph break under GenericContextWrappingVariable"}, FailDynamo},
		{"", "", nil, nil, ""},
	} {
		chain := FailChain(tc.failType, tc.reason)
		if !reflect.DeepEqual(chain, tc.chain) {
			t.Errorf("FailChain(%s, %.40q)\n got %q\nwant %q", tc.failType, tc.reason, chain, tc.chain)
		}
		if tc.failType == "" {
			continue
		}
		if got := failPhase(tc.failType, chain, tc.reason, tc.phases); got != tc.phase {
			t.Errorf("failPhase(%s, %.40q) = %s, want %s", tc.failType, tc.reason, got, tc.phase)
		}
	}
}

// comp_failure.log: the backend failure is attributed to the backend, its
// chain is whole, the unit's user code is the compiled function, and the
// finding's phase and evidence say so too.
func TestCompFailureWhole(t *testing.T) {
	res := analyze(t, corpus(t, "comp_failure.log"))
	c := &res.Compiles[0]
	if c.FailPhase != FailBackend || len(c.FailChain) != 2 || c.FailChain[0] != "RuntimeError: broken backend" ||
		!strings.HasPrefix(c.UserCode, "fn (") || !strings.HasSuffix(c.UserCode, "test_misc.py:10755)") {
		t.Errorf("compile %+v", c)
	}
	set, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	fs := Conclude(res, set)
	if len(fs) == 0 || fs[0].Rule != "trace-compile-failed" || fs[0].Phase != FailBackend ||
		fs[0].Evidence[0].Text != "[0/0] RuntimeError: broken backend ← BackendCompilerFailed: backend='broken_backend' raised: (backend)" {
		t.Errorf("finding %+v", fs)
	}
}

func TestRefs(t *testing.T) {
	for _, tc := range []struct {
		id     string
		occ    int
		ref    string
		label  string
		parsed string
	}{{"1/0", 0, "1/0", "[1/0]", "1/0"}, {"1/0", 1, "1/0#2", "[1/0]#2", "1/0"}, {"!0/1/2", 5, "!0/1/2#6", "[!0/1/2]#6", "!0/1/2"}, {"", 0, "", "[-]", ""}} {
		if r := Ref(tc.id, tc.occ); r != tc.ref {
			t.Errorf("Ref(%q,%d) = %q", tc.id, tc.occ, r)
		}
		if l := Label(tc.id, tc.occ); l != tc.label {
			t.Errorf("Label(%q,%d) = %q", tc.id, tc.occ, l)
		}
		if id, occ := ParseRef(tc.ref); id != tc.parsed || occ != tc.occ {
			t.Errorf("ParseRef(%q) = %q, %d", tc.ref, id, occ)
		}
	}
	if id, occ := ParseRef("a#b"); id != "a#b" || occ != 0 {
		t.Errorf("ParseRef(a#b) = %q %d", id, occ)
	}
}

// cache_hit_miss.log compiles each id three times: every record that
// names a unit says which occurrence.
func TestOccurrencesEverywhere(t *testing.T) {
	res := analyze(t, corpus(t, "cache_hit_miss.log"))
	occ := map[int]int{}
	for _, ce := range res.Cache {
		occ[ce.Occurrence]++
	}
	if !reflect.DeepEqual(occ, map[int]int{0: 2, 1: 2, 2: 2}) {
		t.Errorf("cache lookups per occurrence %v", occ)
	}
	ph := map[string]bool{}
	for _, p := range res.Spans {
		ph[Ref(unitOf(p.CompileID), p.Occurrence)] = true
	}
	for _, want := range []string{"0/0", "0/0#2", "0/0#3", "1/0", "1/0#2", "1/0#3"} {
		if !ph[want] {
			t.Errorf("no phase of %s: %v", want, ph)
		}
	}
}

// A trace that logs symbolic shapes inside compiles (no corpus trace
// does): each kind becomes a ShapeEvent with its unit and user code.
func TestSymbolicShapes(t *testing.T) {
	ev := func(kind, meta string) string {
		return fmt.Sprintf(`V0101 00:00:01.000000 7 torch/fx/experimental/symbolic_shapes.py:1] {"%s": %s, "frame_id": 0, "frame_compile_id": 1, "attempt": 0}`+"\n", kind, meta)
	}
	us := `"user_stack": [{"line": 3, "name": "run", "filename": 0}, {"line": 12, "name": "forward", "filename": 0, "loc": "y = x[: n]"}], "stack": []`
	text := `V0101 00:00:00.000000 7 torch/_logging/structured.py:1] {"str": ["/srv/model.py", 0]}` + "\n" +
		`V0101 00:00:00.500000 7 torch/_dynamo/convert_frame.py:1] {"dynamo_start": {"stack": [{"line": 12, "name": "forward", "filename": 0}]}, "frame_id": 0, "frame_compile_id": 1, "attempt": 0}` + "\n" +
		ev("create_symbol", `{"symbol": "s0", "val": 8, "vr": "[2, int_oo]", "source": "L['x'].size()[0]", `+us+`}`) +
		ev("symbolic_shape_specialization", `{"symbol": "s0", "sources": ["L['x'].size()[0]"], "value": "8", "reason": "Eq(s0, 8)", `+us+`}`) +
		ev("guard_added_fast", `{"expr": "Eq(s0, 8)", `+us+`}`) +
		ev("guard_added", `{"expr": "s0 >= 2", "prefix": "eval", `+us+`}`) +
		`V0101 00:00:02.000000 7 torch/_dynamo/utils.py:1] {"compilation_metrics": {"co_name": "forward", "co_filename": "/srv/model.py", "co_firstlineno": 10}, "frame_id": 0, "frame_compile_id": 1, "attempt": 0}` + "\n"
	p := filepath.Join(t.TempDir(), "shapes.log")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	res := analyze(t, p)
	if len(res.Shapes) != 4 {
		t.Fatalf("shapes %+v", res.Shapes)
	}
	want := []ShapeEvent{
		{Kind: ShapeCreateSymbol, Symbol: "s0", Value: "8", Range: "[2, int_oo]", Sources: []string{"L['x'].size()[0]"}},
		{Kind: ShapeSpecialization, Symbol: "s0", Value: "8", Reason: "Eq(s0, 8)", Sources: []string{"L['x'].size()[0]"}},
		{Kind: ShapeGuardAddedFast, Expr: "Eq(s0, 8)"},
		{Kind: ShapeGuardAdded, Expr: "s0 >= 2", Prefix: "eval"},
	}
	for i, se := range res.Shapes {
		w := want[i]
		if se.Kind != w.Kind || se.Symbol != w.Symbol || se.Value != w.Value || se.Range != w.Range || se.Reason != w.Reason ||
			se.Expr != w.Expr || se.Prefix != w.Prefix || !reflect.DeepEqual(se.Sources, w.Sources) || se.CompileID != "0/1" ||
			se.UserCode != "forward (/srv/model.py:12)" || se.Code != "y = x[: n]" {
			t.Errorf("shape %d: %+v, want %+v", i, se, w)
		}
	}
	// A guard evaluated during export is an export issue.
	if len(res.Exports) != 1 || len(res.Exports[0].Issues) != 1 || res.Exports[0].Issues[0].Type != ExportGuardEvaluated {
		t.Errorf("exports %+v", res.Exports)
	}
}

// The export logs: tlparse's draft-export report counts one issue in each
// (a data-dependent expression, a guard evaluated), and the exported
// program is linked.
func TestExportReports(t *testing.T) {
	for name, want := range map[string]struct {
		typ, expr, result string
	}{
		"export.log":             {ExportDataDependent, "Eq((((-u0)//3)) + 5, 0)", "False"},
		"export_guard_added.log": {ExportGuardEvaluated, "Eq(s0, 3)", ""},
	} {
		res := analyze(t, corpus(t, name))
		if len(res.Exports) != 1 || len(res.Exports[0].Programs) != 1 || len(res.Exports[0].Issues) != 1 {
			t.Fatalf("%s: exports %+v", name, res.Exports)
		}
		is := res.Exports[0].Issues[0]
		if is.Type != want.typ || is.Expr != want.expr || is.Result != want.result || !strings.Contains(is.UserCode, "test_draft_export.py:") {
			t.Errorf("%s: issue %+v", name, is)
		}
		if a := res.Artifacts[res.Exports[0].Programs[0]]; a.Kind != "exported_program" {
			t.Errorf("%s: program artifact %+v", name, a)
		}
	}
	if res := analyze(t, corpus(t, "simple.log")); len(res.Exports) != 0 || len(res.Shapes) != 0 {
		t.Errorf("simple.log: exports %+v shapes %d", res.Exports, len(res.Shapes))
	}
}

// Provenance, JIT and AOT, old and new artifact names: kernels map to
// post-grad nodes and those to pre-grad nodes.
func TestProvenance(t *testing.T) {
	for name, want := range map[string]struct {
		id      string
		kernels int
		kernel  string
		pre     []string
	}{
		"inductor_provenance_jit_log.txt":     {"0/0", 3, "cpp_fused_mul_relu_sigmoid_0", []string{"x_2", "x_1", "d"}},
		"inductor_provenance_aot_log_old.txt": {"", 2, "cpp_fused_gelu_1", []string{"gelu"}},
		"inductor_provenance_aot_log.txt":     {"", 0, "", nil},
	} {
		res := analyze(t, corpus(t, name))
		if len(res.Provenance) == 0 {
			t.Fatalf("%s: no provenance", name)
		}
		p := res.Provenance[0]
		if p.CompileID != want.id || want.kernels > 0 && len(p.Kernels) != want.kernels {
			t.Errorf("%s: %s %d kernels", name, p.CompileID, len(p.Kernels))
		}
		for _, k := range p.Kernels {
			if k.Kernel == want.kernel && !reflect.DeepEqual(k.PreGrad, want.pre) {
				t.Errorf("%s: %s pre-grad %v, want %v", name, k.Kernel, k.PreGrad, want.pre)
			}
			if len(k.PostGrad) == 0 {
				t.Errorf("%s: %s has no post-grad nodes", name, k.Kernel)
			}
		}
	}
	res := analyze(t, corpus(t, "inductor_provenance_extended_log.txt"))
	if len(res.Provenance) != 1 || res.Provenance[0].StackTraces == 0 {
		t.Errorf("extended: %+v", res.Provenance)
	}
}

// Runs: a folder holding several is not one run. Files of one directory
// with distinct ranks are a run; the same rank twice in a directory, far
// apart in time, are two; directories of disjoint ranks at the same time
// (one per node) are one; a rank file with no record stays with its run.
func TestAssignRuns(t *testing.T) {
	in := func(path string, rank int, group string) Input {
		return Input{Path: path, Rank: rank, group: group, groupName: group}
	}
	st := func(first, last string) *torchtrace.Stats { return &torchtrace.Stats{FirstTime: first, LastTime: last} }
	inputs := []Input{
		in("a/r0.log", 0, "a"), in("a/r1.log", 1, "a"),
		in("n0/r0.log", 0, "n0"), in("n1/r2.log", 2, "n1"), in("n1/r3.log", 3, "n1"),
		in("m/r0_x.log", 0, "m"), in("m/r0_y.log", 0, "m"), in("m/r1_x.log", 1, "m"), in("m/r2_empty.log", 2, "m"),
		in("m/lone.log", -1, "m"),
	}
	stats := map[string]*torchtrace.Stats{
		"a/r0.log": st("0101 10:00:00.000000", "0101 10:05:00.000000"), "a/r1.log": st("0301 10:00:00.000000", "0301 10:05:00.000000"),
		"n0/r0.log": st("0601 10:00:00.000000", "0601 10:30:00.000000"), "n1/r2.log": st("0601 10:01:00.000000", "0601 10:31:00.000000"),
		"n1/r3.log":  st("0601 10:01:00.000000", "0601 10:31:00.000000"),
		"m/r0_x.log": st("0701 10:00:00.000000", "0701 10:10:00.000000"), "m/r1_x.log": st("0701 10:00:01.000000", "0701 10:10:00.000000"),
		"m/r0_y.log": st("0801 10:00:00.000000", "0801 10:10:00.000000"), "m/r2_empty.log": {},
		"m/lone.log": st("0701 10:00:00.000000", "0701 10:10:00.000000"),
	}
	assignRuns(inputs, stats)
	run := map[string]string{}
	for _, x := range inputs {
		run[x.Path] = x.Run
	}
	same := func(a, b string) bool { return run[a] == run[b] }
	if !same("a/r0.log", "a/r1.log") {
		t.Errorf("a directory of distinct ranks is one run whatever its times: %v", run)
	}
	if !same("n0/r0.log", "n1/r2.log") || !same("n1/r2.log", "n1/r3.log") || same("n0/r0.log", "a/r0.log") {
		t.Errorf("one directory per node: %v", run)
	}
	if same("m/r0_x.log", "m/r0_y.log") || !same("m/r0_x.log", "m/r1_x.log") || !same("m/r2_empty.log", "m/r0_x.log") {
		t.Errorf("one directory, two runs: %v", run)
	}
	if run["m/lone.log"] != "lone.log" {
		t.Errorf("a file without a rank is a run of its own, named by it: %v", run)
	}
	// One run: no names.
	one := []Input{in("a/r0.log", 0, "a"), in("a/r1.log", 1, "a")}
	assignRuns(one, stats)
	if one[0].Run != "" || one[1].Run != "" {
		t.Errorf("a single run is unnamed: %+v", one)
	}
}

func FuzzFailChain(f *testing.F) {
	f.Add("BackendCompilerFailed", "backend='broken_backend' raised:\nRuntimeError: broken backend")
	f.Add("InductorError", "LoweringException: NotImplementedError: x\n  target: y")
	f.Add("TorchRuntimeError", "call_function f: got RuntimeError('a')")
	f.Add("X", "")
	f.Fuzz(func(t *testing.T, failType, reason string) {
		chain := FailChain(failType, reason)
		if failType == "" {
			if chain != nil {
				t.Fatalf("chain %q without a fail type", chain)
			}
			return
		}
		if len(chain) == 0 || !strings.HasPrefix(chain[len(chain)-1], failType) {
			t.Fatalf("FailChain(%q, %q) = %q: the reported type must close the chain", failType, reason, chain)
		}
		_ = failPhase(failType, chain, reason, nil)
		c := Compile{FailType: failType, FailReason: reason, FailChain: chain}
		_ = FailHeadline(&c)
		_ = bestUserFrame(&c)
	})
}

func FuzzGlogSeconds(f *testing.F) {
	for _, s := range []string{"1206 15:20:13.928000", "0101 00:00:00.000000", "1399 99:99:99.9", "", "12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, ok := glogSeconds(s); ok && (v < 0 || v != v) {
			t.Fatalf("glogSeconds(%q) = %v", s, v)
		}
	})
}

// symbolicSeed is a trace of every symbolic-shape, export and provenance
// event kind, for the fuzzers.
func symbolicSeed() []byte {
	var sb strings.Builder
	line := func(kind, meta, payload string) {
		sb.WriteString(`V0101 00:00:00.000000 7 a.py:1] {"` + kind + `": ` + meta + `, "frame_id": 0, "frame_compile_id": 0, "attempt": 0`)
		if payload != "" {
			sum := md5.Sum([]byte(payload))
			sb.WriteString(`, "has_payload": "` + hex.EncodeToString(sum[:]) + `"}` + "\n\t" + payload + "\n")
			return
		}
		sb.WriteString("}\n")
	}
	line("create_symbol", `{"symbol": "s0", "val": 3, "user_stack": [{"line": 1, "name": "f", "filename": 9}]}`, "")
	line("symbolic_shape_specialization", `{"symbol": "s1", "sources": "x", "value": 4}`, "")
	line("guard_added", `{"expr": "s0 > 1", "prefix": "eval", "stack": [{"line": 2, "name": "g", "filename": "torch/x.py"}]}`, "")
	line("propagate_real_tensors_provenance", `{"expr": "u0 > 0", "result": "True"}`, "")
	line("missing_fake_kernel", `{"op": "mylib.foo"}`, "")
	line("exported_program", `{}`, "graph()")
	line("artifact", `{"name": "inductor_provenance_tracking_node_mappings", "encoding": "json"}`, `{"preToPost": {"a": ["b"]}, "postToPre": {"b": ["a"]}, "pyCodeToPost": {"k": ["b"]}}`)
	line("artifact", `{"name": "inductor_post_to_pre_grad_nodes", "encoding": "json"}`, `{"b": [{"name": "a"}]}`)
	line("artifact", `{"name": "inductor_triton_kernel_to_post_grad_nodes", "encoding": "json"}`, `{"k": ["b"]}`)
	line("artifact", `{"name": "inductor_provenance_tracking_kernel_stack_traces", "encoding": "json"}`, `{"k": ["line 1\\n  foo()"]}`)
	return []byte(sb.String())
}

func TestSymbolicSeedAnalyses(t *testing.T) {
	p := filepath.Join(t.TempDir(), "seed.log")
	if err := os.WriteFile(p, symbolicSeed(), 0o644); err != nil {
		t.Fatal(err)
	}
	res := analyze(t, p)
	if len(res.Shapes) != 4 || len(res.Exports) != 1 || len(res.Exports[0].Issues) != 3 || len(res.Exports[0].Programs) != 1 ||
		len(res.Provenance) != 1 || len(res.Provenance[0].Kernels) != 1 || res.Provenance[0].StackTraces != 1 {
		t.Errorf("shapes %d exports %+v provenance %+v", len(res.Shapes), res.Exports, res.Provenance)
	}
	samePipelined(t, symbolicSeed())
	if _, err := os.Stat(testcorpus.Root()); err != nil {
		t.Fatal(err)
	}
}
