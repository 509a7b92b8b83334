package compiles

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/bringup-tool/bringup/input"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// A gzipped trace gives the analysis of the plain one, including what is
// fetched back from payloads while concluding (the output code the
// collective-parity check reads), found by name in a directory.
func TestGzipTraceSameAnalysis(t *testing.T) {
	src := testcorpus.File(t, "tlparse-inputs/collectives_parity", "dedicated_log_torch_trace_rank_0.log")
	dir := t.TempDir()
	gz := filepath.Join(dir, "dedicated_log_torch_trace_rank_0.log.gz")
	testcorpus.GzipCopy(t, src, gz)
	os.WriteFile(filepath.Join(dir, "README"), []byte("notes\n"), 0o644)
	plain := analyze(t, src)
	got := analyze(t, dir)
	if len(got.Inputs) != 1 || got.Inputs[0].Path != gz || got.Inputs[0].Rank != 0 {
		t.Fatalf("inputs %+v", got.Inputs)
	}
	if len(plain.CollectiveParity) == 0 || len(got.CollectiveParity) != len(plain.CollectiveParity) {
		t.Fatalf("parity from the .gz: %+v, plain: %+v", got.CollectiveParity, plain.CollectiveParity)
	}
	for i := range plain.CollectiveParity {
		a, b := plain.CollectiveParity[i], got.CollectiveParity[i]
		if a.CompileID != b.CompileID || a.MissingWaits != b.MissingWaits || !reflect.DeepEqual(a.CodeOps, b.CodeOps) {
			t.Errorf("parity %d: %+v, plain %+v", i, b, a)
		}
	}
	if len(got.Compiles) != len(plain.Compiles) || len(got.Recompiles) != len(plain.Recompiles) || got.Counts[gz].Records != plain.Counts[src].Records {
		t.Errorf("compiles %d/%d, recompiles %d/%d, records %d/%d", len(got.Compiles), len(plain.Compiles),
			len(got.Recompiles), len(plain.Recompiles), got.Counts[gz].Records, plain.Counts[src].Records)
	}
	if len(Unread(got)) != 0 {
		t.Errorf("unread: %v", Unread(got))
	}
}

// Every input that held no trace record is named with why; FIFOs in a
// directory are passed over unopened, and a named one is refused.
func TestUnreadAndNonRegularInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	empty := write("empty.log", nil)
	log := testcorpus.File(t, "engine-logs", "vllm-issue-15598.log")
	bin := write("zeros.bin", make([]byte, 8192))
	res := analyze(t, empty, log, bin, corpus(t, "simple.log"))
	got := map[string]string{}
	for _, u := range Unread(res) {
		got[u.Path] = u.Reason
	}
	want := map[string]string{empty: "empty file", log: "none of them a TORCH_TRACE record", bin: "binary data, not a TORCH_TRACE log"}
	if len(got) != len(want) {
		t.Errorf("unread %v", got)
	}
	for p, why := range want {
		if !strings.Contains(got[p], why) || res.Counts[p].NotTrace != got[p] {
			t.Errorf("%s: %q (counts %q), want %q", p, got[p], res.Counts[p].NotTrace, why)
		}
	}

	traces := filepath.Join(dir, "traces")
	os.Mkdir(traces, 0o755)
	testcorpus.GzipCopy(t, corpus(t, "simple.log"), filepath.Join(traces, "dedicated_log_torch_trace_rank_1.log.gz"))
	fifo := filepath.Join(traces, "dedicated_log_torch_trace_rank_0.log")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	inputs, ignored, err := Discover([]string{traces})
	if err != nil || len(inputs) != 1 || inputs[0].Rank != 1 || len(ignored) != 0 {
		t.Errorf("discover: %+v, ignored %+v, %v", inputs, ignored, err)
	}
	if _, _, err := Discover([]string{fifo}); !errors.Is(err, input.ErrNotRegular) {
		t.Errorf("a named FIFO: %v", err)
	}
}
