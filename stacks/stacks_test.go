package stacks_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/ingest/stackdump"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/stacks"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func read(t *testing.T, paths ...string) []*stacks.Process {
	t.Helper()
	var procs []*stacks.Process
	for _, p := range paths {
		res, err := stackdump.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, res.Processes...)
	}
	return procs
}

func fixture(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "worker_TP*.txt"))
	if err != nil || len(files) != 8 {
		t.Fatalf("fixture %s: %v %v", dir, files, err)
	}
	return files
}

func analyze(t *testing.T, procs []*stacks.Process, lv stacks.Level, v rules.Versions) *stacks.Analysis {
	t.Helper()
	set, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return stacks.Analyze(procs, stacks.Options{Level: lv, Conclude: stacks.Conclude(set, v)})
}

func finding(a *stacks.Analysis, id string) *record.Finding {
	for i := range a.Findings {
		if a.Findings[i].Rule == id {
			return &a.Findings[i]
		}
	}
	return nil
}

// The seed-004 hang: every rank in operator_str under call_function with
// dozens of nested __str__, at depths that differ per rank.
func TestSeed004AllRanksOneBucket(t *testing.T) {
	a := analyze(t, read(t, fixture(t, "seed004-snap1")...), stacks.DefaultLevel, rules.Versions{"torch": "2.10.0+rocm7.0"})
	if a.RankTotal != 8 || len(a.Current) != 8 {
		t.Fatalf("ranks %d processes %d", a.RankTotal, len(a.Current))
	}
	b := a.Buckets[0]
	if b.RankSet != "ranks 0-7 (8/8)" || b.Count != 8 || !b.Primary || b.Benign {
		t.Fatalf("bucket #1: %q count %d primary %v", b.RankSet, b.Count, b.Primary)
	}
	// Recursion collapsed to one block: __str__ (torch/_inductor/ir.py)
	// ×k, k from 72 (TP1, depth 24×3) to 120 (TP3, 40×3); the leaves where
	// the samples landed (str_helper, textwrap.indent, <genexpr>) trimmed.
	f0 := b.Frames[0]
	if f0.Func != "__str__" || f0.File != "torch/_inductor/ir.py" || f0.Period != 1 || f0.Repeat != 72 || f0.RepeatMax != 120 || !f0.LineVaries {
		t.Errorf("collapsed leaf %+v", f0)
	}
	if b.Frames[1].Func != "operator_str" || b.Frames[2].Func != "call_function" || b.Frames[2].File != "torch/_inductor/graph.py" {
		t.Errorf("frames under the recursion: %+v %+v", b.Frames[1], b.Frames[2])
	}
	if n := len(b.Frames); n != 32 || b.Frames[n-1].Func != "<module>" {
		t.Errorf("%d frames, last %+v", n, b.Frames[n-1])
	}
	f := finding(a, "inductor-implicit-fallback-operator-str")
	if f == nil {
		t.Fatalf("hang not named; findings %v", a.Findings)
	}
	if f.Severity != record.SeverityError || len(f.Ranks) != 8 || f.Ranks[0] != "TP0" || f.Ranks[7] != "TP7" || f.Count != 8 {
		t.Errorf("finding ranks %v count %d", f.Ranks, f.Count)
	}
	if a.Findings[0].Rule != "inductor-implicit-fallback-operator-str" || !strings.HasSuffix(a.Verdict(), "; 8/8 ranks in torch/_inductor/exc.py operator_str (bucket #1)") {
		t.Errorf("verdict %q", a.Verdict())
	}
	if len(b.Rules) != 1 || b.Rules[0] != "inductor-implicit-fallback-operator-str" {
		t.Errorf("bucket rules %v", b.Rules)
	}
	// Thread pool waits and frameless threads are folded last.
	for _, ob := range a.Buckets[1:] {
		if !ob.Benign || ob.Count != 8 {
			t.Errorf("bucket #%d: benign %v count %d", ob.ID, ob.Benign, ob.Count)
		}
	}
	if len(a.Buckets) != 3 {
		t.Errorf("%d buckets, want 3", len(a.Buckets))
	}
	if len(a.Shared.RootPath) != 32 || a.Shared.RootPath[0].Func != "<module>" || len(a.Shared.Diverge) != 0 {
		t.Errorf("shared root %d frames, diverge %v", len(a.Shared.RootPath), a.Shared.Diverge)
	}
	if len(a.Outliers) != 0 {
		t.Errorf("outliers %v", a.Outliers)
	}
}

