"""The CUDA build of torch asked for a CUDA tensor on a machine without an NVIDIA driver (the testbed's CPU machine)."""
# testbed: timeout=120
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402

if __name__ == "__main__":
    banner("no_gpu_visible")
    torch.zeros(1, device="cuda")  # on a machine with a GPU this succeeds: the scenario shows nothing there
