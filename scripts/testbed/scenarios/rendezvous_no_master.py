"""Rank 1 of 2 pointed at a master that is not there (nothing listens on MASTER_PORT): the store client times out."""
# testbed: timeout=120
import datetime
import os
import sys

import torch.distributed as dist

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402
from rendezvous_timeout import free_port  # noqa: E402

if __name__ == "__main__":
    banner("rendezvous_no_master")
    port = free_port()  # free: no rank 0 serves it
    print(f"rank 1 of 2 connecting to 127.0.0.1:{port}, where nothing listens", file=sys.stderr, flush=True)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=1, world_size=2,
                            timeout=datetime.timedelta(seconds=5))
