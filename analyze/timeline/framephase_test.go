package timeline

import (
	"testing"

	"github.com/bringup-tool/bringup/record"
)

func TestPhaseOfFrames(t *testing.T) {
	sp := "/usr/local/lib/python3.12/site-packages/"
	fr := func(fn, file string) record.Frame { return record.Frame{Func: fn, File: file, Line: 1} }
	cases := []struct {
		want string
		st   record.Stack // innermost first
	}{
		{PhaseTritonLauncherBuild, record.Stack{fr("check_call", "/usr/lib/python3.12/subprocess.py"), fr("_build", sp+"triton/runtime/build.py"), fr("compile_module_from_src", sp+"triton/backends/nvidia/driver.py")}},
		{PhaseTritonCompile, record.Stack{fr("make_cubin", sp+"triton/backends/nvidia/compiler.py"), fr("compile", sp+"triton/compiler/compiler.py"), fr("precompile", sp+"torch/_inductor/runtime/triton_heuristics.py")}},
		{PhaseInductorCodegen, record.Stack{fr("codegen", sp+"torch/_inductor/scheduler.py"), fr("compile_to_module", sp+"torch/_inductor/graph.py")}},
		{PhasePostGradPass, record.Stack{fr("__call__", sp+"vllm/compilation/fix_functionalization.py"), fr("post_grad_passes", sp+"torch/_inductor/fx_passes/post_grad.py")}},
		{PhaseAOTAutograd, record.Stack{fr("aot_dispatch_base", sp+"torch/_functorch/_aot_autograd/jit_compile_runtime_wrappers.py")}},
		{PhaseDynamo, record.Stack{fr("step", sp+"torch/_dynamo/symbolic_convert.py"), fr("_compile", sp+"torch/_dynamo/convert_frame.py")}},
		{PhaseLoad, record.Stack{fr("get_model_format", sp+"tensorrt_llm/llmapi/llm_utils.py"), fr("main", sp+"click/core.py")}},
		{PhaseLoad, record.Stack{fr("load", sp+"xinference/model/llm/vllm/core.py"), fr("load", sp+"xinference/core/model.py")}},
		// A CUDA check in a library, under SGLang building its model runner.
		{PhaseLoad, record.Stack{fr("checkCudaErrors", sp+"flashinfer/cuda_utils.py"), fr("_init_model_runner", sp+"sglang/srt/managers/tp_worker.py"), fr("__init__", sp+"sglang/srt/managers/scheduler.py")}},
		{PhaseCacheLoad, record.Stack{fr("load", sp+"torch/_inductor/codecache.py")}},
		// A trainer reserving its GPUs before any worker starts.
		{PhaseDistributedInit, record.Stack{fr("_init_placement_groups", "/opt/nemo_rl/distributed/virtual_cluster.py"), fr("__init__", "/opt/nemo_rl/distributed/virtual_cluster.py")}},
		{PhaseCUDAGraph, record.Stack{fr("capture_begin", sp+"torch_npu/npu/graphs.py"), fr("__call__", sp+"vllm_ascend/compilation/piecewise_backend.py")}},
		{PhaseProfile, record.Stack{fr("forward", "/opt/vllm/vllm/model_executor/models/llama.py"), fr("_call_impl", sp+"torch/nn/modules/module.py"),
			fr("__call__", sp+"vllm/compilation/cuda_graph.py"), fr("_dummy_run", sp+"vllm/v1/worker/gpu_model_runner.py"), fr("profile_run", sp+"vllm/v1/worker/gpu_model_runner.py")}},
		{PhaseLoad, record.Stack{fr("load_weights", "/opt/vllm/vllm/model_executor/models/qwen3.py")}},
		{PhaseDistributedInit, record.Stack{fr("init_process_group", sp+"torch/distributed/distributed_c10d.py")}},
		{PhaseDistributedInit, record.Stack{fr("NCCL_CHECK", sp+"vllm/distributed/device_communicators/pynccl_wrapper.py"), fr("ncclCommInitRank", sp+"vllm/distributed/device_communicators/pynccl_wrapper.py")}},
		{PhaseDistributedInit, record.Stack{fr("_create_tcp_store", sp+"torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py"), fr("next_rendezvous", sp+"torch/distributed/elastic/rendezvous/dynamic_rendezvous.py")}},
		{PhaseDistributedInit, record.Stack{fr("_lazy_init", sp+"torch/cuda/__init__.py"), fr("set_device", sp+"torch/cuda/__init__.py"), fr("init_device", sp+"vllm/worker/worker.py")}},
		{PhaseCacheLoad, record.Stack{fr("raw_decode", "/usr/lib/python3.11/json/decoder.py"), fr("load_cached_autotuning", sp+"torch/_inductor/triton_heuristics.py"), fr("cached_autotune", sp+"torch/_inductor/triton_heuristics.py")}},
		{PhaseImport, record.Stack{fr("define", sp+"torch/library.py"), fr("direct_register_custom_op", sp+"vllm/utils/torch_utils.py"), fr("<module>", sp+"vllm/model_executor/layers/quantization/bitsandbytes.py"), fr("<module>", "serve.py")}},
		{PhaseProfile, record.Stack{fr("unify_kv_cache_spec_page_size", sp+"vllm/v1/core/kv_cache_utils.py"), fr("get_kv_cache_groups", sp+"vllm/v1/core/kv_cache_utils.py")}},
		{PhaseProfile, record.Stack{fr("raise_if_cache_size_invalid", sp+"vllm/worker/worker.py"), fr("initialize_cache", sp+"vllm/worker/worker.py")}},
		{PhaseLoad, record.Stack{fr("empty", sp+"torch/utils/_device.py"), fr("create_weights", sp+"vllm/model_executor/layers/linear.py"), fr("__init__", sp+"vllm/model_executor/layers/linear.py"), fr("__init__", sp+"vllm/model_executor/models/llama.py")}},
		{PhaseLoad, record.Stack{fr("get_tensor", "/opt/tgi/server/text_generation_server/utils/weights.py"), fr("__init__", "/opt/tgi/server/text_generation_server/models/custom_modeling/flash_rw_modeling.py")}},
		{PhaseLoad, record.Stack{fr("_prepare_weights", sp+"vllm/model_executor/model_loader/default_loader.py")}},
		{PhaseRuntime, record.Stack{fr("forward", sp+"vllm/model_executor/models/llama.py"), fr("execute_model", sp+"vllm/v1/worker/gpu_worker.py"), fr("run_busy_loop", sp+"vllm/v1/engine/core.py")}},
		{PhaseRuntime, record.Stack{fr("execute_model", sp+"vllm/v1/worker/gpu_worker.py"), fr("run_busy_loop", sp+"vllm/v1/engine/core.py")}},
		{PhaseCacheSave, record.Stack{fr("write", sp+"torchinductor/codecache.py"), fr("load", sp+"torchinductor/codecache.py"), fr("<module>", "/tmp/torchinductor_u/s7/cs7y.py"), fr("load", sp+"torchinductor/codecache.py")}},
		{"", record.Stack{fr("<module>", "serve.py")}}, // a script's own top level is no import
		{"", record.Stack{fr("enable", sp+"torch/_dynamo/compiled_autograd.py"), fr("<cell line: 1>", "<ipython-input-11-3d62>")}},
		{PhaseDynamo, record.Stack{fr("enable", sp+"torch/_dynamo/compiled_autograd.py"), fr("_compile", sp+"torch/_dynamo/convert_frame.py")}},
		{"", record.Stack{fr("copy_misaligned_inputs", sp+"torch/_inductor/utils.py")}}, // the compiled graph's call checking its inputs
	}
	for _, c := range cases {
		if got, why := PhaseOfFrames(c.st); got != c.want {
			t.Errorf("%v: %q (%s), want %q", c.st, got, why, c.want)
		}
	}
}

