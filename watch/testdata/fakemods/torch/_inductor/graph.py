from .exc import OperatorIssue
from .ir import ExternKernel


class GraphLowering:
    def call_function(self, target, args, kwargs):
        # torch < 2.13 formats this eagerly for a filtered log.info
        return OperatorIssue.operator_str(target, args, kwargs)

    def lower(self, target):
        return self.call_function(target, [ExternKernel(40)], {})
