"""Recompiles to the limit: a float constant that changes on every call (dynamic=False)."""
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
    banner("recompile_limit")
    torch._dynamo.config.recompile_limit = 4  # keep the run short; the message names the limit
    f = torch.compile(shift, dynamic=False, backend="eager")
    for i in range(7):
        f(torch.ones(3), i + 0.5)  # each new float is a guard failure -> recompile
    print("ran past the limit (later calls run eagerly)", flush=True)