func TestSeed004NotNamedOnFixedTorch(t *testing.T) {
	a := analyze(t, read(t, fixture(t, "seed004-snap1")...), stacks.DefaultLevel, rules.Versions{"torch": "2.13.0"})
	if f := finding(a, "inductor-implicit-fallback-operator-str"); f != nil {
		t.Errorf("fired on torch 2.13: %+v", f)
	}
	if a.Buckets[0].RankSet != "ranks 0-7 (8/8)" {
		t.Errorf("bucketing changed with the version: %q", a.Buckets[0].RankSet)
	}
}

func TestSeed004SnapshotsAreSlowNotStuck(t *testing.T) {
	files := append(fixture(t, "seed004-snap1"), fixture(t, "seed004-snap2")...)
	a := analyze(t, read(t, files...), stacks.DefaultLevel, nil)
	if len(a.Current) != 8 || len(a.Processes) != 16 || len(a.Progress) != 8 {
		t.Fatalf("current %d all %d progress %d", len(a.Current), len(a.Processes), len(a.Progress))
	}
	for _, p := range a.Progress {
		if p.Verdict != "slow" || p.Snapshots != 2 {
			t.Errorf("%s: %s (%s)", p.Rank, p.Verdict, p.Detail)
		}
	}
	// Buckets describe the latest snapshot: TP3 at depth 46 → ×138.
	if b := a.Buckets[0]; b.RankSet != "ranks 0-7 (8/8)" || b.Frames[0].RepeatMax != 138 {
		t.Errorf("latest bucket %q %+v", b.RankSet, b.Frames[0])
	}
}

func TestSeed004StragglerInCollective(t *testing.T) {
	a := analyze(t, read(t, fixture(t, "seed004-straggler")...), stacks.DefaultLevel, nil)
	if b := a.Buckets[0]; b.RankSet != "ranks 0-4,6-7 (7/8)" {
		t.Errorf("bucket #1 %q", b.RankSet)
	}
	if len(a.Outliers) != 1 || a.Outliers[0].Rank != "TP5" || a.Outliers[0].Majority != 1 || !strings.Contains(a.Outliers[0].Leaf, "all_reduce (torch/distributed/distributed_c10d.py)") {
		t.Fatalf("outliers %+v", a.Outliers)
	}
	f := finding(a, "collective-wait-while-others-compile")
	if f == nil || len(f.Ranks) != 1 || f.Ranks[0] != "TP5" {
		t.Fatalf("collective-wait finding %+v", f)
	}
	// The others are lowering in Inductor (operator_str): that is the phase.
	if f.Phase != "inductor" {
		t.Errorf("phase %q, want inductor (the compiling ranks' frames)", f.Phase)
	}
	if f := finding(a, "nccl-collective-wait"); f == nil || f.Ranks[0] != "TP5" {
		t.Errorf("nccl-collective-wait %+v", f)
	}
	// Root path shared by all eight, diverging where TP5 returned from
	// compilation.
	if len(a.Shared.Diverge) != 2 || a.Shared.Diverge[0].RankSet != "ranks 0-4,6-7 (7/8)" || a.Shared.Diverge[1].RankSet != "rank 5 (1/8)" {
		t.Errorf("diverge %+v", a.Shared.Diverge)
	}
}

func TestLevels(t *testing.T) {
	procs := read(t, fixture(t, "seed004-snap1")...)
	count := func(lv stacks.Level) int {
		n := 0
		for _, b := range stacks.Analyze(procs, stacks.Options{Level: lv}).Buckets {
			if b.Primary {
				n++
			}
		}
		return n
	}
	// exact: every depth differs; lines: the four places a sample landed
	// in the recursion; funcs and leaf-8: one.
	for lv, want := range map[string]int{"exact": 8, "lines": 4, "funcs": 1, "leaf-8": 1} {
		l, err := stacks.ParseLevel(lv)
		if err != nil {
			t.Fatal(err)
		}
		if got := count(l); got != want {
			t.Errorf("level %s: %d primary buckets, want %d", lv, got, want)
		}
	}
	if _, err := stacks.ParseLevel("fuzzy"); err == nil {
		t.Error("unknown level accepted")
	}
}

