package pytrace

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func extract(t testing.TB, path string) []Traceback {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	x := NewExtractor()
	if _, err := enginelog.Parse(f, path, x.Add); err != nil {
		t.Fatal(err)
	}
	return x.Finish()
}

func funcs(s record.Stack) []string {
	var out []string
	for _, f := range s {
		out = append(out, f.Func+"@"+filepath.Base(f.File)+":"+itoa(f.Line))
	}
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestCorpusVLLM30905(t *testing.T) {
	tbs := extract(t, testcorpus.File(t, "engine-logs", "vllm-issue-30905.log"))
	// Line 7 opens a second traceback the excerpt cuts off: kept as a
	// header alone (an error was being printed), with nothing in it.
	if len(tbs) != 2 || tbs[1].Line != 7 || !tbs[1].Truncated || len(tbs[1].Chain) != 1 || tbs[1].Final().Type != "" || len(tbs[1].Final().Frames) != 0 {
		t.Fatalf("%d tracebacks: %+v", len(tbs), tbs)
	}
	tb := tbs[0]
	if tb.Line != 2 || tb.EndLine != 6 || tb.Rank.String() != "DP0 TP7" || tb.Rank.PID != 26373 || !tb.Truncated {
		t.Errorf("traceback %d-%d rank %q truncated %v", tb.Line, tb.EndLine, tb.Rank, tb.Truncated)
	}
	fin := tb.Final()
	if fin.Type != "torch._inductor.exc.InductorError" || fin.Line != 6 {
		t.Errorf("final %s line %d", fin.Type, fin.Line)
	}
	if got := funcs(fin.Frames); !reflect.DeepEqual(got, []string{"generate_and_run_autotune_block@wrapper.py:1695", "_generate@wrapper.py:1615"}) {
		t.Errorf("frames %v", got)
	}
	if fin.Code[0] != `raise RuntimeError(f"Failed to run autotuning code block: {e}") from e` {
		t.Errorf("code %q", fin.Code)
	}
	root := tb.Root()
	if root.Type != "RuntimeError" || root.Message != "Failed to run autotuning code block: name 'get_raw_stream' is not defined" || root.Line != 6 {
		t.Errorf("root %s: %q line %d", root.Type, root.Message, root.Line)
	}
}

func TestCorpusVLLM18851(t *testing.T) {
	tbs := extract(t, testcorpus.File(t, "engine-logs", "vllm-issue-18851.log"))
	if len(tbs) != 2 {
		t.Fatalf("%d tracebacks", len(tbs))
	}
	w := tbs[0]
	if w.Rank.Global != 1 || w.Rank.PID != 191128 || w.Line != 3 || w.EndLine != 10 {
		t.Errorf("worker traceback %d-%d rank %+v", w.Line, w.EndLine, w.Rank)
	}
	root := w.Root()
	if root.Type != "AssertionError" || root.Message != "failed to get the hash of the compiled graph" || root.Line != 8 {
		t.Errorf("root %s: %q line %d", root.Type, root.Message, root.Line)
	}
	if got := funcs(root.Frames); !reflect.DeepEqual(got, []string{"_call_user_compiler@output_graph.py:1519", "_call_user_compiler@output_graph.py:1544"}) {
		t.Errorf("frames %v", got)
	}
	// The main process's traceback is cut off before its exception.
	m := tbs[1]
	if m.Rank.Known() || m.Line != 13 || !m.Truncated || m.Root().Type != "" || len(m.Chain[0].Frames) != 4 || m.Chain[0].Frames[0].Func != "from_engine_args" {
		t.Errorf("main traceback %+v", m)
	}
}

func TestCorpusSGLang1117(t *testing.T) {
	tbs := extract(t, testcorpus.File(t, "engine-logs", "sglang-issue-1117.log"))
	if len(tbs) != 1 {
		t.Fatalf("%d tracebacks", len(tbs))
	}
	tb := tbs[0]
	e := tb.Chain[0]
	if tb.Line != 7 || tb.EndLine != 22 || !tb.Truncated || e.Type != "" || len(e.Frames) != 8 {
		t.Fatalf("traceback %d-%d truncated %v, %d frames", tb.Line, tb.EndLine, tb.Truncated, len(e.Frames))
	}
	if e.Frames[0].Func != "forward" || e.Frames[0].Line != 642 || e.Frames[7].Func != "run_tp_server" || e.Code[7] != "model_server = ModelTpServer(" || e.Code[0] != "" {
		t.Errorf("frames %v code %q", funcs(e.Frames), e.Code)
	}
}

func TestCorpusDoublePrefixTraceback(t *testing.T) {
	tbs := extract(t, testcorpus.File(t, "stackdumps", "vllm-issue-30905-traceback-double-prefix.txt"))
	if len(tbs) == 0 {
		t.Fatal("no traceback")
	}
	for _, tb := range tbs {
		if tb.Rank.TP != 7 || tb.Rank.DP != 0 {
			t.Errorf("rank %+v", tb.Rank)
		}
	}
	if f := tbs[0].Chain[0].Frames; len(f) == 0 || !strings.HasSuffix(f[len(f)-1].File, "torch/_inductor/compile_fx.py") {
		t.Errorf("frames %v", funcs(f))
	}
}

// Two TP workers print the same chained traceback line by line, each line
// with the vLLM header (as logger.exception does).
func TestInterleavedRanksWithChain(t *testing.T) {
	tbs := extract(t, filepath.Join("..", "..", "ingest", "enginelog", "testdata", "vllm-v1-tp2.log"))
	// The APIServer's closing "RuntimeError: Engine core initialization
	// failed" is an exception line without frames.
	if n := len(tbs); n != 3 || !tbs[2].Frameless || tbs[2].Final().Type != "RuntimeError" {
		t.Fatalf("%d tracebacks, want 2 and the frameless APIServer line", n)
	}
	tbs = tbs[:2]
	if len(tbs) != 2 {
		t.Fatalf("%d tracebacks", len(tbs))
	}
	for i, tb := range tbs {
		if tb.Rank.TP != i || tb.Line != 17+i || tb.EndLine != 47+i || tb.Truncated {
			t.Errorf("tb %d: TP%d lines %d-%d truncated %v", i, tb.Rank.TP, tb.Line, tb.EndLine, tb.Truncated)
		}
		if len(tb.Chain) != 2 || tb.Chain[0].Relation != "cause" || tb.Chain[1].Relation != "" {
			t.Fatalf("tb %d chain %+v", i, tb.Chain)
		}
		root := tb.Root()
		if root.Type != "KeyError" || root.Message != "'in_proj_qkvbfg_a'" || root.Line != 33+i {
			t.Errorf("tb %d root %s %q line %d", i, root.Type, root.Message, root.Line)
		}
		want := []string{"forward@model.py:456", "forward@model.py:748", "worker_busy_loop@multiproc_executor.py:810"}
		if got := funcs(root.Frames); !reflect.DeepEqual(got, want) {
			t.Errorf("tb %d frames %v", i, got)
		}
		// The inlined-callee artifact: the innermost frame shows the def line.
		if root.Code[0] != "def forward(" {
			t.Errorf("tb %d code %q", i, root.Code)
		}
		if fin := tb.Final(); fin.Type != "RuntimeError" || fin.Message != "profile run failed: KeyError('in_proj_qkvbfg_a')" {
			t.Errorf("tb %d final %+v", i, fin)
		}
	}
}

func TestSGLangContextChainAndWrapper(t *testing.T) {
	tbs := extract(t, filepath.Join("..", "..", "ingest", "enginelog", "testdata", "sglang-tp2.log"))
	if len(tbs) != 1 {
		t.Fatalf("%d tracebacks", len(tbs))
	}
	tb := tbs[0]
	if tb.Line != 7 || tb.EndLine != 22 || tb.Rank.String() != "DP0 TP1" || tb.Truncated {
		t.Errorf("tb %d-%d %q truncated %v", tb.Line, tb.EndLine, tb.Rank, tb.Truncated)
	}
	if len(tb.Chain) != 2 || tb.Chain[0].Relation != "context" {
		t.Fatalf("chain %+v", tb.Chain)
	}
	fin := tb.Final()
	if fin.Type != "Exception" || !strings.HasPrefix(fin.Message, "Capture cuda graph failed: Command") || !strings.HasSuffix(fin.Message, "(e.g., 16)") || !IsWrapper(fin) {
		t.Errorf("final %+v", fin)
	}
	root := tb.Root()
	if root.Type != "subprocess.CalledProcessError" || root.Line != 12 || !strings.HasPrefix(root.Message, "Command '['/usr/bin/gcc'") {
		t.Errorf("root %+v", root)
	}
}

func TestTorchrunPrefixedTraceback(t *testing.T) {
	tbs := extract(t, filepath.Join("..", "..", "ingest", "enginelog", "testdata", "torchrun.log"))
	if len(tbs) != 1 || tbs[0].Rank.Global != 1 || tbs[0].Root().Type != "ZeroDivisionError" || tbs[0].Root().Message != "division by zero" {
		t.Fatalf("%+v", tbs)
	}
	if got := funcs(tbs[0].Root().Frames); !reflect.DeepEqual(got, []string{"<module>@main.py:10"}) {
		t.Errorf("frames %v", got)
	}
}

func TestChainsFixture(t *testing.T) {
	tbs := extract(t, filepath.Join("testdata", "chains.txt"))
	if len(tbs) != 4 {
		t.Fatalf("%d tracebacks", len(tbs))
	}
	// 1. AOT graph-break error with a two-line message (seed 000).
	aot := tbs[0].Root()
	if aot.Type != "RuntimeError" || aot.Message != "Graph breaks are not supported with aot compile.\nPlease use torch.compile(fullgraph=True)." || tbs[0].EndLine != 7 {
		t.Errorf("aot %+v end %d", aot, tbs[0].EndLine)
	}
	// 2. Dynamo Unsupported with Explanation/Hint body, "from user code:"
	// and the footer kept out of the message.
	un := tbs[1].Root()
	if un.Type != "torch._dynamo.exc.Unsupported" || !strings.HasPrefix(un.Message, "Unsupported Tensor.item() call with capture_scalar_outputs=False\n  Explanation:") ||
		!strings.HasSuffix(un.Message, "gb/gb0124.html") || strings.Contains(un.Message, "from user code") || strings.Contains(un.Message, "TORCHDYNAMO_VERBOSE") {
		t.Errorf("unsupported message %q", un.Message)
	}
	if got := funcs(un.UserCode); !reflect.DeepEqual(got, []string{"forward@sparse_indexer.py:263", "forward@model.py:748"}) {
		t.Errorf("user code %v", got)
	}
	if got := funcs(un.Frames); !reflect.DeepEqual(got, []string{"method_item@tensor.py:1060", "run@symbolic_convert.py:1380"}) {
		t.Errorf("frames %v", got)
	}
	if tbs[1].EndLine != 29 {
		t.Errorf("end line %d", tbs[1].EndLine)
	}
	// 3. Recursion: carets skipped, "[Previous line repeated 996 more times]" kept.
	rec := tbs[2].Root()
	if rec.Type != "RecursionError" || len(rec.Frames) != 4 || !reflect.DeepEqual(rec.Repeated, []int{996, 0, 0, 0}) || rec.Code[3] != "result = divide(10, 0)" {
		t.Errorf("recursion %+v", rec)
	}
	// 4. Exception group: the group stands for its first member.
	g := tbs[3]
	if len(g.Chain) != 3 || g.Chain[0].Type != "ExceptionGroup" || g.Chain[0].Relation != "group" || g.Chain[1].Type != "ValueError" || g.Chain[2].Type != "TypeError" {
		t.Fatalf("group chain %+v", g.Chain)
	}
	if r := g.Root(); r.Type != "ValueError" || r.Message != "bad shape" || r.Line != 55 || funcs(r.Frames)[0] != "work@group.py:5" {
		t.Errorf("group root %+v", r)
	}
	if g.Chain[0].Message != "compile workers failed (2 sub-exceptions)" || g.EndLine != 60 {
		t.Errorf("group %q end %d", g.Chain[0].Message, g.EndLine)
	}
}

// Raw (unprefixed-header) lines from two processes alternate line by line.
func TestInterleavedBareLines(t *testing.T) {
	a := []string{"Traceback (most recent call last):", `  File "/a.py", line 1, in f`, "    g()", "ValueError: from a"}
	b := []string{"Traceback (most recent call last):", `  File "/b.py", line 2, in h`, "    k()", "  File \"/b.py\", line 9, in k", "TypeError: from b"}
	x := NewExtractor()
	ra := record.NoRank
	ra.PID, ra.Role = 10, "Worker"
	rb := record.NoRank
	rb.PID, rb.Role = 11, "Worker"
	line := 0
	for i := 0; i < len(b); i++ {
		if i < len(a) {
			line++
			x.Add(record.Record{Source: "s", Line: line, EndLine: line, Rank: ra, Text: a[i]})
		}
		line++
		x.Add(record.Record{Source: "s", Line: line, EndLine: line, Rank: rb, Text: b[i]})
	}
	tbs := x.Finish()
	if len(tbs) != 2 {
		t.Fatalf("%d tracebacks", len(tbs))
	}
	if r := tbs[0].Root(); tbs[0].Rank.PID != 10 || r.Type != "ValueError" || r.Message != "from a" || r.Line != 7 || len(r.Frames) != 1 {
		t.Errorf("a: %+v", tbs[0])
	}
	if r := tbs[1].Root(); tbs[1].Rank.PID != 11 || r.Type != "TypeError" || r.Line != 9 || len(r.Frames) != 2 || r.Frames[0].Func != "k" {
		t.Errorf("b: %+v", tbs[1])
	}
}

func TestUnwrap(t *testing.T) {
	cases := []struct {
		e        Exception
		typ, msg string
		ok       bool
	}{
		{Exception{Type: "torch._dynamo.exc.BackendCompilerFailed", Message: "backend='inductor' raised:\nAssertionError: failed to get the hash of the compiled graph"},
			"AssertionError", "failed to get the hash of the compiled graph", true},
		{Exception{Type: "BackendCompilerFailed", Message: "inductor raised KeyError: 'x'\n\nYou can suppress this exception"},
			"KeyError", "'x'\n\nYou can suppress this exception", true},
		{Exception{Type: "torch._inductor.exc.InductorError", Message: "LoweringException: NotImplementedError: bad\n  target: aten.foo"},
			"LoweringException", "NotImplementedError: bad\n  target: aten.foo", true},
		{Exception{Type: "Exception", Message: "Capture cuda graph failed: RuntimeError: CUDA error: out of memory"},
			"RuntimeError", "CUDA error: out of memory", true},
		{Exception{Type: "RuntimeError", Message: "Engine core initialization failed. See root cause above."}, "", "", false},
		{Exception{Type: "ValueError", Message: "x"}, "", "", false},
	}
	for _, c := range cases {
		got, ok := Unwrap(c.e)
		if ok != c.ok || got.Type != c.typ || (ok && got.Message != c.msg) {
			t.Errorf("Unwrap(%+v) = %+v, %v", c.e, got, ok)
		}
	}
	if !IsWrapper(Exception{Type: "RuntimeError", Message: "Engine core initialization failed. See root cause above. Failed core proc(s): {}"}) {
		t.Error("engine-core wrapper not recognised")
	}
	// Only wrappers: Root falls back to the inner error of the first.
	tb := Traceback{Chain: []Exception{
		{Type: "torch._inductor.exc.InductorError", Message: "RuntimeError: boom", Relation: "cause"},
		{Type: "RuntimeError", Message: "WorkerProc hit an exception."},
	}}
	if r := tb.Root(); r.Type != "RuntimeError" || r.Message != "boom" {
		t.Errorf("root %+v", r)
	}
}

func TestExceptionLine(t *testing.T) {
	for in, want := range map[string]string{
		"KeyError: 'in_proj_qkvbfg_a'":   "KeyError",
		"AssertionError":                 "AssertionError",
		"torch._dynamo.exc.Unsupported:": "torch._dynamo.exc.Unsupported",
		"Loading weights took 3 s":       "",
		"Note: something":                "",
		"main":                           "",
		"x.py:1: warning":                "",
		"RuntimeError: CUDA error: x":    "RuntimeError",
		"ray.exceptions.RayTaskError(ValueError): ray::W.execute_method()": "ray.exceptions.RayTaskError(ValueError)",
		"Foo(bar) baz: x": "",
	} {
		typ, _, ok := exceptionLine(in)
		if typ != want || ok != (want != "") {
			t.Errorf("exceptionLine(%q) = %q, %v", in, typ, ok)
		}
	}
}

// TestIdleMeansSkip: whenever Idle says so for a record's source, Skip
// reports true for the record, on every corpus engine log; and Idle is
// not always false (the test shows something).
func TestIdleMeansSkip(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join(testcorpus.Dir(t, "engine-logs"), "*.log"))
	idle := 0
	for _, p := range logs {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		x := NewExtractor()
		_, err = enginelog.Parse(f, p, func(r record.Record) {
			if x.Idle(r.Source) {
				idle++
				if !x.Skip(&r) {
					t.Fatalf("%s:%d: Idle, but Skip says the record may continue a traceback", p, r.Line)
				}
			}
			x.Add(r)
		})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if idle == 0 {
		t.Fatal("Idle never reported true")
	}
}

// TestPydanticLine: pydantic's one-line rendering of a validator's
// exception is an exception without frames, also alone in an excerpt.
func TestPydanticLine(t *testing.T) {
	x := NewExtractor()
	x.Add(record.Record{Source: "p", Line: 1, Rank: record.NoRank, Text: "  Value error, quantization fp8 is not supported on this GPU [type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]"})
	tbs := x.Finish()
	if len(tbs) != 1 || tbs[0].Root().Type != "ValueError" || tbs[0].Root().Message != "quantization fp8 is not supported on this GPU" {
		t.Fatalf("%+v", tbs)
	}
	// Under pydantic's own exception line it is that exception's message.
	x = NewExtractor()
	x.Add(record.Record{Source: "p", Line: 1, Rank: record.NoRank, Text: "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n  Value error, bad [type=value_error]"})
	if tbs := x.Finish(); len(tbs) != 1 || !strings.HasSuffix(tbs[0].Root().Type, "ValidationError") {
		t.Fatalf("under ValidationError: %+v", tbs)
	}
}

// The cheap line tests feed uses say what the strings calls they stand
// for say, on every line of the test logs and on the edges of each.
func TestCheapLineTestsMatchStrings(t *testing.T) {
	lines := []string{"", " ", "|", "   |", "  x|", "\t|", "Exception Group Traceback", "Exception Group Traceback (most recent call last):",
		"  + Exception Group Traceback (most recent call last):", "Exception Group Tracebac", "GGGGGGGGGGGGGGGGGGGGGGGGGGGGGG",
		`File "a.py", line 1, in f File "b.py", line 2, in g`, `File "File "`, `File "`, `File "a.py" File`, `xFile "File "`}
	m, _ := filepath.Glob(filepath.Join("..", "..", "ingest", "enginelog", "testdata", "*.log"))
	for _, p := range m {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(string(data), "\n")...)
	}
	for _, l := range lines {
		if got, want := mayOpenGroup(l), strings.Contains(l, "Exception Group Traceback"); got != want {
			t.Errorf("mayOpenGroup(%q) = %v, want %v", l, got, want)
		}
		if got, want := barAfterSpaces(l), strings.HasPrefix(strings.TrimLeft(l, " "), "|"); got != want {
			t.Errorf("barAfterSpaces(%q) = %v, want %v", l, got, want)
		}
		if got, want := twoFrames(l), strings.Count(l, `File "`) >= 2; got != want {
			t.Errorf("twoFrames(%q) = %v, want %v", l, got, want)
		}
		a1, a2 := isTracebackStart(l)
		if b1, b2 := isTracebackStartTrimmed(strings.TrimSpace(l)); a1 != b1 || a2 != b2 {
			t.Errorf("isTracebackStartTrimmed(%q) differs", l)
		}
	}
	if len(lines) < 100 {
		t.Errorf("only %d lines", len(lines))
	}
}
