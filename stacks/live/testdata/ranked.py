"""Live-capture target for stacks/live: a launcher in the way torchrun
starts its workers. The launcher (no RANK of its own) starts two workers
running this same script with RANK, LOCAL_RANK and WORLD_SIZE in their
environment, and each worker forks one child that inherits them (as a
resource tracker or a compile worker would). Every process writes
READY_DIR/<role>-<pid> once it is parked, then sleeps until killed.

usage: python ranked.py READY_DIR
"""
import os
import subprocess
import sys
import time


def park(ready_dir, role):
    with open(os.path.join(ready_dir, "%s-%d" % (role, os.getpid())), "w"):
        pass
    while True:
        time.sleep(3600)


def main():
    ready_dir = sys.argv[1]
    if "RANK" not in os.environ:
        for r in range(2):
            env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="2")
            subprocess.Popen([sys.executable, os.path.abspath(__file__), ready_dir], env=env)
        park(ready_dir, "launcher")
    if os.fork() == 0:
        park(ready_dir, "child")
    park(ready_dir, "worker")


main()
