""".item() captured into the graph, and a backend that fakes tensors without a ShapeEnv: the backend gives up on aten._local_scalar_dense."""
# testbed: logs=graph_breaks timeout=120
#
# capture_scalar_outputs puts the host read into the FX graph as
# aten._local_scalar_dense. The backend re-runs the graph under its own
# FakeTensorMode (no ShapeEnv), as some out-of-tree backends check graphs:
# a fake tensor's value cannot be read there (DataDependentOutputException),
# which Dynamo allows as a backend fallback ("Backend compiler exception",
# a graph break); the function runs eagerly and prints its result.
import os
import sys

import torch
import torch._dynamo
from torch._subclasses import FakeTensorMode

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402

torch._dynamo.config.capture_scalar_outputs = True


def checking_backend(gm, example_inputs):
    with FakeTensorMode():
        gm(*[torch.empty(t.shape, dtype=t.dtype) for t in example_inputs])
    return gm.forward


def step(x):
    n = x.sum().item()  # aten._local_scalar_dense in the graph
    return x * n


if __name__ == "__main__":
    banner("local_scalar_dense_fallback")
    print(torch.compile(step, backend=checking_backend)(torch.ones(3)).tolist())
