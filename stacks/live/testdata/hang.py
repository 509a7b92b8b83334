"""Live-capture target for stacks/live: lowers a fake graph whose
implicit-fallback message recurses `depth` levels deep through
ExternKernel/MutableBox __str__ and blocks at the bottom.

usage: python hang.py READY_FILE DEPTH TITLE
TITLE (e.g. VLLM::Worker_TP3) only sits in the command line, where vLLM's
setproctitle would put it, so the rank can be read from it.
"""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from torch._inductor.graph import GraphLowering  # noqa: E402


def ready():
    # Signal readiness once the main thread is inside the recursion.
    import time
    time.sleep(0.3)
    with open(sys.argv[1], "w") as f:
        f.write(str(os.getpid()))


threading.Thread(target=ready, name="ready-signal", daemon=True).start()
GraphLowering(int(sys.argv[2])).run()
