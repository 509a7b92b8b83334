# Children started by each multiprocessing method die of a KeyError, or
# catch it and log it with logging.exception, as engine workers do.
import logging
import multiprocessing as mp
import sys


def die(tag):
    table = {"present": 1}
    return table["missing_" + tag]


def logs(tag):
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    try:
        die(tag)
    except Exception:
        logging.getLogger("worker").exception("WorkerProc hit an exception.")
    return 0


if __name__ == "__main__":
    target = {"die": die, "log": logs}[sys.argv[1]]
    codes = []
    for method in sys.argv[2:]:
        p = mp.get_context(method).Process(target=target, args=(method,))
        p.start()
        p.join()
        codes.append(p.exitcode)
    print("exitcodes", codes)
