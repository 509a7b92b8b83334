package timeline

import (
	"github.com/bringup-tool/bringup/internal/lazyre"
	"strconv"
	"strings"
	"sync"

	"github.com/bringup-tool/bringup/record"
)

// Phase names that only frames tell (the log's markers never say them).
const (
	PhaseImport              = "import"                // module import, custom-op registration
	PhaseDistributedInit     = "distributed-init"      // process groups, NCCL/gloo communicators, custom all-reduce
	PhaseAOTAutograd         = "aot-autograd"          // AOTAutograd / make_fx joint-graph tracing
	PhaseInductorCodegen     = "inductor-codegen"      // Inductor scheduler, fusion and code generation
	PhasePostGradPass        = "post-grad-pass"        // Inductor FX passes and engine custom passes
	PhaseTritonCompile       = "triton-compile"        // Triton kernel compile (ttir → ptx/hsaco, ptxas)
	PhaseTritonLauncherBuild = "triton-launcher-build" // Triton's C launcher / driver utilities built with the host compiler
	PhaseCacheSave           = "cache-save"            // compile artifacts written
	PhaseRuntime             = "runtime"               // serving, or nothing more specific known
	PhaseUnknown             = "unknown"
)

// framePhase is one row of the frame table: a frame whose file matches
// file (and whose function matches fn, when set) was running in phase.
type framePhase struct {
	file, fn string // regexes; "" matches anything
	phase    string
	why      string // what the frame shows, for the verdict
	// inner: only counts when it is not the outermost frame (a script's
	// own `<module>` is not an import).
	inner bool
}

