package diagnose

import (
	"strings"
	"testing"
)

// TestFloorErrorLines: a line logged at error level that says in words a
// component failed to start or was killed is a finding when nothing else
// fatal is in the log, and only then; the same words logged at INFO are
// not. The inputs are written here, in the formats of engines the field
// corpus showed (TensorRT-LLM's "[RANK N] [E]", vLLM's ERROR header), with
// failures none of its cases has.
func TestFloorErrorLines(t *testing.T) {
	for _, c := range []struct{ name, log, root, rank string }{
		{"TensorRT-LLM [E] with its MPI rank",
			"[11/02/2025-08:01:02] [TRT-LLM] [I] Loading weights\n" +
				"[11/02/2025-08:01:40] [TRT-LLM] [RANK 3] [E] Failed to create the attention backend on rank 3: workspace too small\n",
			"Failed to create the attention backend", "rank3"},
		{"vLLM ERROR line from a worker",
			"(VllmWorker rank=2 pid=77) INFO 10-01 12:00:00 [gpu_worker.py:10] starting\n" +
				"(VllmWorker rank=2 pid=77) ERROR 10-01 12:00:01 [custom_all_reduce.py:80] Failed to initialize the custom allreduce IPC handles\n",
			"Failed to initialize the custom allreduce", "rank2"},
		{"CRITICAL line saying a process was killed",
			"CRITICAL 10-01 12:00:02 [launcher.py:5] the tokenizer process was killed by signal 9\n",
			"was killed by signal 9", ""},
	} {
		d := diagnoseText(t, c.log, Options{})
		f := topError(d)
		if d.Status != "failed" || f == nil || !strings.Contains(f.Root, c.root) {
			t.Errorf("%s: status %s, top %+v; want the line %q", c.name, d.Status, f, c.root)
			continue
		}
		if c.rank != "" && (len(f.Ranks) != 1 || f.Ranks[0] != c.rank) {
			t.Errorf("%s: ranks %q, want %s", c.name, f.Ranks, c.rank)
		}
	}
	// The same words at INFO or WARNING are no failure.
	for _, log := range []string{
		"INFO 10-01 12:00:01 [compiler.py:9] Failed to load the cached graph, compiling it\n",
		"[11/02/2025-08:01:40] [TRT-LLM] [W] Failed to create the NVLS buffer, falling back\n",
	} {
		if d := diagnoseText(t, log, Options{}); d.Status == "failed" {
			t.Errorf("%q: %s %s", log, d.Status, d.Verdict)
		}
	}
	// With the exception that ended the boot in the log, that is the finding.
	d := diagnoseText(t, "ERROR 10-01 12:00:01 [core.py:9] Failed to start the engine core\n"+
		"Traceback (most recent call last):\n  File \"/x/vllm/v1/engine/core.py\", line 9, in run\n    raise ValueError(\"bad quantization\")\nValueError: bad quantization\n", Options{})
	if f := topError(d); f == nil || !strings.Contains(f.Root, "bad quantization") {
		t.Errorf("error line beside an exception: top %+v", f)
	}
}

// TestFloorPastedRenderings: what a paste turns a log into still yields
// its error — syslog's "#033[" for ESC, pydantic's one-line rendering of a
// validator's exception, a Ray OOM kill, a linker line inside a traceback
// of another process.
func TestFloorPastedRenderings(t *testing.T) {
	for _, c := range []struct{ name, log, root string }{
		{"syslog-rendered colours on a Ray OOM report",
			"#033[2m#033[36m(raylet)#033[0m node_manager.cc:3007: 1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed\n",
			"killed due to memory pressure (OOM)"},
		{"pydantic's line alone",
			"  Assertion failed, tensor_parallel_size must divide the number of attention heads (40) [type=assertion_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]\n",
			"tensor_parallel_size must divide"},
		{"linker error inside a cut traceback",
			"  File \"/x/torch/_inductor/codecache.py\", line 1, in load\n/usr/bin/ld: cannot find -lrocm_smi64: No such file or directory\n    return fn()\n",
			"cannot find -lrocm_smi64"},
	} {
		d := diagnoseText(t, c.log, Options{})
		f := topError(d)
		if d.Status != "failed" || f == nil || !strings.Contains(f.Root+"\n"+f.Title, c.root) {
			t.Errorf("%s: status %s, top %+v; want %q", c.name, d.Status, f, c.root)
		}
	}
}

