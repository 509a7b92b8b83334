"""Target for pyproc's live-capture tests.

Blocks several named threads in known deep stacks (recursion, classes and
methods for qualified names, a coroutine chain run by an asyncio task), then
writes what the process itself sees (except for the optional --spin
thread, whose stack never stands still) through sys._current_frames() -- function
(co_qualname on 3.11+, co_name before), file, line per frame, innermost
first -- as JSON to argv[1], and blocks until killed.

The view is taken by a short-lived reporter thread so that every other thread
is already blocked (and so unchanging) when it is taken; the reporter exits
afterwards, and the test waits for its task to disappear before capturing.
"""

import asyncio
import sys
import threading
import time

import selfview

BLOCK = threading.Event()  # never set: everything waits on it forever
READY = []


class Tower:
    def __init__(self, depth):
        self.depth = depth

    def climb(self, n):
        if n == 0:
            return self.top()
        return self.climb(n - 1)

    def top(self):
        ready = threading.Event()
        READY.append(ready)
        ready.set()
        BLOCK.wait()


class Worker:
    class Inner:
        @staticmethod
        def spin(n):
            return helper(n)

    def run(self, n):
        return Worker.Inner.spin(n)


def helper(n):
    if n > 0:
        return helper(n - 1)
    return (lambda: Tower(0).climb(2))()


class Job:
    async def crunch(self):
        await asyncio.sleep(0)
        return await self.deeper()

    async def deeper(self):
        # Block the event loop thread inside a coroutine: the coroutine frames
        # (owned by their generator objects) are on this thread's stack.
        Tower(0).climb(1)


async def amain():
    idle = asyncio.ensure_future(asyncio.sleep(3600))  # a task awaiting
    await asyncio.create_task(Job().crunch())
    await idle


def report(path, workers):
    me = threading.get_ident()
    # Wait until every thread is parked in BLOCK.wait -> Condition.wait.
    deadline = time.time() + 30
    while time.time() < deadline:
        frames = sys._current_frames()
        parked = [
            f for ident, f in frames.items()
            if ident != me and f.f_code.co_name == "wait" and f.f_back
            and f.f_back.f_code.co_name == "wait"
            and f.f_back.f_back and f.f_back.f_back.f_code.co_name == "top"
        ]
        if len(parked) == workers + 1 and len(READY) == workers + 1:
            break
        time.sleep(0.01)
    time.sleep(0.05)
    spinner = [t.ident for t in threading.enumerate() if t.name == "spinner"]
    selfview.write(path, skip=spinner)


def spinner_loop():
    # A thread that never blocks: pure-Python recursion that keeps changing
    # its stack, like a compile burning CPU. Used by the benchmark to show
    # capture neither stops the target nor needs it idle.
    n = 0
    while True:
        n = Tower(0).climb_spin(20, n)


def _climb_spin(self, depth, n):
    if depth == 0:
        return n + 1
    return self.climb_spin(depth - 1, n)


Tower.climb_spin = _climb_spin


def main():
    path = sys.argv[1]
    if "--spin" in sys.argv[2:]:
        threading.Thread(target=spinner_loop, name="spinner", daemon=True).start()
    threads = [
        threading.Thread(target=Worker().run, args=(3,), name="worker-1", daemon=True),
        threading.Thread(target=Worker().run, args=(5,), name="worker-2", daemon=True),
        threading.Thread(target=lambda: asyncio.run(amain()), name="asyncio-loop", daemon=True),
    ]
    for t in threads:
        t.start()
    threading.Thread(target=report, args=(path, len(threads)), name="reporter").start()
    Tower(0).climb(6)


if __name__ == "__main__":
    main()
