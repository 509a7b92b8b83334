package diagnose

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
)

func diagnoseText(t *testing.T, text string, opt Options) *Diagnosis {
	t.Helper()
	opt.Stdin = strings.NewReader(text)
	d, err := Run([]string{"-"}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func topError(d *Diagnosis) *record.Finding {
	for i := range d.Findings {
		if d.Findings[i].Severity == record.SeverityError {
			return &d.Findings[i]
		}
	}
	return nil
}

// TestFloor: each kind of fatal error is an error finding with its root,
// raising frame, ranks and phase, whether or not a rule knows it; none of
// these was reported before the floor (status ok, exit 0).
func TestFloor(t *testing.T) {
	cases := []struct {
		name, log           string
		rule, root, phase   string
		raisedIn, rank, why string
	}{
		{name: "segfault line", rule: "native-crash", root: "Segmentation fault (core dumped)", phase: "unknown",
			log: "INFO 11-29 21:04:31 [core.py:91] Initializing a V1 LLM engine\nSegmentation fault (core dumped)\n"},
		{name: "faulthandler", rule: "native-crash", root: "Fatal Python error: Segmentation fault", phase: "triton-compile",
			raisedIn: "triton/compiler/compiler.py:300 compile",
			log: "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f3b (most recent call first):\n" +
				"  File \"/usr/lib/python3.12/site-packages/triton/compiler/compiler.py\", line 300 in compile\n" +
				"  File \"/usr/lib/python3.12/site-packages/torch/_inductor/async_compile.py\", line 120 in triton\n\n" +
				"Thread 0x00007f3c (most recent call first):\n  File \"/usr/lib/python3.12/threading.py\", line 324 in wait\n"},
		{name: "OOM killer", rule: "process-killed", root: "Killed", phase: "unknown",
			log: "Loading safetensors checkpoint shards:  50% Completed | 2/4\n./serve.sh: line 3:  4242 Killed                  vllm serve /models/x\n"},
		{name: "watchdog", rule: "collective-timeout", root: "Watchdog caught collective operation timeout", phase: "runtime", rank: "rank3",
			log: "(RayWorkerVllm pid=1394) [E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800542 milliseconds before timing out.\n"},
		{name: "torchrun table", rule: "child-process-failed", root: "exitcode  : -9", phase: "unknown",
			log: "Root Cause (first observed failure):\n[0]:\n  time      : 2025-03-01_10:00:00\n  host      : node1\n  rank      : 0 (local_rank: 0)\n  exitcode  : -9 (pid: 4242)\n  error_file: <N/A>\n"},
		{name: "scheduler one-liner", rule: "unrecognised-exception", root: "ValueError: bad expert count 7", phase: "unknown", rank: "TP1",
			log: "[2025-03-10 14:17:52 TP1] Scheduler hit an exception: ValueError: bad expert count 7\n"},
		{name: "raised line without frames", rule: "unrecognised-exception", root: "AssertionError: stride mismatch", phase: "inductor",
			log: "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nAssertionError: stride mismatch\n\nSet TORCHDYNAMO_VERBOSE=1 for the internal stack trace\n"},
		{name: "cut before exception line", rule: "jit-toolchain-missing", root: "Failed to find C compiler", phase: "triton-launcher-build",
			raisedIn: "triton/runtime/build.py:32 _build",
			log: "Traceback (most recent call last):\n  File \"/opt/conda/lib/python3.10/site-packages/triton/backends/nvidia/driver.py\", line 57, in compile_module_from_src\n" +
				"    so = _build(name, src_path, tmpdir)\n  File \"/opt/conda/lib/python3.10/site-packages/triton/runtime/build.py\", line 32, in _build\n" +
				"    raise RuntimeError(\"Failed to find C compiler. Please"},
		{name: "mask", rule: "code-error-in-package", root: "KeyError: 'layers.0.w13'", phase: "load",
			log: "Traceback (most recent call last):\n  File \"/opt/vllm/vllm/model_executor/models/qwen3.py\", line 12, in load_weights\n    p = params[name]\nKeyError: 'layers.0.w13'\n\n" +
				"During handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"/opt/engine/worker.py\", line 40, in run\n    raise EngineError(e)\n" +
				"TypeError: __init__() missing 1 required positional argument: 'inner_exception'\n", why: "mask"},
		{name: "first line cut mid-word", rule: "unrecognised-exception", root: "untimeError: shape '[8, -1]' is invalid for input of size 7", phase: "unknown",
			log: "untimeError: shape '[8, -1]' is invalid for input of size 7\nINFO 11-29 21:06:00 [launcher.py:30] Shutting down\n"},
		{name: "launcher names the failed shard, not the ones it stopped", rule: "tgi-flash-models-not-importable", root: "NotImplementedError: Sharded Llama requires Flash Attention", phase: "load", rank: "rank1",
			log: "NotImplementedError: Sharded Llama requires Flash Attention enabled models.\n" +
				"2023-07-24T02:39:20.704629Z ERROR text_generation_launcher: Shard 1 failed to start\n" +
				"2023-07-24T02:39:20.704651Z  INFO text_generation_launcher: Shutting down shards\n" +
				"2023-07-24T02:39:20.781260Z  INFO shard-manager: text_generation_launcher: Shard terminated rank=0\n"},
		{name: "Triton's CompilationError, no frames", rule: "unrecognised-exception", root: "IndexError: list index out of range", phase: "triton-compile",
			log: "triton.compiler.errors.CompilationError: at 128:4:\n    stride_block_z, stride_block_h, stride_block_row = 1, ks0\n    ^\nIndexError('list index out of range')\n"},
		{name: "CUDA error line", rule: "device-runtime-error", root: "CUDA error: an illegal memory access was encountered", phase: "cudagraph",
			log: "INFO 11-29 21:05:50 [gpu_model_runner.py:2500] Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 10%\n" +
				"[rank0]:[E1129 21:05:51.123 ProcessGroupNCCL.cpp:1682] CUDA error: an illegal memory access was encountered\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := diagnoseText(t, c.log, Options{})
			f := topError(d)
			if f == nil || d.Status != "failed" || !d.HasErrors() {
				t.Fatalf("status %s, findings %v", d.Status, ruleIDs(d))
			}
			if f.Rule != c.rule || !strings.Contains(f.Root+" "+f.Evidence[0].Text, c.root) {
				t.Errorf("top %s root %q evidence %q, want %s with %q", f.Rule, f.Root, f.Evidence[0].Text, c.rule, c.root)
			}
			if f.Phase != c.phase {
				t.Errorf("phase %s (%s), want %s", f.Phase, f.PhaseWhy, c.phase)
			}
			if c.raisedIn != "" && f.RaisedIn != c.raisedIn {
				t.Errorf("raised in %q, want %q", f.RaisedIn, c.raisedIn)
			}
			if c.rank != "" && strings.Join(f.Ranks, ",") != c.rank {
				t.Errorf("ranks %v, want %s", f.Ranks, c.rank)
			}
			if c.why == "mask" && !strings.Contains(f.Cause, "is a mask") {
				t.Errorf("cause does not name the mask: %q", f.Cause)
			}
		})
	}
}

// TestWarningsStayWarnings: a traceback logged as a warning (Dynamo fell
// back to eager for a graph break) and a warning-level exception line are
// not fatal.
func TestWarningsStayWarnings(t *testing.T) {
	log := "WARNING 11-29 21:05:20 [eval_frame.py:900] Graph break: Traceback (most recent call last):\n" +
		"WARNING 11-29 21:05:20 [eval_frame.py:900]   File \"/usr/lib/python3.12/site-packages/torch/_dynamo/symbolic_convert.py\", line 1000, in step\n" +
		"WARNING 11-29 21:05:20 [eval_frame.py:900] torch._dynamo.exc.Unsupported: hasattr TensorVariable shard_size\n" +
		"WARNING 11-29 21:05:21 [model.py:12] RuntimeError: retrying the download once\n" +
		"Exception ignored in: <function Connection.__del__ at 0x7f2a>\nTraceback (most recent call last):\n" +
		"  File \"/usr/lib/python3.12/multiprocessing/connection.py\", line 132, in __del__\nOSError: [Errno 9] Bad file descriptor\n" +
		"WARNING 11-29 21:05:22 [custom_all_reduce.py:90] Custom allreduce is disabled: NCCL error in: p2p check, falling back\n" +
		"INFO 11-29 21:05:30 [api_server.py:1000] Starting vLLM API server on http://0.0.0.0:8000\n" +
		// A warning that says it went on, its exc_info traceback next.
		"WARNING:torch._dynamo:Encountered an exception in identify_mutated_tensors, assuming every input is mutated\n" +
		"Traceback (most recent call last):\n  File \"/t/torch/_higher_order_ops/triton_kernel_wrap.py\", line 715, in identify_mutated_tensors\n" +
		"    ttir_module, ordered_tensor_names = generate_ttir(kernel, kwargs)\nTypeError: create_specialize_impl() missing 1 required positional argument\n"
	d := diagnoseText(t, log, Options{})
	if d.HasErrors() || d.Status == "failed" {
		t.Fatalf("a recovered graph break is fatal: %s %v", d.Verdict, ruleIDs(d))
	}
}

// TestPastedExcerpts: the same vLLM error pasted five ways parses to the
// same root: indented before the prefix, Markdown-quoted, with colour
// codes whose ESC the page dropped, behind a CI runner's prefix, and with
// the frames at column 0.
func TestPastedExcerpts(t *testing.T) {
	lines := []string{
		"(EngineCore_DP0 pid=123) ERROR 11-29 21:05:14 [core.py:700] EngineCore failed to start.",
		"(EngineCore_DP0 pid=123) ERROR 11-29 21:05:14 [core.py:700] Traceback (most recent call last):",
		"(EngineCore_DP0 pid=123) ERROR 11-29 21:05:14 [core.py:700]   File \"/opt/vllm/vllm/v1/worker/gpu_worker.py\", line 240, in load_model",
		"(EngineCore_DP0 pid=123) ERROR 11-29 21:05:14 [core.py:700]     self.model_runner.load_model()",
		"(EngineCore_DP0 pid=123) ERROR 11-29 21:05:14 [core.py:700] RuntimeError: shape mismatch for lm_head.weight",
	}
	each := func(f func(string) string) string {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(f(l) + "\n")
		}
		return b.String()
	}
	pastes := map[string]string{
		"indented": each(func(l string) string { return "    " + l }),
		"quoted":   each(func(l string) string { return "> " + l }),
		"ansi":     each(func(l string) string { return "[0;36m" + strings.Replace(l, ") ", ") [0m", 1) }),
		"ci":       each(func(l string) string { return "[test 1] " + l }),
		"col0": "Traceback (most recent call last):\nFile \"/opt/vllm/vllm/v1/worker/gpu_worker.py\", line 240, in load_model\n" +
			"    self.model_runner.load_model()\nRuntimeError: shape mismatch for lm_head.weight\n",
	}
	for name, text := range pastes {
		t.Run(name, func(t *testing.T) {
			d := diagnoseText(t, text, Options{})
			f := topError(d)
			if f == nil || !strings.Contains(f.Root, "RuntimeError: shape mismatch for lm_head.weight") {
				t.Fatalf("%s: %s", name, d.Verdict)
			}
			if f.Phase != "load" || f.RaisedIn != "vllm/v1/worker/gpu_worker.py:240 load_model" {
				t.Errorf("%s: phase %s raised in %q", name, f.Phase, f.RaisedIn)
			}
		})
	}
}

