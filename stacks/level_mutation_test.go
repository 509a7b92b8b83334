package stacks_test

import (
	"testing"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/stacks"
)

// TestLinesLevelKeysOnLineNumbers: at the lines level two ranks whose
// stacks differ only in a line number are two buckets; at funcs they are
// one.
func TestLinesLevelKeysOnLineNumbers(t *testing.T) {
	proc := func(pid int, rank string, line int) *stacks.Process {
		return &stacks.Process{PID: pid, Rank: rank, Source: stacks.SourceFile, Threads: []stacks.Thread{{
			TID: uint64(pid), Main: true, Name: "MainThread",
			Frames: record.Stack{
				{Func: "wait", File: "worker.py", Line: line},
				{Func: "main", File: "worker.py", Line: 40},
			},
		}}}
	}
	procs := []*stacks.Process{proc(1, "TP0", 10), proc(2, "TP1", 12)}
	for lv, want := range map[string]int{"lines": 2, "funcs": 1, "exact": 2} {
		l, err := stacks.ParseLevel(lv)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, b := range stacks.Analyze(procs, stacks.Options{Level: l}).Buckets {
			if b.Primary {
				n++
			}
		}
		if n != want {
			t.Errorf("level %s: %d primary buckets for stacks that differ only in a line number, want %d", lv, n, want)
		}
	}
}
