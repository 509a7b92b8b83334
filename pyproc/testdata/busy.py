"""Target for the busy-thread tests (pyproc and stacks): the main thread
runs a deep call chain whose innermost function, spin, loops forever on
the CPU calling a small function and returning from it; a thread named
"helper" blocks on an event. Once both run, it writes what it sees of
itself through sys._current_frames() and threading (name, idents, native
ids, and per thread the frames, innermost first: co_qualname on 3.11+,
co_name before) as JSON to argv[1], then goes on spinning until killed.

Usage: busy.py VIEW.json [DEPTH]   (DEPTH: nested calls of descend, 30)
"""

import json
import os
import sys
import threading
import time

STARTED = threading.Event()
BLOCK = threading.Event()  # never set


def frame_name(code):
    if sys.version_info >= (3, 11):
        return code.co_qualname
    return code.co_name


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
    main = threading.main_thread()
    deadline = time.time() + 30
    while time.time() < deadline:
        frames = sys._current_frames()
        h = [t for t in threading.enumerate() if t.name == "helper"]
        if h and h[0].ident in frames and frames[h[0].ident].f_code.co_name == "wait":
            break
        time.sleep(0.01)
    frames = sys._current_frames()
    out = []
    for t in threading.enumerate():
        if t.ident == threading.get_ident() or t.ident not in frames:
            continue
        f, stack = frames[t.ident], []
        while f is not None:
            stack.append({"func": frame_name(f.f_code), "file": f.f_code.co_filename, "line": f.f_lineno})
            f = f.f_back
        out.append({"ident": t.ident, "native_id": t.native_id, "name": t.name, "main": t is main, "frames": stack})
    doc = {
        "pid": os.getpid(),
        "version": "%d.%d.%d" % sys.version_info[:3],
        "reporter_native_id": threading.get_native_id(),
        "threads": out,
    }
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(doc, fh, indent=1)
    os.rename(tmp, path)


def main():
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    threading.Thread(target=helper, name="helper", daemon=True).start()
    threading.Thread(target=report, args=(sys.argv[1],), name="reporter").start()
    Chain().descend(depth)


if __name__ == "__main__":
    main()
