package diagnose

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// testbedRuns are the runs scripts/testbed/record recorded (one directory
// each: the command, its exit status in rc, stderr/stdout, the
// TORCH_TRACE under trace/), as a user hands them to bringup diagnose.
const testbedRuns = "../testbed/testdata"

// TestTestbedRunDirs: diagnose given a whole recorded run directory (log
// and TORCH_TRACE together), or its trace alone, agrees with the run's
// exit status. A run that exited 0 (a graph break Dynamo recovered from, a
// frame it ran eagerly, a recompile limit it fell back from) gets no
// error-level finding, and what its log alone warns of is still a warning;
// a run that failed is still FAILED. The testbed's own tests feed diagnose
// the logs only, so this is where the trace's part of the verdict is held
// to what happened.
func TestTestbedRunDirs(t *testing.T) {
	entries, err := os.ReadDir(testbedRuns)
	if err != nil {
		t.Fatal(err)
	}
	runs, clean, recovered := 0, 0, 0
	for _, e := range entries {
		dir := filepath.Join(testbedRuns, e.Name())
		raw, err := os.ReadFile(filepath.Join(dir, "rc"))
		if !e.IsDir() || err != nil {
			continue
		}
		// "1", "143 (after stacks)": the status, then what the recorder noted.
		f := strings.Fields(string(raw))
		if len(f) == 0 {
			t.Errorf("%s: empty rc", dir)
			continue
		}
		rc, err := strconv.Atoi(f[0])
		if err != nil {
			t.Errorf("%s: rc %q", dir, raw)
			continue
		}
		runs++
		whole := diagnoseOrFail(t, dir)
		if rc != 0 {
			if whole.Status != "failed" || !whole.HasErrors() {
				t.Errorf("%s exited %d: diagnose of the run directory says %s: %s", e.Name(), rc, whole.Status, whole.Verdict)
			}
			continue
		}
		clean++
		if whole.Status == "failed" || whole.HasErrors() {
			t.Errorf("%s exited 0: diagnose of the run directory says %s (%s); errors: %v",
				e.Name(), whole.Status, whole.Verdict, errorRules(whole.Findings))
		}
		if _, err := os.Stat(filepath.Join(dir, "trace")); err == nil {
			if tr := diagnoseOrFail(t, filepath.Join(dir, "trace")); tr.Status == "failed" {
				t.Errorf("%s exited 0: diagnose of its trace alone says %s (%s); errors: %v",
					e.Name(), tr.Status, tr.Verdict, errorRules(tr.Findings))
			}
		}
		// What the log alone warns of (the recovered break) is kept,
		// not lost, when the trace joins it.
		logs := diagnoseOrFail(t, filepath.Join(dir, "stderr.txt"), filepath.Join(dir, "stdout.txt"))
		if logs.Status == "warnings" {
			recovered++
			if whole.Status != "warnings" {
				t.Errorf("%s: the logs alone say warnings, the run directory %s (%s)", e.Name(), whole.Status, whole.Verdict)
			}
			for _, lf := range logs.Findings {
				if lf.Severity == record.SeverityWarning && !hasRule(whole.Findings, lf.Rule) {
					t.Errorf("%s: warning %s of the logs is missing from the run directory's findings", e.Name(), lf.Rule)
				}
			}
		}
	}
	// The recordings this test was written against: 30 runs, 7 that
	// exited 0, 3 of them after a recovered graph break (context manager,
	// local_scalar_dense fallback, recompile limit). Fewer means the
	// testdata moved and the test checks less than it says.
	if runs < 30 || clean < 7 || recovered < 3 {
		t.Errorf("read %d runs, %d exited 0, %d with recovered breaks; want at least 30, 7, 3", runs, clean, recovered)
	}
}

func diagnoseOrFail(t *testing.T, paths ...string) *Diagnosis {
	t.Helper()
	d, err := Run(paths, Options{})
	if err != nil {
		t.Fatalf("diagnose %v: %v", paths, err)
	}
	return d
}

func errorRules(fs []record.Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Severity == record.SeverityError {
			out = append(out, f.Rule)
		}
	}
	return out
}

func hasRule(fs []record.Finding, rule string) bool {
	for _, f := range fs {
		if f.Rule == rule {
			return true
		}
	}
	return false
}
