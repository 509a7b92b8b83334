package diagnose

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/record"
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
// judging one with what it saw).
func Conclude(d *Diagnosis) {
	d.Root, d.RaisedIn, d.PhaseWhy = "", "", ""
	if len(d.Findings) > 0 {
		d.Root, d.RaisedIn, d.PhaseWhy = d.Findings[0].Root, d.Findings[0].RaisedIn, d.Findings[0].PhaseWhy
	}
	d.Status, d.Verdict = verdict(d)
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

// signalText is what a process prints when a signal ends it: Python's
// KeyboardInterrupt (SIGINT, or a SIGTERM handler that raises it:
// "KeyboardInterrupt: terminated"), SystemExit from a handler, shells'
// and launchers' notes.
var signalText = regexp.MustCompile(`KeyboardInterrupt|SystemExit|\bterminated\b|Terminated|SIGTERM|SIGINT|SIGKILL|SIGHUP|signal (?:2|9|15)\b|[Ss]ignal\.SIG|Interrupted|\bKilled\b`)

// DropAfterStop removes the findings and errors whose evidence lies wholly
// in what the boot printed after it was stopped (lines after stopLine of
// the logs named in logs) and returns them, one line each ("KeyboardInterrupt:
// terminated (output.log:42)"): the stop's doing, not the boot's failures.
// After a stop of watch's own or the user's all of them are; when the
// boot ended by itself (byItself: only its leftovers were stopped), only
// those a signal explains are.
func DropAfterStop(d *Diagnosis, logs map[string]bool, stopLine int64, byItself bool) []string {
	after := func(path string, line int) bool { return logs[path] && int64(line) > stopLine }
	var notes []string
	note := func(what, path string, line int) {
		s := fmt.Sprintf("%s (%s:%d)", clipTo(what, 120), path, line)
		if !slices.Contains(notes, s) {
			notes = append(notes, s)
		}
	}
	keep := d.Findings[:0:0]
	for _, f := range d.Findings {
		all := len(f.Evidence) > 0
		text := f.Title
		for _, e := range f.Evidence {
			all = all && after(e.Path, e.Line)
			text += " " + e.Text
		}
		if all && (!byItself || signalText.MatchString(text)) {
			what := f.Title
			if t := strings.TrimSpace(firstMsgLine(f.Evidence[0].Text)); t != "" {
				what = t
			}
			note(what, f.Evidence[0].Path, f.Evidence[0].Line)
			continue
		}
		keep = append(keep, f)
	}
	d.Findings = keep
	errs := d.Errors[:0:0]
	for _, e := range d.Errors {
		head := e.Exception
		if m := firstMsgLine(e.Message); m != "" {
			head += ": " + m
		}
		if after(e.Path, e.Line) && (!byItself || signalText.MatchString(head)) {
			note(head, e.Path, e.Line)
			continue
		}
		errs = append(errs, e)
	}
	d.Errors = errs
	return notes
}

// clipTo cuts s to at most n bytes (never inside a UTF-8 sequence) and
// marks the cut with "…"; the one clip of diagnose's texts.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n-- // do not split a UTF-8 sequence
	}
	return s[:n] + "…"
}
