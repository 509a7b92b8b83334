package pytrace

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bringup-tool/bringup/record"
)

// feedLines feeds one record per line, numbered from 1, on one rank.
func feedLines(lines ...string) []Traceback {
	x := NewExtractor()
	for i, l := range lines {
		x.Add(record.Record{Source: "s", Line: i + 1, EndLine: i + 1, Rank: record.NoRank, Text: l})
	}
	return x.Finish()
}

// feedN is feedLines that fails the test unless want tracebacks come out.
func feedN(t *testing.T, want int, lines ...string) []Traceback {
	t.Helper()
	tbs := feedLines(lines...)
	if len(tbs) != want {
		t.Fatalf("%d tracebacks, want %d: %+v", len(tbs), want, tbs)
	}
	return tbs
}

// A build log quotes a Python traceback's tail under its own "error:"
// line: the frame ends that frameless message and the exception after it
// is a traceback of its own, with the frame.
func TestFrameEndsFramelessMessage(t *testing.T) {
	tbs := feedN(t, 2,
		"error: builder for 'x.drv' failed with exit code 1;",
		"       last 25 log lines:",
		`  File "/site-packages/triton/runtime/cache.py", line 115, in put`,
		"    f.write(data)",
		"OSError: [Errno 28] No space left on device",
	)
	if r := tbs[0].Root(); !tbs[0].Frameless || r.Message != "builder for 'x.drv' failed with exit code 1;\n       last 25 log lines:" {
		t.Errorf("first: %+v", tbs[0])
	}
	r := tbs[1].Root()
	if r.Type != "OSError" || r.Line != 5 || len(r.Frames) != 1 || r.Frames[0].Func != "put" || r.Code[0] != "f.write(data)" {
		t.Errorf("second: %+v", tbs[1])
	}
}

// Dynamo prints an exception without frames, its "Developer debug
// context", two blank lines, then "from user code:": those frames are the
// exception's user code; two blank lines before anything else still end
// the message.
func TestFramelessUserCodeAfterTwoBlanks(t *testing.T) {
	tbs := feedN(t, 1,
		"torch._dynamo.exc.Unsupported: Observed exception",
		"  Explanation: Dynamo found no exception handler",
		"  Developer debug context: raised exception KeyError('down')",
		"",
		"",
		"from user code:",
		`   File "/w/model.py", line 19, in forward`,
		"    return self.d['down'](x)",
	)
	r := tbs[0].Root()
	if r.Type != "torch._dynamo.exc.Unsupported" || len(r.UserCode) != 1 || r.UserCode[0].Func != "forward" || r.UserCode[0].Line != 19 {
		t.Errorf("root: %+v", r)
	}
	if want := "Observed exception\n  Explanation: Dynamo found no exception handler\n  Developer debug context: raised exception KeyError('down')"; r.Message != want {
		t.Errorf("message %q, want %q", r.Message, want)
	}

	tbs = feedLines(
		"RuntimeError: first",
		"  detail",
		"",
		"",
		"  indented after two blank lines",
		"ValueError: second",
	)
	if len(tbs) != 2 || tbs[0].Root().Message != "first\n  detail" || tbs[1].Root().Type != "ValueError" {
		t.Errorf("two blank lines must end the message: %+v", tbs)
	}
}

// Head is the line a traceback started on, trimmed and clipped to
// maxHead bytes on a UTF-8 boundary.
func TestHead(t *testing.T) {
	tbs := feedN(t, 1,
		"  Scheduler hit an exception: Traceback (most recent call last):",
		`  File "/a.py", line 1, in f`,
	)
	if len(tbs) != 1 || tbs[0].Head != "Scheduler hit an exception: Traceback (most recent call last):" || !tbs[0].Truncated {
		t.Fatalf("%+v", tbs)
	}
	if tbs := feedN(t, 1, `  File "/a.py", line 1, in f`); tbs[0].Head != "" {
		t.Errorf("a traceback whose header was cut off has no head: %q", tbs[0].Head)
	}
	long := "RuntimeError: " + strings.Repeat("é", maxHead)
	tbs = feedLines(long)
	if len(tbs) != 1 || len(tbs[0].Head) > maxHead || !utf8.ValidString(tbs[0].Head) || !strings.HasPrefix(long, tbs[0].Head) || len(tbs[0].Head) < maxHead-1 {
		t.Fatalf("head of a long line: %q", tbs[0].Head)
	}
}

