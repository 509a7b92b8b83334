# A stand-in for torch.distributed in the fake boots: only the module path
# and function names of a collective, so live stacks look like a rank
# blocked in one. Not torch.
