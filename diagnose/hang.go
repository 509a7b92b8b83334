package diagnose

import (
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/stacks"
	"github.com/bringup-tool/bringup/stacks/hang"
)

// What an unfinished phase's length runs to (record.Phase.Until).
const (
	// UntilStop: the run's stop, as watch measured it (a run directory's
	// run.json): the phase was still open when the boot was stopped.
	UntilStop = "stop"
	// UntilLastLine: the log's last timestamp, all a log alone tells.
	UntilLastLine = "last line"
)

// formHang sets d's hang verdict (hang.Verdict, the one watch forms) from
// a run directory's facts and its stack captures, else from the logs and
// the stack dumps given with them: a log that ends inside a startup phase
// with no failure, and stacks that read a worker, is a hang whose stacks
// say where. It reports whether it did.
func formHang(d *Diagnosis, runs []runDir) bool {
	for _, r := range runs {
		if r.rf == nil {
			continue
		}
		hr := hang.Run{Outcome: r.rf.Outcome, Phases: r.rf.Timeline, Where: latestWhere(d, r.dir)}
		if st := r.rf.Stop; st != nil {
			hr.LastOutput, hr.At = st.LastOutput, st.At
		}
		if !r.rf.Started.IsZero() && r.rf.Ended.After(r.rf.Started) {
			hr.Duration = r.rf.Ended.Sub(r.rf.Started)
		}
		if v := hang.Verdict(hr); v != "" {
			d.Hang, d.hangLine = r.rf.Outcome, v
			return true
		}
		return false // the run record's outcome is the run's: no guess from its files
	}
	w := latestWhere(d, "")
	if w == nil || !endsInsidePhase(d) {
		return false
	}
	hr := hang.Run{Outcome: hang.Hung, Where: w, LastOutput: logEnd(d)}
	for _, p := range d.Timeline {
		hr.Phases = append(hr.Phases, record.Phase{Rank: p.Rank, Name: p.Name, Line: p.Line, Open: p.Status == record.PhaseUnfinished})
	}
	d.Hang, d.hangLine = hang.Hung, hang.Verdict(hr)
	return true
}

// latestWhere is the headline of the latest stack capture among the
// inputs that read a worker: under dir (a run directory: watch's
// captures silence-1, silence-2 … then the stop's, timeout or
// interrupt), or, dir "", the last stack dump given.
func latestWhere(d *Diagnosis, dir string) *stacks.Where {
	var best *stacks.Where
	bestAt := -1
	for i, in := range d.Inputs {
		sf, ok := d.Facts[in.Path].(StackFacts)
		if in.Kind != KindStacks || !ok || sf.Where.Workers == 0 {
			continue
		}
		at := i
		if dir != "" {
			if filepath.Dir(in.Path) != filepath.Clean(dir) {
				continue
			}
			at = captureOrder(filepath.Base(in.Path))
		}
		if at >= bestAt {
			w := sf.Where
			best, bestAt = &w, at
		}
	}
	return best
}

// captureOrder orders watch's capture files: silence-N by N, the stop's
// capture (timeout, interrupt) after every silence.
func captureOrder(name string) int {
	stem, ok := strings.CutSuffix(name, ".stacks.json")
	if !ok {
		return 0
	}
	if n, ok := strings.CutPrefix(stem, "silence-"); ok {
		if k, err := strconv.Atoi(n); err == nil && k > 0 && k < 1<<20 {
			return k
		}
		return 0
	}
	return 1 << 20
}

// endsInsidePhase: the logs end inside a startup phase (one is
// unfinished), none failed, and nothing but a hang is said of them — no
// error, and every error-level finding is a stack signature's or a log
// rule's about the phase still open.
func endsInsidePhase(d *Diagnosis) bool {
	open := false
	for _, p := range d.Timeline {
		switch p.Status {
		case record.PhaseFailed:
			return false
		case record.PhaseUnfinished:
			open = open || p.Name != "ready"
		}
	}
	if !open || len(d.Errors) > 0 {
		return false
	}
	kinds := map[string]string{}
	for _, in := range d.Inputs {
		kinds[in.Path] = in.Kind
	}
	for _, f := range d.Findings {
		if f.Severity != record.SeverityError || stuck(d, f) {
			continue
		}
		for _, e := range f.Evidence {
			if kinds[e.Path] != KindStacks {
				return false
			}
		}
	}
	return true
}

// logEnd is the logs' last timestamp: where their unfinished phases end
// (a log's clock may lack the year: times before year 1 are real).
func logEnd(d *Diagnosis) time.Time {
	var end time.Time
	seen := false
	for _, p := range d.Timeline {
		if p.Status == record.PhaseUnfinished && !p.End.IsZero() && (!seen || p.End.After(end)) {
			end, seen = p.End, true
		}
	}
	return end
}

// runLengths gives the phases of a run directory's output.log that were
// still open when watch stopped the boot the length run.json records
// (until the stop, as watch, `runs show` and `runs compare` show it).
func runLengths(d *Diagnosis, dir string, rf *RunFacts) {
	log := filepath.Join(dir, "output.log")
	for i := range d.Timeline {
		p := &d.Timeline[i]
		if p.Path != log || p.Status == record.PhaseDone {
			continue
		}
		for _, q := range rf.Timeline {
			if q.Open && q.Status == record.PhaseUnfinished && q.Rank == p.Rank && q.Name == p.Name && q.Line == p.Line {
				p.Status, p.Seconds, p.Until = record.PhaseUnfinished, q.Seconds, UntilStop
				if !p.Start.IsZero() {
					p.End = p.Start.Add(time.Duration(q.Seconds * float64(time.Second)))
				}
			}
		}
	}
}