// TestSurvivedGraphBreak: a graph break Dynamo logged as a warning and
// went on from is a warning finding, not a failed run; the same rule on a
// W-level record that carries a traceback, or beside a fatal error, stays
// an error. Written in torch 2.5's glog format (the corpus has 2.15's).
// The severity of the wording is rule data (data-dependent-value's any
// block, rules.Rule.SeverityFor), so every caller of the rules agrees.
func TestSurvivedGraphBreak(t *testing.T) {
	const brk = "W0102 03:04:05.000000 42 torch/_dynamo/variables/tensor.py:900] [1/0] Graph break from `Tensor.item()`, consider setting:\n" +
		"W0102 03:04:05.000000 42 torch/_dynamo/variables/tensor.py:900] [1/0]     torch._dynamo.config.capture_scalar_outputs = True\n" +
		"W0102 03:04:05.000000 42 torch/_dynamo/variables/tensor.py:900] [1/0] Graph break: from user code at:\n" +
		"W0102 03:04:05.000000 42 torch/_dynamo/variables/tensor.py:900] [1/0]   File \"/srv/app/router.py\", line 7, in route\n" +
		"W0102 03:04:05.000000 42 torch/_dynamo/variables/tensor.py:900] [1/0]     n = int(counts.sum().item())\n"
	d := diagnoseText(t, brk+"step 10 loss 0.5\n", Options{})
	if d.Status == "failed" || topError(d) != nil || len(d.Findings) == 0 || d.Findings[0].Severity != "warning" {
		t.Errorf("survived break: %s %s %+v", d.Status, d.Verdict, d.Findings)
	}
	// The run then died: that error is the verdict, the break stays a warning.
	d = diagnoseText(t, brk+"Traceback (most recent call last):\n  File \"/srv/app/main.py\", line 3, in <module>\n    run()\nRuntimeError: CUDA error: an illegal memory access was encountered\n", Options{})
	if f := topError(d); d.Status != "failed" || f == nil || !strings.Contains(f.Root, "illegal memory access") {
		t.Errorf("break then a crash: %s %+v", d.Status, f)
	}
}

// TestLogWithFaulthandlerDump: a vLLM log with a faulthandler report in it
// is read as a stack dump (its threads bucketed) and as a log: the floor
// reports the fatal error, the log's own rules and phases still count. A
// dump alone with no fatal error (a hang's faulthandler.dump_traceback)
// stays no error: its threads are no cut traceback.
func TestLogWithFaulthandlerDump(t *testing.T) {
	const log = "(VllmWorker rank=1 pid=5161) INFO 03-02 10:11:12 [gpu_model_runner.py:1800] Starting to load model /models/m...\n" +
		"(VllmWorker rank=1 pid=5161) INFO 03-02 10:11:40 [gpu_model_runner.py:1830] Model loading took 14.2 GiB and 27.9 seconds\n" +
		"(VllmWorker rank=1 pid=5161) INFO 03-02 10:11:41 [backends.py:460] Using cache directory: /root/.cache/vllm/torch_compile_cache/abc/rank_1_0 for vLLM's torch.compile\n" +
		"Fatal Python error: Segmentation fault\n\n" +
		"Thread 0x00007f01aa7fe640 (most recent call first):\n" +
		"  File \"/usr/lib/python3.12/threading.py\", line 355 in wait\n" +
		"  File \"/usr/lib/python3.12/threading.py\", line 1012 in run\n\n" +
		"Current thread 0x00007f02c1d9b740 (most recent call first):\n" +
		"  File \"/usr/local/lib/python3.12/site-packages/triton/compiler/compiler.py\", line 300 in compile\n" +
		"  File \"/usr/local/lib/python3.12/site-packages/torch/_inductor/runtime/triton_heuristics.py\", line 520 in _precompile_config\n" +
		"  File \"/usr/local/lib/python3.12/site-packages/vllm/v1/worker/gpu_worker.py\", line 210 in compile_or_warm_up_model\n\n" +
		"Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)\n" +
		"(VllmWorker rank=0 pid=5160) ERROR 03-02 10:11:55 [multiproc_executor.py:140] Worker proc VllmWorker-1 died unexpectedly, shutting down executor.\n"
	d := diagnoseText(t, log, Options{})
	f := topError(d)
	if d.Status != "failed" || f == nil || !strings.Contains(f.Root+" "+f.Evidence[0].Text, "Fatal Python error: Segmentation fault") {
		t.Fatalf("status %s, findings %v, top %+v", d.Status, ruleIDs(d), f)
	}
	if f.Phase != "triton-compile" {
		t.Errorf("phase %s (%s), want triton-compile from the crashing thread's frames", f.Phase, f.PhaseWhy)
	}
	if len(d.Inputs) != 1 || d.Inputs[0].Kind != KindStacks || d.Facts[d.Inputs[0].Path] == nil {
		t.Errorf("inputs %+v, facts %v: the dump is still read as one", d.Inputs, d.Facts)
	}
	dump := "Thread 0x00007f01aa7fe640 (most recent call first):\n  File \"/usr/lib/python3.12/threading.py\", line 355 in wait\n\n" +
		"Current thread 0x00007f02c1d9b740 (most recent call first):\n  File \"/srv/app/main.py\", line 9 in serve\n"
	if d := diagnoseText(t, dump, Options{}); d.Status == "failed" {
		t.Errorf("a dump alone: %s %s %v", d.Status, d.Verdict, ruleIDs(d))
	}
}
