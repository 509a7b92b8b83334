"""Target for the busy-thread tests (pyproc and stacks): the main thread
runs a deep call chain whose innermost function, spin, loops forever on
the CPU calling a small function and returning from it; a thread named
"helper" blocks on an event. Once both run, it writes what it sees of
itself through sys._current_frames() and threading (name, idents, native
ids, and per thread the frames, innermost first: co_qualname on 3.11+,
co_name before) as JSON to argv[1], then goes on spinning until killed.

Usage: busy.py VIEW.json [DEPTH]   (DEPTH: nested calls of descend, 30)
"""

import sys
import threading
import time

import selfview

STARTED = threading.Event()
BLOCK = threading.Event()  # never set


def tick(n):
    return n + 1


def spin():
    n = 0
    STARTED.set()
    while True:
        n = tick(n)


class Chain:
    def descend(self, depth):
        if depth == 0:
            return spin()
        return self.descend(depth - 1)


def helper():
    BLOCK.wait()


def report(path):
    STARTED.wait()
    deadline = time.time() + 30
    while time.time() < deadline:
        frames = sys._current_frames()
        h = [t for t in threading.enumerate() if t.name == "helper"]
        if h and h[0].ident in frames and frames[h[0].ident].f_code.co_name == "wait":
            break
        time.sleep(0.01)
    selfview.write(path)


def main():
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    threading.Thread(target=helper, name="helper", daemon=True).start()
    threading.Thread(target=report, args=(sys.argv[1],), name="reporter").start()
    Chain().descend(depth)


if __name__ == "__main__":
    main()
