"""logging.Logger.info inside a fullgraph-compiled function: a plain Dynamo Unsupported no narrower rule names."""
# testbed: timeout=120
import logging
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402

log = logging.getLogger("testbed.model")


def step(x):
    log.info("step on %s", tuple(x.shape))  # Unsupported: logging.Logger method …
    return x + 1


if __name__ == "__main__":
    banner("logger_in_fullgraph")
    torch.compile(step, fullgraph=True, backend="eager")(torch.ones(3))
