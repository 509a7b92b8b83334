package watch

import (
	"bytes"
	"context"

	"github.com/bringup-tool/bringup/diagnose"
	"github.com/bringup-tool/bringup/report"
	"github.com/bringup-tool/bringup/report/diagnosis"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/store"
)

// PipelineDiagnose diagnoses a finished run's logs with the same pipeline
// and rule set as `bringup diagnose` (set nil: the built-in knowledge base)
// and renders the report as that command prints it.
func PipelineDiagnose(set *rules.Set, style report.Style) Diagnose {
	return func(ctx context.Context, run *store.Run) (*Diagnosis, error) {
		d, err := diagnose.Run(run.Logs, diagnose.Options{Rules: set})
		if err != nil {
			return nil, err
		}
		var text bytes.Buffer
		if err := diagnosis.WriteText(&text, d, style); err != nil {
			return nil, err
		}
		return &Diagnosis{Verdict: d.Verdict, Text: text.String(), Findings: d.Findings}, nil
	}
}
