"""Inductor's C++ backend on a machine whose C++ compiler is not there: CXX names a compiler that does not exist."""
# testbed: timeout=120
import os
import sys

# As on an image without g++: the compiler Inductor would use is missing.
os.environ["CXX"] = "/nonexistent/g++"

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


def step(x):
    return (x.sin() + 1).cos()


if __name__ == "__main__":
    banner("cxx_compiler_missing")
    print(torch.compile(step)(torch.randn(8)).sum())
