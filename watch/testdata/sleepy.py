"""A boot whose workers hang in the user's own code, in no known
signature: each TP worker prints its startup up to the Inductor phase and
then sleeps in wait_for_peer_config, silent, for a peer that never comes.
torch 2.10 is printed, so the log alone reads like the torch < 2.13
implicit-fallback formatting hang; the stacks say otherwise."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakeengine as fe


def wait_for_peer_config(path):
    while not os.path.exists(path):
        time.sleep(0.2)


def worker(rank, q):
    fe.until_inductor(fe.worker_name(rank))
    q.put(rank)
    wait_for_peer_config(os.path.join(os.path.dirname(os.path.abspath(__file__)), "no-such-peer-config"))


if __name__ == "__main__":
    fe.engine_core_of(worker, 2)
