"""Ignores SIGTERM, starts a child that ignores it too, and a daemon that
double-forks out of the process group (setsid); writes their pids to argv[1]."""
import os, signal, sys, time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
pids = []
child = os.fork()
if child == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(1)
pids.append(child)
r, w = os.pipe()
first = os.fork()
if first == 0:
    os.setsid()
    second = os.fork()
    if second == 0:
        os.close(r)
        os.write(w, str(os.getpid()).encode())
        os.close(w)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        while True:
            time.sleep(1)
    os._exit(0)
os.close(w)
os.waitpid(first, 0)
daemon = int(os.read(r, 32))
pids.append(daemon)
with open(sys.argv[1], "w") as f:
    f.write(" ".join(map(str, [os.getpid()] + pids)))
print("stubborn boot: started", pids, flush=True)
if len(sys.argv) > 2 and sys.argv[2] == "exit":
    sys.exit(0)
while True:
    time.sleep(1)
