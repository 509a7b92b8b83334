"""Tensor.item() under fullgraph=True: Dynamo's Unsupported error with explanation and hint."""
# testbed: logs=graph_breaks
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


def scale(x):
    s = x.sum().item()  # a Python float: Dynamo cannot trace it without capture_scalar_outputs
    return x * s


if __name__ == "__main__":
    banner("item_fullgraph")
    torch.compile(scale, fullgraph=True)(torch.ones(4))
