# A KeyError Dynamo meets while it traces an inlined callee under
# fullgraph=True: it raises its stand-in ObservedKeyError, then
# Unsupported "Observed exception" whose "from user code:" names the frames.
import torch
def lookup(d, k):
    return d[k]
def f(x):
    d = {"a": x}
    return lookup(d, "in_proj_missing") + 1
g = torch.compile(f, backend="eager", fullgraph=True)
g(torch.randn(2))
