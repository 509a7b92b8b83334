"""A module-level threading.Lock entered inside a fullgraph-compiled function: Dynamo cannot enter that context manager."""
# testbed: timeout=120
import os
import sys
import threading

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402

LOCK = threading.Lock()  # a C-level context manager, created outside the compiled region


def step(x):
    with LOCK:  # Unsupported context manager (fullgraph: an error)
        return x + 1


if __name__ == "__main__":
    banner("unsupported_context_manager")
    torch.compile(step, fullgraph=True, backend="eager")(torch.ones(3))
