"""mark_dynamic on dim 0, then a Python branch on its size: the dimension is specialised, a constraint violation."""
# testbed: logs=dynamic
import os
import sys

import torch
import torch._dynamo

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


def step(x):
    if x.shape[0] == 8:  # guards dim 0 to the constant 8
        return x * 2
    return x + 1


if __name__ == "__main__":
    banner("dynamic_dim_specialized")
    x = torch.randn(8, 4)
    torch._dynamo.mark_dynamic(x, 0)
    torch.compile(step, backend="eager")(x)
