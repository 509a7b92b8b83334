package stackdump

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func parseCorpus(t *testing.T, name string) *Result {
	t.Helper()
	res, err := ParseFile(testcorpus.File(t, "stackdumps", name))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func frame(fn, file string, line int) record.Frame {
	return record.Frame{Func: fn, File: file, Line: line}
}

func wantFrame(t *testing.T, where string, got record.Frame, want record.Frame) {
	t.Helper()
	if got.Func != want.Func || got.File != want.File || got.Line != want.Line {
		t.Errorf("%s: frame %s, want %s", where, got, want)
	}
}

func wantWarning(t *testing.T, res *Result, line int, substr string) {
	t.Helper()
	for _, w := range res.Warnings {
		if w.Line == line && strings.Contains(w.Reason, substr) {
			return
		}
	}
	t.Errorf("no warning at line %d containing %q; got %v", line, substr, res.Warnings)
}

// Every file of the corpus is read here; values come from the files and
// their MANIFEST.md.

func TestAccelerateStraggler(t *testing.T) {
	res := parseCorpus(t, "accelerate-issue-3104-deepspeed-pyspy.txt")
	if len(res.Processes) != 1 {
		t.Fatalf("%d processes, want 1", len(res.Processes))
	}
	p := res.Processes[0]
	// No Process header: Linux py-spy prints OS tids and the main thread's
	// tid is the pid.
	if p.PID != 42 || len(p.Threads) != 6 {
		t.Fatalf("pid %d threads %d, want pid 42 with 6 threads", p.PID, len(p.Threads))
	}
	main := p.Threads[0]
	if main.TID != 42 || main.Name != "MainThread" || main.State != "idle" || !main.Main || len(main.Frames) != 13 {
		t.Errorf("main thread %+v", main)
	}
	wantFrame(t, "main leaf", main.Frames[0], frame("backward", "torch/autograd/__init__.py", 266))
	wantFrame(t, "main root", main.Frames[12], frame("<module>", "src/model_back/healing/scripts/fine_tune_accelerate.py", 587))
	for i, tid := range []uint64{4076, 4077, 4078} {
		th := p.Threads[2+i]
		if th.TID != tid || th.Name != "" || len(th.Frames) != 0 {
			t.Errorf("frameless unnamed thread %d: %+v", tid, th)
		}
	}
	coll := p.Threads[5]
	if coll.TID != 4079 || coll.State != "active" || len(coll.Frames) != 6 || !coll.Truncated {
		t.Errorf("collective thread %+v", coll)
	}
	wantFrame(t, "collective leaf", coll.Frames[0], frame("all_gather_into_tensor", "torch/distributed/distributed_c10d.py", 2709))
	wantFrame(t, "dynamo frame", coll.Frames[3], frame("_fn", "torch/_dynamo/eval_frame.py", 489))
	wantWarning(t, res, 31, "allgather_f")
}

func TestPyspyJSON(t *testing.T) {
	res := parseCorpus(t, "pyspy-issue-505-dump-json.txt")
	if len(res.Processes) != 1 || len(res.Warnings) != 0 {
		t.Fatalf("processes %d warnings %v", len(res.Processes), res.Warnings)
	}
	p := res.Processes[0]
	if p.PID != 338370 || len(p.Threads) != 1 {
		t.Fatalf("%+v", p)
	}
	th := p.Threads[0]
	if th.TID != 338370 || th.Ident != "0x7fecc36c5280" || th.State != "idle" || !th.Main {
		t.Errorf("thread %+v", th)
	}
	if len(th.Frames) != 1 {
		t.Fatalf("frames %v", th.Frames)
	}
	wantFrame(t, "json frame", th.Frames[0], frame("<module>", "yolo.py", 8))
}

func TestDebugServerRanks(t *testing.T) {
	res := parseCorpus(t, "pytorch-pr-174808-debugserver-stacks.txt")
	if len(res.Processes) != 2 {
		t.Fatalf("%d processes, want 2 (rank 0 and rank 1)", len(res.Processes))
	}
	r0, r1 := res.Processes[0], res.Processes[1]
	if r0.Rank != "rank0" || r0.RankInfo.Global != 0 || r1.Rank != "rank1" {
		t.Errorf("ranks %q %q", r0.Rank, r1.Rank)
	}
	if len(r0.Threads) != 6 || len(r1.Threads) != 1 {
		t.Fatalf("threads %d %d, want 6 and 1", len(r0.Threads), len(r1.Threads))
	}
	if th := r0.Threads[0]; th.State != "current" || th.Ident != "0x00007fdfa2784640" || len(th.Frames) != 0 {
		t.Errorf("current thread %+v", th)
	}
	last := r0.Threads[5]
	if last.Ident != "0x00007fe081a22740" || len(last.Frames) != 1 {
		t.Fatalf("rank0 last thread %+v", last)
	}
	wantFrame(t, "rank0 main", last.Frames[0], frame("<module>", "/home/tristanr/scripts/debug_test.py", 61))
	if r1.Threads[0].Ident != "0x00007fea55f9b640" {
		t.Errorf("rank1 thread %+v", r1.Threads[0])
	}
}

func TestWrappedHeader(t *testing.T) {
	res := parseCorpus(t, "returnn-issue-1484-pyspy-header-wrapped.txt")
	if len(res.Processes) != 1 {
		t.Fatalf("%d processes", len(res.Processes))
	}
	p := res.Processes[0]
	if p.PID != 2816 || p.Python != "3.11.2" {
		t.Errorf("pid %d python %q", p.PID, p.Python)
	}
	// The command line wrapped over three lines is joined, trailing spaces gone.
	if !strings.HasPrefix(p.Name, "/work/tools/users/zeyer/py-envs/py3.11-torch2.1/bin/python3.11 -mtorch.distributed.run") ||
		!strings.HasSuffix(p.Name, "ReturnnTrainingJob.ekBKZvE5HeTb/output/returnn.config") ||
		!strings.Contains(p.Name, "/u/zeyer/setups/combined/2021-05-31/tools/returnn/rnn.py") {
		t.Errorf("command line %q", p.Name)
	}
	if len(p.Threads) != 1 || p.Threads[0].Name != "MainThread" || p.Threads[0].TID != 2816 || len(p.Threads[0].Frames) != 0 {
		t.Errorf("threads %+v", p.Threads)
	}
}

func TestComposePrefixedWatchdog(t *testing.T) {
	res := parseCorpus(t, "sglang-issue-12076-pyspy-compose-prefixed.txt")
	if len(res.Processes) != 2 {
		t.Fatalf("%d processes, want the truncated excerpt and pid 309", len(res.Processes))
	}
	first := res.Processes[0]
	if len(first.Threads) != 2 || !first.Threads[0].Truncated || len(first.Threads[0].Frames) != 2 {
		t.Fatalf("excerpt head: %+v", first.Threads)
	}
	wd := first.Threads[1]
	if wd.TID != 12816 || wd.Name != "Thread-10 (watchdog_thread)" || len(wd.Frames) != 9 {
		t.Errorf("watchdog thread %+v", wd)
	}
	wantFrame(t, "watchdog", wd.Frames[4], frame("pyspy_dump_schedulers", "utils/common.py", 2218))
	p := res.Processes[1]
	if p.PID != 309 || p.Rank != "TP6" || p.Name != "sglang::scheduler_TP6" || p.Python != "3.12.12" {
		t.Errorf("scheduler process %+v", p)
	}
	if len(p.Threads) != 1 {
		t.Fatalf("threads %d", len(p.Threads))
	}
	th := p.Threads[0]
	// The prefixed blank line inside the thread does not end it.
	if th.TID != 309 || th.State != "active" || len(th.Frames) != 7 {
		t.Fatalf("main thread %+v", th)
	}
	wantFrame(t, "leaf", th.Frames[0], frame("_apply", "penaltylib/min_new_tokens.py", 78))
	wantFrame(t, "after blank", th.Frames[5], frame("verify", "eagle_worker.py", 674))
	wantFrame(t, "last", th.Frames[6], frame("forward_batch_generation", "eagle_worker.py", 268))
	wantWarning(t, res, 29, "run_batch (scheduler.")
}

func TestNativeWatchdogPart1(t *testing.T) {
	res := parseCorpus(t, "sglang-issue-17941-native-pyspy-part1.txt")
	if len(res.Processes) != 2 {
		t.Fatalf("%d processes", len(res.Processes))
	}
	head := res.Processes[0]
	if len(head.Threads) != 2 || len(head.Threads[0].Frames) != 10 {
		t.Fatalf("excerpt head %+v", head.Threads)
	}
	f0 := head.Threads[0].Frames[0]
	if f0.Func != "0x7f259f401d71" || f0.File != "libc.so.6" || !f0.Native {
		t.Errorf("unresolved native frame %+v", f0)
	}
	if f := head.Threads[0].Frames[2]; f.Func != "PyThread_acquire_lock_timed" || f.File != "python3.12" || !f.Native {
		t.Errorf("resolved native frame %+v", f)
	}
	if f := head.Threads[0].Frames[3]; f.Native || f.Func != "wait" || f.Line != 359 {
		t.Errorf("python frame among native ones %+v", f)
	}
	wd := head.Threads[1]
	if wd.TID != 90522 || wd.Name != "Thread-2 (_watchdog_thread)" || len(wd.Frames) != 13 {
		t.Errorf("watchdog %+v", wd)
	}
	p := res.Processes[1]
	// The rank comes from the watchdog record and the title alike.
	if p.PID != 88693 || p.Rank != "PP2 TP1" || p.RankInfo.PP != 2 || p.RankInfo.TP != 1 || p.Python != "3.12.3" {
		t.Errorf("process %+v", p)
	}
	th := p.Threads[0]
	if th.TID != 88693 || th.Name != "MainThread" || len(th.Frames) != 4 || !th.Truncated {
		t.Fatalf("thread %+v", th)
	}
	if f := th.Frames[2]; f.Func != "gloo::transport::tcp::UnboundBuffer::waitRecv" || f.File != "libtorch_cpu.so" || !f.Native {
		t.Errorf("gloo frame %+v", f)
	}
	wantWarning(t, res, 38, "pybind11::cpp_function:")
}

func TestNativePart2WrappedCxxFrame(t *testing.T) {
	res := parseCorpus(t, "sglang-issue-17941-native-pyspy-part2.txt")
	if len(res.Processes) != 1 {
		t.Fatalf("%d processes", len(res.Processes))
	}
	p := res.Processes[0]
	// The excerpt starts at the Python line; the main thread gives the pid.
	if p.PID != 88692 || p.Python != "3.12.3" || len(p.Threads) != 1 {
		t.Fatalf("%+v", p)
	}
	th := p.Threads[0]
	if len(th.Frames) != 4 {
		t.Fatalf("frames %v", th.Frames)
	}
	if f := th.Frames[3]; f.Func != "c10d::ProcessGroupGloo::RecvWork::wait" || f.File != "libtorch_cpu.so" {
		t.Errorf("frame %+v", f)
	}
	// The ~1 KB pybind11 name, wrapped once and cut at the end of the
	// excerpt, is reported, not mis-parsed.
	wantWarning(t, res, 8, "pybind11::cpp_function::initialize<")
}

func TestInterleavedFaulthandlerIsReported(t *testing.T) {
	res := parseCorpus(t, "sglang-issue-6763-faulthandler-interleaved.txt")
	if res.Interleaved == nil {
		t.Fatal("interleaved output not detected")
	}
	if res.Interleaved.Line != 12 || !strings.Contains(res.Interleaved.Reason, "one file per rank") && !strings.Contains(res.Interleaved.Reason, "its own file") {
		t.Errorf("interleave report %+v", res.Interleaved)
	}
	for _, p := range res.Processes {
		if len(p.Threads) > 0 {
			t.Errorf("interleaved text was parsed into threads: %+v", p)
		}
	}
}

func TestShellPromptNoHeader(t *testing.T) {
	res := parseCorpus(t, "transformers-pr-17308-torchdynamo-pyspy.txt")
	if len(res.Processes) != 1 {
		t.Fatalf("%d processes", len(res.Processes))
	}
	p := res.Processes[0]
	if p.PID != 530235 || len(p.Threads) != 1 {
		t.Fatalf("%+v", p)
	}
	th := p.Threads[0]
	if th.TID != 530235 || th.Name != "MainThread" || len(th.Frames) != 30 {
		t.Fatalf("thread %+v (%d frames)", th, len(th.Frames))
	}
	wantFrame(t, "leaf", th.Frames[0], frame("backward", "torch/autograd/__init__.py", 173))
	wantFrame(t, "last", th.Frames[29], frame("_multicall", "pluggy/_callers.py", 39))
}

func TestTracebackUnderTwoVLLMPrefixes(t *testing.T) {
	res := parseCorpus(t, "vllm-issue-30905-traceback-double-prefix.txt")
	if len(res.Processes) != 1 || len(res.Warnings) != 0 {
		t.Fatalf("processes %d warnings %v", len(res.Processes), res.Warnings)
	}
	p := res.Processes[0]
	if p.PID != 26373 || p.Rank != "DP0 TP7" || p.RankInfo.TP != 7 || p.RankInfo.Role != "Worker" {
		t.Errorf("process pid %d rank %q %+v", p.PID, p.Rank, p.RankInfo)
	}
	th := p.Threads[0]
	if th.State != "traceback" || len(th.Frames) != 2 {
		t.Fatalf("thread %+v", th)
	}
	// Tracebacks are outermost first; stacks are innermost first.
	wantFrame(t, "inner", th.Frames[0], frame("compile_to_module", "/usr/local/lib/python3.12/dist-packages/torch/_inductor/graph.py", 2319))
	wantFrame(t, "outer", th.Frames[1], frame("codegen_and_compile", "/usr/local/lib/python3.12/dist-packages/torch/_inductor/compile_fx.py", 1505))
}

func TestEveryCorpusFileIsCovered(t *testing.T) {
	dir := testcorpus.Dir(t, "stackdumps")
	covered := map[string]bool{
		"accelerate-issue-3104-deepspeed-pyspy.txt":      true,
		"pyspy-issue-505-dump-json.txt":                  true,
		"pytorch-pr-174808-debugserver-stacks.txt":       true,
		"returnn-issue-1484-pyspy-header-wrapped.txt":    true,
		"sglang-issue-12076-pyspy-compose-prefixed.txt":  true,
		"sglang-issue-17941-native-pyspy-part1.txt":      true,
		"sglang-issue-17941-native-pyspy-part2.txt":      true,
		"sglang-issue-6763-faulthandler-interleaved.txt": true,
		"transformers-pr-17308-torchdynamo-pyspy.txt":    true,
		"vllm-issue-30905-traceback-double-prefix.txt":   true,
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "MANIFEST.md" {
			continue
		}
		if !covered[e.Name()] {
			t.Errorf("corpus file %s has no test", e.Name())
		}
		head, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if Sniff(e.Name(), head) == 0 && e.Name() != "vllm-issue-30905-traceback-double-prefix.txt" {
			t.Errorf("%s: not sniffed as a stack dump", e.Name())
		}
	}
}

var _ = record.SourceFile
