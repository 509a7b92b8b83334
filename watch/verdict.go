package watch

import (
	"fmt"
	"strings"
	"time"

	"github.com/bringup-tool/bringup/stacks"
	"github.com/bringup-tool/bringup/store"
)

// hangVerdict is the verdict of a run watch stopped while it hung, timed
// out or was interrupted, from the stacks it captured last: how long the
// boot had been quiet (or ran, when interrupted), the place (the stack
// signature's title, else the phase the log left open; the phase for an
// interrupted boot) and where the workers were —
// "STUCK 10.2 min in Inductor fusion benchmarking: 8/8 workers in
// torch/_inductor/scheduler.py Scheduler.speedup_by_fusion (bucket #1), 3
// snapshots identical". "" for other outcomes.
func hangVerdict(run *store.Run, w *stacks.Where) string {
	var head string
	switch run.Outcome {
	case store.OutcomeHung, store.OutcomeTimeout:
		quiet := time.Duration(0)
		if st := run.Stop; st != nil && !st.LastOutput.IsZero() {
			quiet = st.At.Sub(st.LastOutput)
		}
		if run.Outcome == store.OutcomeTimeout && quiet < 5*time.Second {
			// Still printing when the time ran out: slow, not stuck.
			head = "NOT READY after " + spell(run.Duration())
		} else {
			head = "STUCK " + spell(quiet)
		}
	case store.OutcomeInterrupted:
		head = "INTERRUPTED after " + spell(run.Duration())
	default:
		return ""
	}
	// A hang is named by the signature its stacks show, else by the phase
	// the log left open; an interrupted boot by the phase it was in (the
	// stacks say the rest).
	place := ""
	if ph := openPhase(run.Timeline); ph != "" {
		place = "phase " + ph
	}
	if w != nil && w.Title != "" && run.Outcome != store.OutcomeInterrupted {
		place = shortTitle(w.Title)
	}
	if place != "" {
		head += " in " + place
	}
	if w != nil {
		return head + ": " + w.Text
	}
	return head + " (no stacks captured)"
}

// shortTitle is a rule title without its parenthesised detail and
// version note: "Inductor fusion benchmarking (compiling …)" → "Inductor
// fusion benchmarking".
func shortTitle(t string) string {
	if i := strings.Index(t, " ("); i > 0 {
		t = t[:i]
	}
	if i := strings.Index(t, ", torch "); i > 0 {
		t = t[:i]
	}
	return t
}

// openPhase is the phase the log opened last and never closed ("" when
// none is open).
func openPhase(tl []store.Phase) string {
	best, line := "", -1
	for _, p := range tl {
		if p.Open && p.Name != "ready" && p.Line > line {
			best, line = p.Name, p.Line
		}
	}
	return best
}

// spell is a duration as the verdict says it: "7.2 s", "10.2 min", "1.4 h".
func spell(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	case d >= time.Minute:
		return fmt.Sprintf("%.1f min", d.Minutes())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
