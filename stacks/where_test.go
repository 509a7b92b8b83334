package stacks_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/stacks"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// fr builds a stack from "func file:line" pairs, innermost first; a pair
// "×N" repeats the previous frame N-1 more times.
func fr(spec ...string) record.Stack {
	var st record.Stack
	for _, s := range spec {
		if n := strings.TrimPrefix(s, "×"); n != s {
			k := 0
			for _, c := range n {
				k = k*10 + int(c-'0')
			}
			for i := 1; i < k; i++ {
				st = append(st, st[len(st)-1])
			}
			continue
		}
		fn, loc, _ := strings.Cut(s, " ")
		file, line, _ := strings.Cut(loc, ":")
		n := 0
		for _, c := range line {
			n = n*10 + int(c-'0')
		}
		st = append(st, record.Frame{Func: fn, File: file, Line: n})
	}
	return st
}

func tp(i int) record.Rank { r := record.NoRank; r.TP = i; return r }

// worker is one ranked process with its main thread.
func worker(pid, rank, snap int, frames record.Stack) *stacks.Process {
	return &stacks.Process{PID: pid, Rank: "TP" + itoa(rank), RankInfo: tp(rank), Snapshot: snap, Path: "dump", Source: stacks.SourceFile,
		Threads: []stacks.Thread{{TID: uint64(pid), Main: true, Name: "MainThread", Frames: frames, Line: 1}}}
}

func itoa(n int) string { return strconv.Itoa(n) }

var fusion = fr("synchronize /usr/lib/python3.12/site-packages/torch/cuda/__init__.py:985",
	"benchmark_gpu /usr/lib/python3.12/site-packages/torch/_inductor/runtime/benchmarking.py:39",
	"benchmark_codegened_module /usr/lib/python3.12/site-packages/torch/_inductor/codegen/triton.py:4210",
	"benchmark_fused_nodes /usr/lib/python3.12/site-packages/torch/_inductor/scheduler.py:5010",
	"Scheduler.speedup_by_fusion /usr/lib/python3.12/site-packages/torch/_inductor/scheduler.py:3400",
	"Scheduler.fuse_nodes_once /usr/lib/python3.12/site-packages/torch/_inductor/scheduler.py:3120",
	"Scheduler.__init__ /usr/lib/python3.12/site-packages/torch/_inductor/scheduler.py:2100",
	"GraphLowering.codegen /usr/lib/python3.12/site-packages/torch/_inductor/graph.py:2050",
	"compile_fx_inner /usr/lib/python3.12/site-packages/torch/_inductor/compile_fx.py:700",
	"main /srv/boot.py:40", "<module> /srv/boot.py:50")

// Eight ranks in fusion benchmarking in three identical snapshots, next
// to the boot's helpers: the headline names where they are, how long it
// stayed, and the helpers are neither ranks nor outliers; the
// implicit-fallback signature is not named (no operator_str).
func TestHeadlineFusionBenchmark(t *testing.T) {
	var procs []*stacks.Process
	for snap := 0; snap < 3; snap++ {
		for r := 0; r < 8; r++ {
			procs = append(procs, worker(100+r, r, snap, fusion))
		}
		procs = append(procs,
			&stacks.Process{PID: 9, Snapshot: snap, Name: "python -c from multiprocessing.resource_tracker import main;main(5)", RankInfo: record.NoRank,
				Threads: []stacks.Thread{{TID: 9, Main: true, Frames: fr("main /usr/lib/python3.12/multiprocessing/resource_tracker.py:227", "<module> <string>:1")}}},
			&stacks.Process{PID: 10, Snapshot: snap, Name: "/usr/bin/python3 /usr/lib/python3.12/site-packages/torch/_inductor/compile_worker/__main__.py --workers=4", RankInfo: record.NoRank,
				Threads: []stacks.Thread{{TID: 10, Main: true, Frames: fr("_recv_msg /usr/lib/python3.12/site-packages/torch/_inductor/compile_worker/subproc_pool.py:60")}}},
			&stacks.Process{PID: 11, Snapshot: snap, Name: "vllm serve m", RankInfo: record.NoRank,
				Threads: []stacks.Thread{{TID: 11, Main: true, Frames: fr("select /usr/lib/python3.12/selectors.py:468",
					"run_server /usr/lib/python3.12/site-packages/vllm/entrypoints/openai/api_server.py:1900")}}})
	}
	a := analyze(t, procs, stacks.DefaultLevel, rules.Versions{"torch": "2.10.0"})
	w := a.Where
	if w.Workers != 8 || w.Together != 8 || w.Noun != "ranks" || w.Frame == nil || w.Frame.Func != "Scheduler.speedup_by_fusion" ||
		w.Frame.File != "torch/_inductor/scheduler.py" || w.Rule != "inductor-fusion-benchmark" || w.Motion != "stuck" || w.Snapshots != 3 {
		t.Fatalf("where %+v", w)
	}
	if want := "8/8 ranks in torch/_inductor/scheduler.py Scheduler.speedup_by_fusion (bucket #1), 3 snapshots identical"; w.Text != want {
		t.Errorf("text %q, want %q", w.Text, want)
	}
	if !strings.HasPrefix(a.Verdict(), "inductor-fusion-benchmark: ") || finding(a, "inductor-implicit-fallback-operator-str") != nil {
		t.Errorf("verdict %q findings %v", a.Verdict(), a.Findings)
	}
	roles := map[string][]int{}
	for _, h := range w.Helpers {
		roles[h.Role] = h.PIDs
	}
	if len(roles) != 3 || roles[stacks.RoleResourceTracker][0] != 9 || roles[stacks.RoleCompileWorker][0] != 10 || roles[stacks.RoleAPIServer][0] != 11 {
		t.Errorf("helpers %+v", w.Helpers)
	}
	if len(a.Outliers) != 0 || len(w.Elsewhere) != 0 {
		t.Errorf("outliers %+v elsewhere %+v", a.Outliers, w.Elsewhere)
	}
	if f := finding(a, "inductor-compile-worker-wait"); f != nil {
		t.Errorf("the idle compile worker fired %+v", f)
	}
}

