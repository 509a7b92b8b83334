#!/bin/sh
# Throughput and peak memory of `bringup stacks` on a large engine log with
# embedded SGLang watchdog py-spy dumps, side by side with `wc -l`.
# usage: stacks/testdata/bench_stacks.sh [MB]   (default 200; file in /tmp, removed after)
set -e
MB=${1:-200}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=/tmp/bringup-bench.$$
LOG=/tmp/bringup-bench-log.$$
trap 'rm -f "$BIN" "$LOG"' EXIT
(cd "$ROOT" && go build -o "$BIN" ./cmd/bringup)
python3 - "$LOG" "$MB" "$ROOT/stacks/testdata/seed004-snap1" <<'PY'
import os, sys
out, mb, fixture = sys.argv[1], int(sys.argv[2]), sys.argv[3]
dumps = [open(os.path.join(fixture, f"worker_TP{r}.txt")).read() for r in range(8)]
line = "[2025-10-29 11:25:58 TP{r}] Decode batch. #running-req: 12, #token: 52113, token usage: 0.41, cuda graph: True, gen throughput (token/s): 812.44, #queue-req: 0\n"
with open(out, "w") as f:
    n = 0
    while f.tell() < mb << 20:
        for r in range(8):
            f.write(line.format(r=r) * 400)
        n += 1
        if n % 4 == 0:  # a watchdog round: every rank dumps
            for r in range(8):
                f.write(f"[2025-10-29 11:30:58 TP{r}] Pyspy dump for PID {31416 + 7 * r}:\n")
                f.write(dumps[r])
PY
ls -l "$LOG" | awk '{printf "input: %.0f MB\n", $5/1048576}'
echo "wc -l:"
/usr/bin/time -f "  %e s  %M KB max RSS" wc -l "$LOG"
echo "bringup stacks --json:"
/usr/bin/time -f "  %e s  %M KB max RSS" "$BIN" stacks --json -o /dev/null "$LOG" || true
