package diagnose

import (
	"slices"
	"sort"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/stacks"
)

// Stacks is what the stack captures of a boot showed: dumps given beside
// the log (read by the stackdump analyzer), or watch's own captures.
type Stacks struct {
	Captured bool            // some capture read a process's threads
	Shown    map[string]bool // the stack rules their findings matched
}

// ConfirmByStacks holds each log rule that guesses a stack signature
// (stacks.ShownBy names them, with the stack rules that prove them) to what
// the stacks show: with stacks that show it the finding stands as it is;
// with stacks that show something else it is dropped (the ranks are
// elsewhere: not this hang); with no stacks an error becomes a warning
// whose first remedy says what to capture. Findings are kept in severity
// order. It reports whether any finding was dropped or changed.
func ConfirmByStacks(d *Diagnosis, s Stacks) bool {
	changed := false
	var keep []record.Finding
	for _, f := range d.Findings {
		want := stacks.ShownBy(f.Rule)
		switch {
		case want == nil:
		case !s.Captured:
			if f.Severity == record.SeverityError {
				f.Severity = record.SeverityWarning
				f.Remedy = append([]string{CaptureRemedy}, f.Remedy...)
				changed = true
			}
		case !slices.ContainsFunc(want, func(r string) bool { return s.Shown[r] }):
			changed = true
			continue
		}
		keep = append(keep, f)
	}
	if !changed {
		return false
	}
	if keep == nil {
		keep = []record.Finding{}
	}
	sort.SliceStable(keep, func(i, j int) bool { return keep[i].Severity.Weight() > keep[j].Severity.Weight() })
	d.Findings = keep
	return true
}

// CaptureRemedy is the first remedy of a stack-signature guess made
// without stacks: what to capture, and how.
const CaptureRemedy = "Unconfirmed: the log only says the boot went quiet in this phase; the stacks tell. " +
	"Capture them while it hangs (bringup stacks --tree <pid of the boot>), or rerun under bringup watch with --silence shorter than the hang"

// Conclude sets d's status ("failed", "warnings", "ok"), verdict and top
// finding facts (Root, RaisedIn, PhaseWhy) from its findings and errors,
// as Run does: for a diagnosis whose findings a caller changed (watch
// judging one with what it saw). set nil: the builtin rules.
func Conclude(d *Diagnosis, set *rules.Set) error {
	if set == nil {
		var err error
		if set, err = rules.Builtin(); err != nil {
			return err
		}
	}
	d.Root, d.RaisedIn, d.PhaseWhy = "", "", ""
	if len(d.Findings) > 0 {
		d.Root, d.RaisedIn, d.PhaseWhy = d.Findings[0].Root, d.Findings[0].RaisedIn, d.Findings[0].PhaseWhy
	}
	d.Status, d.Verdict = verdict(d, set)
	return nil
}

// stacksOf is what the stack dumps among the inputs showed; nil when
// none was given.
func stacksOf(results []fileResult, shown map[string]bool) *Stacks {
	var s *Stacks
	for _, fr := range results {
		if fr.analysis == nil || fr.input.Kind != KindStacks {
			continue
		}
		if s == nil {
			s = &Stacks{Shown: shown}
		}
		s.Captured = s.Captured || fr.analysis.Records > 0
	}
	return s
}