// Seven ranks in an all-reduce and one in its forward: the one elsewhere
// is named as the one the others wait for.
func TestHeadlineCollectiveNamesTheStraggler(t *testing.T) {
	wait := fr("all_reduce /x/site-packages/torch/distributed/distributed_c10d.py:2500", "wrapper /x/site-packages/torch/distributed/c10d_logger.py:81",
		"step /srv/train.py:30", "<module> /srv/train.py:60")
	busy := fr("forward /srv/model.py:12", "_call_impl /x/site-packages/torch/nn/modules/module.py:1762", "step /srv/train.py:28", "<module> /srv/train.py:60")
	var procs []*stacks.Process
	for r := 0; r < 8; r++ {
		st := wait
		if r == 3 {
			st = busy
		}
		procs = append(procs, worker(10+r, r, 0, st))
	}
	a := analyze(t, procs, stacks.DefaultLevel, nil)
	w := a.Where
	if w.Together != 7 || w.Rule != "nccl-collective-wait" || !w.WaitedFor || len(w.Elsewhere) != 1 || w.Elsewhere[0].Rank != "TP3" || w.Elsewhere[0].Frame.Func != "forward" {
		t.Fatalf("where %+v", w)
	}
	if want := "7/8 ranks in torch/distributed/distributed_c10d.py all_reduce (bucket #1); rank 3 (pid 13) elsewhere, in /srv/model.py forward (bucket #2): the others wait for it"; w.Text != want {
		t.Errorf("text %q\nwant %q", w.Text, want)
	}
	if len(a.Outliers) != 1 || a.Outliers[0].Rank != "TP3" {
		t.Errorf("outliers %+v", a.Outliers)
	}
}

