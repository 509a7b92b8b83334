package timeline

import (
	"testing"
	"time"

	"github.com/bringup-tool/bringup/record"
)

func TestCurrentKeepsOpenPhasesOpen(t *testing.T) {
	b := New()
	t0 := time.Date(0, 11, 29, 23, 0, 0, 0, time.UTC)
	rank := record.NoRank
	rank.TP = 0
	add := func(line int, sec int, text string) {
		b.Add(record.Record{Source: "out", Line: line, EndLine: line, Rank: rank, Time: t0.Add(time.Duration(sec) * time.Second), Level: record.LevelInfo, Text: text})
	}
	add(1, 0, "Using cache directory: /c/rank_0_0/backbone for vLLM's torch.compile")
	add(2, 3, "Dynamo bytecode transform time: 3.00 s")
	add(3, 4, "Cache the graph for dynamic shape for later use")
	cur := b.Current()
	var dynamo, inductor *record.Phase
	for i := range cur {
		switch cur[i].Name {
		case PhaseDynamo:
			dynamo = &cur[i]
		case PhaseInductor:
			inductor = &cur[i]
		}
	}
	if dynamo == nil || dynamo.Status != record.PhaseDone {
		t.Fatalf("dynamo = %+v in %+v", dynamo, cur)
	}
	if inductor == nil || inductor.Status != record.PhaseUnfinished || !inductor.End.IsZero() {
		t.Fatalf("inductor = %+v", inductor)
	}
	// Current does not close anything: Inductor can still finish.
	add(4, 5, "Compiling a graph for dynamic shape takes 2.00 s")
	phases, _ := b.Finish()
	for _, p := range phases {
		if p.Name == PhaseInductor && (p.Status != record.PhaseDone || p.Seconds != 2) {
			t.Errorf("inductor after Current then close: %+v", p)
		}
	}
}
