"""A boot that hangs in a collective: four TP workers print their startup
up to the Inductor phase; ranks 0, 1 and 3 then block in all_reduce
(torch/distributed/distributed_c10d.py, a stand-in) waiting for rank 2,
which sits in the user's own code (load_late_shard) and never joins. The
rank that is elsewhere is the one the others wait for."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakeengine as fe


def load_late_shard():
    while True:
        time.sleep(0.2)


def worker(rank, q):
    fe.use_fakemods()
    from torch.distributed import distributed_c10d as dist
    fe.until_inductor(fe.worker_name(rank))
    q.put(rank)
    if rank == 2:
        load_late_shard()
    dist.all_reduce([rank])


if __name__ == "__main__":
    fe.engine_core_of(worker, 4)
