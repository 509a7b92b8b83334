"""A stand-in for torch/_inductor/ir.py (test target, not torch): the same
class and method names and the same mutual recursion through __str__ as
ExternKernel / MutableBox, so a live capture sees the frames of the
implicit-fallback operator_str hang. The innermost __str__ blocks."""
import threading

BLOCK = threading.Event()  # never set


class ExternKernel:
    def __init__(self, inputs, name):
        self.inputs = inputs
        self.name = name

    def fields(self):
        return [("name", self.name), ("inputs", self.inputs)]

    def __str__(self):
        if not self.inputs:
            BLOCK.wait()
        lines = [f"{k}={v}" for k, v in self.fields()]
        return "ExternKernel(" + ", ".join(lines) + ")"

    __repr__ = __str__


class MutableBox:
    def __init__(self, data):
        self.data = data

    def __str__(self):
        return f"{type(self).__name__}({self.data})"

    __repr__ = __str__


class StorageBox(MutableBox):
    pass


class TensorBox(MutableBox):
    pass


def chain(depth):
    node = ExternKernel([], "leaf")
    for i in range(depth):
        node = ExternKernel([TensorBox(StorageBox(node))], f"k{i}")
    return node
