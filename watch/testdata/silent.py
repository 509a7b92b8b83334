"""A boot whose workers go silent in a cold Inductor compile: every rank sits
in OperatorIssue.operator_str under dozens of nested ExternKernel.__str__
frames (the shape of ROCm/ATOM#3073), printing nothing."""
import sys, os, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakeengine as fe


class ExternKernel:
    def __init__(self, depth):
        self.depth = depth

    def __str__(self):
        if self.depth == 0:
            while True:  # formatting a huge IR: no output, no end in sight
                time.sleep(0.05)
        return "ExternKernel(" + str(ExternKernel(self.depth - 1)) + ")"


class OperatorIssue:
    @staticmethod
    def operator_str(target, args):
        return f"{target}({', '.join(str(a) for a in args)})"


class GraphLowering:
    def call_function(self, target):
        return OperatorIssue.operator_str(target, [ExternKernel(40)])


def worker(rank):
    name = fe.worker_name(rank)
    fe.log(name, "Loading weights took 0.12 seconds", where="default_loader.py:267")
    fe.log(name, "Using cache directory: /tmp/fake/torch_compile_cache/0123456789/rank_0_0/backbone_late for vLLM's torch.compile",
           where="backends.py:609")
    fe.log(name, "Dynamo bytecode transform time: 1.08 s", where="backends.py:278")
    GraphLowering().call_function("aten.fake_op")


if __name__ == "__main__":
    procs = fe.spawn_workers(worker, 2)
    for p in procs:
        p.join()
