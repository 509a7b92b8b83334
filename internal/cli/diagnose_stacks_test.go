package cli

import (
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/diagnose"
	"github.com/bringup-tool/bringup/record"
)

// bringup diagnose LOG DUMP (this build has the stack analyzer): the log's
// implicit-fallback guess (examples/inductor-hang) judged by the stacks
// given beside it: error-level when they show operator_str, not
// reported when they show the ranks elsewhere (the verdict is the hang's,
// named where they are), a warning saying what to capture when there are
// none.
func TestStackSignatureGuessJudgedByStacks(t *testing.T) {
	const log, guess = "../../examples/inductor-hang", "implicit-fallback-format-hang"
	severity := func(d *diagnose.Diagnosis) record.Severity {
		for _, f := range d.Findings {
			if f.Rule == guess {
				return f.Severity
			}
		}
		return ""
	}
	for _, c := range []struct {
		name  string
		dumps []string
		want  record.Severity
	}{
		{"shown", []string{"../../stacks/testdata/seed004-snap1"}, record.SeverityError},
		{"elsewhere", []string{"../../ingest/stackdump/testdata/faulthandler-two-threads.txt"}, ""},
		{"no stacks", nil, record.SeverityWarning},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := diagnose.Run(append([]string{log}, c.dumps...), diagnose.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := severity(d); got != c.want {
				t.Errorf("%s: %q, want %q; verdict %q", guess, got, c.want, d.Verdict)
			}
			switch c.want {
			case record.SeverityError:
				if d.Status != "failed" {
					t.Errorf("status %q", d.Status)
				}
			case record.SeverityWarning:
				if d.Status != "warnings" || !strings.Contains(d.Verdict, guess) {
					t.Errorf("status %q verdict %q", d.Status, d.Verdict)
				}
			default:
				// Not the guess: the hang, named where the dump is.
				if strings.Contains(d.Verdict, guess) || !strings.HasPrefix(d.Verdict, "STUCK in phase inductor") || !strings.Contains(d.Verdict, "gen.py deep") {
					t.Errorf("status %q verdict %q", d.Status, d.Verdict)
				}
			}
		})
	}
}
