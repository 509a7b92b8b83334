"""A boot that is slow but never silent for long: it prints a progress line
every 0.8 s for a few seconds of 'autotuning', then becomes ready (10 s in all, with --silence 4s)"""
import sys, os, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakeengine as fe

if __name__ == "__main__":
    fe.compile_phases("Worker_TP0")
    for i in range(12):
        time.sleep(0.8)
        fe.log("Worker_TP0", f"AUTOTUNE addmm(32x2880, 2880x4096) step {i}", where="select_algorithm.py:2200")
    fe.engine_ready()
    fe.serve_forever()
