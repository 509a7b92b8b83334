package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/stacks"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// diagnose reads the eight per-rank py-spy dumps of the seed-004 hang
// through this analyzer and names the hang on all ranks.
func TestDiagnoseReadsStackDumps(t *testing.T) {
	dir := filepath.Join(testcorpus.Root(), "stacks", "testdata", "seed004-snap1")
	d, err := Run([]string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Inputs) != 8 {
		t.Fatalf("%d inputs", len(d.Inputs))
	}
	for _, in := range d.Inputs {
		if in.Kind != "stackdump" || in.Error != "" || in.Records != 3 {
			t.Errorf("input %+v", in)
		}
	}
	var found bool
	for _, f := range d.Findings {
		if f.Rule == "inductor-implicit-fallback-operator-str" {
			found = true
			if len(f.Ranks) != 8 {
				t.Errorf("ranks %v", f.Ranks)
			}
		}
	}
	if !found || d.Status != "failed" {
		t.Errorf("status %q findings %+v", d.Status, d.Findings)
	}
	if _, ok := d.Facts[d.Inputs[0].Path].(StackFacts); !ok {
		t.Errorf("facts %T", d.Facts[d.Inputs[0].Path])
	}
}

func TestInterleavedDumpIsAnInputError(t *testing.T) {
	p := testcorpus.File(t, "stackdumps", "sglang-issue-6763-faulthandler-interleaved.txt")
	d, err := Run([]string{p}, Options{})
	// The only input is unusable: diagnose says so, with the fix.
	if err == nil || len(d.Inputs) != 1 || d.Inputs[0].Kind != "stackdump" ||
		!strings.Contains(d.Inputs[0].Error, ":12: output of several processes is interleaved") ||
		!strings.Contains(d.Inputs[0].Error, "faulthandler.enable(file=") {
		t.Errorf("err %v inputs %+v", err, d.Inputs)
	}
}

// The facts carry the headline; concluded again with the run's torch
// version (what diagnose knows from the log) it follows the findings.
func TestFactsCarryTheHeadline(t *testing.T) {
	path := filepath.Join(testcorpus.Root(), "stacks", "testdata", "seed004-snap1", "worker_TP0.txt")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	an, err := analyzeStackDump(path, f)
	if err != nil {
		t.Fatal(err)
	}
	facts := an.Facts.(StackFacts)
	if w := facts.Where; w.Rule != "inductor-implicit-fallback-operator-str" || w.Frame == nil || w.Frame.Func != "operator_str" || facts.Verdict != w.Text {
		t.Fatalf("where %+v verdict %q", w, facts.Verdict)
	}
	set, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	facts.Analysis.Conclude(stacks.Conclude(set, rules.Versions{"torch": "2.13.0"}))
	if w := facts.Analysis.Where; w.Rule != "" || len(facts.Analysis.Findings) != 0 || w.Frame == nil || w.Frame.File != "torch/_inductor/ir.py" {
		t.Errorf("on torch 2.13: where %+v findings %v", w, facts.Analysis.Findings)
	}
}

// An excerpt that the dump sniffer claims ("Fatal Python error: Aborted"
// among a crash's last lines) but that holds no stack is read as the log
// it is: its fatal errors are found (sglang#29235 came back "no readable
// input").
func TestDumpWithoutStackIsALog(t *testing.T) {
	p := filepath.Join(t.TempDir(), "crash.log")
	text := "HIP error: operation not permitted on an event last recorded in a capturing stream\n" +
		"(hipErrorCapturedEvent)\n" +
		"Fatal Python error: Aborted\n" +
		"RuntimeError: Rank 0 scheduler died during initialization (exit code: -6)\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Run([]string{p}, Options{})
	if err != nil || d.Status != "failed" || len(d.Inputs) != 1 || d.Inputs[0].Error != "" || d.Inputs[0].Kind != KindEngineLog {
		t.Fatalf("err %v status %q inputs %+v", err, d.Status, d.Inputs)
	}
}

// A faulthandler report the paste quoted is read as the dump it is, the
// quote taken off as for a log (its "> " had read as processes interleaved
// inside lines, and triton#8481 quoted came back "no readable input"), and
// the fatal line before it is reported.
func TestQuotedDump(t *testing.T) {
	p := filepath.Join(t.TempDir(), "crash.log")
	text := "> LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.tcgen05.wait.st\n" +
		"> Fatal Python error: Aborted\n" +
		"> \n" +
		"> Thread 0x0000fe47c000f100 (most recent call first):\n" +
		">   File \"/usr/lib/python3.12/threading.py\", line 359 in wait\n" +
		">   File \"/usr/lib/python3.12/threading.py\", line 1032 in _bootstrap\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Run([]string{p}, Options{})
	if err != nil || d.Status != "failed" || len(d.Inputs) != 1 || d.Inputs[0].Error != "" || d.Inputs[0].Kind != KindStacks {
		t.Fatalf("err %v status %q inputs %+v", err, d.Status, d.Inputs)
	}
	if f := d.Findings[0]; !strings.Contains(f.Root, "LLVM ERROR: Cannot select") {
		t.Errorf("top finding: %s %q", f.Rule, f.Root)
	}
}
