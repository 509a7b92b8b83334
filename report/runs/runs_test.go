package runs

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/report"
	"github.com/bringup-tool/bringup/store"
)

// A hung run's timeline as watch records it for seed 004's shape: the log
// has second-resolution timestamps, so the phases left open (inductor)
// measure 0 s in the log. Show prints each rank's phases together and an
// open phase's length as at least the time to the run's end (it printed
// "0.0s unfinished"); an open phase whose start is not within the run
// (log clock in another zone) gets "-".
func TestShowOpenPhases(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 1, 39, 30, 0, time.UTC)
	run := &store.Run{
		ID: 4, Outcome: store.OutcomeHung, Reason: "no output for 5.1s", Command: []string{"python3", "silent.py"},
		Started: t0.Add(-59 * time.Millisecond), Ended: t0.Add(6500 * time.Millisecond),
		Timeline: []store.Phase{
			{Rank: "TP1", Name: "load", Status: "done", Start: t0.Add(-120 * time.Millisecond), End: t0, Seconds: 0.12},
			{Rank: "TP0", Name: "dynamo", Status: "done", Start: t0, End: t0, Seconds: 1.08},
			{Rank: "TP0", Name: "inductor", Status: "unfinished", Start: t0, End: t0, Open: true},
			{Rank: "TP1", Name: "dynamo", Status: "done", Start: t0, End: t0, Seconds: 1.08},
			{Rank: "TP1", Name: "inductor", Status: "unfinished", Start: t0.Add(-3 * time.Hour), End: t0, Open: true},
		},
	}
	var buf bytes.Buffer
	if err := Show(&buf, run, report.Style{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	_, tl, _ := strings.Cut(out, "\ntimeline\n")
	tl, _, _ = strings.Cut(tl, "\n\n")
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(tl), "\n") {
		rows = append(rows, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"TP0 dynamo 1.1s done",
		"TP0 inductor ≥6.5s unfinished",
		"TP1 load 0.1s done",
		"TP1 dynamo 1.1s done",
		"TP1 inductor - unfinished",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("timeline rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if regexp.MustCompile(`inductor +0\.0s`).MatchString(out) {
		t.Errorf("an open phase shown as 0.0s:\n%s", out)
	}
}

// The first line reads like watch's closing line (outcome, time, reason);
// it read "EXITED run #6: the command exited … before it was ready after
// 200ms". One line of output is "1 line".
func TestShowHeadline(t *testing.T) {
	code := 0
	t0 := time.Date(2026, 11, 30, 1, 57, 51, 0, time.UTC)
	run := &store.Run{ID: 6, Outcome: store.OutcomeExited, Reason: "the command exited with status 0 before it was ready",
		ExitCode: &code, Started: t0, Ended: t0.Add(200 * time.Millisecond), Dir: "runs/6", Lines: 1, Command: []string{"true"}}
	var buf bytes.Buffer
	if err := Show(&buf, run, report.Style{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if first, _, _ := strings.Cut(out, "\n"); first != "EXITED run #6 after 200ms — the command exited with status 0 before it was ready (exit 0)" {
		t.Errorf("first line %q", first)
	}
	if !strings.Contains(out, "run directory: runs/6 (1 line of output)\n") {
		t.Errorf("run directory line:\n%s", out)
	}
}

// A lost run shows the processes its boot left and what became of them;
// an incomplete log says where it stops, and the terminal's losses.
func TestShowLostAndIncomplete(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 1, 57, 51, 0, time.UTC)
	run := &store.Run{ID: 3, Outcome: store.OutcomeLost, Reason: "bringup watch (pid 9) ended without recording an outcome",
		Started: t0, Ended: t0.Add(5 * time.Second), Dir: "/runs/3-ab", Lines: 8096, Command: []string{"vllm", "serve"},
		Output:    &store.Output{Lines: 40000, Error: "output incomplete at line 8097: no space left on device", TerminalDropped: 12, TerminalClosed: []string{"stdout: write |1: broken pipe"}},
		Survivors: []store.BootProc{{PID: 41, Process: "python3 worker.py", State: store.SurvivorRunning}, {PID: 42, Process: "launcher", State: store.SurvivorStopped}}}
	var buf bytes.Buffer
	if err := Show(&buf, run, report.Style{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"LOST run #3 after 5s — bringup watch (pid 9) ended without recording an outcome\n",
		"  pid 41 (python3 worker.py): still running (bringup runs list --stop-lost stops it)\n",
		"  pid 42 (launcher): stopped by bringup\n",
		"run directory: /runs/3-ab (8096 lines of output, incomplete)\n",
		"output: output incomplete at line 8097: no space left on device; the boot printed 40000 lines\n",
		"terminal: 12 lines not shown (the terminal did not keep up)\n",
		"terminal: the copy stopped (stdout: write |1: broken pipe)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if got := Saved(run); got != "8096 lines saved; output incomplete at line 8097: no space left on device" {
		t.Errorf("Saved = %q", got)
	}
}

// A run watch stopped: an open phase is as long as watch measured it (to
// the stop), and the stop is shown with what the boot printed after it,
// which is not a finding.
func TestShowStopAndMeasuredPhase(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 1, 39, 30, 0, time.UTC)
	run := &store.Run{
		ID: 5, Outcome: store.OutcomeHung, Reason: "no output for 4.2s", Command: []string{"python3", "fusionhang.py"},
		Started: t0.Add(-time.Second), Ended: t0.Add(8 * time.Second),
		Timeline: []store.Phase{{Rank: "TP0", Name: "inductor", Status: "unfinished", Start: t0, End: t0.Add(5300 * time.Millisecond), Seconds: 5.3, Open: true, Line: 5}},
		Stop: &store.Stop{By: store.StopByWatch, At: t0.Add(5300 * time.Millisecond), Line: 23, LastOutput: t0.Add(100 * time.Millisecond),
			After: []string{"KeyboardInterrupt: terminated (output.log:24)"}},
	}
	var buf bytes.Buffer
	if err := Show(&buf, run, report.Style{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"TP0  inductor  5.3s  unfinished when stopped", "stopped by watch at ", "after output.log line 23 (5.2s after the boot last printed)",
		"  after the stop, not a finding: KeyboardInterrupt: terminated (output.log:24)"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
}
