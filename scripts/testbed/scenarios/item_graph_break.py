"""Tensor.item() under fullgraph=False: graph breaks, the same one hit on every call (dedup)."""
# testbed: logs=graph_breaks
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


def scale(x):
    y = x.cos()
    s = y.sum().item()  # graph break here; the rest runs in a second graph
    return y * s + 1


if __name__ == "__main__":
    banner("item_graph_break")
    f = torch.compile(scale)
    for n in range(3):  # the same break three times: one distinct graph break
        f(torch.ones(4) * n)
    print("graph break run ok", flush=True)
