"""A boot whose TP1 worker dies with a KeyError in the profiling run: the
worker prints the traceback, the engine core gives up, the launcher exits 1."""
import sys, os, time, traceback
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakeengine as fe


class Glm5NextDecoderLayer:
    def forward(self, modules):
        return self.project(modules)

    def project(self, modules):
        return modules["in_proj_qkvbfg_a"]


def worker(rank, q):
    name = fe.worker_name(rank)
    fe.compile_phases(name)
    q.put(rank)
    if rank == 1:
        time.sleep(0.2)  # the profiling run, after every rank compiled
        try:
            Glm5NextDecoderLayer().forward({})
        except KeyError:
            fe.log(name, "WorkerProc hit an exception.", level="ERROR", where="multiproc_executor.py:815")
            fe.log(name, traceback.format_exc().rstrip("\n"), level="ERROR", where="multiproc_executor.py:815")
            sys.exit(1)
    fe.serve_forever()


if __name__ == "__main__":
    procs, q = fe.spawn_workers(worker, 2)
    fe.wait_workers(q, 2)
    procs[1].join()
    fe.log("EngineCore_DP0", "EngineCore failed to start.", level="ERROR", where="core.py:708")
    for p in procs:
        p.terminate()
    print("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
          file=sys.stderr, flush=True)
    sys.exit(1)
