package watch

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bringup-tool/bringup/diagnose"
	"github.com/bringup-tool/bringup/report"
	"github.com/bringup-tool/bringup/report/diagnosis"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/stacks"
	"github.com/bringup-tool/bringup/store"
)

// DiagnoseTimeout bounds the diagnosis of a finished run: the run is
// recorded without it rather than never.
var DiagnoseTimeout = 3 * time.Minute

// PipelineDiagnose diagnoses a finished run's logs with the same pipeline
// and rule set as `bringup diagnose` (set nil: the built-in knowledge base),
// judges the findings with what watch saw (judge: the stop, the stacks,
// when lines arrived), and renders the report as that command prints it,
// headed by the run's verdict. It gives up (the diagnosis goroutine is
// abandoned) when ctx ends (Ctrl-C) or after DiagnoseTimeout.
func PipelineDiagnose(set *rules.Set, style report.Style) Diagnose {
	return func(ctx context.Context, run *store.Run, ev Evidence) (*Diagnosis, error) {
		type result struct {
			d   *diagnose.Diagnosis
			err error
		}
		done := make(chan result, 1)
		go func() {
			d, err := diagnose.Run(run.Logs, diagnose.Options{Rules: set, Probe: ev.Probe, Stacks: stacksOf(ev.Captures)})
			done <- result{d, err}
		}()
		var r result
		select {
		case r = <-done:
		case <-ctx.Done():
			return nil, fmt.Errorf("interrupted; run 'bringup diagnose %s' later", strings.Join(run.Logs, " "))
		case <-time.After(DiagnoseTimeout):
			return nil, fmt.Errorf("did not finish within %s; run 'bringup diagnose %s'", DiagnoseTimeout, strings.Join(run.Logs, " "))
		}
		d, err := r.d, r.err
		if err != nil {
			return nil, err
		}
		if judge(d, run, ev) {
			diagnose.Conclude(d)
		}
		if v := hangVerdict(run, lastWhere(ev.Captures)); v != "" {
			d.Verdict = v
			d.Status = "failed"
		}
		var text bytes.Buffer
		if err := diagnosis.WriteText(&text, d, style); err != nil {
			return nil, err
		}
		return &Diagnosis{Verdict: d.Verdict, Text: text.String(), Findings: d.Findings}, nil
	}
}

// lastWhere is the headline of the latest capture that read a process.
func lastWhere(caps []*CaptureResult) *stacks.Where {
	for i := len(caps) - 1; i >= 0; i-- {
		if c := caps[i]; c != nil && c.Processes > 0 {
			return &c.Where
		}
	}
	return nil
}
