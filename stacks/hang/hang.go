// Package hang names a hang: the one verdict of a boot that hung, timed
// out or was interrupted, formed from what every caller has — the run's
// outcome, when the boot last printed and when it was stopped, how long it
// ran, its startup timeline and the headline of its stacks (stacks.Where).
// watch forms it live; diagnose forms it again from a run directory's
// run.json and stack captures, or from a log and the stack dumps given
// beside it, so both say the same thing.
package hang

import (
	"fmt"
	"strings"
	"time"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/stacks"
)

// The outcomes a verdict is formed for; they are the run store's words
// (store.OutcomeHung …), spelled here so a reader of dumps need not open
// the store.
const (
	Hung        = "hung"
	Timeout     = "timeout"
	Interrupted = "interrupted"
)

// Run is what a hang verdict is formed from.
type Run struct {
	// Outcome is Hung, Timeout or Interrupted; any other gets no verdict.
	Outcome string
	// LastOutput is when the boot last printed; At is when it was
	// stopped (watch's stop, the user's Ctrl-C, or the run's end as
	// run.json records it). At zero: not known (stack dumps given beside a
	// log do not say when they were taken): the verdict says the hang
	// begins at LastOutput, the log's last line, and claims no length.
	LastOutput, At time.Time
	// Duration is how long the boot ran (the interrupted boot's length).
	Duration time.Duration
	// Phases is the startup timeline; the phase opened last and never
	// closed is where the boot was.
	Phases []record.Phase
	// Where is the headline of the latest stack capture that read a
	// process; nil: no stacks.
	Where *stacks.Where
}

// Verdict is the one line of a run that hung, timed out or was
// interrupted: how long the boot had been quiet (or ran, when
// interrupted), the place (the stack signature's title, else the phase the
// log left open; the phase for an interrupted boot) and where the workers
// were — "STUCK 10.2 min in Inductor fusion benchmarking: 8/8 workers in
// torch/_inductor/scheduler.py Scheduler.speedup_by_fusion (bucket #1), 3
// snapshots identical". "" for other outcomes.
func Verdict(r Run) string {
	var head string
	since := ""
	switch r.Outcome {
	case Hung, Timeout:
		switch {
		case r.At.IsZero():
			head = "STUCK"
			if !r.LastOutput.IsZero() {
				since = ", silent since the log's last line (" + r.LastOutput.Format("01-02 15:04:05") + "; the stacks do not say when they were taken)"
			}
		case r.LastOutput.IsZero():
			// Nothing printed before the stop: quiet all along.
			head = "STUCK " + Spell(r.Duration)
		case r.Outcome == Timeout && r.At.Sub(r.LastOutput) < 5*time.Second:
			// Still printing when the time ran out: slow, not stuck.
			head = "NOT READY after " + Spell(r.Duration)
		default:
			head = "STUCK " + Spell(r.At.Sub(r.LastOutput))
		}
	case Interrupted:
		head = "INTERRUPTED after " + Spell(r.Duration)
	default:
		return ""
	}
	// A hang is named by the signature its stacks show, else by the phase
	// the log left open; an interrupted boot by the phase it was in (the
	// stacks say the rest).
	place := ""
	if ph := OpenPhase(r.Phases); ph != "" {
		place = "phase " + ph
	}
	if r.Where != nil && r.Where.Title != "" && r.Outcome != Interrupted {
		place = shortTitle(r.Where.Title)
	}
	if place != "" {
		head += " in " + place
	}
	head += since
	if r.Where != nil {
		return head + ": " + r.Where.Text
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

// OpenPhase is the phase the log opened last and never closed ("" when
// none is open; "ready" never counts).
func OpenPhase(tl []record.Phase) string {
	best, line := "", -1
	for _, p := range tl {
		if p.Open && p.Name != "ready" && p.Line > line {
			best, line = p.Name, p.Line
		}
	}
	return best
}

// Spell is a duration as the verdict says it: "7.2 s", "10.2 min", "1.4 h".
func Spell(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	case d >= time.Minute:
		return fmt.Sprintf("%.1f min", d.Minutes())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
