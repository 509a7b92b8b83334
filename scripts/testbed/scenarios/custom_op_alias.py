"""A torch.library.custom_op whose kernel returns its input: torch refuses an output that is also an input."""
# testbed: timeout=120
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


@torch.library.custom_op("testbed::passthrough", mutates_args=())
def passthrough(x: torch.Tensor) -> torch.Tensor:
    return x  # the output is the input: not allowed


@passthrough.register_fake
def _(x):
    return torch.empty_like(x)


def step(x):
    return passthrough(x) + 1


if __name__ == "__main__":
    banner("custom_op_alias")
    print(torch.compile(step, backend="aot_eager", fullgraph=True)(torch.randn(4)).sum())
