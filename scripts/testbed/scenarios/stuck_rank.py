"""2 ranks: rank 1 stuck in compile (a slow fake kernel), rank 0 waiting in gloo all_reduce."""
# testbed: ranks=2 stacks=2 samples=2 timeout=600
#
# A custom op's register_fake runs while Dynamo traces with fake tensors; on
# rank 1 it sleeps, so rank 1 never leaves the compile. Rank 0 compiles, runs,
# and waits for rank 1 in an all_reduce (gloo timeout 300 s).
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner, marker  # noqa: E402

RANK = int(os.environ.get("RANK", "0"))


@torch.library.custom_op("testbed::gate", mutates_args=())
def gate(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@gate.register_fake
def _(x):
    if RANK == 1:
        marker("rank1-in-compile")
        for _ in range(3000):  # 300 s: the stuck compile
            time.sleep(0.1)
    return torch.empty_like(x)


def step(x):
    return gate(x.sin()) + 1


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=300))
    if RANK == 0:
        banner("stuck_rank")
    y = torch.compile(step, fullgraph=True)(torch.ones(4))
    print(f"rank {RANK}: compiled, entering all_reduce", flush=True)
    marker(f"rank{RANK}-in-all_reduce")
    dist.all_reduce(y)
    print(f"rank {RANK}: all_reduce done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
