"""A custom op without an Inductor lowering and implicit_fallbacks off: MissingOperatorWithoutDecomp."""
# testbed: timeout=180
import os
import sys

import torch
import torch._inductor.config

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


@torch.library.custom_op("testbed::no_lowering", mutates_args=())
def no_lowering(x: torch.Tensor) -> torch.Tensor:
    return x + 1


@no_lowering.register_fake
def _(x):
    return torch.empty_like(x)


if __name__ == "__main__":
    banner("missing_lowering")
    torch._inductor.config.implicit_fallbacks = False  # a missing lowering is an error, not a fallback kernel
    torch.compile(lambda x: no_lowering(x) * 2, fullgraph=True)(torch.randn(3))