// frameTable is the one place that says which frames mean which phase.
// Frames are looked up innermost first and the first row that matches
// decides; rows are tried in order, so a specific row goes before the
// catch-all row of its package.
var frameTable = []framePhase{
	// Frames that run compiled code as well as compile it say nothing:
	// the next frame out decides (phase "").
	{file: `torch/_dynamo/(eval_frame|external_utils)\.py$`},
	{file: `torch/_functorch/_aot_autograd/(runtime_wrappers|utils)\.py$`},
	{file: `torch/_inductor/(output_code|utils)\.py$`, fn: `__call__|run|call|^copy_misaligned_inputs$`},
	{file: `torch/_inductor/compile_fx\.py$`, fn: `runtime_wrapper|__call__|forward`},
	{file: `torch/nn/modules/module\.py$`},
	// Compiled autograd's enable() is the context manager a training step
	// enters around its backward: it traces nothing itself.
	{file: `torch/_dynamo/compiled_autograd\.py$`, fn: `^enable$`},
	{fn: `^(?:__|\*\*)(?:setstate|getstate|reduce|reduce_ex|deepcopy|copy)(?:__|\*\*)$`}, // pickling a pass is not running it
	{file: `(vllm|sglang|atom)/.*compil.*/(cuda_graph|cuda_piecewise_backend|decorators|wrapper)\.py$`, fn: `__call__|_call|wrapper|forward`},
	{file: `torch/_ops\.py$|torch/utils/_contextlib\.py$|functools\.py$|contextlib\.py$`},
	// Inductor's autotune cache is read inside a kernel's autotuning
	// (triton_heuristics.py cached_autotune), before the Triton rows.
	{fn: `^load_cached_autotuning$`, phase: PhaseCacheLoad, why: "Inductor reading its autotune cache"},
	// Triton: the C launcher built with the host compiler, then kernels.
	{file: `triton/runtime/build\.py$`, phase: PhaseTritonLauncherBuild, why: "Triton building its C launcher"},
	{fn: `^compile_module_from_src$`, phase: PhaseTritonLauncherBuild, why: "Triton building its driver module from C source"},
	{file: `triton/backends/[a-z]+/driver\.py$`, fn: `__init__|make_launcher|_build|launcher`, phase: PhaseTritonLauncherBuild, why: "Triton's driver building its launcher"},
	{file: `triton/(compiler/|backends/[a-z]+/compiler\.py$|tools/)`, phase: PhaseTritonCompile, why: "Triton compiling a kernel"},
	{file: `triton/runtime/jit\.py$`, fn: `compile|_do_compile|warmup`, phase: PhaseTritonCompile, why: "Triton JIT compiling a kernel"},
	{file: `torch/_inductor/runtime/(triton_heuristics|compile_tasks)\.py$`, fn: `precompile|_precompile|_make_launcher|compile|load_kernel`, phase: PhaseTritonCompile, why: "Inductor precompiling a Triton kernel"},
	{file: `torch/_inductor/(async_compile|compile_worker/)`, phase: PhaseTritonCompile, why: "Inductor's kernel compile workers"},
	// Compile caches.
	{file: `(?:torch/_inductor|torchinductor)/codecache\.py$`, fn: `(?i)save|put|write|dump`, phase: PhaseCacheSave, why: "Inductor writing its cache"},
	{file: `(?:torch/_inductor|torchinductor)/codecache\.py$`, fn: `(?i)load|lookup|get|_compile_module|import`, phase: PhaseCacheLoad, why: "Inductor loading from its cache"},
	{file: `torch/(_inductor/|_functorch/_aot_autograd/)(autograd_cache|output_code|standalone_compile)\.py$`, fn: `(?i)save|put|write|serial`, phase: PhaseCacheSave, why: "compile artifact being saved"},
	{file: `torch/(_inductor/|_functorch/_aot_autograd/)(autograd_cache|output_code|standalone_compile)\.py$`, fn: `(?i)load|lookup|get|deserial`, phase: PhaseCacheLoad, why: "compile artifact being loaded"},
	{file: `(vllm|sglang|atom)/.*compil.*\.py$`, fn: `(?i)^(save|_save|save_to_file|serialize|store)`, phase: PhaseCacheSave, why: "the engine saving its compile cache"},
	{file: `(vllm|sglang|atom)/.*compil.*\.py$`, fn: `(?i)^(load|_load|load_from|deserialize|compile_or_load|from_cache)`, phase: PhaseCacheLoad, why: "the engine loading its compile cache"},
	{file: `torch/_dynamo/(package|aot_compile)\.py$`, fn: `(?i)load|deserial`, phase: PhaseCacheLoad, why: "an AOT-compiled artifact being loaded"},
	{file: `torch/_dynamo/(package|aot_compile)\.py$`, fn: `(?i)save|serial`, phase: PhaseCacheSave, why: "an AOT-compiled artifact being saved"},
	{file: `triton/runtime/cache\.py$`, fn: `(?i)put|save|write`, phase: PhaseCacheSave, why: "Triton writing its kernel cache"},
	{file: `triton/runtime/cache\.py$`, phase: PhaseCacheLoad, why: "Triton opening or reading its kernel cache"},
	// Inductor and the passes around it.
	{file: `torch/_inductor/(fx_passes/|pattern_matcher\.py$|freezing\.py$|custom_graph_pass\.py$)`, phase: PhasePostGradPass, why: "an Inductor FX pass"},
	{file: `(vllm|sglang|atom)/.*(compilation|compile)/.*(pass|fusion|fix_functionalization|noop_elimination|sequence_parallel|collective)`, phase: PhasePostGradPass, why: "an engine custom graph pass"},
	{file: `torch/_inductor/(scheduler\.py$|codegen/|kernel/|select_algorithm\.py$|autotune_process\.py$|wrapper_benchmark\.py$)`, phase: PhaseInductorCodegen, why: "Inductor's scheduler / code generation"},
	// Inductor's CUDA graphs (mode="reduce-overhead"): their warm-up,
	// recording and the trees that replay them.
	{file: `torch/_inductor/cudagraph_trees\.py$`, phase: PhaseCUDAGraph, why: "Inductor's CUDA graphs (cudagraph trees)"},
	{file: `torch/_inductor/|torchinductor/`, phase: PhaseInductor, why: "Inductor lowering the graph"}, // torchinductor/: before it moved into torch
	{file: `torch/_functorch/(aot_autograd\.py$|_aot_autograd/|partitioners\.py$)|torch/fx/experimental/proxy_tensor\.py$`, phase: PhaseAOTAutograd, why: "AOTAutograd tracing the joint graph"},
	{file: `torch/_dynamo/`, fn: `^_?call_user_compiler$|^compile_and_call_fx_graph$`, phase: PhaseInductor, why: "Dynamo's compile backend running"},
	{file: `torch/_dynamo/`, phase: PhaseDynamo, why: "Dynamo tracing the model"},
	{file: `(vllm|sglang|atom)/.*compil.*(backends?|compiler_interface|piecewise)\.py$`, phase: PhaseInductor, why: "the engine's compile backend"},
	// CUDA graphs.
	{file: `torch/cuda/graphs\.py$|torch_npu/npu/graphs\.py$`, phase: PhaseCUDAGraph, why: "CUDA/NPU-graph capture"},
	{fn: `^capture_(begin|end)$`, phase: PhaseCUDAGraph, why: "graph capture"},
	{file: `cuda_graph_runner\.py$`, fn: `capture|__init__|warmup`, phase: PhaseCUDAGraph, why: "CUDA-graph capture"},
	{fn: `^(capture_model|_capture_cudagraphs?|capture_one_batch_size|_capture_graph|capture|init_cuda_graphs|warmup_and_capture)$`, phase: PhaseCUDAGraph, why: "CUDA-graph capture"},
	// Startup of the engine.
	{fn: `^(profile_run|_dummy_run|_dummy_sampler_run|determine_available_memory|determine_num_available_blocks|initialize_kv_cache|_initialize_kv_caches|initialize_kv_cache_tensors|_allocate_kv_cache_tensors|_reshape_kv_cache_tensors|init_memory_pool|profile_max_num_token|compile_or_warm_up_model|warmup_model|warmup)$`, phase: PhaseProfile, why: "the memory-profile / warm-up run"},
	// The KV cache sized from that profile and allocated (vLLM's
	// EngineCore._initialize_kv_caches and what it calls, the V0 worker's
	// initialize_cache, ATOM's allocate_kv_cache).
	{fn: `^(initialize_cache|initialize_from_config|raise_if_cache_size_invalid|_?check_enough_kv_cache_memory|get_kv_cache_configs?|get_kv_cache_spec|get_kv_cache_groups|unify_kv_cache_spec_page_size|estimate_max_model_len|_?allocate_kv_cache|initialize_attn_backend|may_reinitialize_input_batch)$`, phase: PhaseProfile, why: "sizing and allocating the KV cache"},
	// The engine building its model runner (SGLang's TpModelWorker and
	// ModelRunner, which load the model): outer frames, read only when no
	// frame inside says more.
	{file: `(sglang|vllm|atom|vllm_ascend)/`, fn: `^(_?init_model_runner|init_tp_model_worker|init_model_worker)$`, phase: PhaseLoad, why: "building the model runner, which loads the model"},
	{fn: `^(load_model|load_weights|_load_weights|get_model|initialize_model|_initialize_model|load_state_dict|safetensors_weights_iterator|download_weights_from_hf|hf_hub_download|snapshot_download|from_pretrained|from_hugging_face|get_config|load_checkpoint)$`, phase: PhaseLoad, why: "loading the model"},
	// TensorRT-LLM's LLM API working out what the model directory holds
	// (a checkpoint, an engine, Hugging Face weights) before loading it; a
	// serving wrapper's model class loading its engine (Xinference's
	// model/llm/vllm/core.py load).
	{file: `tensorrt_llm/llmapi/llm_utils\.py$`, fn: `^(get_model_format|_load_model_from_hf|_load_model_from_ckpt|_build_model|_download_hf_model)$`, phase: PhaseLoad, why: "TensorRT-LLM loading the model"},
	{file: `/models?/`, fn: `^load$`, phase: PhaseLoad, why: "a model class loading its model"},
	{file: `lmdeploy/turbomind/deploy/`, phase: PhaseLoad, why: "LMDeploy converting the model's weights for TurboMind"},
	// The model built before its weights load: the engine's model loader,
	// a model's or layer's constructor, a quantization method creating or
	// converting its parameters.
	{file: `(vllm|sglang|atom|vllm_ascend)/(model_executor/)?model_loader/|text_generation_server/utils/weights\.py$`, phase: PhaseLoad, why: "the engine's model loader"},
	{file: `(vllm|sglang|atom|vllm_ascend)/(model_executor/)?(models|layers)/|text_generation_server/(models|layers)/`, fn: `^(__init__|create_weights|process_weights_after_loading)$`, phase: PhaseLoad, why: "building the model's layers"},
	{fn: `^(init_process_group|_new_process_group_helper|new_group|init_distributed_environment|initialize_model_parallel|ensure_model_parallel_initialized|init_world_group|init_model_parallel_group|init_torch_distributed|_init_process_group|rendezvous|_create_c10d_store|_store_based_barrier)$`, phase: PhaseDistributedInit, why: "setting up the process groups"},
	{file: `(pynccl|custom_all_reduce|quick_all_reduce|pymscclpp|symm_mem)\.py$`, fn: `^__init__$`, phase: PhaseDistributedInit, why: "creating a communicator"},
	{fn: `^(ncclCommInitRank|ncclCommInitAll|ncclCommInitRankConfig|ncclGetUniqueId|ncclCommSplit)$`, phase: PhaseDistributedInit, why: "creating an NCCL communicator"},
	{file: `torch/distributed/(rendezvous\.py$|elastic/rendezvous/)`, phase: PhaseDistributedInit, why: "the rendezvous (TCPStore) of the process group"},
	{fn: `^(_init_placement_groups|placement_group|_create_placement_group)$`, phase: PhaseDistributedInit, why: "reserving the job's GPUs as Ray placement groups"},
	{fn: `^(init_worker_distributed_environment|init_device)$`, file: `(vllm|sglang|atom|vllm_ascend)/`, phase: PhaseDistributedInit, why: "the worker setting up its device and process groups"},
	// The serving loop: an error here is not a startup phase.
	{fn: `^(run_busy_loop|run_engine_loop|engine_step|event_loop_normal|event_loop_overlap|event_loop_pp|_process_engine_step|step_with_batch_queue|run_batch)$`, phase: PhaseRuntime, why: "the serving loop"},
	// Imports and custom-op registration.
	{file: `torch/(library|_library/custom_ops|_library/fake_impl)\.py$`, fn: `^(define|_define|impl|_impl|register_fake|_register_fake|register_kernel|custom_op|inner|_register_to_dispatcher|impl_abstract|register_autograd)$`, phase: PhaseImport, why: "registering a custom op"},
	{fn: `^direct_register_custom_op$`, phase: PhaseImport, why: "registering a custom op"},
	{file: `^<frozen importlib\._bootstrap|importlib/__init__\.py$`, phase: PhaseImport, why: "importing a module"},
	{fn: `^<module>$`, phase: PhaseImport, why: "importing a module", inner: true},
}

