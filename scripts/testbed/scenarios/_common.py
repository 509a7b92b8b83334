"""Small helpers the scenarios share (not a scenario: the runner skips names starting with _)."""
import os
import pathlib


def marker(name):
    """Tell the runner this process reached a state worth a live stack dump."""
    d = os.environ.get("TESTBED_MARKERS")
    if d:
        pathlib.Path(d, name).write_text(str(os.getpid()))


def banner(what):
    """One line naming the scenario and the torch it runs, first on stderr."""
    import sys

    import torch

    print(f"testbed: {what}; torch {torch.__version__}, python {sys.version.split()[0]}",
          file=sys.stderr, flush=True)
