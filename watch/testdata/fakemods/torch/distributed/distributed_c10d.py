# A stand-in for torch/distributed/distributed_c10d.py: all_reduce blocks
# as a real one does while a rank of its group has not entered it (here:
# forever). Not torch.
import threading

_PEERS = threading.Event()


def all_reduce(tensor, group=None):
    _PEERS.wait()
    return tensor