// Frames whose indent a launcher's prefix ate (Ray's "(Actor pid=N) "
// before every line, a "~/" path): each frame's source line comes at
// column 0 too and is its source, not the end of the traceback; a second
// line at column 0 that is no frame still cuts it.
func TestFramesAtColumnZero(t *testing.T) {
	tbs := feedLines(
		`File "~/.venv/lib/python3.12/site-packages/openrlhf/trainer/ray/vllm_engine.py", line 58, in init_process_group`,
		"return self.llm.collective_rpc(",
		"^^^^^^^^^^^^^^^^^^^^^^^^",
		`File "~/.venv/lib/python3.12/site-packages/vllm/entrypoints/llm.py", line 495, in collective_rpc`,
		"executor = self.llm_engine.model_executor",
		"AttributeError: 'LLMEngine' object has no attribute 'model_executor'",
	)
	r := tbs[0].Root()
	if r.Type != "AttributeError" || len(r.Frames) != 2 || r.Frames[0].Func != "collective_rpc" || r.Frames[1].File != "~/.venv/lib/python3.12/site-packages/openrlhf/trainer/ray/vllm_engine.py" ||
		r.Code[0] != "executor = self.llm_engine.model_executor" || r.Code[1] != "return self.llm.collective_rpc(" {
		t.Errorf("root: %+v", r)
	}

	tbs = feedLines(
		`File "/a.py", line 1, in f`,
		"g()",
		"and then something else",
	)
	if len(tbs) != 1 || !tbs[0].Truncated || tbs[0].Final().Code[0] != "g()" || len(tbs[0].Final().Frames) != 1 {
		t.Errorf("cut after the source line: %+v", tbs)
	}
}

// "  at FILE:LINE func" lines under an exception line (the form loggers
// and summaries print, innermost first) are its frames.
func TestAtFrames(t *testing.T) {
	tbs := feedN(t, 1,
		"AssertionError: Expected tensors only, but got: <class 'int'>",
		"  at torch/_inductor/utils.py:3442 copy_misaligned_inputs",
		"  at torch/_inductor/output_code.py:460 __call__",
		"  at the end of the day", // no frame: part of the message
	)
	r := tbs[0].Root()
	want := record.Stack{{File: "torch/_inductor/utils.py", Line: 3442, Func: "copy_misaligned_inputs"}, {File: "torch/_inductor/output_code.py", Line: 460, Func: "__call__"}}
	if !reflect.DeepEqual(r.Frames, want) || len(r.Code) != 2 || r.Message != "Expected tensors only, but got: <class 'int'>\n  at the end of the day" {
		t.Errorf("%+v", r)
	}
	for _, l := range []string{"at x.py:1 f", "  at x.py:0 f", "  at x.py:3 f()", "  at x.pyc:3 f", "  at x.py:3"} {
		if f, ok := parseAtFrame(l); ok {
			t.Errorf("%q read as a frame: %+v", l, f)
		}
	}
}

// Two exceptions printed without frames and joined by "The above
// exception was the direct cause …" are one chain (Dynamo under
// fullgraph: "Unsupported: Dynamo recompile limit exceeded", then
// "FailOnRecompileLimitHit"): the root is the cause, the first one.
func TestFramelessChain(t *testing.T) {
	tbs := feedN(t, 1,
		"torch._dynamo.exc.Unsupported: Dynamo recompile limit exceeded",
		"  Explanation: the recompile limit was reached",
		"",
		"The above exception was the direct cause of the following exception:",
		"",
		"torch._dynamo.exc.FailOnRecompileLimitHit: Hard failure due to fullgraph=True",
	)
	tb := tbs[0]
	if len(tb.Chain) != 2 || tb.Chain[1].Type != "torch._dynamo.exc.FailOnRecompileLimitHit" || tb.Chain[1].Line != 6 {
		t.Fatalf("chain: %+v", tb.Chain)
	}
	if r := tb.Root(); r.Type != "torch._dynamo.exc.Unsupported" || r.Line != 1 {
		t.Errorf("root %+v, want the Unsupported of line 1", r)
	}
}