// TestPrintedKnowledge: what PyTorch prints (Explanation, Hint) becomes
// the finding's cause and remedies, marked as printed; a GB id alone is
// explained from the graph-break registry of the torch given.
func TestPrintedKnowledge(t *testing.T) {
	structured := "torch._dynamo.exc.Unsupported: Fixture graph break for the registry test\n" +
		"  Explanation: Dynamo met a fixture call.\n  Hint: Wrap the fixture call in torch.compiler.disable.\n\n" +
		"  Developer debug context: fixture\n\n For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb9001.html\n"
	d := diagnoseText(t, structured, Options{})
	f := topError(d)
	if f == nil || !strings.Contains(f.Cause, "PyTorch explains: Dynamo met a fixture call") ||
		len(f.Remedy) == 0 || !strings.Contains(strings.Join(f.Remedy, "\n"), "Printed by PyTorch: Wrap the fixture call in torch.compiler.disable") {
		t.Fatalf("structured message not read: %+v", f)
	}
	onlyID := "torch._dynamo.exc.Unsupported: something new\n\n For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb9001.html\n"
	d = diagnoseText(t, onlyID, Options{TorchDir: filepath.Join("testdata", "torch")})
	f = topError(d)
	if f == nil || !strings.Contains(f.Cause, "A fixture explanation written for bringup's tests") ||
		!strings.Contains(strings.Join(f.Remedy, "\n"), "Fixture hint: move the untraceable call") {
		t.Fatalf("registry not read: %+v", f)
	}
	d = diagnoseText(t, onlyID, Options{})
	if f := topError(d); f == nil || strings.Contains(f.Cause, "fixture explanation") {
		t.Fatalf("registry read without a torch dir: %+v", f)
	}
	piecewise := "[2026-05-22 04:54:32 TP6] Piecewise CUDA Graph failed with error: Tensor match failed for Tensor<8>\n" +
		"- Root cause: Size mismatch for shape#0('num_tokens'): expected 6 but got 8\n" +
		"To work around this error, add --disable-piecewise-cuda-graph to your launch command.\n"
	d = diagnoseText(t, piecewise, Options{})
	f = topError(d)
	if f == nil || !strings.Contains(f.Root, "root cause: Size mismatch") || f.Phase != "cudagraph" ||
		!slices.Contains(f.Remedy, "Printed by the engine: To work around this error, add --disable-piecewise-cuda-graph to your launch command") {
		t.Fatalf("engine-printed workaround: %+v", f)
	}
	// With no rule for it, the printed workaround comes first.
	d = diagnoseText(t, "RuntimeError: the frobnicator stalled. To work around this error, add --no-frobnicate to your launch command.\n", Options{})
	if f := topError(d); f == nil || f.Rule != "unrecognised-exception" || !strings.HasPrefix(f.Remedy[0], "Printed by the engine: To work around this error, add --no-frobnicate") {
		t.Fatalf("printed workaround of a catch-all: %+v", f)
	}
}

