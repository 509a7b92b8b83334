package benchlog

import (
	"bytes"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	var a, b bytes.Buffer
	if err := Write(&a, 4<<20, 8); err != nil {
		t.Fatal(err)
	}
	Write(&b, 4<<20, 8)
	s := a.String()
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two runs differ: the benchmark input must be reproducible")
	}
	if len(s) < 4<<20 || len(s) > 4<<20+16<<10 || !strings.HasPrefix(s, Header) || !strings.HasSuffix(s, "\n") {
		t.Fatalf("%d bytes, starts %q", len(s), s[:min(len(s), 60)])
	}
	for _, want := range []string{
		"(EngineCore_DP0 pid=4180) (Worker_TP7 pid=4197) INFO 11-29 00:00:01 [gpu_model_runner.py:2653] ",
		"(APIServer pid=4101) WARNING 11-29 00:00:50 [protocol.py:93] ",
		"(EngineCore_DP0 pid=4180) (Worker_TP3 pid=4193) ERROR 11-29 00:08:20 [multiproc_executor.py:815] RuntimeError: Graph breaks are not supported with aot compile.",
		"rank_5_0/backbone\")\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q", want)
		}
	}
	if strings.Contains(s, "Worker_TP8") {
		t.Error("tp=8 wrote a ninth rank")
	}
}

// TestWriteVaried: the varied log is reproducible, has the plain log's
// shape line for line, and its metrics and tqdm lines differ between ranks.
func TestWriteVaried(t *testing.T) {
	var plain, a, b bytes.Buffer
	Write(&plain, 2<<20, 8)
	if err := WriteVaried(&a, 2<<20, 8, true); err != nil {
		t.Fatal(err)
	}
	WriteVaried(&b, 2<<20, 8, true)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two runs differ: the benchmark input must be reproducible")
	}
	var p0 bytes.Buffer
	if WriteVaried(&p0, 2<<20, 8, false); !bytes.Equal(p0.Bytes(), plain.Bytes()) {
		t.Fatal("WriteVaried without vary is not Write")
	}
	pl, vl := strings.Split(plain.String(), "\n"), strings.Split(a.String(), "\n")
	n := min(len(pl), len(vl)) - 1
	metrics := map[string]bool{}
	for i := 0; i < n; i++ {
		// The same line up to the body: prefixes, headers, order.
		if pre := pl[i][:min(len(pl[i]), 60)]; !strings.HasPrefix(vl[i], pre) {
			t.Fatalf("line %d: %q, plain %q", i+1, vl[i], pl[i])
		}
		if k := strings.Index(vl[i], "Avg prompt throughput: "); k >= 0 {
			metrics[vl[i][k:]] = true
		}
	}
	if len(metrics) < 100 {
		t.Fatalf("%d distinct metrics bodies", len(metrics))
	}
}
