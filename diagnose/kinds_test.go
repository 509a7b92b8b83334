package diagnose

import (
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/analyze/compiles"
)

// One run over a TORCH_TRACE file, a stack dump and an engine log: each is
// read by its own kind, and each kind's facts reach the diagnosis. A kind
// left out of inputKinds fails it.
func TestEveryKind(t *testing.T) {
	trace := filepath.Join("..", "testbed", "testdata", "inlined_exception_fullgraph", "trace", "dedicated_log_torch_trace_hrd_rbr7.log.gz")
	dump := filepath.Join("..", "stacks", "testdata", "seed004-snap1", "worker_TP0.txt")
	log := filepath.Join("..", "examples", "aot-graph-break", "vllm-serve.log")
	d := run(t, trace, dump, log)
	want := map[string]string{trace: KindTorchTrace, dump: KindStacks, log: KindEngineLog}
	if len(d.Inputs) != 3 {
		t.Fatalf("inputs %+v", d.Inputs)
	}
	for _, in := range d.Inputs {
		if in.Kind != want[in.Path] || in.Error != "" || in.Records == 0 {
			t.Errorf("input %+v, want kind %s", in, want[in.Path])
		}
	}
	// TORCH_TRACE: its bringup.trace/v1 document, and the compile failure
	// it records as a finding with the trace as evidence.
	if r, ok := d.Facts[trace].(*compiles.Result); !ok || len(r.Compiles) == 0 {
		t.Errorf("trace facts %T", d.Facts[trace])
	}
	if f := finding(d, "trace-compile-failed"); f == nil || f.Evidence[0].Path != trace {
		t.Errorf("trace findings %v", ruleIDs(d))
	}
	// The stack dump: one process, its threads bucketed, a headline frame.
	if sf, ok := d.Facts[dump].(StackFacts); !ok || sf.Processes != 1 || len(sf.Buckets) == 0 || sf.Where.Frame == nil {
		t.Errorf("dump facts %+v", d.Facts[dump])
	}
	// The log: its phases, its versions and its signature.
	if f := finding(d, "aot-compile-graph-break"); f == nil || f.Evidence[0].Path != log {
		t.Errorf("log findings %v", ruleIDs(d))
	}
	if len(d.Timeline) == 0 || d.Versions["vllm"] == "" {
		t.Errorf("timeline %d phases, versions %v", len(d.Timeline), d.Versions)
	}
}

// Sniffing picks the most confident kind, the earlier one on a tie, and
// none for what no kind claims.
func TestDetect(t *testing.T) {
	for _, c := range []struct{ head, kind string }{
		{"INFO 12-17 13:32:44 [core.py:1] hello\n", KindEngineLog},
		{"Thread 0x00007f3c (most recent call first):\n  File \"/usr/lib/python3.12/threading.py\", line 324 in wait\n", KindStacks},
		{"V1217 13:32:44.000000 1 torch/_dynamo/convert_frame.py:1] {\"dynamo_start\": {}, \"frame_id\": 0, \"frame_compile_id\": 0, \"attempt\": 0}\n", KindTorchTrace},
		{"{\"schema\":\"bringup.perfetto/v1\",\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",", KindReport},
		{"{\"schema\":\"bringup.stacks/v1\",\"verdict\":\"x\",\"processes\":[]}", KindStacks},
		{"\x00\x01\x02", ""},
	} {
		got := ""
		if k := detect("x", []byte(c.head)); k != nil {
			got = k.name
		}
		if got != c.kind {
			t.Errorf("detect(%q) = %q, want %q", c.head, got, c.kind)
		}
	}
}
