"""A launcher that drops the caller's VLLM_* variables before it starts its
workers (the ENVARGS reset of seed 000), and overrides one value, then the
boot becomes ready."""
import sys, os, subprocess, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakeengine as fe

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        rank = int(sys.argv[2])
        fe.compile_phases(fe.worker_name(rank))
        fe.serve_forever()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_")}
    env["TORCH_COMPILE_DEBUG"] = "0"
    workers = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "worker", str(r)], env=env) for r in range(2)]
    time.sleep(1.5)
    fe.engine_ready()
    fe.serve_forever()
