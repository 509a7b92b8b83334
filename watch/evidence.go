package watch

import (
	"slices"
	"time"

	"github.com/bringup-tool/bringup/diagnose"
	"github.com/bringup-tool/bringup/store"
)

// judge makes a diagnosis of the run's output agree with what watch saw
// itself, so the run's verdict rests on every piece of evidence:
//
//   - what the boot printed after watch (or the user) stopped it is the
//     stop's doing: the tracebacks of its signal handlers are recorded in
//     run.Stop.After, never as findings or errors, and a phase they marked
//     failed is as the boot left it (unfinished);
//   - a phase still open ran until the boot was stopped, not until the
//     last line the log has (Evidence.Arrived dates that line);
//
// (A log rule that guesses a stack signature is judged by diagnose
// itself, with watch's captures as Options.Stacks: diagnose.ConfirmByStacks.)
// It changes d in place and reports whether any finding was dropped or
// changed (the verdict is then made again: diagnose.Conclude).
func judge(d *diagnose.Diagnosis, run *store.Run, ev Evidence) bool {
	changed := false
	logs := map[string]bool{}
	for _, l := range run.Logs {
		logs[l] = true
	}
	if st := run.Stop; st != nil {
		byItself := run.Outcome == store.OutcomeFailed || run.Outcome == store.OutcomeExited
		for _, n := range diagnose.DropAfterStop(d, logs, st.Line, byItself) {
			if !slices.Contains(st.After, n) && len(st.After) < 20 {
				st.After = append(st.After, n)
			}
			changed = true
		}
		// The tracker never saw the output after the stop: a phase it
		// has open was open when the boot was stopped.
		for i := range d.Timeline {
			p := &d.Timeline[i]
			if p.Status != "failed" || !logs[p.Path] {
				continue
			}
			for _, q := range run.Timeline {
				if q.Rank == p.Rank && q.Name == p.Name && q.Line == p.Line && q.Status == "unfinished" {
					p.Status = "unfinished"
				}
			}
		}
		if ev.Arrived != nil {
			for i := range d.Timeline {
				p := &d.Timeline[i]
				if p.Status != "done" && logs[p.Path] {
					if sec, ok := openUntil(ev.Arrived(p.Line), st.At); ok && sec > p.Seconds {
						p.Seconds = sec
						if !p.Start.IsZero() {
							p.End = p.Start.Add(time.Duration(sec * float64(time.Second)))
						}
					}
				}
			}
		}
	}
	return changed
}

// openUntil is how long a phase that opened at start lasted until end.
func openUntil(start, end time.Time) (float64, bool) {
	if start.IsZero() || end.IsZero() || !end.After(start) {
		return 0, false
	}
	return end.Sub(start).Seconds(), true
}

// stacksOf is what watch's captures showed, for diagnose.ConfirmByStacks:
// a capture counts when it read a worker.
func stacksOf(caps []*CaptureResult) *diagnose.Stacks {
	s := &diagnose.Stacks{Shown: map[string]bool{}}
	for _, c := range caps {
		if c == nil || c.Where.Workers == 0 {
			continue
		}
		s.Captured = true
		for _, f := range c.Findings {
			s.Shown[f.Rule] = true
		}
	}
	return s
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
