"""A boot-like process tree for the stacks tests: the parent starts two
workers with multiprocessing's spawn context and a Queue (which starts
multiprocessing's resource tracker), the workers block in a deep stack,
and the parent waits for them. It prints "ready" once the workers run and
blocks until killed."""

import multiprocessing as mp
import sys
import time


def lower(q, n):
    if n > 0:
        return lower(q, n - 1)
    q.put("up")
    time.sleep(3600)


def worker(q):
    lower(q, 5)


def main():
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(q,), name="worker-%d" % i) for i in range(2)]
    for p in procs:
        p.start()
    for _ in procs:
        q.get(timeout=60)
    print("ready", flush=True)
    for p in procs:
        p.join()


if __name__ == "__main__":
    sys.exit(main())
