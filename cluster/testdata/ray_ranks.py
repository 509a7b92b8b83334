"""Driver for the --ray test: one actor on each node of a Ray cluster, each
blocked in wait_for_peers(), and this driver blocked in ray.get.

usage: python ray_ranks.py ADDRESS READY_FILE RESOURCE… [--fail RESOURCE]

Each RESOURCE is a custom resource one node has (started with
--resources '{"NAME": 1}'), so that one actor lands on every node. Each
actor first loads its weights; with --fail, the one on that RESOURCE's node
fails to, and logs the exception with its traceback before raising it, as
vLLM's Ray worker wrapper does (into that node's worker .err log). Writes
READY_FILE once every actor is blocked: each says so in READY_FILE.RESOURCE
as it enters wait_for_peers (a loaded machine can take seconds to start a
call), and the driver waits for all of them.
"""
import logging
import os
import sys
import time

import ray

logger = logging.getLogger("rank")


def read_shard(name):
    raise RuntimeError("checkpoint shard %s is truncated" % name)


@ray.remote(num_cpus=0)
class Rank:
    def where(self):
        return os.getpid()

    def load_weights(self, fail):
        print("loading weights on %s" % os.uname().nodename, flush=True)
        try:
            if fail:
                read_shard("model-00001-of-00002.safetensors")
        except Exception:
            logger.exception("Error executing method 'load_weights'. This might cause deadlock in distributed execution.")
            raise

    def wait_for_peers(self, mark):
        with open(mark, "w") as f:
            f.write("%d\n" % os.getpid())
        while True:
            time.sleep(0.2)


def main():
    address, ready, resources = sys.argv[1], sys.argv[2], sys.argv[3:]
    fail = None
    if "--fail" in resources:
        i = resources.index("--fail")
        fail, resources = resources[i + 1], resources[:i] + resources[i + 2:]
    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    actors = [Rank.options(resources={r: 1}).remote() for r in resources]
    ray.get([a.where.remote() for a in actors])
    for r, a in zip(resources, actors):
        try:
            ray.get(a.load_weights.remote(r == fail))
        except ray.exceptions.RayTaskError:
            pass
    marks = ["%s.%s" % (ready, r) for r in resources]
    waits = [a.wait_for_peers.remote(m) for a, m in zip(actors, marks)]
    while not all(os.path.exists(m) for m in marks):
        time.sleep(0.1)
    with open(ready + ".tmp", "w") as f:
        f.write("ready\n")
    os.rename(ready + ".tmp", ready)
    ray.get(waits)


if __name__ == "__main__":
    main()
