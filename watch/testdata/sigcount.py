"""Counts the SIGTERMs it gets while it shuts down, and prints the count."""
import signal
import sys
import time

got = 0


def term(signum, frame):
    global got
    got += 1
    if got == 1:
        time.sleep(1.0)  # shutting down: a second SIGTERM would land here
        print(f"sigterms: {got}", flush=True)
        sys.exit(0)


signal.signal(signal.SIGTERM, term)
print("ready", flush=True)
while True:
    time.sleep(0.1)
