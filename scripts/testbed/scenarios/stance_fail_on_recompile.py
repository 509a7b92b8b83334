"""torch.compiler.set_stance("fail_on_recompile") after a first compile, then a new shape: the recompile is an error."""
# testbed: logs=recompiles
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


def step(x):
    return x * 2 + 1


if __name__ == "__main__":
    banner("stance_fail_on_recompile")
    f = torch.compile(step, dynamic=False, backend="eager")
    f(torch.randn(4))
    torch.compiler.set_stance("fail_on_recompile")
    f(torch.randn(16))  # a new static shape: Dynamo would recompile
