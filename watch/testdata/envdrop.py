"""A launcher that drops the caller's VLLM_* variables before it starts its
workers (the ENVARGS reset of seed 000), and overrides one value, then the
boot becomes ready."""
import sys, os, subprocess, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakeengine as fe

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        rank, done = int(sys.argv[2]), int(sys.argv[3])
        fe.compile_phases(fe.worker_name(rank))
        os.write(done, b"x")
        fe.serve_forever()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_")}
    env["TORCH_COMPILE_DEBUG"] = "0"
    r, w = os.pipe()
    workers = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "worker", str(rank), str(w)], env=env, pass_fds=(w,))
               for rank in range(2)]
    for _ in range(2):
        os.read(r, 1)  # each worker reports in once it has compiled
    fe.engine_ready()
    if os.environ.get("ENVDROP_READY_FILE"):  # for a --ready-url test server
        open(os.environ["ENVDROP_READY_FILE"], "w").close()
    fe.serve_forever()