// textTable says the phase from the words of an error that came without
// frames of a known phase (a one-line report, an excerpt that lost them):
// the module of its exception type or what it names. First match wins.
var textTable = []struct{ re, phase, why string }{
	{`(?i)main\.c'|cuda_utils\.c|__triton_launcher|launcher_cxx|Failed to find C compiler|Python\.h|cannot find -lcuda\b`, PhaseTritonLauncherBuild, "it names the C launcher Triton builds (or its link against libcuda)"},
	{`(?i)ptxas|PTXAS|\.ptx\b|llir|ttgir|ttir|TritonGPU to LLVM|legalize operation 'tt\.|\.triton/llvm/|#ttg\.|#triton_gpu\.|^LLVM ERROR: |\bpipeliner\b`, PhaseTritonCompile, "it names Triton's kernel compiler (its passes, IR or bundled LLVM)"},
	{`(?i)piecewise cuda graph|cuda ?graph|graph capture|capture_begin|CaptureBegin|capturing|graph recording|aclmdlRICapture|ACL_MODEL_RI_CAPTURE`, PhaseCUDAGraph, "it names graph capture"},
	{`torchinductor_[^/\s]*/\S*\.cpp\b|cpp_fused_|cpp_wrapper`, PhaseInductorCodegen, "it names C++ code Inductor generated"},
	{`TORCH_LIBRARY|register the namespace`, PhaseImport, "it names custom-op registration"},
	{`nvls\.cc|graph/(?:rings|trees|topo|search|connect)\.cc|ncclCommInit|init_process_group|gloo::|connectFullMesh|TCPStore|[Rr]endezvous|server socket has failed to (?:listen|bind)|client socket has timed out|gloo/transport/tcp/device\.cc|Unable to find address for|createHCCLComm|hcclCommInit|HcclGetRootInfo`, PhaseDistributedInit, "it names setting up the communicators"},
	{`backend='aot_eager'`, PhaseAOTAutograd, "the backend that failed is aot_eager (AOTAutograd without Inductor)"},
	{`BackendCompilerFailed|backend='inductor'`, PhaseInductor, "the compile backend failed"},
	{`torch\._dynamo\.exc\.|Dynamo|TorchDynamo`, PhaseDynamo, "a Dynamo exception"},
	// Dynamo's own check of the guards it just built (guards.py).
	{`Guard failed on the same frame it was created`, PhaseDynamo, "Dynamo checking the guards it built"},
	{`torch\._inductor\.exc\.|InductorError|LoweringException`, PhaseInductor, "an Inductor exception"},
	{`(?i)loading (model|weights|checkpoint)|safetensors|load_weights|from_pretrained|\bweight \S+ (?:does not exist|not found)|deserializePlugin|deserializeCudaEngine`, PhaseLoad, "it names loading the model"},
}

