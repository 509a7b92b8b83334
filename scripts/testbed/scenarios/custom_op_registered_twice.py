"""One operator schema defined twice in a namespace (a module imported twice under two names does this)."""
# testbed: timeout=120
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402

if __name__ == "__main__":
    banner("custom_op_registered_twice")
    first = torch.library.Library("testbed", "DEF")
    first.define("twice(Tensor x) -> Tensor")
    again = torch.library.Library("testbed", "FRAGMENT")
    again.define("twice(Tensor x) -> Tensor")  # RuntimeError: registered multiple times
