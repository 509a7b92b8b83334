"""A recursion for the stacks tests: Node.__str__ nests 21 deep, and the
innermost call parks in leaf (an Event that is never set). It prints
"ready" once parked and blocks until killed."""

import threading

PARKED = threading.Event()
NEVER = threading.Event()


class Node:
    def __init__(self, child):
        self.child = child

    def __str__(self):
        return "(" + (str(self.child) if self.child else leaf()) + ")"


def leaf():
    PARKED.set()
    NEVER.wait()
    return ""


def build(n):
    node = None
    for _ in range(n):
        node = Node(node)
    return node


def report():
    PARKED.wait()
    print("ready", flush=True)


threading.Thread(target=report, daemon=True).start()
str(build(21))
