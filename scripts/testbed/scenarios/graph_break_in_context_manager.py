"""A graph break inside a user context manager (fullgraph off): Dynamo cannot resume there and skips the frame."""
# testbed: logs=graph_breaks timeout=120
import os
import sys

import torch
import torch._dynamo

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


class Lock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def step(x):
    with Lock():
        x = x + 1
        torch._dynamo.graph_break()  # a break Dynamo cannot resume inside Lock
        return x * 2


if __name__ == "__main__":
    banner("graph_break_in_context_manager")
    f = torch.compile(step, backend="eager")
    print(f(torch.ones(3)).tolist())
