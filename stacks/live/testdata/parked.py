"""Target for the py-spy fallback test: 16 threads parked in parked_thread
and the main thread in main_loop; the ready file is written once all are
there. Runs on any CPython 3 (the test picks one that pyproc cannot read).

usage: python parked.py READY_FILE
"""
import os
import sys
import threading
import time

started = threading.Barrier(17)


def parked_thread():
    started.wait()
    while True:
        time.sleep(0.05)


def main_loop():
    started.wait()
    with open(sys.argv[1], "w") as f:
        f.write(str(os.getpid()))
    while True:
        time.sleep(0.05)


for i in range(16):
    threading.Thread(target=parked_thread, name="parked-%d" % i, daemon=True).start()
main_loop()
