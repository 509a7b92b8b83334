"""A custom op without a fake implementation, under fullgraph: Dynamo cannot run it on fake tensors."""
# testbed: timeout=120
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


@torch.library.custom_op("testbed::no_fake", mutates_args=())
def no_fake(x: torch.Tensor) -> torch.Tensor:
    return x.clone()  # no register_fake: tracing has no way to know the output


def step(x):
    return no_fake(x) + 1


if __name__ == "__main__":
    banner("fake_impl_missing")
    torch.compile(step, fullgraph=True, backend="eager")(torch.randn(3))
