"""A one-process boot whose fate depends on a setting, for run matrices:
FAKE_COMPILE_MODE=ok becomes ready, FAKE_COMPILE_MODE=hang goes silent in
Inductor (like the seed-000/004 verification matrices: "hung 5/5")."""
import os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakeengine as fe

mode = os.environ.get("FAKE_COMPILE_MODE", "ok")
proc = "Worker_TP0"
fe.log(proc, "Using cache directory: /tmp/fake/torch_compile_cache/0123456789/rank_0_0/backbone for vLLM's torch.compile", where="backends.py:609")
fe.log(proc, "Dynamo bytecode transform time: 1.08 s", where="backends.py:278")
if mode == "hang":
    fe.log(proc, "Cache the graph for dynamic shape for later use", where="backends.py:186")
    while True:
        time.sleep(1)
fe.log(proc, "Compiling a graph for dynamic shape takes 2.10 s", where="backends.py:215")
fe.engine_ready()
fe.serve_forever()
