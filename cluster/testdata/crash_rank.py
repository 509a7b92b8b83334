"""A rank of a fake multi-node boot that fails on one node, for the log
tests of the cluster gather.

usage: python crash_rank.py READY_DIR FAILING_RANK [LAYERS]

Every rank prints that it starts and writes READY_DIR/ready.<rank> with its
hostname; the rank FAILING_RANK then logs LAYERS (default 0) lines of
progress on stderr and raises a RuntimeError through three frames,
uncaught, so Python prints a real traceback on stderr and the rank exits 1.
The others wait until the job ends. The rank is RANK, else SLURM_PROCID.
"""
import os
import socket
import sys
import time


def read_shard(rank):
    raise RuntimeError("rank %d: checkpoint shard model-%05d.safetensors is truncated" % (rank, rank))


def load_weights(rank, layers):
    for i in range(layers):
        print("rank %d: loading layer %d of %d" % (rank, i + 1, layers), file=sys.stderr, flush=True)
    read_shard(rank)


def main():
    rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
    failing = int(sys.argv[2])
    print("rank %d starting on %s" % (rank, socket.gethostname()), flush=True)
    path = os.path.join(sys.argv[1], "ready.%d" % rank)
    with open(path + ".tmp", "w") as f:
        f.write("%s %d\n" % (socket.gethostname(), os.getpid()))
    os.rename(path + ".tmp", path)
    if rank == failing:
        load_weights(rank, int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    while True:
        time.sleep(0.2)


if __name__ == "__main__":
    main()
