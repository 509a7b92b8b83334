// Package cputime reads the CPU time (user + system) a process, its
// children or the calling thread has used: what benchmarks report as cost
// per CPU-second whatever else runs on the machine.
package cputime

import (
	"syscall"
	"time"
)

// Who is whose time to read.
type Who int

const (
	Self     Who = syscall.RUSAGE_SELF
	Children Who = syscall.RUSAGE_CHILDREN
	Thread   Who = 1 // RUSAGE_THREAD (Linux): the calling OS thread
)

// Used is the user + system CPU time of who so far; 0 when the kernel
// will not say.
func Used(who Who) time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(int(who), &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
