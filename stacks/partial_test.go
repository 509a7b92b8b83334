package stacks_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
	reportstacks "github.com/bringup-tool/bringup/report/stacks"
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

// Processes that leave the shared root by the same frame but differ further
// in (two ranked workers and an unranked process, all started by a spawn
// `<module>` of `<string>`) are one branch: it names the unranked pid next to
// the ranks and every bucket it spans (it named the first member's bucket
// only, and the rank set alone). A known helper (the resource tracker) is
// not compared at all.
func TestBranchNamesUnrankedAndBuckets(t *testing.T) {
	spawned := func(inner ...record.Frame) record.Stack {
		return append(record.Stack(inner),
			record.Frame{Func: "spawn_main", File: "/usr/lib/python3.11/multiprocessing/spawn.py", Line: 122},
			record.Frame{Func: "<module>", File: "<string>", Line: 1})
	}
	worker := spawned(record.Frame{Func: "lower", File: "/srv/torch/_inductor/graph.py", Line: 11},
		record.Frame{Func: "worker", File: "/srv/boot.py", Line: 23})
	tracker := record.Stack{
		{Func: "main", File: "/usr/lib/python3.11/multiprocessing/resource_tracker.py", Line: 227},
		{Func: "<module>", File: "<string>", Line: 1},
	}
	loader := record.Stack{
		{Func: "loop", File: "/srv/loader.py", Line: 7},
		{Func: "<module>", File: "<string>", Line: 1},
	}
	engine := record.Stack{{Func: "join", File: "/usr/lib/python3.11/multiprocessing/process.py", Line: 149}, {Func: "<module>", File: "/srv/boot.py", Line: 33}}
	rank := func(tp int) record.Rank { r := record.NoRank; r.TP = tp; return r }
	procs := []*stacks.Process{
		{PID: 9, RankInfo: record.NoRank, Threads: []stacks.Thread{{TID: 9, Main: true, Frames: loader}}},
		{PID: 12, RankInfo: record.NoRank, Threads: []stacks.Thread{{TID: 12, Main: true, Frames: tracker}}},
		{PID: 10, Rank: "TP0", RankInfo: rank(0), Threads: []stacks.Thread{{TID: 10, Main: true, Frames: worker}}},
		{PID: 11, Rank: "TP1", RankInfo: rank(1), Threads: []stacks.Thread{{TID: 11, Main: true, Frames: worker}}},
		{PID: 8, Rank: "EngineCore DP0", RankInfo: record.NoRank, Threads: []stacks.Thread{{TID: 8, Main: true, Frames: engine}}},
	}
	a := stacks.Analyze(procs, stacks.Options{Level: stacks.DefaultLevel})
	var spawn *stacks.Branch
	for i, b := range a.Shared.Diverge {
		if b.Frame != nil && b.Frame.File == "<string>" {
			spawn = &a.Shared.Diverge[i]
		}
	}
	if spawn == nil {
		t.Fatalf("no branch starting in <string>: %+v", a.Shared.Diverge)
	}
	if len(spawn.PIDs) != 3 || len(spawn.Unranked) != 1 || spawn.Unranked[0] != 9 {
		t.Errorf("branch pids %v unranked %v, want 3 pids with 9 unranked (the tracker, 12, not compared)", spawn.PIDs, spawn.Unranked)
	}
	if len(spawn.Buckets) != 2 || spawn.Bucket != spawn.Buckets[0] || spawn.Buckets[0] >= spawn.Buckets[1] {
		t.Errorf("branch bucket %d buckets %v, want the workers' and the loader's, smallest first", spawn.Bucket, spawn.Buckets)
	}
	var buf bytes.Buffer
	reportstacks.Text(&buf, a, reportstacks.TextOptions{})
	want := fmt.Sprintf("  starts: ranks 0-1 (2/3) + pid 9 in <module> (<string>)  [buckets #%d, #%d]\n", spawn.Buckets[0], spawn.Buckets[1])
	if !strings.Contains(buf.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, buf.String())
	}
}