// textNoise are words a message prints whatever the phase, which
// PhaseOfText does not read: every CUDA OOM message of torch counts the
// memory "allocated in private pools (e.g., CUDA Graphs)".
var textNoise = []string{"private pools (e.g., CUDA Graphs)"}

// textRes and frameRes are the tables' expressions, each compiled the
// first time a text or frame gets to its row (TestTablesCompile compiles
// them all).
var textRes = func() []*lazyre.Regexp {
	out := make([]*lazyre.Regexp, len(textTable))
	for i, r := range textTable {
		out[i] = lazyre.New(r.re)
	}
	return out
}()

// PhaseOfText returns the phase the words of an error name, and why; ""
// when none.
func PhaseOfText(text string) (phase, why string) {
	for _, n := range textNoise {
		text = strings.ReplaceAll(text, n, "")
	}
	for i, re := range textRes {
		if re.MatchString(text) {
			return textTable[i].phase, textTable[i].why
		}
	}
	return "", ""
}

var frameRes = func() [][2]*lazyre.Regexp {
	out := make([][2]*lazyre.Regexp, len(frameTable))
	for i, r := range frameTable {
		if r.file != "" {
			out[i][0] = lazyre.New(r.file)
		}
		if r.fn != "" {
			out[i][1] = lazyre.New(r.fn)
		}
	}
	return out
}()

