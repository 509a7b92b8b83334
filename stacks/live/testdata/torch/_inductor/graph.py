"""Stand-in for torch/_inductor/graph.py (test target, not torch)."""
from torch._inductor.exc import OperatorIssue
from torch._inductor.ir import chain


class GraphLowering:
    def __init__(self, depth):
        self.depth = depth

    def call_function(self, target):
        # torch < 2.13 builds this message eagerly for a filtered log.info.
        return OperatorIssue.operator_str(target, [chain(self.depth)], {})

    def run(self):
        return self.call_function("vllm.all_reduce.default")
