"""AOT compile with graph breaks allowed: the up-front RuntimeError vLLM's AOT path hits."""
import os
import sys

import torch
import torch._dynamo

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


def f(x):
    return x.sin() + 1


if __name__ == "__main__":
    banner("aot_compile_graph_break")
    torch._dynamo.config.enable_aot_compile = True  # what VLLM_USE_AOT_COMPILE=1 turns on
    x = torch.randn(4)
    compiled = torch.compile(f, fullgraph=False)
    if not hasattr(compiled, "aot_compile"):
        sys.exit(f"torch {torch.__version__} has no aot_compile on a compiled function")
    compiled.aot_compile(((x,), {}))