// An excerpt whose first line is a frame cut inside its path (no
// `File "`) still starts a traceback: a bare exception name after its
// frames is its exception line.
func TestFirstLineCutFrame(t *testing.T) {
	tbs := feedN(t, 1,
		`lmdeploy/turbomind/deploy/target_model/base.py", line 240, in save_split`,
		"    assert tensor.shape[split_dim] % tp == 0",
		"AssertionError",
	)
	r := tbs[0].Root()
	if r.Type != "AssertionError" || len(r.Frames) != 1 || r.Frames[0].Func != "save_split" || r.Frames[0].Line != 240 {
		t.Errorf("root %+v", r)
	}
}

// A Rust program's error chain ("Error: …", "Caused by:", numbered
// causes) is one exception whose root is its innermost cause.
func TestRustErrorChain(t *testing.T) {
	tbs := feedN(t, 1,
		"Error: Failed to connect to etcd server",
		"",
		"Caused by:",
		"    0: creating primary lease",
		`    1: grpc request error: message: "tcp connect error: Connection refused (os error 111)"`,
	)
	if r := tbs[0].Root(); r.Type != "Error" || r.Message != `grpc request error: message: "tcp connect error: Connection refused (os error 111)"` {
		t.Errorf("root %+v", r)
	}
}

// A process that says an exception ends it ("Caught an exception,
// terminating children") and then logs the exception at INFO died of it:
// the exception is read as an error, with the line that said so. The same
// exception line logged at INFO with no such line before it, or too far
// after one, stays no error.
func TestEndingLinePromotesLoggedException(t *testing.T) {
	feed := func(gap int) []Traceback {
		x := NewExtractor()
		x.Add(record.Record{Source: "s", Line: 1, EndLine: 1, Rank: record.NoRank, Level: record.LevelInfo, Text: "Caught an exception, terminating children"})
		n := 2 + gap
		x.Add(record.Record{Source: "s", Line: n, EndLine: n + 1, Rank: record.NoRank, Level: record.LevelInfo, Text: "NoValidChoicesError: No choices to select\n  target: flex_attention_backward"})
		return x.Finish()
	}
	tbs := feed(0)
	if len(tbs) != 1 {
		t.Fatalf("%d tracebacks, want 1: %+v", len(tbs), tbs)
	}
	if r := tbs[0].Root(); r.Type != "NoValidChoicesError" || tbs[0].Level != record.LevelError || tbs[0].Ending != "Caught an exception, terminating children" {
		t.Errorf("got %+v", tbs[0])
	}
	if tbs := feed(endingLines); len(tbs) != 0 {
		t.Errorf("%d lines after the ending line: %+v", endingLines+1, tbs)
	}
	x := NewExtractor()
	x.Add(record.Record{Source: "s", Line: 1, EndLine: 1, Rank: record.NoRank, Level: record.LevelInfo, Text: "RuntimeError: retrying"})
	if tbs := x.Finish(); len(tbs) != 0 {
		t.Errorf("an exception logged at INFO alone: %+v", tbs)
	}
}

