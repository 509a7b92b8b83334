package testbed

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hasFrame reports whether frames hold a frame whose function is fn (or ends
// with "."+fn) in a file ending with file ("" for any).
func hasFrame(frames []stackFrame, fn, file string) bool {
	for _, f := range frames {
		if (f.Func == fn || strings.HasSuffix(f.Func, "."+fn)) && strings.HasSuffix(f.File, file) {
			return true
		}
	}
	return false
}

// frameRepeats is the largest count of frames of function fn, counting the
// collapsed recursion (repeat) of each.
func frameRepeats(frames []stackFrame, fn string) int {
	n := 0
	for _, f := range frames {
		if f.Func == fn || strings.HasSuffix(f.Func, "."+fn) {
			r := f.Repeat
			if r == 0 {
				r = 1
			}
			n += r
		}
	}
	return n
}

// checkStuckRankStacks: rank 1's main thread is inside Dynamo's fake-tensor
// tracing (the slow register_fake), rank 0's in a gloo all_reduce, and the
// verdict names the pattern. live: the stacks were read from the processes,
// whose RANK is in their environment.
func checkStuckRankStacks(t *testing.T, st stacksDoc, live bool) {
	t.Helper()
	var waiting, compiling bool
	var ranks0, ranks1 []string
	for _, b := range st.Buckets {
		if hasFrame(b.Frames, "all_reduce", "torch/distributed/distributed_c10d.py") {
			waiting = true
			if live {
				ranks0 = b.Ranks
			}
		}
		// Method names without their class: pystack prints co_name only.
		if hasFrame(b.Frames, "dispatch", "torch/_subclasses/fake_tensor.py") &&
			hasFrame(b.Frames, "inline_call", "torch/_dynamo/symbolic_convert.py") {
			compiling = true
			if live {
				ranks1 = b.Ranks
			}
		}
	}
	if !waiting || !compiling {
		t.Errorf("buckets: all_reduce %v, Dynamo fake-tensor tracing %v; want both", waiting, compiling)
	}
	f := findingOf(st.Findings, "collective-wait-while-others-compile")
	if f == nil || !strings.HasPrefix(st.Verdict, "collective-wait-while-others-compile") {
		t.Fatalf("verdict %q, findings %v; want collective-wait-while-others-compile", st.Verdict, rules(st.Findings))
	}
	// torchrun's workers carry RANK in their environment: a live capture
	// names them by it.
	if live && (!slices.Equal(ranks0, []string{"rank0"}) || !slices.Equal(ranks1, []string{"rank1"})) {
		t.Errorf("all_reduce bucket ranks %v, compiling bucket ranks %v; want [rank0] and [rank1]", ranks0, ranks1)
	}
	// The compiling rank is in Dynamo's tracing (InstructionTranslator,
	// FakeTensorMode), not in Inductor: the phase comes from its frames.
	if f.Phase != "dynamo" {
		t.Errorf("collective-wait-while-others-compile in phase %q, want dynamo", f.Phase)
	}
}

// TestStuckRankRecordedStacks: the dumps the runner took of torchrun and
// its two ranks, by py-spy (first sample) and by pystack.
func TestStuckRankRecordedStacks(t *testing.T) {
	dir := scenario(t, "stuck_rank")
	for _, glob := range []string{"py-spy-*-1.txt", "pystack-*.txt"} {
		t.Run(strings.TrimSuffix(glob, ".txt"), func(t *testing.T) {
			files, _ := filepath.Glob(filepath.Join(dir, "stacks", glob))
			if len(files) != 3 {
				t.Fatalf("%d %s dumps, want 3 (torchrun and two ranks)", len(files), glob)
			}
			var st stacksDoc
			bringupJSON(t, "", 1, "bringup.stacks/v1", &st, append([]string{"stacks", "--json"}, files...)...)
			if len(st.Processes) != 3 {
				t.Errorf("%d processes, want 3", len(st.Processes))
			}
			checkStuckRankStacks(t, st, false)
		})
	}
}

// checkSilentCompileStacks: the silent compile's main thread is in
// GraphLowering.call_function, formatting the implicit-fallback message
// (operator_str), with the IR's __str__ nested many times under it.
func checkSilentCompileStacks(t *testing.T, st stacksDoc) {
	t.Helper()
	// Any snapshot's main thread (a capture holds several) will do.
	var lowering, formatting int
	for _, p := range st.Processes {
		for _, th := range p.Threads {
			if !hasFrame(th.Frames, "GraphLowering.call_function", "torch/_inductor/graph.py") {
				continue
			}
			lowering++
			if hasFrame(th.Frames, "operator_str", "torch/_inductor/exc.py") && frameRepeats(th.Frames, "__str__") >= 10 {
				formatting++
			}
		}
	}
	if lowering == 0 {
		t.Fatalf("no thread in GraphLowering.call_function: verdict %q", st.Verdict)
	}
	if formatting == 0 {
		t.Fatalf("%d thread(s) in GraphLowering.call_function, none formatting (operator_str over 10 or more nested __str__)", lowering)
	}
	// torch 2.15 formats the message lazily (LazyString, pytorch#185951): the
	// cost is paid only because a handler takes INFO records of
	// torch._inductor.graph, which the stack shows (Logger.info →
	// Handler.format → LazyString.__str__). Advice to upgrade past 2.13 is
	// wrong here; the cure is the handler.
	f := findingOf(st.Findings, "inductor-implicit-fallback-log-handler")
	if f == nil || f.Severity != "error" {
		t.Fatalf("findings %v, want inductor-implicit-fallback-log-handler (error)", rules(st.Findings))
	}
	if old := findingOf(st.Findings, "inductor-implicit-fallback-operator-str"); old != nil {
		t.Errorf("the torch < 2.13 finding is reported too: %q", old.Title)
	}
	advice := strings.Join(f.Remedy, " ")
	if strings.Contains(advice, "Upgrade to torch") || !strings.Contains(advice, "torch._inductor.graph") {
		t.Errorf("remedy %q: want the INFO handler on torch._inductor.graph, not an upgrade", advice)
	}
}

// TestSilentCompileRecordedStacks: the py-spy dumps the runner took 20 s
// into the silent lowering.
func TestSilentCompileRecordedStacks(t *testing.T) {
	dir := scenario(t, "silent_compile")
	files, _ := filepath.Glob(filepath.Join(dir, "stacks", "py-spy-*.txt"))
	if len(files) == 0 {
		t.Fatal("no py-spy dumps")
	}
	var st stacksDoc
	bringupJSON(t, "", -1, "bringup.stacks/v1", &st, append([]string{"stacks", "--json"}, files...)...)
	checkSilentCompileStacks(t, st)
}