// Every real dump of the corpus gets a verdict (none is "-"), the
// accelerate dump a collective wait on the thread that runs it.
func TestCorpusVerdicts(t *testing.T) {
	want := map[string]string{
		"accelerate-issue-3104-deepspeed-pyspy.txt":     "nccl-collective-wait: Threads blocked in a collective, waiting for a straggler; main thread of pid 42 in torch/autograd/__init__.py backward (bucket #1); thread 4079 of pid 42 in torch/distributed/distributed_c10d.py all_gather_into_tensor [nccl-collective-wait]",
		"returnn-issue-1484-pyspy-header-wrapped.txt":   "no worker captured, only torchrun elastic agent pid 2816; main thread has no Python frame",
		"pytorch-pr-174808-debugserver-stacks.txt":      "1/2 ranks in /home/tristanr/scripts/debug_test.py <module> (bucket #1); rank 1 elsewhere, no Python frame",
		"sglang-issue-17941-native-pyspy-part2.txt":     "gloo-recv-wait: Blocked in a gloo receive (pipeline-parallel or CPU-group wait); main thread of pid 88692 in libtorch_cpu.so gloo::transport::tcp::UnboundBuffer::waitRecv (bucket #1)",
		"transformers-pr-17308-torchdynamo-pyspy.txt":   "main thread of pid 530235 in torch/autograd/__init__.py backward (bucket #1)",
		"sglang-issue-12076-pyspy-compose-prefixed.txt": "main thread of rank 6 (pid 309) in penaltylib/min_new_tokens.py _apply (bucket #1)",
	}
	files, _ := filepath.Glob(filepath.Join(testcorpus.Dir(t, "stackdumps"), "*.txt"))
	if len(files) < 9 {
		t.Fatalf("corpus: %d dumps", len(files))
	}
	for _, path := range files {
		name := filepath.Base(path)
		if strings.Contains(name, "interleaved") {
			continue // unreadable by design: an input error with the fix
		}
		a := analyze(t, read(t, path), stacks.DefaultLevel, nil)
		v := a.Verdict()
		if v == "" || v == "-" || strings.HasPrefix(v, "no stacks") {
			t.Errorf("%s: verdict %q", name, v)
		}
		if w, ok := want[name]; ok && v != w {
			t.Errorf("%s: verdict\n%q, want\n%q", name, v, w)
		}
	}
}

// Helper processes are told by their command line, process title or
// main thread's frames.
func TestRoles(t *testing.T) {
	cases := []struct {
		name   string
		title  string
		frames record.Stack
		want   string
	}{
		{"tracker by frames", "", fr("main /usr/lib/python3.11/multiprocessing/resource_tracker.py:227", "<module> <string>:1"), stacks.RoleResourceTracker},
		{"forkserver by cmdline", "python3 -c from multiprocessing.forkserver import main; main(8, 9, ['__main__'])", nil, stacks.RoleForkserver},
		{"compile worker by frames", "", fr("_recv_msg torch/_inductor/compile_worker/subproc_pool.py:60", "main torch/_inductor/compile_worker/subproc_pool.py:290"), stacks.RoleCompileWorker},
		{"compile pool worker (forked)", "", fr("get multiprocessing/queues.py:103", "_process_worker concurrent/futures/process.py:240",
			"run multiprocessing/process.py:108", "_launch multiprocessing/popen_fork.py:71", "submit torch/_inductor/compile_worker/subproc_pool.py:300"), stacks.RoleCompileWorker},
		{"torchrun", "/usr/bin/python3 /usr/local/bin/torchrun --nproc-per-node=8 train.py", nil, stacks.RoleElasticAgent},
		{"elastic agent by frames", "", fr("_invoke_run torch/distributed/elastic/agent/server/api.py:870", "run torch/distributed/elastic/agent/server/api.py:700"), stacks.RoleElasticAgent},
		{"ray idle worker", "ray::IDLE", nil, stacks.RoleRay},
		{"ray dashboard", "/usr/bin/python3 /x/site-packages/ray/dashboard/dashboard.py --host=127.0.0.1", nil, stacks.RoleRay},
		{"vLLM engine core title", "VLLM::EngineCore_DP0", nil, stacks.RoleEngineCore},
		{"api server by frames", "", fr("run_server vllm/entrypoints/openai/api_server.py:1900"), stacks.RoleAPIServer},
		{"a rank that waits for its compile workers", "", fr("wait threading.py:359", "result concurrent/futures/_base.py:451",
			"submit torch/_inductor/compile_worker/subproc_pool.py:230", "wait torch/_inductor/async_compile.py:400"), ""},
		{"a worker", "VLLM::Worker_TP3", fr("forward vllm/model_executor/models/llama.py:300"), ""},
		// Forked from the engine core: the parent's frames under the
		// child's _bootstrap do not make it the engine core.
		{"a forked worker", "", fr("forward vllm/model_executor/models/llama.py:300", "worker_main vllm/v1/executor/multiproc_executor.py:500",
			"run multiprocessing/process.py:108", "_bootstrap multiprocessing/process.py:314", "_launch multiprocessing/popen_fork.py:71",
			"start multiprocessing/process.py:121", "run_engine_core vllm/v1/engine/core.py:700", "cmd vllm/entrypoints/cli/serve.py:50"), ""},
		{"a forked engine core", "", fr("run_busy_loop vllm/v1/engine/core.py:750", "run_engine_core vllm/v1/engine/core.py:700",
			"run multiprocessing/process.py:108", "_bootstrap multiprocessing/process.py:314", "_launch multiprocessing/popen_fork.py:71",
			"cmd vllm/entrypoints/cli/serve.py:50"), stacks.RoleEngineCore},
		{"vllm serve's main process (uvloop)", "", fr("run uvloop/__init__.py:109", "cmd vllm/entrypoints/cli/serve.py:50", "main vllm/entrypoints/cli/main.py:70"), stacks.RoleAPIServer},
	}
	for _, c := range cases {
		p := &stacks.Process{PID: 5, Name: c.title, RankInfo: rankFromTitle(c.title), Threads: []stacks.Thread{{TID: 5, Main: true, Frames: c.frames}}}
		stacks.Analyze([]*stacks.Process{p}, stacks.Options{Level: stacks.DefaultLevel})
		if p.Role != c.want {
			t.Errorf("%s: role %q, want %q", c.name, p.Role, c.want)
		}
	}
}