// A launcher waiting for its workers is not an outlier when the capture
// knows it is their parent (live captures record the parent pid); without
// parents (dump files) it still is, and unranked processes are counted as
// processes, not ranks.
func TestLauncherIsNotAnOutlier(t *testing.T) {
	worker := record.Stack{{Func: "inner", File: "/srv/tree.py", Line: 5}, {Func: "work", File: "/srv/tree.py", Line: 7}, {Func: "<module>", File: "/srv/tree.py", Line: 10}}
	launcher := record.Stack{{Func: "poll", File: "/usr/lib/python3.12/multiprocessing/popen_fork.py", Line: 27}, {Func: "<module>", File: "/srv/tree.py", Line: 11}}
	procs := func(ppid int) []*stacks.Process {
		out := []*stacks.Process{{PID: 100, Source: stacks.SourceLive, RankInfo: record.NoRank, Threads: []stacks.Thread{{TID: 100, Main: true, Frames: launcher}}}}
		for pid := 101; pid <= 103; pid++ {
			out = append(out, &stacks.Process{PID: pid, PPID: ppid, Source: stacks.SourceLive, RankInfo: record.NoRank, Threads: []stacks.Thread{{TID: uint64(pid), Main: true, Frames: worker}}})
		}
		return out
	}
	a := stacks.Analyze(procs(100), stacks.Options{Level: stacks.DefaultLevel})
	if len(a.Outliers) != 0 {
		t.Errorf("the workers' parent is an outlier: %+v", a.Outliers)
	}
	var buf bytes.Buffer
	reportstacks.Text(&buf, a, reportstacks.TextOptions{})
	if !strings.Contains(buf.String(), "  root path (1 frame, outermost first): <module>\n") {
		t.Errorf("root path line:\n%s", buf.String())
	}
	// The verdict says where the workers are and where the launcher is (it
	// said "4 processes in 2 different stacks").
	if v := a.Verdict(); v != "3/3 workers in /srv/tree.py inner (bucket #1); launcher pid 100 in bucket #2" {
		t.Errorf("verdict %q", v)
	}
	a = stacks.Analyze(procs(0), stacks.Options{Level: stacks.DefaultLevel})
	if len(a.Outliers) != 1 || a.Outliers[0].PID != 100 || !strings.HasPrefix(a.Outliers[0].Why, "3 of 4 processes are in bucket #") {
		t.Errorf("without parents: outliers %+v", a.Outliers)
	}
}

// A boot's helper without a rank (multiprocessing's resource tracker, a
// child of the engine core like the workers) is not an outlier among the
// ranked workers: watch's capture of silent.py called it one once the
// engine core was known to be the launcher.
func TestUnrankedHelperIsNotAnOutlier(t *testing.T) {
	worker := record.Stack{{Func: "lower", File: "/srv/torch/_inductor/graph.py", Line: 11}, {Func: "worker", File: "/srv/boot.py", Line: 23}}
	tracker := record.Stack{{Func: "main", File: "/usr/lib/python3.11/multiprocessing/resource_tracker.py", Line: 227}, {Func: "<module>", File: "<string>", Line: 1}}
	engine := record.Stack{{Func: "join", File: "/usr/lib/python3.11/multiprocessing/process.py", Line: 149}, {Func: "<module>", File: "/srv/boot.py", Line: 33}}
	rank := func(tp int) record.Rank { r := record.NoRank; r.TP = tp; return r }
	procs := []*stacks.Process{
		{PID: 8, Rank: "EngineCore DP0", RankInfo: record.NoRank, Threads: []stacks.Thread{{TID: 8, Main: true, Frames: engine}}},
		{PID: 9, PPID: 8, RankInfo: record.NoRank, Threads: []stacks.Thread{{TID: 9, Main: true, Frames: tracker}}},
		{PID: 10, PPID: 8, Rank: "TP0", RankInfo: rank(0), Threads: []stacks.Thread{{TID: 10, Main: true, Frames: worker}}},
		{PID: 11, PPID: 8, Rank: "TP1", RankInfo: rank(1), Threads: []stacks.Thread{{TID: 11, Main: true, Frames: worker}}},
	}
	a := stacks.Analyze(procs, stacks.Options{Level: stacks.DefaultLevel})
	if len(a.Outliers) != 0 {
		t.Errorf("outliers %+v", a.Outliers)
	}
	if v := a.Verdict(); !strings.HasPrefix(v, "2/2 ranks in /srv/torch/_inductor/graph.py lower (bucket #1); launcher pid 8 in bucket #") {
		t.Errorf("verdict %q", v)
	}
}
