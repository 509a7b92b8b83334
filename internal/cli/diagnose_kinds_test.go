package cli

import (
	"encoding/json"
	"testing"

	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// TestDiagnoseReadsEveryKind: one diagnose over a TORCH_TRACE log, a stack
// dump and an engine log reads each by its kind and keeps each kind's
// facts: the trace's failed compile, the dump's threads, the log's
// exception.
func TestDiagnoseReadsEveryKind(t *testing.T) {
	trace := testcorpus.File(t, "tlparse-inputs", "comp_failure.log")
	dump := testcorpus.File(t, "stackdumps", "accelerate-issue-3104-deepspeed-pyspy.txt")
	code, out, errs := runCLI("diagnose", "--json", trace, dump, "../../examples/inlined-keyerror")
	if code != ExitFindings {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var d struct {
		Inputs []struct {
			Path    string `json:"path"`
			Kind    string `json:"kind"`
			Records int    `json:"records"`
		} `json:"inputs"`
		Findings []struct {
			Rule string `json:"rule"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, in := range d.Inputs {
		kinds[in.Kind] += in.Records
	}
	for _, k := range []string{"torchtrace", "stackdump", "enginelog"} {
		if kinds[k] == 0 {
			t.Errorf("no records read as %s: %+v", k, d.Inputs)
		}
	}
	rules := map[string]bool{}
	for _, f := range d.Findings {
		rules[f.Rule] = true
	}
	for _, want := range []string{"trace-compile-failed", "inlined-callee-def-line"} {
		if !rules[want] {
			t.Errorf("no %s finding: %v", want, rules)
		}
	}
}