// PhaseOfFrames returns the phase the innermost frame that the frame
// table knows was running in, and why ("triton/runtime/build.py:48 _build:
// Triton building its C launcher"); "" when no frame is known.
func PhaseOfFrames(st record.Stack) (phase, why string) {
	// The program's own frame is the outermost but for runpy's, which run
	// a module as the program (python -m torch.distributed.run): that
	// module's <module> is the program, not an import.
	top := len(st) - 1
	for top > 0 && runpyFrame(st[top].File) {
		top--
	}
	for i, f := range st { // innermost first
		k := rowOf(f, i >= top)
		if k < 0 {
			continue
		}
		row := frameTable[k]
		if row.phase == "" {
			continue // a neutral frame: the next one out decides
		}
		return row.phase, ShortFrame(f) + ": " + row.why
	}
	return "", ""
}

// runpyFrame: a frame of runpy, which runs a module or a path as the
// program ("<frozen runpy>" on Python 3.11+, runpy.py before).
func runpyFrame(file string) bool {
	return file == "<frozen runpy>" || strings.HasSuffix(file, "/runpy.py") || file == "runpy.py"
}

// rowMemo remembers the row of a frame's file and function (a log of
// crash loops has thousands of tracebacks with the same frames).
var rowMemo struct {
	sync.Mutex
	m map[[2]string]int
}