// An excerpt cut down to a traceback's last source line, a raise or an
// assert, raises what that line raises (FromSource); when the exception
// line follows, it is the error.
func TestCutToSourceLine(t *testing.T) {
	tbs := feedN(t, 1, `    assert camem_available, "camem allocator is not available"`)
	if r := tbs[0].Root(); r.Type != "AssertionError" || r.Message != "camem allocator is not available" || !r.FromSource || r.Line != 1 {
		t.Errorf("assert: %+v", tbs[0])
	}
	tbs = feedN(t, 1, `    raise RuntimeError(`, "RuntimeError: world_size (8) is not equal to tensor_model_parallel_size (4)")
	if r := tbs[0].Root(); r.Type != "RuntimeError" || r.FromSource || r.Line != 2 {
		t.Errorf("raise then its exception line: %+v", tbs[0])
	}
	feedN(t, 0, `    x = assert_ok(y)`)
	for _, c := range []struct{ code, typ, msg string }{
		{`assert x`, "AssertionError", ""},
		{`assert x, f"bad {x}"`, "AssertionError", "bad {x}"}, // an f-string as written, as for raise
		{`assert x, 'it "quoted"'`, "AssertionError", `it "quoted"`},
		{`raise ValueError("no")`, "ValueError", "no"},
	} {
		if typ, msg, ok := raisedBy(c.code); !ok || typ != c.typ || msg != c.msg {
			t.Errorf("raisedBy(%q) = %q %q %v", c.code, typ, msg, ok)
		}
	}
}

// Frames under a line that says a stack follows for information (Dynamo's
// "… from user code at:", Inductor's "skipping cudagraphs … Found from :",
// logging's stack_info) are no traceback: with no header they read as one
// cut before its exception line, a fatal error in a healthy run
// (pytorch/torchdynamo#930, ultralytics#21975). A traceback after them is
// still read, with its own frames only.
func TestStackPrintIsNoTraceback(t *testing.T) {
	texts := []string{
		"skipping cudagraphs due to cpu device (arg2_1). Found from : \n" +
			"   File \"/u/loss.py\", line 262, in torch_dynamo_resume_in___call___at_259\n" +
			"    targets = torch.cat((a, b), 1)",
		"Torchdynamo: [WARNING] Graph break: generic_jump TensorVariable() from user code at:   ",
		"   File \"/b/torchbench.py\", line 363, in <module>\n    main(r)\n  File \"/b/common.py\", line 1725, in main\n    run()",
		"Stack (most recent call last):\n  File \"/x/serve.py\", line 3, in <module>\n    log.info('up', stack_info=True)",
		"Traceback (most recent call last):\n  File \"/a.py\", line 1, in f\n    g()\nValueError: real",
	}
	var recs []record.Record
	for i, tx := range texts {
		recs = append(recs, record.Record{Source: "s", Line: 10 * (i + 1), EndLine: 10*(i+1) + 3, Rank: record.NoRank, Text: tx})
	}
	tbs := extractRecords(recs)
	if len(tbs) != 1 {
		t.Fatalf("%d tracebacks, want 1: %+v", len(tbs), tbs)
	}
	if r := tbs[0].Root(); r.Type != "ValueError" || len(r.Frames) != 1 || r.Frames[0].Func != "f" {
		t.Errorf("the real traceback: %+v", tbs[0])
	}
}

// A paste that indented a whole traceback by two (frames at 4, source at
// 6) puts the exception line at 2, below the frames' indent: it is the
// exception, not a source line (kserve#4501 read as cut before it).
func TestIndentedPasteException(t *testing.T) {
	text := "  Traceback (most recent call last):\n" +
		"    File \"/k/vllm_model.py\", line 141, in start_engine\n" +
		"      OpenAIServingChat(\n" +
		"  TypeError: OpenAIServingChat.__init__() got an unexpected keyword argument 'enable_reasoning'"
	tbs := extractRecords([]record.Record{{Source: "s", Line: 1, EndLine: 4, Rank: record.NoRank, Text: text}})
	if len(tbs) != 1 {
		t.Fatalf("%d tracebacks", len(tbs))
	}
	if r := tbs[0].Root(); r.Type != "TypeError" || r.Line != 4 || len(r.Frames) != 1 || r.Frames[0].Func != "start_engine" || len(r.Code) != 1 {
		t.Errorf("%+v", tbs[0])
	}
	// Source lines at the frames' indent or deeper stay source lines.
	src := "Traceback (most recent call last):\n  File \"/a.py\", line 1, in f\n    x = Foo: bar\nValueError: v"
	tbs = extractRecords([]record.Record{{Source: "s", Line: 1, EndLine: 4, Rank: record.NoRank, Text: src}})
	if len(tbs) != 1 || tbs[0].Root().Type != "ValueError" {
		t.Errorf("plain traceback: %+v", tbs)
	}
}