// TestGateLiteralsAreLong: the parser's per-line literal scan takes
// literals of 12 bytes and more in one strided pass, and each shorter one
// costs a pass over every line of the log; the short ones are these few.
func TestGateLiteralsAreLong(t *testing.T) {
	allowed := map[string]bool{`File "`: true, "Killed": true, "==": true, " python3.": true, "/python3.": true,
		"time": true} // "time": cudagraph.yaml's vllm-capture-at-wrong-time, before the floor
	set, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	g := gateFor(set)
	for _, l := range g.lits {
		if len(l) < 12 && !allowed[l] {
			t.Errorf("short gate literal %q: anchor it on a longer word, or find it by the line's start (enginelog Options.Lead)", l)
		}
	}
}

// TestKilledIsNotOOM: a bare "Killed" (srun's "tasks 0-1: Killed" after a
// cancelled step, a shell's) is a SIGKILL whose sender the line does not
// name, and the finding says what to capture to tell; only the kernel's
// OOM-killer lines are an OOM kill, and a "Killed" right after them is
// that kill.
func TestKilledIsNotOOM(t *testing.T) {
	srun := "INFO 12-01 10:00:00 [core.py:1] step\n" +
		"slurmstepd: error: *** STEP 4242.0 ON node7 CANCELLED AT 2025-01-01T10:00:00 ***\n" +
		"srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n" +
		"srun: error: node7: tasks 0-1: Killed\n"
	f := topError(diagnoseText(t, srun, Options{}))
	rem := ""
	if f != nil {
		rem = strings.Join(f.Remedy, "\n")
	}
	if f == nil || f.Rule != "process-killed" || strings.Contains(f.Title, "out of memory") || !strings.Contains(f.Title, "SIGKILL") ||
		!strings.Contains(rem, "dmesg") || !strings.Contains(rem, "sacct") {
		t.Fatalf("srun's Killed: %+v", f)
	}
	oom := "Loading safetensors checkpoint shards:  50% Completed | 2/4\n" +
		"[ 812.104] Out of memory: Killed process 4242 (python3) total-vm:81234567kB, anon-rss:61234567kB\n" +
		"./serve.sh: line 3:  4242 Killed                  vllm serve /models/x\n"
	if es := errorFindings(diagnoseText(t, oom, Options{})); len(es) != 1 || es[0].Rule != "oom-killer" || len(es[0].Evidence) != 2 {
		t.Errorf("OOM killer then Killed: want one oom-killer finding with both lines: %+v", es)
	}
}

