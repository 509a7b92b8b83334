"""Prints N vLLM-style lines as fast as it can (argv: N [stream]) and exits:
to check that no line is lost and what watching costs."""
import os, sys

n = int(sys.argv[1])
out = sys.stderr if len(sys.argv) > 2 and sys.argv[2] == "stderr" else sys.stdout
pid = os.getpid()
batch = []
for i in range(n):
    batch.append(f"(Worker_TP{i % 8} pid={pid}) INFO 11-29 23:00:00 [gpu_model_runner.py:2912] flood line {i} padding padding padding padding\n")
    if len(batch) == 2000:
        out.write("".join(batch))
        batch.clear()
out.write("".join(batch))
out.flush()
