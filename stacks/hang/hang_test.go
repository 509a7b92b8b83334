package hang

import (
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/stacks"
	"github.com/bringup-tool/bringup/store"
)

// The outcomes are the run store's words.
func TestOutcomesAreTheStoresWords(t *testing.T) {
	if Hung != store.OutcomeHung || Timeout != store.OutcomeTimeout || Interrupted != store.OutcomeInterrupted {
		t.Fatalf("hang %q %q %q, store %q %q %q", Hung, Timeout, Interrupted, store.OutcomeHung, store.OutcomeTimeout, store.OutcomeInterrupted)
	}
}

func TestVerdict(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 1, 45, 20, 0, time.UTC)
	tl := []record.Phase{
		{Rank: "TP0", Name: "load", Status: record.PhaseDone, Line: 4},
		{Rank: "TP0", Name: "compile", Status: record.PhaseUnfinished, Open: true, Line: 5},
		{Rank: "TP0", Name: "inductor", Status: record.PhaseUnfinished, Open: true, Line: 7},
		{Rank: "TP0", Name: "ready", Open: true, Line: 9},
	}
	user := &stacks.Where{Text: "2/2 ranks in sleepy.py wait_for_peer_config (bucket #1), 3 snapshots identical"}
	fusion := &stacks.Where{Title: "Inductor fusion benchmarking (compiling a fused kernel to time it), torch >= 2.1",
		Text: "2/2 ranks in torch/_inductor/scheduler.py Scheduler.speedup_by_fusion (bucket #1), 2 snapshots identical"}
	fallback := &stacks.Where{Title: "Inductor formatting an implicit-fallback message, torch < 2.13", Text: "2/2 ranks in torch/_inductor/exc.py operator_str"}
	cases := []struct {
		name string
		run  Run
		want string
	}{
		{"hung, no signature: the open phase", Run{Outcome: Hung, LastOutput: t0, At: t0.Add(6300 * time.Millisecond), Phases: tl, Where: user},
			"STUCK 6.3 s in phase inductor: 2/2 ranks in sleepy.py wait_for_peer_config (bucket #1), 3 snapshots identical"},
		{"hung in a signature: its short title", Run{Outcome: Hung, LastOutput: t0, At: t0.Add(10*time.Minute + 12*time.Second), Phases: tl, Where: fusion},
			"STUCK 10.2 min in Inductor fusion benchmarking: 2/2 ranks in torch/_inductor/scheduler.py Scheduler.speedup_by_fusion (bucket #1), 2 snapshots identical"},
		{"the version note goes", Run{Outcome: Hung, LastOutput: t0, At: t0.Add(90 * time.Minute), Where: fallback},
			"STUCK 1.5 h in Inductor formatting an implicit-fallback message: 2/2 ranks in torch/_inductor/exc.py operator_str"},
		{"timed out while printing: slow", Run{Outcome: Timeout, LastOutput: t0, At: t0.Add(2 * time.Second), Duration: 40 * time.Minute, Phases: tl, Where: user},
			"NOT READY after 40.0 min in phase inductor: " + user.Text},
		{"timed out quiet: stuck", Run{Outcome: Timeout, LastOutput: t0, At: t0.Add(5 * time.Minute), Duration: 40 * time.Minute, Phases: tl, Where: user},
			"STUCK 5.0 min in phase inductor: " + user.Text},
		{"interrupted: the phase, not the title", Run{Outcome: Interrupted, LastOutput: t0, At: t0.Add(time.Second), Duration: 2500 * time.Millisecond, Phases: tl, Where: fusion},
			"INTERRUPTED after 2.5 s in phase inductor: " + fusion.Text},
		{"no stacks", Run{Outcome: Hung, LastOutput: t0, At: t0.Add(4 * time.Second), Phases: tl},
			"STUCK 4.0 s in phase inductor (no stacks captured)"},
		{"nothing printed: quiet all along", Run{Outcome: Hung, At: t0, Duration: 7 * time.Second, Where: user},
			"STUCK 7.0 s: " + user.Text},
		{"dumps beside a log: since its last line, no length", Run{Outcome: Hung, LastOutput: t0, Phases: tl, Where: user},
			"STUCK in phase inductor, silent since the log's last line (12-02 01:45:20; the stacks do not say when they were taken): " + user.Text},
		{"ready: none", Run{Outcome: "ready", LastOutput: t0, At: t0.Add(time.Minute), Where: user}, ""},
		{"failed: none", Run{Outcome: "failed", Where: user}, ""},
	}
	for _, c := range cases {
		if got := Verdict(c.run); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func TestOpenPhase(t *testing.T) {
	for _, c := range []struct {
		tl   []record.Phase
		want string
	}{
		{nil, ""},
		{[]record.Phase{{Name: "load", Line: 3}}, ""},
		{[]record.Phase{{Name: "ready", Open: true, Line: 9}}, ""},
		{[]record.Phase{{Name: "inductor", Open: true, Line: 8}, {Name: "compile", Open: true, Line: 5}, {Name: "load", Line: 9}}, "inductor"},
		{[]record.Phase{{Name: "dynamo", Open: true, Line: 5}, {Name: "cudagraph", Open: true, Line: 40}}, "cudagraph"},
	} {
		if got := OpenPhase(c.tl); got != c.want {
			t.Errorf("OpenPhase(%+v) = %q, want %q", c.tl, got, c.want)
		}
	}
}

func TestSpell(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0.0 s", 6300 * time.Millisecond: "6.3 s", 59 * time.Second: "59.0 s",
		time.Minute: "1.0 min", 612 * time.Second: "10.2 min", time.Hour: "1.0 h", 84 * time.Minute: "1.4 h",
	} {
		if got := Spell(d); got != want {
			t.Errorf("Spell(%v) = %q, want %q", d, got, want)
		}
	}
	if s := shortTitle("Collective wait (NCCL), torch >= 2.3"); strings.Contains(s, "(") || s != "Collective wait" {
		t.Errorf("shortTitle: %q", s)
	}
}
