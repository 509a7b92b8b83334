# A stand-in for torch in the fake boots: only the Inductor module paths
# and class names of the slow implicit-fallback formatting (ROCm/ATOM#3073),
# so live stacks look like the real hang. Not torch.
__version__ = "2.10.0+rocm7.0"
