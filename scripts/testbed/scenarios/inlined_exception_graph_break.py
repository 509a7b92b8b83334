"""The same inlined KeyError under fullgraph=False: a graph break, then the eager KeyError."""
# testbed: logs=graph_breaks
import os
import runpy

os.environ["TESTBED_FULLGRAPH"] = "0"
runpy.run_path(os.path.join(os.path.dirname(__file__), "inlined_exception_fullgraph.py"),
               run_name="__main__")
