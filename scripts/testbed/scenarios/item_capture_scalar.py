"""capture_scalar_outputs=True: .item() becomes an unbacked u0; branching on it cannot be guarded."""
# testbed: logs=graph_breaks
import os
import sys

import torch
import torch._dynamo

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


def pick(x):
    n = x.sum().item()  # unbacked SymInt u0
    if n > 2:  # data-dependent branch: GuardOnDataDependentSymNode under fullgraph
        return x * 2
    return x - 1


if __name__ == "__main__":
    banner("item_capture_scalar")
    torch._dynamo.config.capture_scalar_outputs = True
    torch.compile(pick, fullgraph=True)(torch.tensor([1, 2, 3]))