// errorFindings are d's error-level findings.
func errorFindings(d *Diagnosis) []record.Finding {
	var out []record.Finding
	for _, f := range d.Findings {
		if f.Severity == record.SeverityError {
			out = append(out, f)
		}
	}
	return out
}

// TestFatalLineTail: a rule that matched in the lines continuing a fatal
// line in its record (NCCL's "Last error:" and the reason under its
// error) explains that error: one finding, with the error as its root.
func TestFatalLineTail(t *testing.T) {
	log := "[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2588, internal error - please report this issue to the NCCL developers, NCCL version 2.21.5\n" +
		"[rank0]: ncclInternalError: Internal check failed.\n" +
		"[rank0]: Last error:\n" +
		"[rank0]: Bootstrap : no socket interface found\n"
	es := errorFindings(diagnoseText(t, log, Options{}))
	if len(es) != 1 || es[0].Rule != "nccl-no-socket-interface" || !strings.Contains(es[0].Root, "DistBackendError: NCCL error in") {
		t.Fatalf("NCCL error and its reason: want one nccl-no-socket-interface finding rooted in the error: %+v", es)
	}
}

// TestDynamoSuppressedIsWarning: a compile error that Dynamo's
// convert_frame logged as a warning (suppress_errors: it ran the frame
// eagerly) is a warning finding even when an error rule explains it; the
// same error raised is an error.
func TestDynamoSuppressedIsWarning(t *testing.T) {
	block := func(level string) string {
		p := "[2023-11-29 22:29:33,093] torch._dynamo.convert_frame: [" + level + "] "
		return p + "WON'T CONVERT forward /app/model.py line 40\n" + p + "due to: \n" + p + "Traceback (most recent call last):\n" +
			p + "  File \"/opt/venv/lib/python3.10/site-packages/torch/_inductor/codecache.py\", line 438, in cpp_compiler_search\n" +
			p + "    raise exc.InvalidCxxCompiler()\n" +
			p + "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n" +
			p + "InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx: (None, 'g++')\n"
	}
	d := diagnoseText(t, block("WARNING"), Options{})
	if d.HasErrors() || len(d.Findings) == 0 || d.Findings[0].Rule != "inductor-cxx-compiler-missing" || d.Findings[0].Severity != record.SeverityWarning {
		t.Fatalf("suppressed: %s %+v", d.Status, d.Findings)
	}
	// Suppressed once, then raised: the finding is an error.
	d = diagnoseText(t, block("WARNING")+"[2023-11-29 22:29:34,001] root: [INFO] retrying without suppress_errors\n"+
		"Traceback (most recent call last):\n  File \"/app/run.py\", line 9, in <module>\n    model(x)\n"+
		"torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nInvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx: (None, 'g++')\n", Options{})
	if f := topError(d); f == nil || f.Rule != "inductor-cxx-compiler-missing" {
		t.Fatalf("raised after a suppressed one: %+v", d.Findings)
	}
}
