package timeline

import (
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/record"
)

// TestTorchCompileTotalClosesInductor pins that vLLM's closing
// "torch.compile takes/took N s in total" ends the Inductor phase that the
// Dynamo line opened: without it a healthy boot keeps an unfinished
// Inductor phase, and the stuck-compile rules fire on it.
func TestTorchCompileTotalClosesInductor(t *testing.T) {
	for _, verb := range []string{"takes", "took"} {
		log := "(Worker_TP0 pid=2) INFO 03-02 11:00:00 [backends.py:640] Using cache directory: /c/rank_0_0/backbone for vLLM's torch.compile\n" +
			"(Worker_TP0 pid=2) INFO 03-02 11:00:09 [backends.py:700] Dynamo bytecode transform time: 9.00 s\n" +
			"(Worker_TP0 pid=2) INFO 03-02 11:00:30 [monitor.py:34] torch.compile " + verb + " 30.00 s in total\n" +
			"(Worker_TP0 pid=2) INFO 03-02 11:09:00 [gpu_worker.py:300] Available KV cache memory: 20.00 GiB\n"
		b := New()
		if _, err := enginelog.Parse(strings.NewReader(log), "x.log", b.Add); err != nil {
			t.Fatal(err)
		}
		phases, _ := b.Finish()
		seen := false
		for _, p := range phases {
			if p.Status == record.PhaseUnfinished {
				t.Errorf("%s: phase %s left %s after the closing line: %+v", verb, p.Name, p.Status, p)
			}
			if p.Name == PhaseInductor {
				seen = true
				if p.End.Format("15:04:05") != "11:00:30" {
					t.Errorf("%s: Inductor phase should end at the closing line, got %+v", verb, p)
				}
			}
		}
		if !seen {
			t.Errorf("%s: no Inductor phase: %+v", verb, phases)
		}
	}
}
