package stacks_test

import (
	"testing"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/stacks"
)

// A live capture of a thread that kept running keeps only its confirmed
// outer frames; the bucket must say so rather than present the outer frame
// as the leaf.
func TestPartialThreadMarksBucket(t *testing.T) {
	frames := record.Stack{
		{Func: "loop", File: "/srv/app/spin.py", Line: 12},
		{Func: "<module>", File: "/srv/app/spin.py", Line: 30},
	}
	procs := []*stacks.Process{
		{PID: 10, Source: stacks.SourceLive, RankInfo: record.NoRank, Threads: []stacks.Thread{{TID: 10, Main: true, Frames: frames, Partial: true}}},
		{PID: 11, Source: stacks.SourceLive, RankInfo: record.NoRank, Threads: []stacks.Thread{{TID: 11, Main: true, Frames: frames}}},
	}
	a := stacks.Analyze(procs, stacks.Options{Level: stacks.DefaultLevel})
	if len(a.Buckets) != 1 {
		t.Fatalf("got %d buckets, want the two threads in one", len(a.Buckets))
	}
	if !a.Buckets[0].Partial {
		t.Errorf("bucket holding a partial thread is not marked partial")
	}
}