// Dynamo's structured message printed without its exception line (an app
// that shows str(e), comfyui-kjnodes#599): its title line and the
// "  Explanation:" under it are a torch._dynamo.exc.Unsupported, read so
// and said so. A title with no Explanation under it is plain text.
func TestDynamoMessageWithoutTypeLine(t *testing.T) {
	text := "Unsupported method call\n" +
		"  Explanation: Dynamo does not know how to trace method __mul__ of class PyCSimpleType\n" +
		"  Hint: Avoid calling PyCSimpleType.__mul__ in your code.\n" +
		"  Developer debug context: call_method UserDefinedClassVariable(<class 'ctypes.c_ulong'>) __mul__"
	tbs := extractRecords([]record.Record{
		{Source: "s", Line: 1, EndLine: 1, Rank: record.NoRank, Text: "Loading the model"},
		{Source: "s", Line: 3, EndLine: 6, Rank: record.NoRank, Text: text},
	})
	if len(tbs) != 1 {
		t.Fatalf("%d tracebacks: %+v", len(tbs), tbs)
	}
	r := tbs[0].Root()
	if r.Type != "torch._dynamo.exc.Unsupported" || r.TypeRead == "" || r.Line != 3 || !strings.HasPrefix(r.Message, "Unsupported method call\n  Explanation: Dynamo does not know") {
		t.Errorf("%+v", r)
	}
	if tbs := extractRecords([]record.Record{{Source: "s", Line: 1, EndLine: 2, Rank: record.NoRank, Text: "Unsupported method call\n  then more"}}); len(tbs) != 0 {
		t.Errorf("a title alone: %+v", tbs)
	}
}

// pytest reports a failed assert as "E   assert 30 == 0" (the enginelog
// reader peels the mark and sets the level): an AssertionError at error
// level, and the same words as a plain or info line are not one.
func TestPytestAssertLine(t *testing.T) {
	x := NewExtractor()
	x.Add(record.Record{Source: "s", Line: 1, EndLine: 1, Level: record.LevelError, Text: "assert 30 == 0"})
	x.Add(record.Record{Source: "s", Line: 2, EndLine: 2, Level: record.LevelInfo, Text: "assert 1 == 2"})
	x.Add(record.Record{Source: "s", Line: 3, EndLine: 3, Text: "assert x"})
	tbs := x.Finish()
	if len(tbs) != 1 {
		t.Fatalf("%d tracebacks: %+v", len(tbs), tbs)
	}
	if r := tbs[0].Root(); r.Type != "AssertionError" || r.Message != "assert 30 == 0" || r.Line != 1 {
		t.Errorf("root: %+v", r)
	}
}

// A paste marks the lines it left out with "... " (or "… ") before the
// line it kept: the exception line after it is still read.
func TestElidedLineMark(t *testing.T) {
	for _, l := range []string{"... EngineDeadError: EngineCore encountered an issue.", "\u2026 EngineDeadError: EngineCore encountered an issue."} {
		tbs := feedN(t, 1, "[shutdown] EngineCore: start mode=abort timeout=0s", l)
		if r := tbs[0].Root(); r.Type != "EngineDeadError" || r.Message != "EngineCore encountered an issue." || r.Line != 2 {
			t.Errorf("%q: root %+v", l, r)
		}
	}
	feedN(t, 0, "... and 3 more", "...so it goes: on")
}

