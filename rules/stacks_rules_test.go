package rules

import (
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// Firing and quiet cases for rules/stacks.yaml (owned by the stacks
// engineer; the end-to-end tests on real and synthetic dumps are in
// package stacks). Frames are innermost first with package-relative
// files, as stacks.Analyze hands them over; Fields are those of a
// stacks.bucket signal of a worker (role "").

func frames(pairs ...string) record.Stack {
	var st record.Stack
	for i := 0; i+1 < len(pairs); i += 2 {
		st = append(st, record.Frame{Func: pairs[i], File: pairs[i+1]})
	}
	return st
}

// worker is the fields of a stacks.bucket signal of a worker's thread.
func worker(primary bool) map[string]string {
	p := "false"
	if primary {
		p = "true"
	}
	return map[string]string{"primary": p, "role": "", "truncated": "false", "partial": "false", "log_format": "false"}
}

func bucket(primary bool, fr record.Stack) Subject {
	return Subject{Fact: "stacks.bucket", Fields: worker(primary), Frames: fr}
}

// Stacks the rules are tested on, innermost first.
var (
	irStr = func(n int, fn string) []string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, fn, "torch/_inductor/ir.py")
		}
		return out
	}
	lowering = []string{"run_node", "torch/_inductor/graph.py", "run", "torch/fx/interpreter.py", "run", "torch/_inductor/graph.py",
		"fx_codegen_and_compile", "torch/_inductor/compile_fx.py", "compile", "vllm/compilation/backends.py"}
	fallbackHang  = frames(append(append(irStr(12, "__str__"), "operator_str", "torch/_inductor/exc.py", "call_function", "torch/_inductor/graph.py"), lowering...)...)
	qualifiedHang = frames(append(irStr(12, "ExternKernel.__str__"), "OperatorIssue.operator_str", "torch/_inductor/exc.py",
		"GraphLowering.call_function", "torch/_inductor/graph.py")...)
	fusionBench = frames("synchronize", "torch/cuda/__init__.py", "benchmark_gpu", "torch/_inductor/runtime/benchmarking.py",
		"benchmark_codegened_module", "torch/_inductor/codegen/triton.py", "benchmark_fused_nodes", "torch/_inductor/codegen/triton.py",
		"benchmark_fused_nodes", "torch/_inductor/scheduler.py", "Scheduler.speedup_by_fusion", "torch/_inductor/scheduler.py",
		"fuse_nodes_once", "torch/_inductor/scheduler.py", "fuse_nodes", "torch/_inductor/scheduler.py", "__init__", "torch/_inductor/scheduler.py",
		"codegen", "torch/_inductor/graph.py", "compile_to_module", "torch/_inductor/graph.py")
	autotune = frames("wait", "threading.py", "result", "concurrent/futures/_base.py", "benchmark_in_sub_process", "torch/_inductor/autotune_process.py",
		"benchmark", "torch/_inductor/select_algorithm.py", "autotune", "torch/_inductor/select_algorithm.py", "do_autotuning", "torch/_inductor/select_algorithm.py",
		"__call__", "torch/_inductor/select_algorithm.py", "tuned_mm", "torch/_inductor/kernel/mm.py", "call_function", "torch/_inductor/graph.py")
	compileWait = frames("wait", "threading.py", "result", "concurrent/futures/_base.py", "_wait_futures", "torch/_inductor/async_compile.py",
		"wait", "torch/_inductor/async_compile.py", "<module>", "<inductor-generated>", "load_by_key_path", "torch/_inductor/codecache.py",
		"compile_to_module", "torch/_inductor/graph.py")
	idleCompileWorker = frames("_recv_msg", "torch/_inductor/compile_worker/subproc_pool.py", "main", "torch/_inductor/compile_worker/subproc_pool.py",
		"main", "torch/_inductor/compile_worker/__main__.py", "<module>", "torch/_inductor/compile_worker/__main__.py")
	allGather = frames("all_gather_into_tensor", "torch/distributed/distributed_c10d.py", "wrapper", "torch/distributed/c10d_logger.py",
		"all_gather_into_tensor", "deepspeed/comm/torch.py", "_fn", "torch/_dynamo/eval_frame.py", "all_gather_into_tensor", "deepspeed/comm/comm.py")
	capture = frames("synchronize", "torch/cuda/__init__.py", "__exit__", "torch/cuda/graphs.py", "_capture_cudagraphs", "vllm/v1/worker/gpu_model_runner.py",
		"capture_model", "vllm/v1/worker/gpu_model_runner.py")
	profileCompile = frames("compile_to_module", "torch/_inductor/graph.py", "compile", "vllm/compilation/backends.py",
		"_dummy_run", "vllm/v1/worker/gpu_model_runner.py", "profile_run", "vllm/v1/worker/gpu_model_runner.py")
	rendezvous = frames("_create_c10d_store", "torch/distributed/rendezvous.py", "_env_rendezvous_handler", "torch/distributed/rendezvous.py",
		"init_process_group", "torch/distributed/distributed_c10d.py", "wrapper", "torch/distributed/c10d_logger.py",
		"init_distributed_environment", "vllm/distributed/parallel_state.py")
	elastic     = frames("next_rendezvous", "torch/distributed/elastic/rendezvous/dynamic_rendezvous.py", "_rendezvous", "torch/distributed/elastic/agent/server/api.py")
	safetensors = frames("safetensors_weights_iterator", "vllm/model_executor/model_loader/weight_utils.py", "load_weights", "vllm/model_executor/models/llama.py",
		"load_model", "vllm/model_executor/model_loader/default_loader.py")
	torchLoad = frames("persistent_load", "torch/serialization.py", "_load", "torch/serialization.py", "load", "torch/serialization.py",
		"load_state_dict", "transformers/modeling_utils.py")
	weightCopy = frames("weight_loader", "vllm/model_executor/layers/linear.py", "load_weights", "vllm/model_executor/models/llama.py",
		"load_model", "vllm/model_executor/model_loader/default_loader.py")
	download = frames("read", "ssl.py", "recv_into", "socket.py", "http_get", "huggingface_hub/file_download.py",
		"_download_to_tmp_and_move", "huggingface_hub/file_download.py", "hf_hub_download", "huggingface_hub/file_download.py",
		"snapshot_download", "huggingface_hub/_snapshot_download.py", "download_weights_from_hf", "vllm/model_executor/model_loader/weight_utils.py")
	sleeping         = frames("wait_for_compile", "/srv/app/silent.py", "main", "/srv/app/silent.py", "<module>", "/srv/app/silent.py")
	schedulerCodegen = frames("can_fuse", "torch/_inductor/scheduler.py", "fuse_nodes_once", "torch/_inductor/scheduler.py", "fuse_nodes", "torch/_inductor/scheduler.py",
		"__init__", "torch/_inductor/scheduler.py", "codegen", "torch/_inductor/graph.py")
	// torch >= 2.13: the lazy message formatted because a handler took
	// the INFO record (the testbed's silent_compile on torch 2.15).
	handlerHang = frames(append(append(irStr(12, "ExternKernel.__str__"), "OperatorIssue.operator_str", "torch/_inductor/exc.py",
		"LazyString.__str__", "torch/_logging/_internal.py", "LogRecord.getMessage", "logging/__init__.py", "Formatter.format", "logging/__init__.py",
		"Handler.format", "logging/__init__.py", "Logger.info", "logging/__init__.py", "GraphLowering.call_function", "torch/_inductor/graph.py"), lowering...)...)
	loweringError = frames(append(irStr(12, "__str__"), "__init__", "torch/_inductor/exc.py", "call_function", "torch/_inductor/graph.py")...)
)

