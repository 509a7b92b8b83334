"""A boot whose workers go silent in a cold Inductor compile: every rank sits
in OperatorIssue.operator_str under dozens of nested ExternKernel.__str__
frames (the shape of ROCm/ATOM#3073), printing nothing. The torch modules
are stand-ins from fakemods/ with the real module paths."""
import sys, os, time
print("fake boot: starting", flush=True)
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "fakemods"))
import fakeengine as fe


def worker(rank, q):
    sys.path.insert(0, os.path.join(here, "fakemods"))
    from torch._inductor.graph import GraphLowering
    name = fe.worker_name(rank)
    fe.log(name, "Loading weights took 0.12 seconds", where="default_loader.py:267")
    fe.log(name, "Using cache directory: /tmp/fake/torch_compile_cache/0123456789/rank_0_0/backbone_late for vLLM's torch.compile",
           where="backends.py:609")
    fe.log(name, "Dynamo bytecode transform time: 1.08 s", where="backends.py:278")
    fe.log(name, "Cache the graph for dynamic shape for later use", where="backends.py:186")
    q.put(rank)
    GraphLowering().lower("vllm.all_reduce.default")


if __name__ == "__main__":
    fe.engine_banner()
    procs, q = fe.spawn_workers(worker, 2)
    fe.wait_workers(q, 2)
    for p in procs:
        p.join()
