"""A KeyError raised in a callee Dynamo inlines into forward, under fullgraph=True."""
# testbed: logs=graph_breaks
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


class Router(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = {"up": 1.0}

    def forward(self, y):
        return y * self.table["down"]  # KeyError: 'down', inside the inlined callee


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.router = Router()

    def forward(self, x):
        return self.router(self.lin(x))


if __name__ == "__main__":
    FULLGRAPH = os.environ.get("TESTBED_FULLGRAPH", "1") == "1"
    banner("inlined_exception_fullgraph" if FULLGRAPH else "inlined_exception_graph_break")
    torch.compile(Model(), fullgraph=FULLGRAPH)(torch.randn(2, 4))