// logging's exception() prints its message at error level, then the
// traceback: the message is the traceback's Before, also from a record of
// its own; a line at a lower level, a blank between or another rank's line
// is not.
func TestBeforeTraceback(t *testing.T) {
	feed := func(recs ...record.Record) []Traceback {
		x := NewExtractor()
		for _, r := range recs {
			x.Add(r)
		}
		return x.Finish()
	}
	tb := "Traceback (most recent call last):\n  File \"/x/engine.py\", line 3, in run\n    f()"
	one := feed(record.Record{Source: "s", Line: 1, EndLine: 4, Level: record.LevelError, Rank: record.NoRank, Text: "not enough values to unpack (expected 3, got 2)\n" + tb})
	if len(one) != 1 || one[0].Before != "not enough values to unpack (expected 3, got 2)" {
		t.Errorf("same record: %+v", one)
	}
	two := feed(record.Record{Source: "s", Line: 1, EndLine: 1, Level: record.LevelError, Rank: record.NoRank, Text: "Failed to initialize executor on rank 0: boom"},
		record.Record{Source: "s", Line: 2, EndLine: 4, Level: record.LevelError, Rank: record.NoRank, Text: tb})
	if len(two) != 1 || two[0].Before != "Failed to initialize executor on rank 0: boom" {
		t.Errorf("records of their own: %+v", two)
	}
	info := feed(record.Record{Source: "s", Line: 1, EndLine: 1, Level: record.LevelInfo, Rank: record.NoRank, Text: "loading"},
		record.Record{Source: "s", Line: 2, EndLine: 4, Level: record.LevelError, Rank: record.NoRank, Text: tb})
	gap := feed(record.Record{Source: "s", Line: 1, EndLine: 1, Level: record.LevelError, Rank: record.NoRank, Text: "boom"},
		record.Record{Source: "s", Line: 3, EndLine: 5, Level: record.LevelError, Rank: record.NoRank, Text: tb})
	other := feed(record.Record{Source: "s", Line: 1, EndLine: 1, Level: record.LevelError, Rank: record.Rank{DP: -1, PP: -1, TP: 1, EP: -1, Global: -1}, Text: "boom"},
		record.Record{Source: "s", Line: 2, EndLine: 4, Level: record.LevelError, Rank: record.NoRank, Text: tb})
	for name, tbs := range map[string][]Traceback{"info": info, "gap": gap, "other rank": other} {
		if len(tbs) != 1 || tbs[0].Before != "" {
			t.Errorf("%s: %+v", name, tbs)
		}
	}
}

// A frame's source line with the next frame glued on (the paste lost the
// newline and the next line's prefix is left in the middle) is two lines:
// the traceback goes on to its exception (vllm-fork PR 1559).
func TestGluedFrame(t *testing.T) {
	tbs := feedN(t, 1,
		`File "/w/vllm/worker/hpu_model_runner.py", line 2561, in warmup_scenario`,
		`inputs = self.prepare_model_input_align_worker( [rank0]: File "/w/vllm/worker/model_runner_base.py", line 233, in prepare_model_input_align_worker`,
		"raise NotImplementedError",
		"NotImplementedError",
	)
	r := tbs[0].Root()
	if r.Type != "NotImplementedError" || len(r.Frames) != 2 || r.Frames[0].Func != "prepare_model_input_align_worker" {
		t.Errorf("root: %+v", r)
	}
	if gluedFrame(`  File "/a.py", line 3, in f`) != 0 || gluedFrame(`see File "the manual"`) != 0 {
		t.Error("no glued frame there")
	}
}

// "Error <doing> …: <why>" is an error in words (sgl-router's "Error
// starting router: …"); Hydra's heading of a traceback, a capitalised or
// long head, or no reason after the colon is not.
func TestErrorDoingLine(t *testing.T) {
	for line, want := range map[string]bool{
		"Error starting router: argument 'worker_urls': 'NoneType' object cannot be converted to 'Sequence'": true,
		"Error loading model weights: file is truncated":                                                     true,
		"Error executing job with overrides: []":                                                             false,
		"Error handling: enabled":                                                                            false,
		"Error Starting Router: x":                                                                           false,
		"Error starting:":                                                                                    false,
		"Error rate: 0.1%":                                                                                   false,
	} {
		if got := errorDoing(line); got != want {
			t.Errorf("errorDoing(%q) = %v", line, got)
		}
	}
}