func rankFromTitle(title string) record.Rank {
	r := record.NoRank
	if i := strings.Index(title, "::"); i >= 0 {
		r.Role, _, _ = strings.Cut(title[i+2:], "_")
	}
	return r
}

// A spinning loop seen in three snapshots — in its callee, between calls,
// and once read while moving — is busy in the loop, not progressing; a
// boot that moved from loading to compiling is progressing.
func TestBusyLoopAcrossSnapshots(t *testing.T) {
	chain := fr("descend /srv/busy.py:43", "×30", "main /srv/busy.py:86", "<module> /srv/busy.py:90")
	in := func(inner ...string) record.Stack { return append(fr(inner...), chain...) }
	snaps := []record.Stack{
		in("tick /srv/busy.py:28", "spin /srv/busy.py:36"),
		in("spin /srv/busy.py:35"),
		in("spin /srv/busy.py:36"),
	}
	var procs []*stacks.Process
	for i, st := range snaps {
		p := &stacks.Process{PID: 7, Snapshot: i, Source: stacks.SourceLive, RankInfo: record.NoRank, Path: "pid 7",
			Threads: []stacks.Thread{{TID: 7, Main: true, Name: "MainThread", Frames: st, Partial: i == 2}}}
		procs = append(procs, p)
	}
	a := stacks.Analyze(procs, stacks.Options{Level: stacks.DefaultLevel})
	if len(a.Progress) != 1 || a.Progress[0].Verdict != "busy" || a.Progress[0].Where == nil || a.Progress[0].Where.Func != "spin" || a.Progress[0].Shared != 33 {
		t.Fatalf("progress %+v", a.Progress)
	}
	if !strings.Contains(a.Progress[0].Detail, "busy in spin (/srv/busy.py:36)") || !strings.HasSuffix(a.Verdict(), "main thread of pid 7 in /srv/busy.py spin (bucket #1), busy in a loop there (line 36) across 3 snapshots") {
		t.Errorf("detail %q verdict %q", a.Progress[0].Detail, a.Verdict())
	}
	// Partial in every snapshot, the same outer frames: busy, not stuck.
	for _, p := range procs {
		p.Threads[0].Frames, p.Threads[0].Partial = in("spin /srv/busy.py:36"), true
	}
	if a := stacks.Analyze(procs, stacks.Options{Level: stacks.DefaultLevel}); a.Progress[0].Verdict != "busy" {
		t.Errorf("partial snapshots: %+v", a.Progress[0])
	}
	// Loading, then compiling: the boot moved on.
	boot := fr("main /srv/boot.py:40", "<module> /srv/boot.py:50")
	procs[0].Threads[0].Frames = append(fr("load_weights /x/site-packages/vllm/model_executor/models/llama.py:400", "load_model /srv/boot.py:20"), boot...)
	procs[1].Threads[0].Frames = append(fr("compile_fx /x/site-packages/torch/_inductor/compile_fx.py:1800", "compile_model /srv/boot.py:30"), fr("main /srv/boot.py:41", "<module> /srv/boot.py:50")...)
	procs[2].Threads[0].Frames = append(fr("capture_model /x/site-packages/vllm/v1/worker/gpu_model_runner.py:3000", "capture /srv/boot.py:35"), fr("main /srv/boot.py:42", "<module> /srv/boot.py:50")...)
	for _, p := range procs {
		p.Threads[0].Partial = false
	}
	if a := stacks.Analyze(procs, stacks.Options{Level: stacks.DefaultLevel}); a.Progress[0].Verdict != "progressing" || a.Where.Motion != "progressing" {
		t.Errorf("moving boot: %+v", a.Progress[0])
	}
}

