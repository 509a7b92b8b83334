"""init_process_group's TCPStore on a port another process already listens on: the rendezvous cannot bind."""
# testbed: timeout=120
import datetime
import os
import socket
import sys

import torch.distributed as dist

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402

if __name__ == "__main__":
    banner("rendezvous_port_in_use")
    holder = socket.socket()  # stands for an earlier job still holding MASTER_PORT
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    print(f"port {port} held by this process; rank 0 now starts its TCPStore there", file=sys.stderr, flush=True)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=10))
