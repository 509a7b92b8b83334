package cputime

import (
	"runtime"
	"testing"
	"time"
)

func TestUsedGrowsWithWork(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s0, t0 := Used(Self), Used(Thread)
	x := 0
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
		x++
	}
	if s1, t1 := Used(Self), Used(Thread); s1 <= s0 || t1 <= t0 || t1-t0 > s1-s0+time.Millisecond {
		t.Errorf("self %v → %v, thread %v → %v after busy work (%d)", s0, s1, t0, t1, x)
	}
	if Used(Children) < 0 {
		t.Error("negative children time")
	}
}