// At the default level a recursion keeps its innermost frames visible
// (Bucket.Leaf) and its lines; an irregular one folds into a region that
// lists its functions with lines and leaves the frames around it alone.
func TestRecursionStaysReadable(t *testing.T) {
	st := fr("wait /usr/lib/python3.12/threading.py:655", "leaf /srv/rec.py:20", "Node.__str__ /srv/rec.py:16", "×21", "<module> /srv/rec.py:40")
	a := stacks.Analyze([]*stacks.Process{{PID: 3, RankInfo: record.NoRank, Threads: []stacks.Thread{{TID: 3, Main: true, Frames: st}}}}, stacks.Options{Level: stacks.DefaultLevel})
	b := a.Buckets[0]
	if len(b.Leaf) != 2 || b.Leaf[0].Func != "wait" || b.Leaf[1].Func != "leaf" || b.Leaf[1].Line != 20 {
		t.Errorf("leaf %+v", b.Leaf)
	}
	if len(b.Frames) != 2 || b.Frames[0].Func != "Node.__str__" || b.Frames[0].Repeat != 21 || b.Frames[0].Line != 16 || b.Frames[0].LineVaries || b.Frames[1].Func != "<module>" {
		t.Errorf("frames %+v", b.Frames)
	}
	if a.Where.Frame == nil || a.Where.Frame.Func != "leaf" {
		t.Errorf("where %+v", a.Where.Frame)
	}
	irr := fr("str_helper /x/site-packages/torch/_inductor/ir.py:553", "__str__ /x/site-packages/torch/_inductor/ir.py:6270", "×6",
		"inner_fn_str /x/site-packages/torch/_inductor/ir.py:700", "__str__ /x/site-packages/torch/_inductor/ir.py:6270", "×4",
		"lower /x/site-packages/torch/_inductor/ir.py:90", "<module> /srv/rec.py:40")
	a = stacks.Analyze([]*stacks.Process{{PID: 3, RankInfo: record.NoRank, Threads: []stacks.Thread{{TID: 3, Main: true, Frames: irr}}}}, stacks.Options{Level: stacks.DefaultLevel})
	b = a.Buckets[0]
	if len(b.Leaf) != 1 || b.Leaf[0].Func != "str_helper" || len(b.Frames) != 3 {
		t.Fatalf("leaf %+v frames %+v", b.Leaf, b.Frames)
	}
	r := b.Frames[0]
	if !r.Region || r.Repeat != 11 || len(r.Members) != 2 || r.Members[0] != (stacks.RegionFunc{Func: "__str__", File: "torch/_inductor/ir.py", Line: 6270, Count: 10}) ||
		r.Members[1].Func != "inner_fn_str" || r.Members[1].Line != 700 || r.Members[1].Count != 1 {
		t.Errorf("region %+v", r)
	}
	if b.Frames[1].Func != "lower" || b.Frames[1].Region || b.Frames[2].Func != "<module>" {
		t.Errorf("frames around the region %+v", b.Frames[1:])
	}
}

// A collective wait while another rank compiles is in the phase the
// compiling rank's frames are in: Dynamo tracing a fake kernel, not
// Inductor (the testbed's stuck_rank on torch 2.15).
func TestCollectiveWaitPhaseFromCompilingFrames(t *testing.T) {
	set, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	wait := fr("all_reduce /v/site-packages/torch/distributed/distributed_c10d.py:4181", "wrapper /v/site-packages/torch/distributed/c10d_logger.py:81",
		"main /srv/job.py:20", "<module> /srv/job.py:30")
	tracing := fr("slow_fake /srv/job.py:9", "FakeTensorMode.dispatch /v/site-packages/torch/_subclasses/fake_tensor.py:1400",
		"get_fake_value /v/site-packages/torch/_dynamo/utils.py:3000", "InstructionTranslatorBase.run /v/site-packages/torch/_dynamo/symbolic_convert.py:1400",
		"_compile /v/site-packages/torch/_dynamo/convert_frame.py:900", "main /srv/job.py:21", "<module> /srv/job.py:30")
	lowering := fr("GraphLowering.run /v/site-packages/torch/_inductor/graph.py:1163", "compile_fx_inner /v/site-packages/torch/_inductor/compile_fx.py:1096",
		"dynamo_timed /v/site-packages/torch/_dynamo/utils.py:800", "_compile /v/site-packages/torch/_dynamo/convert_frame.py:900", "main /srv/job.py:21", "<module> /srv/job.py:30")
	for _, c := range []struct {
		other record.Stack
		phase string
	}{{tracing, "dynamo"}, {lowering, "inductor"}} {
		a := stacks.Analyze([]*stacks.Process{worker(10, 0, 0, wait), worker(11, 1, 0, c.other)},
			stacks.Options{Level: stacks.DefaultLevel, Conclude: stacks.Conclude(set, nil)})
		f := finding(a, "collective-wait-while-others-compile")
		if f == nil || f.Phase != c.phase {
			t.Errorf("other rank in %s: finding %+v, want phase %s", c.other[1].Func, f, c.phase)
		}
	}
}