func TestAccelerateCorpus(t *testing.T) {
	a := analyze(t, read(t, testcorpus.File(t, "stackdumps", "accelerate-issue-3104-deepspeed-pyspy.txt")), stacks.DefaultLevel, nil)
	if len(a.Buckets) != 4 {
		t.Fatalf("%d buckets", len(a.Buckets))
	}
	main, coll := a.Buckets[0], a.Buckets[1]
	if !main.Primary || main.Frames[0].Func != "backward" || main.Threads[0].Name != "MainThread" {
		t.Errorf("main bucket %+v", main.Threads)
	}
	if coll.Primary || coll.Benign || coll.Threads[0].TID != 4079 || !coll.Truncated {
		t.Errorf("collective bucket %+v", coll)
	}
	// tqdm's monitor and the three frameless threads are folded.
	if !a.Buckets[2].Benign || !a.Buckets[3].Benign || a.Buckets[2].Count+a.Buckets[3].Count != 4 {
		t.Errorf("benign buckets %+v %+v", a.Buckets[2], a.Buckets[3])
	}
	// The collective thread is not the main thread: no nccl finding
	// (which looks at main threads), and nothing at error level.
	for _, f := range a.Findings {
		if f.Severity == record.SeverityError {
			t.Errorf("error finding on a healthy-looking single dump: %v", f.Rule)
		}
	}
}

func TestGlooPipelineStagesShareABucket(t *testing.T) {
	a := analyze(t, read(t,
		testcorpus.File(t, "stackdumps", "sglang-issue-17941-native-pyspy-part1.txt"),
		testcorpus.File(t, "stackdumps", "sglang-issue-17941-native-pyspy-part2.txt")), stacks.DefaultLevel, nil)
	var gloo *stacks.Bucket
	for _, b := range a.Buckets {
		if len(b.Frames) > 2 && b.Frames[2].Func == "gloo::transport::tcp::UnboundBuffer::waitRecv" {
			gloo = b
		}
	}
	if gloo == nil {
		t.Fatalf("no gloo bucket in %d buckets", len(a.Buckets))
	}
	// Different unresolved libc addresses normalise to one frame key.
	if gloo.Count != 2 || len(gloo.PIDs) != 2 || gloo.PIDs[0] != 88692 || gloo.PIDs[1] != 88693 || gloo.Frames[0].Func != "<unknown in libc.so>" {
		t.Errorf("gloo bucket %+v", gloo)
	}
	f := finding(a, "gloo-recv-wait")
	if f == nil || f.Count != 2 {
		t.Fatalf("gloo-recv-wait %+v", f)
	}
	// SGLang's watchdog thread (running py-spy) is folded.
	for _, b := range a.Buckets {
		for _, m := range b.Threads {
			if m.Name == "Thread-2 (_watchdog_thread)" && !b.Benign {
				t.Error("watchdog thread not folded")
			}
		}
	}
}

func TestStuckWhenIdentical(t *testing.T) {
	p := testcorpus.File(t, "stackdumps", "accelerate-issue-3104-deepspeed-pyspy.txt")
	a := analyze(t, read(t, p, p), stacks.DefaultLevel, nil)
	if len(a.Progress) != 1 || a.Progress[0].Verdict != "stuck" || a.Progress[0].PID != 42 {
		t.Errorf("progress %+v", a.Progress)
	}
}

func TestEveryCorpusDumpAnalyzes(t *testing.T) {
	dir := testcorpus.Dir(t, "stackdumps")
	files, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	procs := read(t, files...)
	a := analyze(t, procs, stacks.DefaultLevel, nil)
	threads := 0
	for _, b := range a.Buckets {
		threads += b.Count
	}
	want := 0
	for _, p := range a.Current {
		want += len(p.Threads)
	}
	if threads != want || want == 0 {
		t.Errorf("buckets hold %d threads, processes %d", threads, want)
	}
}

