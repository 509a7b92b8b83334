package tracejson

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func analyze(t *testing.T, args ...string) *compiles.Result {
	t.Helper()
	res, err := compiles.Analyze(args, compiles.Options{Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// WriteJSON streams the same document json.Marshal produces.
func TestWriteJSONEqualsMarshal(t *testing.T) {
	res := analyze(t, testcorpus.Dir(t, "tlparse-inputs/multi_rank_logs"))
	var sb strings.Builder
	if err := WriteJSON(&sb, res); err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal([]byte(sb.String()), &a); err != nil {
		t.Fatal(err)
	}
	m, _ := json.Marshal(res)
	_ = json.Unmarshal(m, &b)
	if !reflect.DeepEqual(a, b) {
		t.Error("WriteJSON differs from json.Marshal")
	}
}

// TestWriteJSONParallelSameBytes: the long arrays, marshalled in chunks on
// several goroutines, give the bytes of the one-goroutine path, and the
// same document as json.Marshal (the corpus block three times over has
// arrays of several chunks).
func TestWriteJSONParallelSameBytes(t *testing.T) {
	data := testcorpus.TraceBlock(t)
	p := filepath.Join(t.TempDir(), "three.log")
	if err := os.WriteFile(p, bytes.Repeat(data, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	res := analyze(t, p)
	if len(res.Spans) <= 2*jsonChunk {
		t.Fatalf("only %d phases: the test needs arrays of several chunks", len(res.Spans))
	}
	var par, seq bytes.Buffer
	if err := WriteJSON(&par, res); err != nil {
		t.Fatal(err)
	}
	old := runtime.GOMAXPROCS(1)
	err := WriteJSON(&seq, res)
	runtime.GOMAXPROCS(old)
	if err != nil {
		t.Fatal(err)
	}
	if old < 2 {
		t.Log("GOMAXPROCS is 1: both runs took the one-goroutine path")
	}
	if !bytes.Equal(par.Bytes(), seq.Bytes()) {
		t.Error("parallel WriteJSON differs from the one-goroutine output")
	}
	m, _ := json.Marshal(res)
	var compact bytes.Buffer
	if err := json.Compact(&compact, par.Bytes()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(compact.Bytes(), m) {
		t.Error("WriteJSON differs from json.Marshal")
	}
}
