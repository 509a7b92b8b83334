#!/usr/bin/env bash
# Throughput and peak RSS of enginelog.Parse, and of what diagnose runs per
# log short of the rules (Parse + pytrace + timeline + versions), side by
# side with wc -l on the same generated TP=8 vLLM log (warm page cache).
#   ingest/enginelog/bench.sh [LOG]   (MB=1100 sets the generated size)
set -euo pipefail
cd "$(dirname "$0")/../.."
LOG=${1:-/tmp/bringup-bench.log}
MB=${MB:-1100}
[ -f "$LOG" ] || go run ./testsupport/benchlog/genlog -mb "$MB" -o "$LOG"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go test -c -o "$bin/enginelog.test" ./ingest/enginelog
go test -c -o "$bin/timeline.test" ./analyze/timeline
cat "$LOG" >/dev/null
size=$(stat -c %s "$LOG")
echo "input: $LOG, $size bytes, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
measure() {
	local name=$1
	shift
	/usr/bin/time -f "%e %U %S %M" -o "$bin/t" "$@" >/dev/null 2>&1
	read -r wall user sys rss <"$bin/t"
	awk -v n="$name" -v s="$size" -v w="$wall" -v u="$user" -v y="$sys" -v r="$rss" \
		'BEGIN { printf "%-9s %6.2f s wall %6.0f MB/s   cpu %5.2f s (%5.0f MB/s per cpu-second)   peak RSS %4.0f MiB\n", n, w, s/1e6/w, u+y, s/1e6/(u+y), r/1024 }'
}
for i in 1 2 3; do
	measure "wc -l" wc -l "$LOG"
	BRINGUP_BENCH_LOG=$LOG measure parse "$bin/enginelog.test" -test.run XXX -test.bench BenchmarkParseFile -test.benchtime 1x
	BRINGUP_BENCH_LOG=$LOG measure pipeline "$bin/timeline.test" -test.run XXX -test.bench BenchmarkPipelineFile -test.benchtime 1x
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
