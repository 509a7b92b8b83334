package rules

import "github.com/bringup-tool/bringup/record"

// Firing cases for rules/stacks.yaml (owned by the stacks engineer; the
// end-to-end tests on real and synthetic dumps are in package stacks).
// Frames are innermost first with package-relative files, as
// stacks.Analyze hands them over.

func frames(pairs ...string) record.Stack {
	var st record.Stack
	for i := 0; i+1 < len(pairs); i += 2 {
		st = append(st, record.Frame{Func: pairs[i], File: pairs[i+1]})
	}
	return st
}

func init() {
	strs := func(n int, fn string) []string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, fn, "torch/_inductor/ir.py")
		}
		return out
	}
	hang := append(strs(12, "__str__"), "operator_str", "torch/_inductor/exc.py", "call_function", "torch/_inductor/graph.py", "run_node", "torch/fx/interpreter.py")
	qualified := append(strs(12, "ExternKernel.__str__"), "OperatorIssue.operator_str", "torch/_inductor/exc.py", "GraphLowering.call_function", "torch/_inductor/graph.py")
	fires["inductor-implicit-fallback-operator-str"] = []struct {
		sub Subject
		v   Versions
	}{
		{sub: Subject{Fact: "stacks.bucket", Frames: frames(hang...), Fields: map[string]string{"primary": "true"}}, v: Versions{"torch": "2.10.0+rocm7.0"}},
		{sub: Subject{Fact: "stacks.bucket", Frames: frames(qualified...)}},
		{sub: Subject{Fact: "stacks.bucket", Frames: frames(strs(40, "__str__")...), Fields: map[string]string{"truncated": "true"}}},
	}
	fires["collective-wait-while-others-compile"] = []struct {
		sub Subject
		v   Versions
	}{{sub: Subject{Fact: "stacks.divergence", Fields: map[string]string{
		"frames":       "all_reduce (torch/distributed/distributed_c10d.py);wrapper (torch/distributed/c10d_logger.py);all_reduce (vllm/distributed/parallel_state.py)",
		"other_frames": "__str__ (torch/_inductor/ir.py);operator_str (torch/_inductor/exc.py);call_function (torch/_inductor/graph.py)",
	}}}}
	fires["nccl-collective-wait"] = []struct {
		sub Subject
		v   Versions
	}{{sub: Subject{Fact: "stacks.bucket", Fields: map[string]string{"primary": "true"}, Frames: frames(
		"all_gather_into_tensor", "torch/distributed/distributed_c10d.py", "wrapper", "torch/distributed/c10d_logger.py",
		"all_gather_into_tensor", "deepspeed/comm/torch.py")}}}
	fires["gloo-recv-wait"] = []struct {
		sub Subject
		v   Versions
	}{{sub: Subject{Fact: "stacks.bucket", Frames: record.Stack{
		{Func: "pthread_cond_timedwait", File: "libc.so", Native: true},
		{Func: "gloo::transport::tcp::UnboundBuffer::waitRecv", File: "libtorch_cpu.so", Native: true},
		{Func: "c10d::ProcessGroupGloo::RecvWork::wait", File: "libtorch_cpu.so", Native: true}}}}}
	fires["inductor-compile-worker-wait"] = []struct {
		sub Subject
		v   Versions
	}{{sub: Subject{Fact: "stacks.bucket", Frames: frames(
		"wait", "threading.py", "result", "concurrent/futures/_base.py", "wait", "torch/_inductor/compile_worker/subproc_pool.py",
		"wait", "torch/_inductor/async_compile.py", "compile_to_module", "torch/_inductor/graph.py")}}}
	fires["cudagraph-capture-wait"] = []struct {
		sub Subject
		v   Versions
	}{{sub: Subject{Fact: "stacks.bucket", Fields: map[string]string{"primary": "true"}, Frames: frames(
		"synchronize", "torch/cuda/__init__.py", "__exit__", "torch/cuda/graphs.py", "capture_model", "vllm/v1/worker/gpu_model_runner.py")}}}
}
