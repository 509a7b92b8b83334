#!/usr/bin/env python3
"""Writes the example boot logs in this folder (see README.md).

The logs are assembled, not captured: every line follows the vLLM 0.11/0.12
V1 log format (nested "(EngineCore_DP0 pid=…) (Worker_TPn pid=…)" prefixes,
"LEVEL MM-DD HH:MM:SS [file.py:line]" headers repeated on each line of a
multi-line message) and the wording of ../shared/reference/log-formats.md,
and the failures are the ones the two seed documents describe. Run it again
to regenerate them byte for byte.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SITE = "/usr/local/lib/python3.12/dist-packages"
ENGINE_CONFIG = 'model=\'/models/GLM-5.3-Flash\', speculative_config=None, tokenizer=\'/models/GLM-5.3-Flash\', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=131072, download_dir=None, load_format=auto, tensor_parallel_size=4, pipeline_parallel_size=1, data_parallel_size=1, disable_custom_all_reduce=False, quantization=fp8, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name=/models/GLM-5.3-Flash, enable_prefix_caching=True, compilation_config={"level":3,"mode":3,"debug_dump_path":null,"cache_dir":"","backend":"inductor","custom_ops":["none"],"splitting_ops":["vllm::unified_attention","vllm::unified_attention_with_output","vllm::mamba_mixer2"],"use_inductor_graph_partition":false,"compile_sizes":[],"cudagraph_mode":[2,1],"cudagraph_capture_sizes":[512,504,496,488,480,472,464,456,448,440,432,424,416,408,400,392,384,376,368,360,352,344,336,328,320,312,304,296,288,280,272,264,256,248,240,232,224,216,208,200,192,184,176,168,160,152,144,136,128,120,112,104,96,88,80,72,64,56,48,40,32,24,16,8,4,2,1],"max_cudagraph_capture_size":512}'
MODEL = "/opt/vllm/vllm/model_executor/models/glm5next/model.py"


class Log:
    def __init__(self, tp, date="11-29", start=(21, 4, 11)):
        self.tp, self.date = tp, date
        self.h, self.m, self.s = start
        self.lines = []
        self.api, self.engine = 4101, 4180
        self.workers = [4190 + 7 * i for i in range(tp)]

    def tick(self, secs):
        t = self.h * 3600 + self.m * 60 + self.s + secs
        self.h, self.m, self.s = t // 3600, (t // 60) % 60, t % 60

    def ts(self):
        return f"{self.date} {self.h:02d}:{self.m:02d}:{self.s:02d}"

    def raw(self, text):
        self.lines.append(text)

    def api_log(self, level, where, msg):
        for l in msg.split("\n"):
            self.raw(f"(APIServer pid={self.api}) {level} {self.ts()} [{where}] {l}".rstrip())

    def core(self, level, where, msg):
        for l in msg.split("\n"):
            self.raw(f"(EngineCore_DP0 pid={self.engine}) {level} {self.ts()} [{where}] {l}".rstrip())

    def worker(self, rank, level, where, msg):
        pre = f"(EngineCore_DP0 pid={self.engine}) (Worker_TP{rank} pid={self.workers[rank]})"
        for l in msg.split("\n"):
            self.raw(f"{pre} {level} {self.ts()} [{where}] {l}".rstrip())

    def all_workers(self, level, where, msg, step=0):
        for r in range(self.tp):
            self.worker(r, level, where, msg.replace("{rank}", str(r)))
            if step:
                self.tick(step)

    def write(self, path):
        full = os.path.join(HERE, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write("\n".join(self.lines) + "\n")


def preamble(log, torch, vllm, triton, env):
    # What the bring-up launcher prints before it starts the server.
    log.raw(f"+ export {' '.join(env)}")
    log.raw("+ pip freeze | grep -E '^(torch|vllm|triton|pytorch-triton-rocm)=='")
    log.raw(f"pytorch-triton-rocm=={triton}")
    log.raw(f"torch=={torch}")
    log.raw(f"vllm=={vllm}")
    log.raw("+ vllm serve /models/GLM-5.3-Flash --tensor-parallel-size 4 --trust-remote-code --gpu-memory-utilization 0.9")
    log.raw("INFO 11-29 21:04:09 [__init__.py:225] Automatically detected platform rocm.")


def boot_to_compile(log, vllm_short, aot):
    log.api_log("INFO", "api_server.py:1839", f"vLLM API server version {vllm_short}")
    log.api_log("INFO", "utils.py:233", "non-default args: {'model_tag': '/models/GLM-5.3-Flash', 'model': '/models/GLM-5.3-Flash', 'trust_remote_code': True, 'tensor_parallel_size': 4, 'gpu_memory_utilization': 0.9}")
    log.tick(7)
    log.api_log("INFO", "model.py:547", "Resolved architecture: Glm5NextForCausalLM")
    log.api_log("INFO", "model.py:1510", "Using max model len 131072")
    log.api_log("INFO", "scheduler.py:205", "Chunked prefill is enabled with max_num_batched_tokens=8192.")
    log.tick(6)
    log.core("INFO", "core.py:644", "Waiting for init message from front-end.")
    log.core("INFO", "core.py:77", f"Initializing a V1 LLM engine (v{vllm_short}) with config: " + ENGINE_CONFIG)
    log.core("WARNING", "multiproc_executor.py:720", "Reducing Torch parallelism from 64 threads to 1 to avoid unnecessary CPU contention. Set OMP_NUM_THREADS in the external environment to tune this value as needed.")
    log.tick(9)
    log.all_workers("INFO", "parallel_state.py:1208", "rank {rank} in world size 4 is assigned as DP rank 0, PP rank 0, TP rank {rank}, EP rank {rank}")
    log.all_workers("INFO", "gpu_model_runner.py:2602", "Starting to load model /models/GLM-5.3-Flash...")
    log.tick(1)
    log.all_workers("INFO", "rocm.py:260", "Using Triton MLA backend on V1 engine.")
    log.tick(40)
    for r in range(log.tp):
        log.worker(r, "INFO", "default_loader.py:267", f"Loading weights took {41.2 + r * 0.37:.2f} seconds")
        log.worker(r, "INFO", "gpu_model_runner.py:2653", f"Model loading took 38.41 GiB and {42.87 + r * 0.4:.6f} seconds")
    log.tick(3)
    for r in range(log.tp):
        log.worker(r, "INFO", "backends.py:548", f"Using cache directory: /root/.cache/vllm/torch_compile_cache/3f9c1e7a2b/rank_{r}_0/backbone for vLLM's torch.compile")
    if aot:
        log.all_workers("INFO", "decorators.py:409", "Compiling model with AOT compile (VLLM_USE_AOT_COMPILE=1).")


def tb_lines(frames, exc):
    out = ["Traceback (most recent call last):"]
    for f in frames:
        file, line, func, code = f
        out.append(f'  File "{file}", line {line}, in {func}')
        if code:
            out.append(f"    {code}")
    out.extend(exc.split("\n"))
    return "\n".join(out)


COMMON_OUTER = [
    (f"{SITE}/vllm/v1/executor/multiproc_executor.py", 810, "worker_busy_loop", "output = func(*args, **kwargs)"),
    (f"{SITE}/torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)"),
    (f"{SITE}/vllm/v1/worker/gpu_worker.py", 283, "determine_available_memory", "self.model_runner.profile_run()"),
    (f"{SITE}/vllm/v1/worker/gpu_model_runner.py", 3379, "profile_run", "hidden_states, last_hidden_states = self._dummy_run("),
    (f"{SITE}/torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)"),
    (f"{SITE}/vllm/v1/worker/gpu_model_runner.py", 3106, "_dummy_run", "outputs = self.model("),
    (f"{SITE}/vllm/compilation/cuda_graph.py", 126, "__call__", "return self.runnable(*args, **kwargs)"),
]


def engine_failure(log, worker_msg):
    log.tick(1)
    core_tb = tb_lines([
        (f"{SITE}/vllm/v1/engine/core.py", 834, "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)"),
        (f"{SITE}/vllm/v1/engine/core.py", 610, "__init__", "super().__init__("),
        (f"{SITE}/vllm/v1/engine/core.py", 109, "__init__", "num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches("),
        (f"{SITE}/vllm/v1/engine/core.py", 221, "_initialize_kv_caches", "available_gpu_memory = self.model_executor.determine_available_memory()"),
        (f"{SITE}/vllm/v1/executor/abstract.py", 87, "determine_available_memory", "return self.collective_rpc(\"determine_available_memory\")"),
        (f"{SITE}/vllm/v1/executor/multiproc_executor.py", 264, "collective_rpc", "result = get_response(w, dequeue_timeout, self.shutdown_event)"),
        (f"{SITE}/vllm/v1/executor/multiproc_executor.py", 248, "get_response", "raise RuntimeError("),
    ], f"RuntimeError: Worker failed with error '{worker_msg}', please check the stack trace above for the root cause")
    log.core("ERROR", "core.py:843", "EngineCore failed to start.\n" + core_tb)
    log.core("INFO", "multiproc_executor.py:558", "Parent process exited, terminating worker")
    log.tick(2)
    api_tb = tb_lines([
        ("/usr/local/bin/vllm", 8, "<module>", "sys.exit(main())"),
        (f"{SITE}/vllm/entrypoints/cli/main.py", 73, "main", "args.dispatch_function(args)"),
        (f"{SITE}/vllm/entrypoints/cli/serve.py", 59, "cmd", "uvloop.run(run_server(args))"),
        (f"{SITE}/vllm/entrypoints/openai/api_server.py", 1884, "run_server", "await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)"),
        (f"{SITE}/vllm/v1/engine/utils.py", 880, "wait_for_engine_startup", "raise RuntimeError("),
    ], "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    for l in api_tb.split("\n"):
        log.raw(f"(APIServer pid={log.api}) {l}")


def aot_graph_break():
    log = Log(4)
    preamble(log, "2.11.0+rocm10.0", "0.12.1.dev34+gfa3b5c1.rocm710", "3.5.1+rocm10.0",
             ["R4D_GLM_COMPILE=1", "VLLM_COMPILE_FULLGRAPH=0"])
    boot_to_compile(log, "0.12.1.dev34+gfa3b5c1.rocm710", aot=True)
    log.tick(2)
    msg = "Graph breaks are not supported with aot compile. Please use torch.compile(fullgraph=True)."
    frames = COMMON_OUTER + [
        (f"{SITE}/vllm/compilation/decorators.py", 420, "__call__", "self.aot_compiled_fn = self.aot_compile(*args, **kwargs)"),
        (f"{SITE}/vllm/compilation/wrapper.py", 170, "aot_compile", "return self._compiled_callable.aot_compile((args, kwargs))"),
        (f"{SITE}/torch/_dynamo/eval_frame.py", 795, "aot_compile", "raise RuntimeError("),
    ]
    for r in range(log.tp):
        log.worker(r, "ERROR", "multiproc_executor.py:815", "WorkerProc hit an exception.\n" + tb_lines(frames, "RuntimeError: " + msg))
    engine_failure(log, msg)
    log.write("aot-graph-break/vllm-serve.log")


def inlined_keyerror():
    log = Log(4)
    preamble(log, "2.11.0+rocm10.0", "0.12.1.dev34+gfa3b5c1.rocm710", "3.5.1+rocm10.0",
             ["R4D_GLM_COMPILE=1", "VLLM_COMPILE_FULLGRAPH=0", "VLLM_USE_AOT_COMPILE=0"])
    boot_to_compile(log, "0.12.1.dev34+gfa3b5c1.rocm710", aot=False)
    log.tick(1)
    for r in range(log.tp):
        log.worker(r, "INFO", "backends.py:559", f"Dynamo bytecode transform time: {1.08 + r * 0.02:.2f} s")
    log.tick(4)
    log.all_workers("INFO", "backends.py:197", "Cache the graph for dynamic shape for later use")
    log.tick(20)
    for r in range(log.tp):
        log.worker(r, "INFO", "backends.py:215", f"Compiling a graph for dynamic shape takes {24.31 + r * 0.5:.2f} s")
        log.worker(r, "INFO", "monitor.py:34", f"torch.compile takes {25.39 + r * 0.5:.2f} s in total")
    log.tick(2)
    frames = COMMON_OUTER + [
        (f"{SITE}/vllm/compilation/decorators.py", 439, "__call__", "output = TorchCompileWithNoGuardsWrapper.__call__(self, *args, **kwargs)"),
        (f"{SITE}/vllm/compilation/wrapper.py", 204, "__call__", "return self._call_with_optional_nvtx_range("),
        (f"{SITE}/vllm/compilation/wrapper.py", 121, "_call_with_optional_nvtx_range", "return callable_fn(*args, **kwargs)"),
        (f"{SITE}/torch/_dynamo/eval_frame.py", 841, "compile_wrapper", "return fn(*args, **kwargs)"),
        (MODEL, 730, "forward", "def forward("),
        (MODEL, 748, "forward", "hidden_states, residual, post, comb = layer("),
        (f"{SITE}/torch/nn/modules/module.py", 1775, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
        (f"{SITE}/torch/nn/modules/module.py", 1786, "_call_impl", "return forward_call(*args, **kwargs)"),
        (MODEL, 456, "forward", "def forward("),
    ]
    for r in range(log.tp):
        log.worker(r, "ERROR", "multiproc_executor.py:815", "WorkerProc hit an exception.\n" + tb_lines(frames, "KeyError: 'in_proj_qkvbfg_a'"))
    engine_failure(log, "'in_proj_qkvbfg_a'")
    log.write("inlined-keyerror/vllm-serve.log")


def inductor_hang():
    # Case B of signatures.md §7: torch 2.10, the backbone graph is served
    # from the cache, the late graph is lowered cold and the log goes silent.
    log = Log(4)
    preamble(log, "2.10.0+rocm7.0", "0.11.2+rocm700", "3.4.0+rocm7.0", ["VLLM_ROCM_USE_AITER=1"])
    boot_to_compile(log, "0.11.2+rocm700", aot=False)
    log.tick(1)
    for r in range(log.tp):
        log.worker(r, "INFO", "backends.py:559", f"Dynamo bytecode transform time: {12.5 + r * 0.1:.2f} s")
    log.tick(3)
    for r in range(log.tp):
        log.worker(r, "INFO", "backends.py:164", f"Directly load the compiled graph(s) for dynamic shape from the cache, took {2.11 + r * 0.03:.3f} s")
    log.tick(2)
    for r in range(log.tp):
        log.worker(r, "INFO", "backends.py:548", f"Using cache directory: /root/.cache/vllm/torch_compile_cache/3f9c1e7a2b/rank_{r}_0/backbone_late for vLLM's torch.compile")
    log.tick(1)
    for r in range(log.tp):
        log.worker(r, "INFO", "backends.py:559", f"Dynamo bytecode transform time: {3.2 + r * 0.1:.2f} s")
    log.tick(600)
    log.api_log("INFO", "api_server.py:1611", "Waiting for engine core to start... (600 s elapsed)")
    log.write("inductor-hang/vllm-serve.log")


def healthy():
    log = Log(4)
    preamble(log, "2.9.0+rocm7.0", "0.11.2+rocm700", "3.4.0+rocm7.0", ["VLLM_ROCM_USE_AITER=1"])
    boot_to_compile(log, "0.11.2+rocm700", aot=False)
    log.tick(1)
    for r in range(log.tp):
        log.worker(r, "INFO", "backends.py:559", f"Dynamo bytecode transform time: {12.5 + r * 0.1:.2f} s")
    log.tick(4)
    log.all_workers("INFO", "backends.py:197", "Cache the graph for dynamic shape for later use")
    log.tick(38)
    for r in range(log.tp):
        log.worker(r, "INFO", "backends.py:215", f"Compiling a graph for dynamic shape takes {41.2 + r * 0.3:.2f} s")
        log.worker(r, "INFO", "monitor.py:34", f"torch.compile takes {53.7 + r * 0.3:.2f} s in total")
    log.tick(5)
    for r in range(log.tp):
        log.worker(r, "INFO", "gpu_worker.py:298", "Available KV cache memory: 118.36 GiB")
    log.core("INFO", "kv_cache_utils.py:1087", "GPU KV cache size: 2,214,976 tokens")
    log.core("INFO", "kv_cache_utils.py:1091", "Maximum concurrency for 131,072 tokens per request: 16.90x")
    for pct, n in ((0, 0), (50, 34), (100, 67)):
        log.tick(8)
        bar = "#" * (pct // 10)
        log.raw(f"(EngineCore_DP0 pid={log.engine}) (Worker_TP0 pid={log.workers[0]}) Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): {pct:3d}%|{bar:<10}| {n}/67 [00:{pct // 5:02d}<00:00,  4.12it/s]")
    log.tick(1)
    for r in range(log.tp):
        log.worker(r, "INFO", "gpu_model_runner.py:3480", "Graph capturing finished in 17 secs, took 1.62 GiB")
    log.core("INFO", "core.py:210", "init engine (profile, create kv cache, warmup model) took 95.31 seconds")
    log.tick(2)
    log.api_log("INFO", "api_server.py:1634", "Supported_tasks: ['generate']")
    log.api_log("INFO", "launcher.py:44", "Route: /v1/chat/completions, Methods: POST")
    log.api_log("INFO", "server.py:84", "Started server process [4101]")
    log.api_log("INFO", "on.py:62", "Application startup complete.")
    log.write("healthy/vllm-serve.log")


if __name__ == "__main__":
    aot_graph_break()
    inlined_keyerror()
    inductor_hang()
    healthy()
