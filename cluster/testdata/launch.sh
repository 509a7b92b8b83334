#!/bin/sh
# A launcher of a fake multi-node boot for the watch tests of the cluster:
#
#   sh launch.sh READY_DIR N COMMAND...
#
# runs COMMAND (srun … rank.py READY_DIR …) and, until N ranks have written
# their READY_DIR/ready.* files, prints a line every half second saying how
# many are up, as an engine's launcher reports its workers starting. A
# watch's --silence then counts from the moment the last rank is blocked,
# not from a start that a loaded machine (srun's allocation, N interpreters)
# may make longer than the silence. The launcher then waits for COMMAND.
ready=$1
n=$2
shift 2
"$@" &
while :; do
	up=$(ls "$ready" 2>/dev/null | grep -c '^ready\.[0-9]*$')
	echo "launcher: $up of $n rank(s) up"
	[ "$up" -ge "$n" ] && break
	kill -0 $! 2>/dev/null || break
	sleep 0.5
done
wait $!
