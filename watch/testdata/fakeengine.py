"""Shared pieces of the fake engine boots: vLLM-style log lines with the
process prefix vLLM adds to every child's output, and a multiprocessing
launcher of TP workers (spawn, as vLLM does)."""
import datetime
import multiprocessing
import os
import sys
import time


def log(proc, msg, level="INFO", where="gpu_model_runner.py:2912", stream=None):
    ts = datetime.datetime.now().strftime("%m-%d %H:%M:%S")
    for line in str(msg).split("\n"):
        print(f"({proc} pid={os.getpid()}) {level} {ts} [{where}] {line}",
              file=stream or sys.stdout, flush=True)


def raw(proc, text):
    """A line with only the process prefix, as tqdm progress bars print."""
    print(f"({proc} pid={os.getpid()}) {text}", flush=True)


def worker_name(rank):
    return f"Worker_TP{rank}"


def compile_phases(proc, fast=0.05):
    """The startup a worker prints up to the end of torch.compile."""
    log(proc, "Loading weights took 0.12 seconds", where="default_loader.py:267")
    log(proc, "Model loading took 1.0 GiB memory and 0.3 seconds", where="gpu_model_runner.py:2912")
    log(proc, "Using cache directory: /tmp/fake/torch_compile_cache/0123456789/rank_0_0/backbone for vLLM's torch.compile",
        where="backends.py:609")
    time.sleep(fast)
    log(proc, "Dynamo bytecode transform time: 1.08 s", where="backends.py:278")
    log(proc, "Cache the graph for dynamic shape for later use", where="backends.py:186")
    time.sleep(fast)
    log(proc, "Compiling a graph for dynamic shape takes 2.10 s", where="backends.py:215")
    log(proc, "torch.compile takes 3.18 s in total", where="monitor.py:34")


def engine_ready(proc="EngineCore_DP0"):
    log(proc, "init engine (profile, create kv cache, warmup model) took 4.21 seconds", where="core.py:210")
    log("APIServer", "Starting vLLM API server 0 on http://0.0.0.0:8000", where="api_server.py:1876")


def spawn_workers(target, n, *args):
    """Starts n workers; each gets (rank, queue, *args) and puts its rank on
    the queue when it has reached the point the boot waits for."""
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=target, args=(rank, q) + args, name=worker_name(rank)) for rank in range(n)]
    for p in procs:
        p.start()
    return procs, q


def wait_workers(q, n, proc="EngineCore_DP0"):
    """Waits for n workers like an engine core does, with a heartbeat line so
    the wait itself is not silent."""
    import queue
    left = n
    while left:
        try:
            q.get(timeout=0.5)
            left -= 1
        except queue.Empty:
            log(proc, f"Waiting for {left} local worker(s) to be ready", where="multiproc_executor.py:540")


def serve_forever():
    while True:
        time.sleep(1)


def use_fakemods():
    """Puts the stand-in torch modules (fakemods/) first on the path, in
    the launcher and in each spawned worker."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "fakemods"))


def engine_banner(proc="EngineCore_DP0"):
    """The engine core's first lines: the vLLM version and the (stand-in)
    torch version, which gates the torch < 2.13 rules."""
    import torch
    log(proc, "Initializing a V1 LLM engine (v0.11.0) with config: model='fake/model'", where="core.py:77")
    log(proc, f"PyTorch version: {torch.__version__}", where="collect_env.py:1")


def until_inductor(proc):
    """A worker's startup up to the Inductor phase: weights, then Dynamo
    done and the graph handed to Inductor."""
    log(proc, "Loading weights took 0.12 seconds", where="default_loader.py:267")
    log(proc, "Dynamo bytecode transform time: 1.08 s", where="backends.py:278")
    log(proc, "Cache the graph for dynamic shape for later use", where="backends.py:186")


def engine_core_of(target, n):
    """An engine core's life in a fake boot: the stand-in torch first on
    the path, the banner, n workers started (spawn) and waited for, then
    joined (a worker that hangs holds it here)."""
    use_fakemods()
    engine_banner()
    procs, q = spawn_workers(target, n)
    wait_workers(q, n)
    for p in procs:
        p.join()
