"""A vLLM-shaped boot that hangs in Inductor's fusion benchmarking, not in
the implicit-fallback formatting: the API server (the main process, with
vLLM's SIGTERM handler that raises KeyboardInterrupt("terminated")) starts
an engine core, which starts two TP workers; each prints its startup up to
"Dynamo bytecode transform time" (the Inductor phase opens) and then sits in
Scheduler.speedup_by_fusion, silent. torch 2.10 is printed, so the log
alone reads like the torch < 2.13 formatting hang. The torch modules are
stand-ins from fakemods/ with the real module paths."""
import multiprocessing
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakeengine as fe


def worker(rank, q):
    fe.use_fakemods()
    from torch._inductor.scheduler import Scheduler
    fe.until_inductor(fe.worker_name(rank))
    q.put(rank)
    Scheduler().fuse_nodes_once()


def engine_core():
    fe.use_fakemods()
    fe.engine_banner()
    procs, q = fe.spawn_workers(worker, 2)
    fe.wait_workers(q, 2)
    for p in procs:
        p.join()


def terminated(signum, frame):
    # vLLM's API server turns SIGTERM into KeyboardInterrupt("terminated").
    raise KeyboardInterrupt("terminated")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, terminated)
    fe.log("APIServer", "vLLM API server version 0.11.0", where="api_server.py:1839")
    core = multiprocessing.get_context("spawn").Process(target=engine_core, name="EngineCore_DP0")
    core.start()
    core.join()
