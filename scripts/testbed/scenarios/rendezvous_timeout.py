"""Rank 0 of 2 serves the rendezvous and the other rank never comes: the store times out waiting for clients."""
# testbed: timeout=120
import datetime
import os
import socket
import sys

import torch.distributed as dist

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


if __name__ == "__main__":
    banner("rendezvous_timeout")
    port = free_port()
    print(f"rank 0 of 2 on port {port}; rank 1 is never started", file=sys.stderr, flush=True)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=2,
                            timeout=datetime.timedelta(seconds=5))
