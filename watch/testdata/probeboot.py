# A boot for watch --probe: a helper started with -I (which ignores
# PYTHONPATH, so it cannot load the probe), then the model forward of
# probe/testdata/nopos.py, which dies of a KeyError at its def line
# (no source position for any instruction, as in Dynamo's generated code).
import os
import runpy
import subprocess
import sys

subprocess.run([sys.executable, "-I", "-c", "import time; time.sleep(1.0)"], check=True)
print("helper done", file=sys.stderr, flush=True)
here = os.path.dirname(os.path.abspath(__file__))
runpy.run_path(os.path.join(here, "..", "..", "probe", "testdata", "nopos.py"), run_name="__main__")