// A warning that says the program went on, its exc_info traceback printed
// on the next line (pytorch PR 148933's "assuming every input is
// mutated"): the traceback is logged at the warning's level. A warning
// that says nothing of going on, or a blank line between, leaves the
// traceback unlogged (a crash right after a warning is a crash).
func TestWentOnWarning(t *testing.T) {
	feed := func(recs ...record.Record) []Traceback {
		x := NewExtractor()
		for _, r := range recs {
			x.Add(r)
		}
		return x.Finish()
	}
	tb := "Traceback (most recent call last):\n  File \"/x/wrap.py\", line 3, in run\n    f()\nTypeError: f() missing 1 required positional argument"
	went := feed(record.Record{Source: "s", Line: 1, EndLine: 1, Level: record.LevelWarning, Rank: record.NoRank, Text: "Encountered an exception in identify_mutated_tensors, assuming every input is mutated"},
		record.Record{Source: "s", Line: 2, EndLine: 5, Rank: record.NoRank, Text: tb})
	if len(went) != 1 || went[0].Level != record.LevelWarning || went[0].Before != "" {
		t.Errorf("went on: %+v", went)
	}
	plain := feed(record.Record{Source: "s", Line: 1, EndLine: 1, Level: record.LevelWarning, Rank: record.NoRank, Text: "Your GPU is old"},
		record.Record{Source: "s", Line: 2, EndLine: 5, Rank: record.NoRank, Text: tb})
	gap := feed(record.Record{Source: "s", Line: 1, EndLine: 1, Level: record.LevelWarning, Rank: record.NoRank, Text: "x failed, falling back to eager"},
		record.Record{Source: "s", Line: 3, EndLine: 6, Rank: record.NoRank, Text: tb})
	for name, tbs := range map[string][]Traceback{"plain warning": plain, "gap": gap} {
		if len(tbs) != 1 || tbs[0].Level != "" {
			t.Errorf("%s: %+v", name, tbs)
		}
	}
}

// A warning's exc_info traceback without words that it went on: it is the
// warning's when its outermost frame is in the logger's module (torchtitan
// issue 2772's "WARNING:torch._inductor.codecache:Failed to pickle cache
// key"); a traceback that starts elsewhere (a crash's, at the program's
// entry) stays unlogged.
func TestLoggedByWarning(t *testing.T) {
	feed := func(file string) []Traceback {
		x := NewExtractor()
		x.Add(record.Record{Source: "s", Line: 1, EndLine: 1, Level: record.LevelWarning, Emitter: "torch._inductor.codecache", Rank: record.NoRank, Text: "Failed to pickle cache key"})
		x.Add(record.Record{Source: "s", Line: 2, EndLine: 5, Rank: record.NoRank,
			Text: "Traceback (most recent call last):\n  File \"" + file + "\", line 649, in dumps\n    self.dump(obj)\nValueError: fast mode: can't pickle cyclic objects"})
		return x.Finish()
	}
	if tbs := feed("/x/torch/_inductor/codecache.py"); len(tbs) != 1 || tbs[0].Level != record.LevelWarning {
		t.Errorf("in the logger's module: %+v", tbs)
	}
	if tbs := feed("/x/train.py"); len(tbs) != 1 || tbs[0].Level != "" {
		t.Errorf("elsewhere: %+v", tbs)
	}
	for _, c := range []struct {
		emitter, file string
		want          bool
	}{
		{"codecache.py:649", "/x/torch/_inductor/codecache.py", true},
		{"torch._inductor.codecache", "/x/mytorch/_inductor/codecache.py", false},
		{"root", "/x/root.py", true},
		{"", "/x/a.py", false},
	} {
		if got := loggedBy(c.emitter, record.Frame{File: c.file}); got != c.want {
			t.Errorf("loggedBy(%q, %q) = %v", c.emitter, c.file, got)
		}
	}
}
