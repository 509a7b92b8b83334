package watch

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/bringup-tool/bringup/diagnose"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/stacks"
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
//   - a log rule that guesses a stack signature (stacks.ShownBy) stands
//     only when watch's captures show that signature, is dropped when
//     they show something else, and is a warning that says what to
//     capture when there are none.
//
// It changes d in place and reports whether any finding was dropped or
// changed (the verdict is then made again).
func judge(d *diagnose.Diagnosis, run *store.Run, ev Evidence) bool {
	changed := false
	logs := map[string]bool{}
	for _, l := range run.Logs {
		logs[l] = true
	}
	if st := run.Stop; st != nil {
		if dropAfterStop(d, run, logs) {
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
				if q.Rank == p.Rank && q.Name == p.Phase && q.Line == p.Line && q.Status == "unfinished" {
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
	if confirmByStacks(d, ev.Captures) {
		changed = true
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

// signalText is what a process prints when a signal ends it: Python's
// KeyboardInterrupt (SIGINT, or a SIGTERM handler that raises it: "KeyboardInterrupt:
// terminated"), SystemExit from a handler, shells' and launchers' notes.
var signalText = regexp.MustCompile(`KeyboardInterrupt|SystemExit|\bterminated\b|Terminated|SIGTERM|SIGINT|SIGKILL|SIGHUP|signal (?:2|9|15)\b|[Ss]ignal\.SIG|Interrupted|\bKilled\b`)

// dropAfterStop removes the findings and errors whose evidence lies
// wholly in the lines the boot printed after the stop and records them
// in run.Stop.After. After a stop of watch's own or the user's, all of
// them are the stop's doing; when the boot ended by itself (its leftovers
// were stopped), only those a signal explains are.
func dropAfterStop(d *diagnose.Diagnosis, run *store.Run, logs map[string]bool) bool {
	st := run.Stop
	byItself := run.Outcome == store.OutcomeFailed || run.Outcome == store.OutcomeExited
	after := func(path string, line int) bool { return logs[path] && int64(line) > st.Line }
	note := func(what, path string, line int) {
		s := fmt.Sprintf("%s (%s:%d)", clipText(what, 120), path, line)
		if !slices.Contains(st.After, s) && len(st.After) < 20 {
			st.After = append(st.After, s)
		}
	}
	dropped := false
	var keep []record.Finding
	for _, f := range d.Findings {
		all := len(f.Evidence) > 0
		text := f.Title
		for _, e := range f.Evidence {
			all = all && after(e.Path, e.Line)
			text += " " + e.Text
		}
		if all && (!byItself || signalText.MatchString(text)) {
			what := f.Title
			if t := strings.TrimSpace(firstLine(f.Evidence[0].Text)); t != "" {
				what = t
			}
			note(what, f.Evidence[0].Path, f.Evidence[0].Line)
			dropped = true
			continue
		}
		keep = append(keep, f)
	}
	d.Findings = keep
	var errs []diagnose.Error
	for _, e := range d.Errors {
		head := e.Exception
		if m := firstLine(e.Message); m != "" {
			head += ": " + m
		}
		if after(e.Path, e.Line) && (!byItself || signalText.MatchString(head)) {
			note(head, e.Path, e.Line)
			continue
		}
		errs = append(errs, e)
	}
	d.Errors = errs
	return dropped
}

// confirmByStacks holds each log rule that guesses a stack signature to
// what the captures show (see judge).
func confirmByStacks(d *diagnose.Diagnosis, caps []*CaptureResult) bool {
	shown := map[string]bool{}
	captured := false
	for _, c := range caps {
		if c == nil || c.Where.Workers == 0 {
			continue
		}
		captured = true
		for _, f := range c.Findings {
			shown[f.Rule] = true
		}
	}
	changed := false
	var keep []record.Finding
	for _, f := range d.Findings {
		want := stacks.ShownBy(f.Rule)
		switch {
		case want == nil:
		case !captured:
			if f.Severity == record.SeverityError {
				f.Severity = record.SeverityWarning
				f.Remedy = append([]string{"Unconfirmed: the log only says the boot went quiet in this phase; the stacks tell. " +
					"Capture them while it hangs (bringup stacks --tree <pid of the boot>), or rerun under bringup watch with --silence shorter than the hang"}, f.Remedy...)
				changed = true
			}
		case !slices.ContainsFunc(want, func(r string) bool { return shown[r] }):
			// The stacks show the ranks somewhere else: not this hang.
			changed = true
			continue
		}
		keep = append(keep, f)
	}
	d.Findings = keep
	return changed
}

// restatus sets a judged diagnosis's status as diagnose does: failed with
// an error-level finding (or a root exception no finding explains),
// warnings with a warning, else ok.
func restatus(d *diagnose.Diagnosis) {
	switch {
	case record.HasError(d.Findings), len(d.Findings) == 0 && len(d.Errors) > 0:
		d.Status = "failed"
	case slices.ContainsFunc(d.Findings, func(f record.Finding) bool { return f.Severity == record.SeverityWarning }):
		d.Status = "warnings"
	default:
		d.Status = "ok"
	}
}

// findingVerdict is the one line for a judged diagnosis whose first
// finding changed: the first finding left, as diagnose words it.
func findingVerdict(d *diagnose.Diagnosis) string {
	if len(d.Findings) == 0 {
		if len(d.Errors) > 0 {
			return "failed with an exception (see errors)"
		}
		return "no known failure signature found"
	}
	f := d.Findings[0]
	where := ""
	if len(f.Ranks) > 0 {
		where = " on " + strings.Join(f.Ranks, ", ")
	}
	if f.Phase != "" {
		where = " in phase " + f.Phase + where
	}
	switch f.Severity {
	case record.SeverityError:
		return fmt.Sprintf("FAILED%s: %s [%s]", where, f.Title, f.Rule)
	case record.SeverityWarning:
		return fmt.Sprintf("no error-level finding; warning%s: %s [%s]", where, f.Title, f.Rule)
	}
	return fmt.Sprintf("no error-level finding; note: %s [%s]", f.Title, f.Rule)
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