// stackCase is a subject a stack rule must fire on.
type stackCase struct {
	sub Subject
	v   Versions
}

// stackFires holds, per stack rule, subjects that must fire it: stacks
// with native frames and the other shapes the YAML examples cannot write.
var stackFires = map[string][]stackCase{}

func init() {
	add := func(id string, v Versions, subs ...Subject) {
		for _, s := range subs {
			stackFires[id] = append(stackFires[id], stackCase{sub: s, v: v})
		}
	}
	add("inductor-implicit-fallback-operator-str", Versions{"torch": "2.10.0+rocm7.0"}, bucket(true, fallbackHang))
	add("inductor-implicit-fallback-operator-str", nil, Subject{Fact: "stacks.bucket", Frames: qualifiedHang, Fields: map[string]string{"log_format": "false"}})
	formatted := bucket(true, handlerHang)
	formatted.Fields["log_format"] = "true"
	add("inductor-implicit-fallback-log-handler", Versions{"torch": "2.15.0+cu132"}, formatted)
	add("inductor-implicit-fallback-log-handler", nil, formatted)
	add("inductor-ir-str-recursion-root-cut", nil, Subject{Fact: "stacks.bucket", Frames: frames(irStr(40, "__str__")...), Fields: map[string]string{"truncated": "true"}})
	add("inductor-fusion-benchmark", nil, bucket(true, fusionBench), bucket(true, fusionBench[:4]))
	add("inductor-max-autotune-benchmark", nil, bucket(true, autotune))
	add("collective-wait-while-others-compile", nil, Subject{Fact: "stacks.divergence", Fields: map[string]string{
		"frames":       "all_reduce (torch/distributed/distributed_c10d.py);wrapper (torch/distributed/c10d_logger.py);all_reduce (vllm/distributed/parallel_state.py)",
		"other_frames": "__str__ (torch/_inductor/ir.py);operator_str (torch/_inductor/exc.py);call_function (torch/_inductor/graph.py)",
	}})
	// The accelerate dump: the collective runs on a thread of the
	// autograd engine, not the main thread.
	add("nccl-collective-wait", nil, bucket(false, allGather), bucket(true, record.Stack{{Func: "ncclKernel_AllReduce_RING_LL_Sum_float", File: "libnccl.so", Native: true}}))
	add("gloo-recv-wait", nil, Subject{Fact: "stacks.bucket", Frames: record.Stack{
		{Func: "pthread_cond_timedwait", File: "libc.so", Native: true},
		{Func: "gloo::transport::tcp::UnboundBuffer::waitRecv", File: "libtorch_cpu.so", Native: true},
		{Func: "c10d::ProcessGroupGloo::RecvWork::wait", File: "libtorch_cpu.so", Native: true}}})
	add("inductor-compile-worker-wait", nil, bucket(true, compileWait), bucket(true, frames(
		"wait", "threading.py", "result", "concurrent/futures/_base.py", "wait", "torch/_inductor/compile_worker/subproc_pool.py",
		"wait", "torch/_inductor/async_compile.py", "compile_to_module", "torch/_inductor/graph.py")))
	add("cudagraph-capture-wait", nil, bucket(true, capture))
	add("distributed-init-rendezvous", nil, bucket(true, rendezvous), bucket(true, elastic),
		bucket(true, record.Stack{{Func: "c10d::TCPStore::doWait", File: "libtorch_cpu.so", Native: true}}))
	add("weights-loading", nil, bucket(true, safetensors), bucket(true, torchLoad))
	add("model-download", nil, bucket(true, download))
}

