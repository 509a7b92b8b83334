"""Recompile limit with fail_on_recompile_limit_hit=True: the limit is a hard failure."""
# testbed: logs=recompiles
import os
import sys

import torch
import torch._dynamo

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


def shift(x, k):
    return x + k


if __name__ == "__main__":
    banner("recompile_fail")
    torch._dynamo.config.recompile_limit = 4
    torch._dynamo.config.fail_on_recompile_limit_hit = True
    f = torch.compile(shift, dynamic=False, backend="eager")
    for i in range(7):
        f(torch.ones(3), i + 0.5)
