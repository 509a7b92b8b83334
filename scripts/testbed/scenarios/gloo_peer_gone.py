"""2 gloo ranks with lazy connections: rank 1 exits after the rendezvous, rank 0's first all_reduce cannot reach it."""
# testbed: ranks=2 timeout=180
#
# TORCH_GLOO_LAZY_INIT defers gloo's pair connections to the first
# collective, so the peer's advertised address outlives the peer: rank 1
# publishes its pid and exits; rank 0 waits until that pid is gone, then
# connects to an address nobody listens on (connection refused, retried
# until the process group's 10 s timeout).
import datetime
import os
import sys
import time

os.environ["TORCH_GLOO_LAZY_INIT"] = "1"  # read by ProcessGroupGloo's constructor

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402

if __name__ == "__main__":
    rank = int(os.environ["RANK"])
    banner(f"gloo_peer_gone rank {rank}")
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=10))
    store = dist.distributed_c10d._get_default_store()
    if rank == 1:
        store.set("gone", str(os.getpid()))
        print("rank 1: leaving before the first collective", file=sys.stderr, flush=True)
        os._exit(0)
    pid = int(store.get("gone"))
    while os.path.exists(f"/proc/{pid}"):
        time.sleep(0.1)
    t = torch.ones(4)
    dist.all_reduce(t)  # gloo connects to rank 1's address now
    print(t.tolist())
