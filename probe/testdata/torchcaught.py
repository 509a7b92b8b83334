# A torch.compile that succeeds: while Dynamo traces, torch's config module
# and numpy's getlimits raise KeyErrors ('__path__', 'i64') and catch them
# themselves. They are not the boot's problem.
import torch


def lookup(d, k):
    return d[k]


def f(x):
    d = {"a": x}
    return lookup(d, "a") + 1


g = torch.compile(f, backend="eager")
print(g(torch.ones(2)).tolist())