func TestOpenAt(t *testing.T) {
	ph := []record.Phase{
		{Rank: "TP0", Name: PhaseCompile, Status: record.PhaseFailed, Path: "a", Line: 10},
		{Rank: "TP0", Name: PhaseDynamo, Status: record.PhaseDone, Path: "a", Line: 11, EndLine: 20},
		{Rank: "TP0", Name: PhaseInductor, Status: record.PhaseFailed, Path: "a", Line: 21},
		{Rank: "TP1", Name: PhaseLoad, Status: record.PhaseUnfinished, Path: "a", Line: 5},
	}
	if p, _ := OpenAt(ph, "a", "TP0", 30); p != PhaseInductor {
		t.Errorf("TP0 at 30: %q", p)
	}
	if p, _ := OpenAt(ph, "a", "TP0", 15); p != PhaseDynamo {
		t.Errorf("TP0 at 15: %q", p)
	}
	if p, _ := OpenAt(ph, "a", "TP1", 30); p != PhaseLoad {
		t.Errorf("TP1: %q", p)
	}
	if p, _ := OpenAt(ph, "b", "", 30); p != "" {
		t.Errorf("other source: %q", p)
	}
}

// A module that runpy runs as the program (python -m torch.distributed.run)
// has a <module> frame under runpy's: that is the program, not an import.
func TestRunpyModuleIsNoImport(t *testing.T) {
	st := record.Stack{
		{File: "torch/distributed/elastic/multiprocessing/api.py", Func: "_terminate_process_handler"},
		{File: "torch/distributed/run.py", Func: "<module>"},
		{File: "<frozen runpy>", Func: "_run_code"},
		{File: "<frozen runpy>", Func: "_run_module_as_main"},
	}
	if p, why := PhaseOfFrames(st); p == PhaseImport {
		t.Errorf("runpy's module: %s (%s)", p, why)
	}
	imp := record.Stack{{File: "vllm/model_executor/layers/foo.py", Func: "<module>"}, {File: "serve.py", Func: "main"}, {File: "serve.py", Func: "<module>"}}
	if p, _ := PhaseOfFrames(imp); p != PhaseImport {
		t.Errorf("an imported module's frame: %q", p)
	}
}