// A lowering loop sampled three times: twice inside the implicit-fallback
// message formatting, the latest between two ops (in the decomposition
// lookup). The thread stayed in GraphLowering.call_function, so the
// signature the earlier snapshots show is the finding, and the headline
// names its frame; a boot that moved on from the formatting to running
// the model is not called by it.
func TestSignatureFromEarlierSnapshot(t *testing.T) {
	const site = "/venv/lib/python3.12/site-packages/"
	lowering := fr("GraphLowering.call_function "+site+"torch/_inductor/graph.py:1461",
		"Interpreter.run_node "+site+"torch/fx/interpreter.py:294",
		"GraphLowering.run "+site+"torch/_inductor/graph.py:1163",
		"compile_fx_inner "+site+"torch/_inductor/compile_fx.py:1096",
		"main /srv/boot.py:40", "<module> /srv/boot.py:50")
	formatting := append(fr("ExternKernel.__str__ "+site+"torch/_inductor/ir.py:8412", "×12",
		"OperatorIssue.operator_str "+site+"torch/_inductor/exc.py:37",
		"LazyString.__str__ "+site+"torch/_logging/_internal.py:1400",
		"Formatter.format /usr/lib/python3.12/logging/__init__.py:700",
		"Handler.format /usr/lib/python3.12/logging/__init__.py:999",
		"Logger.info /usr/lib/python3.12/logging/__init__.py:1539"), lowering...)
	between := append(fr("OpOverloadPacket.__hash__ "+site+"torch/_ops.py:1100",
		"get_decompositions "+site+"torch/_decomp/__init__.py:300"), lowering...)
	run := func(snaps ...record.Stack) *stacks.Analysis {
		var procs []*stacks.Process
		for i, st := range snaps {
			procs = append(procs, &stacks.Process{PID: 7, Snapshot: i, Source: stacks.SourceLive, RankInfo: record.NoRank, Path: "pid 7",
				Threads: []stacks.Thread{{TID: 7, Main: true, Name: "MainThread", State: "active", Frames: st}}})
		}
		return analyze(t, procs, stacks.DefaultLevel, nil)
	}
	a := run(formatting, formatting, between)
	if len(a.Progress) != 1 || a.Progress[0].Verdict != "busy" {
		t.Fatalf("progress %+v", a.Progress)
	}
	f := finding(a, "inductor-implicit-fallback-log-handler")
	if f == nil || f.Severity != record.SeverityError {
		t.Fatalf("findings %+v", a.Findings)
	}
	if len(f.Evidence) == 0 || !strings.Contains(f.Evidence[0].Text, "(snapshot 1 of 3)") {
		t.Errorf("evidence %+v: want the snapshot that shows it", f.Evidence)
	}
	if a.Where.Rule != f.Rule || a.Where.Frame == nil || a.Where.Frame.Func != "OperatorIssue.operator_str" {
		t.Errorf("where %+v: want the finding's frame", a.Where)
	}
	// The same formatting, then the model running: progressing, and the
	// past formatting is no finding.
	served := fr("forward /srv/model.py:10", "serve /srv/boot.py:60", "main /srv/boot.py:41", "<module> /srv/boot.py:50")
	a = run(formatting, served, served[1:])
	if a.Progress[0].Verdict == "busy" || a.Progress[0].Verdict == "slow" {
		t.Fatalf("moved on, progress %+v", a.Progress[0])
	}
	if f := finding(a, "inductor-implicit-fallback-log-handler"); f != nil {
		t.Errorf("a past snapshot's signature reported after the boot moved on: %+v", f)
	}
}