// TestStackRulesQuiet: every stack rule on stacks of other hangs, of
// helpers and of healthy work, where it must not fire.
func TestStackRulesQuiet(t *testing.T) {
	s := builtin(t)
	if n := len(stackRules(s)); n < 12 {
		t.Fatalf("%d rules from rules/stacks.yaml", n)
	}
	helper := func(role string, fr record.Stack) Subject {
		sub := bucket(true, fr)
		sub.Fields["role"] = role
		return sub
	}
	formatted := bucket(true, handlerHang)
	formatted.Fields["log_format"] = "true"
	eager := bucket(true, fallbackHang)
	eager.Fields["log_format"] = "false"
	cases := []struct {
		name string
		sub  Subject
		not  []string
	}{
		// The message formatted by logging was lazy: upgrading torch is
		// not the fix, the handler is; the eager one is not a handler's.
		{"a handler formatting the lazy message", formatted, []string{"inductor-implicit-fallback-operator-str"}},
		{"the eager message", eager, []string{"inductor-implicit-fallback-log-handler"}},
		// The implicit-fallback hang is named only with its frames.
		{"fusion benchmarking", bucket(true, fusionBench), []string{"inductor-implicit-fallback-operator-str", "inductor-max-autotune-benchmark"}},
		{"a silent user function", bucket(true, sleeping), stackRules(s)},
		{"scheduler codegen", bucket(true, schedulerCodegen), stackRules(s)},
		{"a lowering error being formatted", bucket(true, loweringError), []string{"inductor-implicit-fallback-operator-str", "inductor-ir-str-recursion-root-cut"}},
		{"the hang on torch 2.13", bucket(true, fallbackHang), []string{"inductor-implicit-fallback-operator-str"}},
		{"max-autotune", bucket(true, autotune), []string{"inductor-fusion-benchmark", "inductor-implicit-fallback-operator-str"}},
		// A helper waiting for work is not a wait of the boot.
		{"an idle compile worker", helper("compile-worker", idleCompileWorker), stackRules(s)},
		{"a compile worker's own frames", bucket(true, idleCompileWorker), []string{"inductor-compile-worker-wait"}},
		{"an all-gather", bucket(true, allGather), []string{"distributed-init-rendezvous", "gloo-recv-wait", "cudagraph-capture-wait"}},
		{"compile inside profile_run", bucket(true, profileCompile), []string{"cudagraph-capture-wait"}},
		{"init", bucket(true, rendezvous), []string{"nccl-collective-wait"}},
		{"weights being copied into parameters", bucket(true, weightCopy), []string{"weights-loading", "model-download"}},
		{"a download", bucket(true, download), []string{"weights-loading"}},
		{"capture on a helper thread", bucket(false, capture), []string{"cudagraph-capture-wait"}},
	}
	for _, c := range cases {
		v := Versions{"torch": "2.10.0"}
		if c.name == "the hang on torch 2.13" {
			v = Versions{"torch": "2.13.0"}
		}
		got := s.Match(c.sub, v)
		for _, id := range c.not {
			if hasRule(got, id) {
				t.Errorf("%s: %s fired (all: %v)", c.name, id, ids(got))
			}
		}
	}
}

// stackRules lists the rules of stacks.yaml.
func stackRules(s *Set) []string {
	var out []string
	for _, r := range s.Rules() {
		if len(r.Source) > len("rules/stacks.yaml") && r.Source[:len("rules/stacks.yaml")] == "rules/stacks.yaml" {
			out = append(out, r.ID)
		}
	}
	return out
}

// TestStackRulesFire: every case in stackFires fires its rule.
func TestStackRulesFire(t *testing.T) {
	s := builtin(t)
	for id, cases := range stackFires {
		if s.Rule(id) == nil {
			t.Errorf("no rule %s", id)
			continue
		}
		for i, c := range cases {
			if !hasRule(s.Match(c.sub, c.v), id) {
				t.Errorf("%s: case %d did not fire (got %v)", id, i, ids(s.Match(c.sub, c.v)))
			}
		}
	}
}
