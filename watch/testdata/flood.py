"""Floods output and exits: argv N [stdout|stderr] [logging K].

Plain: N preformatted vLLM-style lines written in batches as fast as
Python can (the worst case for a watcher: almost no CPU per line in the
boot). With "logging K": K worker processes together log N lines through
Python's logging module with vLLM's format and process prefix, the way a
TP=K boot floods (e.g. a warning repeated per step)."""
import logging, multiprocessing, os, sys

n = int(sys.argv[1])
out = sys.stderr if len(sys.argv) > 2 and sys.argv[2] == "stderr" else sys.stdout


def plain():
    pid = os.getpid()
    batch = []
    for i in range(n):
        batch.append(f"(Worker_TP{i % 8} pid={pid}) INFO 11-29 23:00:00 [gpu_model_runner.py:2912] flood line {i} padding padding padding padding\n")
        if len(batch) == 2000:
            out.write("".join(batch))
            batch.clear()
    out.write("".join(batch))
    out.flush()


def worker(rank, count):
    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(logging.Formatter(
        f"(Worker_TP{rank} pid={os.getpid()}) %(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s",
        "%m-%d %H:%M:%S"))
    log = logging.getLogger("vllm")
    log.addHandler(h)
    log.setLevel(logging.INFO)
    log.propagate = False
    for i in range(count):
        log.info("flood line %d from rank %d: %s", i, rank, "padding padding padding")
    h.flush()


if __name__ == "__main__":
    if len(sys.argv) > 4 and sys.argv[3] == "logging":
        k = int(sys.argv[4])
        ctx = multiprocessing.get_context("fork")
        procs = [ctx.Process(target=worker, args=(r, n // k + (1 if r < n % k else 0))) for r in range(k)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
    else:
        plain()