// TestReadyBefore: the last ready phase of any rank that ended before the
// line; none when it ended at or after it or is another source's.
func TestTritonCacheFrames(t *testing.T) {
	st := record.Stack{{File: "/usr/lib/python3.10/os.py", Func: "makedirs"}, {File: "/x/site-packages/triton/runtime/cache.py", Func: "__init__"}, {File: "/x/site-packages/triton/runtime/jit.py", Func: "run"}}
	if p, _ := PhaseOfFrames(st); p != PhaseCacheLoad {
		t.Errorf("cache dir: %q", p)
	}
	st[1].Func = "put"
	if p, _ := PhaseOfFrames(st); p != PhaseCacheSave {
		t.Errorf("cache put: %q", p)
	}
}

func TestReadyBefore(t *testing.T) {
	ph := []record.Phase{
		{Rank: "EngineCore DP0", Name: PhaseReady, Status: record.PhaseDone, Path: "a", Line: 3, EndLine: 40},
		{Rank: "APIServer pid 1", Name: PhaseReady, Status: record.PhaseDone, Path: "a", Line: 45},
		{Rank: "TP0", Name: PhaseLoad, Status: record.PhaseDone, Path: "a", Line: 50, EndLine: 60},
	}
	for _, c := range []struct {
		src        string
		line, want int
	}{{"a", 100, 45}, {"a", 44, 40}, {"a", 40, 0}, {"b", 100, 0}} {
		if got := ReadyBefore(ph, c.src, c.line); got != c.want {
			t.Errorf("%s:%d: %d, want %d", c.src, c.line, got, c.want)
		}
	}
}

func TestPhaseOfText(t *testing.T) {
	cases := []struct{ text, want string }{
		{"Pass execution failedLLVM ERROR: Failed to translate TritonGPU to LLVM IR.", PhaseTritonCompile},
		{"error: failed to legalize operation 'tt.load' that was explicitly marked illegal", PhaseTritonCompile},
		{"torch._dynamo.exc.BackendCompilerFailed: backend='aot_eager' raised:\nRuntimeError: Found a custom (non-ATen) operator", PhaseAOTAutograd},
		{"torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nAssertionError", PhaseInductor},
		{"AssertionError: Guard failed on the same frame it was created. This is a bug", PhaseDynamo},
		{"LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.tcgen05.wait.st", PhaseTritonCompile},
		{"../x86_64-conda-linux-gnu/bin/ld: cannot find -lcuda: No such file or directory", PhaseTritonLauncherBuild},
		// glibc's assert report from the LLVM that Triton bundles, and the
		// TritonGPU IR Triton prints after it.
		{"python: /root/.triton/llvm/llvm-1188b1ff-ubuntu-x64/include/llvm/Support/Casting.h:566: decltype(auto) llvm::cast(const From&): Assertion `isa<To>(Val)' failed.", PhaseTritonCompile},
		{"#blocked = #ttg.blocked<{sizePerThread = [1, 1]}>", PhaseTritonCompile},
		// LLVM elsewhere (a system LLVM under another compiler) says nothing.
		{"clang: /usr/include/llvm/Support/Casting.h:566: Assertion `isa<To>(Val)' failed.", ""},
		{"RuntimeError: the frobnicator stalled", ""},
		// torch's OOM message counts CUDA-graph pools in every phase.
		{"CUDA out of memory. Of the allocated memory 71.57 GiB is allocated by PyTorch, with 39.77 MiB allocated in private pools (e.g., CUDA Graphs), and 611.60 MiB is reserved", ""},
		{"Exception: Capture cuda graph failed: RuntimeError when making fake tensor call", PhaseCUDAGraph},
		// torch_npu's HCCL communicator setup.
		{"RuntimeError: createHCCLComm:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:1479 HCCL function error: HcclGetRootInfo(&hcclID), error code is 11", PhaseDistributedInit},
		// torch_npu's ACL graph (Ascend's CUDA graph) capture state check.
		{`RuntimeError: status == aclmdlRICaptureStatus::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE INTERNAL ASSERT FAILED`, PhaseCUDAGraph},
		// TensorRT's engine deserialisation (a plugin built from the engine file).
		{"4       0x7f6ce80a9b72 tensorrt_llm::plugins::GPTAttentionPluginCreator::deserializePlugin(char const*, void const*, unsigned long) + 50", PhaseLoad},
		// TGI's weight lookup (weights.py get_filename).
		{"RuntimeError: weight encoder.embed_tokens.weight does not exist", PhaseLoad},
	}
	for _, c := range cases {
		if got, why := PhaseOfText(c.text); got != c.want {
			t.Errorf("%q: %q (%s), want %q", c.text, got, why, c.want)
		}
	}
}

// TestTablesCompile: the tables' expressions compile on first use in a
// run; here every one is compiled, so a bad one fails the test.
func TestTablesCompile(t *testing.T) {
	for i, re := range textRes {
		if err := re.Compile(); err != nil {
			t.Errorf("text row %d: %v", i, err)
		}
	}
	for i, res := range frameRes {
		for _, re := range res {
			if re != nil && re.Compile() != nil {
				t.Errorf("frame row %d (%s %s): %v", i, frameTable[i].file, frameTable[i].fn, re.Compile())
			}
		}
	}
}
