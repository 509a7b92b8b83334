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


def blocked(main):
    """Whether the main thread is blocked at the bottom of the recursion:
    inside Event.wait, at Condition.wait's blocking waiter.acquire()."""
    import linecache
    f = sys._current_frames().get(main)
    return (f is not None and f.f_code.co_name == "wait" and f.f_code.co_filename.endswith("threading.py")
            and "gotit" in f.f_locals
            and linecache.getline(f.f_code.co_filename, f.f_lineno).strip() == "waiter.acquire()"
            and f.f_back is not None and f.f_back.f_code.co_name == "wait"
            and f.f_back.f_back is not None and f.f_back.f_back.f_code.co_name == "__str__")


def ready():
    # Signal readiness once the main thread is blocked inside the recursion
    # (a fixed 0.3 s assumed it would be there by then, which a starved
    # process may not be).
    import time
    main = threading.main_thread().ident
    while not blocked(main):
        time.sleep(0.01)
    with open(sys.argv[1], "w") as f:
        f.write(str(os.getpid()))


threading.Thread(target=ready, name="ready-signal", daemon=True).start()
GraphLowering(int(sys.argv[2])).run()
