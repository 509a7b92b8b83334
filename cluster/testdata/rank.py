"""A rank of a fake multi-node boot for the cluster tests.

usage: python rank.py READY_DIR [SLOW_RANK [TITLE]]

Every rank waits for its peers in wait_for_peers(); the rank whose number
is SLOW_RANK is still in compile_graph() instead, so the merged stacks have
one outlier. The rank is RANK, else SLURM_PROCID. Once blocked, the rank
writes READY_DIR/ready.<rank> with its hostname and pid. TITLE (e.g.
VLLM::Worker_TP3) only sits in the command line, where an engine's
setproctitle would put it.
"""
import os
import socket
import sys
import time


def wait_for_peers(ready):
    announce(ready)
    while True:
        time.sleep(0.2)


def compile_graph(ready):
    announce(ready)
    while True:
        time.sleep(0.2)


def announce(path):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("%s %d\n" % (socket.gethostname(), os.getpid()))
    os.rename(tmp, path)


def main():
    rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
    slow = int(sys.argv[2]) if len(sys.argv) > 2 else -1
    ready = os.path.join(sys.argv[1], "ready.%d" % rank)
    if rank == slow:
        compile_graph(ready)
    else:
        wait_for_peers(ready)


if __name__ == "__main__":
    main()
