# A forward whose line table has no position for any instruction, written
# the way Dynamo's line-table writer does for the instructions it generates
# (every entry "no column info", line delta 0 from co_firstlineno), so the
# KeyError reports the def line and nothing else. No torch needed.
import sys


class Module:
    # Shaped like torch.nn.Module: _modules, _parameters and _buffers dicts.
    def __init__(self, **children):
        self._modules = dict(children)
        self._parameters = {"weight": None}
        self._buffers = {}


def forward(self, x):
    y = x + 1
    return self._modules["layers"]._modules["3"]._modules["in_proj_qkvbfg_a"]


def strip_positions(fn):
    code = fn.__code__
    table = bytearray()
    if sys.version_info >= (3, 11):
        n = len(code.co_code) // 2  # code units
        while n > 0:
            k = min(8, n)
            table += bytes([0x80 | (13 << 3) | (k - 1), 0])  # no columns, line delta 0
            n -= k
    else:
        n = len(code.co_code)  # 3.10: (bytecode delta, line delta) pairs
        while n > 0:
            k = min(254, n)
            table += bytes([k, 0])
            n -= k
    fn.__code__ = code.replace(co_linetable=bytes(table))


strip_positions(forward)
layer = Module(self_attn=Module(q_proj=Module(), kv_proj=Module()), mlp=Module())
model = Module(layers=Module(**{"3": layer}))
model.layer_idx = 3
if __name__ == "__main__":
    forward(model, 1)
