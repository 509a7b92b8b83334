"""FX-graph/AOTAutograd cache across processes: miss, then hit, then a partial hit."""
# testbed: timeout=900
#
# Three child processes share one TORCHINDUCTOR_CACHE_DIR; each writes its own
# TORCH_TRACE directory (trace/1-cold, trace/2-warm, trace/3-partial):
#   1-cold     both graphs compiled: fx_graph_cache_miss, aotautograd_cache_miss
#   2-warm     the same program: both graphs served from the caches (hits)
#   3-partial  the second graph's input shape changes (as a changed
#              --max-num-batched-tokens changes only a late graph's key, seed 004):
#              the first graph hits, the second misses
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


def backbone(x):
    return torch.relu(x @ x.T).sum(dim=0)


def late(y):
    return torch.tanh(y).cumsum(0) * 2


def child(late_len):
    b = torch.compile(backbone)
    l = torch.compile(late)
    out = b(torch.randn(8, 8))
    out = l(torch.randn(late_len)) + out.sum()
    print(f"child late_len={late_len} ok sum={float(out.sum()):.3f}", flush=True)


def main():
    banner("cache")
    trace_root = os.environ["TORCH_TRACE"]
    for name, late_len in (("1-cold", 16), ("2-warm", 16), ("3-partial", 24)):
        env = dict(os.environ, TORCH_TRACE=os.path.join(trace_root, name))
        print(f"=== {name} (late input length {late_len})", flush=True)
        subprocess.run([sys.executable, __file__, "--child", str(late_len)], env=env, check=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(int(sys.argv[2]))
    else:
        main()
