"""Driver for the --ray test: one actor on each node of a Ray cluster, each
blocked in wait_for_peers(), and this driver blocked in ray.get.

usage: python ray_ranks.py ADDRESS READY_FILE RESOURCE…

Each RESOURCE is a custom resource one node has (started with
--resources '{"NAME": 1}'), so that one actor lands on every node. Writes
READY_FILE once every actor is blocked.
"""
import os
import sys
import time

import ray


@ray.remote(num_cpus=0)
class Rank:
    def where(self):
        return os.getpid()

    def wait_for_peers(self):
        while True:
            time.sleep(0.2)


def main():
    address, ready, resources = sys.argv[1], sys.argv[2], sys.argv[3:]
    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    actors = [Rank.options(resources={r: 1}).remote() for r in resources]
    ray.get([a.where.remote() for a in actors])
    waits = [a.wait_for_peers.remote() for a in actors]
    time.sleep(1)
    with open(ready + ".tmp", "w") as f:
        f.write("ready\n")
    os.rename(ready + ".tmp", ready)
    ray.get(waits)


if __name__ == "__main__":
    main()
