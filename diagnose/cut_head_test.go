package diagnose

import (
	"strings"
	"testing"
)

// A traceback cut before its exception line is quoted as the line it
// started on, the log's own words for it (sglang-pr-5014: the scheduler
// reports it), not as the floor's "cut off" placeholder; the root still
// says it was cut.
func TestCutTracebackQuotesItsHead(t *testing.T) {
	log := "[2025-03-28 10:00:00 DP4 TP4] Scheduler hit an exception: Traceback (most recent call last):\n" +
		"  File \"/sgl/python/sglang/srt/managers/scheduler.py\", line 1999, in run_scheduler_process\n" +
		"    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n" +
		"  File \"/sgl/python/sglang/srt/models/deepseek_v2.py\", line 1308, in forward\n" +
		"    hidden_states = self.model(input_ids, positions, forward_batch)\n"
	d := diagnoseText(t, log, Options{})
	f := topError(d)
	if f == nil || len(f.Evidence) == 0 {
		t.Fatalf("no error finding with evidence: %+v", d.Findings)
	}
	if got := f.Evidence[0].Text; got != "Scheduler hit an exception: Traceback (most recent call last):" {
		t.Errorf("evidence %q, want the line the traceback started on", got)
	}
	if !strings.Contains(f.Root, "cut off before its exception line") {
		t.Errorf("root %q: the finding must still say the traceback was cut", f.Root)
	}
}
