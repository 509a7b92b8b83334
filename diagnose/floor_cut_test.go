package diagnose

import (
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// A traceback cut off before its exception line inside Dynamo's tracing
// (pytorch issue 94795: the frames of symbolic_convert and variables,
// then the paste ends) in a plain PyTorch log with nothing else fatal is a
// warning: outside fullgraph=True Dynamo breaks the graph there. The same
// frames under a serving engine (fullgraph=True), or a cut traceback in
// other frames, stay an error.
func TestCutTracebackInDynamoTracing(t *testing.T) {
	dynamo := "  File \"/env/lib/python3.8/site-packages/torch/_dynamo/symbolic_convert.py\", line 461, in call_function\n" +
		"    self.push(fn.call_function(self, args, kwargs))\n" +
		"  File \"/env/lib/python3.8/site-packages/torch/_dynamo/variables/functions.py\", line 92, in call_function\n" +
		"    return tx.inline_user_funct\n"
	other := "  File \"/env/lib/python3.8/site-packages/mmengine/runner/loops.py\", line 96, in run\n" +
		"    self.run_epoch()\n"
	for name, c := range map[string]struct {
		log  string
		want record.Severity
	}{
		"dynamo tracing": {dynamo, record.SeverityWarning},
		"under vLLM":     {"INFO 12-20 20:25:40 api_server.py:585] vLLM API server version 0.6.6\n" + dynamo, record.SeverityError},
		"other frames":   {other, record.SeverityError},
		"crash after it": {dynamo + "Segmentation fault (core dumped)\n", record.SeverityError},
	} {
		d := diagnoseText(t, c.log, Options{})
		if len(d.Findings) == 0 {
			t.Fatalf("%s: no finding", name)
		}
		if got := d.Findings[0].Severity; got != c.want {
			t.Errorf("%s: %s %s, want %s", name, got, d.Findings[0].Rule, c.want)
		}
		if c.want == record.SeverityWarning && (d.Findings[0].Rule != "traceback-cut-in-dynamo-tracing" || len(d.Errors) != 0 || d.Status != "warnings") {
			t.Errorf("%s: %s, %d errors, status %s; want the cut-in-tracing warning alone", name, d.Findings[0].Rule, len(d.Errors), d.Status)
		}
	}
}

// An exception line printed without frames right after a peer worker's
// traceback cut before its exception line (vllm issue 37858: Worker_TP1's
// frames, then Worker_TP0's exception line) takes its phase from those
// frames, saying whose they are; a traceback of another role does not
// lend its frames.
func TestPeerFramesGivePhase(t *testing.T) {
	frames := func(prefix string) string {
		h := prefix + " ERROR 03-23 14:52:02 [multiproc_executor.py:932] "
		return h + "Traceback (most recent call last):\n" +
			h + "  File \"/usr/local/lib/python3.10/site-packages/vllm/compilation/piecewise_backend.py\", line 265, in compile_all_ranges\n" +
			h + "    range_entry.runnable = self.vllm_backend.compiler_manager.compile(\n"
	}
	exc := "(Worker_TP0 pid=1345) ERROR 03-23 14:52:02 [multiproc_executor.py:932] AttributeError: <function standalone_compile at 0x7f> does not have the attribute 'FakeTensorMode'\n"
	f := topError(diagnoseText(t, frames("(Worker_TP1 pid=1346)")+exc, Options{}))
	if f == nil || f.Phase != "inductor" || !strings.Contains(f.PhaseWhy, "peer worker") {
		t.Errorf("peer: %+v", f)
	}
	f = topError(diagnoseText(t, frames("(EngineCore pid=1179)")+exc, Options{}))
	if f == nil || strings.Contains(f.PhaseWhy, "peer worker") {
		t.Errorf("other role lent its frames: %+v", f)
	}
}
