"""A recursion whose innermost repetition is at lines of its own:
Node.__str__ -> f nests 31 deep, and the innermost f parks (an Event that
is never set) at another line than the one every outer f recurses at. It
prints "ready" once parked and blocks until killed."""

import threading

PARKED = threading.Event()
NEVER = threading.Event()


class Node:
    def __init__(self, depth):
        self.depth = depth

    def __str__(self):
        return f(self)


def f(node):
    if node.depth == 0:
        PARKED.set()
        NEVER.wait()  # PARK
    return str(Node(node.depth - 1))  # RECURSE


def report():
    PARKED.wait()
    print("ready", flush=True)


threading.Thread(target=report, daemon=True).start()
f(Node(30))
