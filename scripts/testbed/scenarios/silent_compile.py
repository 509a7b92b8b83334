"""A silent cold compile: a chain of custom ops without a lowering (pytorch#185937)."""
# testbed: logs=dynamo stacks=1 samples=3 timeout=900
#
# Every op in the chain gets an implicit fallback in GraphLowering.call_function,
# which builds its "Creating implicit fallback for:" INFO message with
# MissingOperatorWithoutDecomp.operator_str(target, args, kwargs); the args are
# the IR nodes of the previous ops, whose __str__ nests ExternKernel.__str__ down
# the chain. Until then a heartbeat line every few seconds keeps the run from
# looking silent while torch imports and Dynamo traces. A torch that formats the message eagerly pays that with INFO off.
# One that formats it lazily (a LazyString, pytorch#185951) pays it only when a
# handler takes the record, so there the graph logger is set to INFO with a
# handler that formats each record and drops it: the console stays silent and
# the cost is the same, now under logging's frames. TORCH_LOGS=dynamo prints
# Dynamo's progress up to the hand-over to Inductor; from the first implicit
# fallback on, nothing is printed until the compile ends.
import inspect
import logging
import os
import sys
import threading

# Until the run is meant to be silent, a line every HEARTBEAT seconds: importing
# torch, Dynamo's tracing and AOTAutograd of 240 ops can take tens of seconds
# on busy cores, and a supervisor's silence must start in the lowering (or, on
# a torch that formats eagerly, in the compile), not before. The heartbeat
# starts before torch is imported and stops when `quiet` is set.
HEARTBEAT = float(os.environ.get("TESTBED_HEARTBEAT", "3"))
quiet = threading.Event()


def heartbeat():
    n = 0
    while not quiet.wait(HEARTBEAT):
        n += 1
        print(f"testbed: working ({n * HEARTBEAT:.0f} s)", file=sys.stderr, flush=True)


threading.Thread(target=heartbeat, daemon=True).start()

import torch  # noqa: E402
from torch._inductor.graph import GraphLowering  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner, marker  # noqa: E402

N = int(os.environ.get("TESTBED_OPS", "240"))  # 240: about 100 s of lowering on one core
STACKS_AFTER = float(os.environ.get("TESTBED_STACKS_AFTER", "20"))
class FormatAndDrop(logging.Handler):
    """Formats every record (so the message's cost is paid), keeps none of them.

    The first record says once, on stderr, that lowering has started: from then
    on the run is silent, and the runner's stack dump is due STACKS_AFTER later.
    """

    started = False

    def emit(self, record):
        self.format(record)
        if not self.started:
            self.started = True
            quiet.set()
            print("testbed: Inductor lowering started (first implicit fallback)", file=sys.stderr, flush=True)
            threading.Timer(STACKS_AFTER, marker, ("lowering",)).start()


def make_op(i):
    @torch.library.custom_op(f"testbed::chain{i}", mutates_args=())
    def op(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    @op.register_fake
    def _(x):
        return torch.empty_like(x)

    return op


def chain(x):
    for op in OPS:
        x = op(x)
    return x


if __name__ == "__main__":
    banner("silent_compile")
    OPS = [make_op(i) for i in range(N)]
    print(f"testbed: {N} custom ops defined; compiling", file=sys.stderr, flush=True)
    lazy = "LazyString" in inspect.getsource(GraphLowering.call_function)
    print(f"testbed: implicit-fallback message formatted {'lazily' if lazy else 'eagerly'}; "
          f"{N} chained custom ops", file=sys.stderr, flush=True)
    if lazy:
        log = logging.getLogger("torch._inductor.graph")
        log.setLevel(logging.INFO)
        log.addHandler(FormatAndDrop())
        log.propagate = False
    else:
        quiet.set()  # eager formatting: the compile itself is the silence
        threading.Timer(STACKS_AFTER, marker, ("compiling",)).start()
    out = torch.compile(chain, backend="inductor", fullgraph=True)(torch.randn(4))
    print(f"compiled and ran: {out.sum().item():.3f}", flush=True)
    os._exit(0)  # do not wait for the marker timer
