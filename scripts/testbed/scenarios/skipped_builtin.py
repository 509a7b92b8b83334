"""inspect.stack() inside a fullgraph-compiled function: Dynamo cannot trace the C builtin sys._getframe."""
# testbed: timeout=120
import inspect
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


def step(x):
    inspect.stack()  # calls sys._getframe, a builtin Dynamo skips
    return x + 1


if __name__ == "__main__":
    banner("skipped_builtin")
    torch.compile(step, fullgraph=True, backend="eager")(torch.randn(3))