// rowOf is the index of the first row of frameTable that f matches, or -1.
func rowOf(f record.Frame, outermost bool) int {
	key := [2]string{f.File, f.Func}
	rowMemo.Lock()
	k, ok := rowMemo.m[key]
	rowMemo.Unlock()
	if !ok {
		k = -1
		file := strings.ReplaceAll(f.File, `\`, "/")
		for j := range frameTable {
			res := frameRes[j]
			if res[0] != nil && !res[0].MatchString(file) || res[1] != nil && !res[1].MatchString(f.Func) {
				continue
			}
			k = j
			break
		}
		rowMemo.Lock()
		if rowMemo.m == nil || len(rowMemo.m) > 1<<14 {
			rowMemo.m = map[[2]string]int{}
		}
		rowMemo.m[key] = k
		rowMemo.Unlock()
	}
	if k >= 0 && frameTable[k].inner && outermost {
		return -1
	}
	return k
}

// FramePhases lists every phase the frame table can name (for tests and
// docs).
func FramePhases() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range frameTable {
		if r.phase != "" && !seen[r.phase] {
			seen[r.phase] = true
			out = append(out, r.phase)
		}
	}
	return out
}

// ShortFrame is a frame as a person quotes it: the path from its package
// on ("torch/_inductor/scheduler.py:123 codegen").
func ShortFrame(f record.Frame) string {
	file := f.File
	cut := false
	for _, root := range []string{"site-packages/", "dist-packages/"} {
		if k := strings.LastIndex(file, root); k >= 0 {
			file, cut = file[k+len(root):], true
		}
	}
	if !cut {
		// A source checkout: from the package on, else the last two path
		// elements.
		for _, pkg := range []string{"/vllm/", "/sglang/", "/torch/", "/triton/", "/atom/", "/aiter/", "/transformers/", "/flash_attn/"} {
			if k := strings.LastIndex(file, pkg); k >= 0 {
				file, cut = file[k+1:], true
				break
			}
		}
	}
	if k := strings.LastIndexByte(file, '/'); !cut && k >= 0 {
		if j := strings.LastIndexByte(file[:k], '/'); j >= 0 {
			file = file[j+1:]
		}
	}
	s := file
	if f.Line > 0 {
		s += ":" + strconv.Itoa(f.Line)
	}
	if f.Func != "" {
		s += " " + f.Func
	}
	return s
}

// OpenAt returns the phase rank was in at line of source according to the
// log's own markers: the innermost phase of that rank (any rank when rank
// is "") that opened at or before line and had not closed before it; ""
// when none. The umbrella "compile" phase counts only when nothing inside
// it is open; aot-load and aot-save are reported as cache-load and
// cache-save.
func OpenAt(phases []record.Phase, source, rank string, line int) (string, int) {
	best, bestLine := "", -1
	for _, p := range phases {
		if p.Path != source || (rank != "" && p.Rank != rank) || p.Line > line {
			continue
		}
		if p.Status == record.PhaseDone && p.EndLine > 0 && p.EndLine < line {
			continue
		}
		if p.Status == record.PhaseDone && p.EndLine == 0 {
			continue
		}
		if p.Name == PhaseReady {
			continue
		}
		better := p.Line > bestLine
		if p.Name == PhaseCompile && best != "" {
			better = false
		} else if best == PhaseCompile && p.Name != PhaseCompile {
			better = true
		}
		if better {
			best, bestLine = p.Name, p.Line
		}
	}
	switch best {
	case PhaseAOTLoad:
		best = PhaseCacheLoad
	case PhaseAOTSave:
		best = PhaseCacheSave
	case PhaseCompile:
		best = PhaseDynamo
	}
	return best, bestLine
}

// ReadyBefore returns the line of source at which the log's own markers
// last said, before line, that the engine or its server was up (a ready
// phase of any rank ended), or 0 when none did: an error after it came
// while serving.
func ReadyBefore(phases []record.Phase, source string, line int) int {
	at := 0
	for _, p := range phases {
		end := p.EndLine
		if end == 0 {
			end = p.Line
		}
		if p.Name == PhaseReady && p.Path == source && p.Status == record.PhaseDone && end < line && end > at {
			at = end
		}
	}
	return at
}