// Real IR printing recurses irregularly (__str__, str_helper,
// inner_fn_str, comprehensions); two ranks whose recursions differ in
// shape still share a bucket at funcs level, as one region of ir.py.
func TestIrregularRecursionIsOneRegion(t *testing.T) {
	dump := func(pid int, rank int, pattern []string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "Process %d: VLLM::Worker_TP%d\nPython v3.12.3 (/usr/bin/python3.12)\n\nThread %d (active+gil): \"MainThread\"\n", pid, rank, pid)
		for _, p := range pattern {
			fn, n := p, 1
			if i := strings.IndexByte(p, '*'); i > 0 {
				fn = p[:i]
				fmt.Sscan(p[i+1:], &n)
			}
			for j := 0; j < n; j++ {
				fmt.Fprintf(&b, "    %s (torch/_inductor/ir.py:%d)\n", fn, 100+j)
			}
		}
		b.WriteString("    operator_str (torch/_inductor/exc.py:33)\n    call_function (torch/_inductor/graph.py:1187)\n    run (torch/_inductor/graph.py:950)\n")
		return b.String()
	}
	var procs []*stacks.Process
	for i, pat := range [][]string{
		{"str_helper", "__str__*6", "inner_fn_str", "__str__*4", "<listcomp>", "__str__*5"},
		{"__str__*9", "str_helper", "__str__*3", "inner_fn_str", "__str__*7"},
	} {
		res, err := stackdump.Parse(strings.NewReader(dump(100+i, i, pat)), fmt.Sprintf("tp%d.txt", i))
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, res.Processes...)
	}
	a := analyze(t, procs, stacks.DefaultLevel, nil)
	b := a.Buckets[0]
	if b.RankSet != "ranks 0-1 (2/2)" {
		t.Fatalf("bucket #1 %q of %d buckets", b.RankSet, len(a.Buckets))
	}
	r := b.Frames[0]
	if !r.Region || r.File != "torch/_inductor/ir.py" || r.Repeat != 17 || r.RepeatMax != 21 || r.Func != "<listcomp>, __str__, inner_fn_str, str_helper" {
		t.Errorf("region %+v", r)
	}
	if f := finding(a, "inductor-implicit-fallback-operator-str"); f == nil || len(f.Ranks) != 2 {
		t.Errorf("finding %+v", f)
	}
	// At lines level the two shapes stay apart.
	if a := analyze(t, procs, stacks.Level{Kind: stacks.LevelLines}, nil); a.Buckets[0].Count != 1 {
		t.Errorf("lines level merged irregular shapes")
	}
}

// faulthandler keeps the innermost 100 frames: call_function is cut off,
// so the deep ir.py recursion alone is a warning that says what to
// capture, never the implicit-fallback error (its frames are not there).
func TestCappedFaulthandlerStillNamed(t *testing.T) {
	var b strings.Builder
	b.WriteString("Timeout (0:10:00)!\nThread 0x00007f58c3a1f740 (most recent call first):\n")
	for i := 0; i < 100; i++ {
		b.WriteString("  File \"/usr/lib/python3.12/site-packages/torch/_inductor/ir.py\", line 6270 in __str__\n")
	}
	b.WriteString("  ...\n")
	res, err := stackdump.Parse(strings.NewReader(b.String()), "fh.rank0.log")
	if err != nil || len(res.Processes) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	a := analyze(t, res.Processes, stacks.DefaultLevel, nil)
	if f := finding(a, "inductor-ir-str-recursion-root-cut"); f == nil || f.Ranks[0] != "rank0" || f.Severity != record.SeverityWarning || len(a.Findings) != 1 {
		t.Errorf("capped dump: %+v", a.Findings)
	}
	if !a.Buckets[0].Truncated || a.Buckets[0].Frames[0].Repeat != 100 {
		t.Errorf("bucket %+v", a.Buckets[0])
	}
}

// Dumps of processes that are not in any of the catalogued hangs name
// none of the stack signatures.
func TestQuietOnOtherDumps(t *testing.T) {
	var paths []string
	for _, n := range []string{"transformers-pr-17308-torchdynamo-pyspy.txt",
		"returnn-issue-1484-pyspy-header-wrapped.txt", "pyspy-issue-505-dump-json.txt", "pytorch-pr-174808-debugserver-stacks.txt",
		"sglang-issue-12076-pyspy-compose-prefixed.txt"} {
		paths = append(paths, testcorpus.File(t, "stackdumps", n))
	}
	a := analyze(t, read(t, paths...), stacks.DefaultLevel, rules.Versions{"torch": "2.3.0"})
	if len(a.Findings) != 0 {
		for _, f := range a.Findings {
			t.Errorf("fired %s on %v", f.Rule, f.Evidence)
		}
	}
}
