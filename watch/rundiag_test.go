package watch

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/diagnose"
	"github.com/bringup-tool/bringup/ingest/stackdump"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/store"
)

// diagnose spells the stack dump kind out (importing stackdump would
// register the format in builds without the stack analyzer).
func TestKindStacksIsStackdumpFormat(t *testing.T) {
	if diagnose.KindStacks != stackdump.FormatName {
		t.Fatalf("diagnose.KindStacks %q, stackdump.FormatName %q", diagnose.KindStacks, stackdump.FormatName)
	}
}

// runDirDiagnosis diagnoses a watch run directory as `bringup diagnose
// RUN_DIR` does and checks it read each file once by what it is: the log,
// the stacks, the run's facts; findings of errorRules error-level there,
// of goneRules absent, and no finding or error from after the stop.
func runDirDiagnosis(t *testing.T, run *store.Run, errorRules, goneRules []string) *diagnose.Diagnosis {
	t.Helper()
	d, err := diagnose.Run([]string{run.Dir}, diagnose.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, in := range d.Inputs {
		if _, dup := kinds[in.Path]; dup {
			t.Errorf("%s read twice", in.Path)
		}
		kinds[filepath.Base(in.Path)] = in.Kind
		if in.Error != "" {
			t.Errorf("input %s: %s", in.Path, in.Error)
		}
	}
	if kinds["output.log"] != diagnose.KindEngineLog || kinds["run.json"] != diagnose.InputKindRun || kinds["silence-1.stacks.json"] != diagnose.KindStacks || len(kinds) != 3 {
		t.Errorf("inputs by kind %v, want output.log a log, silence-1.stacks.json stacks, run.json the run", kinds)
	}
	for _, rule := range errorRules {
		found := false
		for _, f := range d.Findings {
			found = found || f.Rule == rule && f.Severity == record.SeverityError
		}
		if !found {
			t.Errorf("diagnose RUN_DIR: no error-level %s: %v", rule, rulesOf(d.Findings))
		}
	}
	for _, rule := range goneRules {
		if hasFinding(d.Findings, rule) {
			t.Errorf("diagnose RUN_DIR reports %s: %v", rule, rulesOf(d.Findings))
		}
	}
	for _, e := range d.Errors {
		if strings.Contains(e.Exception, "KeyboardInterrupt") {
			t.Errorf("diagnose RUN_DIR counts the stop's KeyboardInterrupt as an error (%s:%d)", e.Path, e.Line)
		}
	}
	return d
}

func rulesOf(fs []record.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule+"/"+string(f.Severity))
	}
	return out
}
