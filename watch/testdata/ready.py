"""A boot that compiles on two TP workers and becomes ready, then serves."""
import sys, os, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakeengine as fe


def worker(rank, q):
    fe.compile_phases(fe.worker_name(rank))
    fe.raw(fe.worker_name(rank), "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 51/51 [00:01<00:00, 40.1it/s]")
    fe.log(fe.worker_name(rank), "Graph capturing finished in 1 secs, took 0.50 GiB", where="gpu_model_runner.py:3480")
    q.put(rank)
    fe.serve_forever()


if __name__ == "__main__":
    fe.log("EngineCore_DP0", "Initializing a V1 LLM engine (v0.11.0) with config: model='fake/model', enforce_eager=False",
           where="core.py:77")
    procs, q = fe.spawn_workers(worker, 2)
    fe.wait_workers(q, 2)
    fe.engine_ready()
    fe.serve_forever()
