package watch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// track feeds data to a tracker in line-aligned chunks of about chunk
// bytes, as the tee does, and finishes it. full is how many records are
// parsed in full before lines may be skipped.
func track(data []byte, chunk, full int) *engineTracker {
	t := NewEngineTracker("output.log").(*engineTracker)
	t.full = full
	for len(data) > 0 {
		n := min(chunk, len(data))
		if k := bytes.IndexByte(data[n-1:], '\n'); k >= 0 {
			n += k
		} else {
			n = len(data)
		}
		t.Write(data[:n])
		data = data[n:]
	}
	t.Finish()
	return t
}

// sameAsFull checks that the sparse parse gives what the full one does:
// the phases (names, ranks, details, statuses, times, lines), the ready
// line, the pid → rank names. It returns how many lines were skipped.
func sameAsFull(t *testing.T, name string, data []byte, chunk int) int {
	t.Helper()
	full := track(data, chunk, 1<<62)
	sparse := track(data, chunk, 0)
	if got, want := sparse.Phases(), full.Phases(); !reflect.DeepEqual(got, want) {
		t.Errorf("%s (chunks of %d): phases differ\nsparse %+v\nfull   %+v", name, chunk, got, want)
	}
	r1, l1 := sparse.Ready()
	r2, l2 := full.Ready()
	if r1 != r2 || l1 != l2 {
		t.Errorf("%s: ready %v %q, full parse %v %q", name, r1, l1, r2, l2)
	}
	if !reflect.DeepEqual(sparse.ranks, full.ranks) {
		t.Errorf("%s: ranks %v, full parse %v", name, sparse.ranks, full.ranks)
	}
	if sparse.live.Stats().Lines > full.live.Stats().Lines {
		t.Errorf("%s: sparse parsed more lines (%d) than full (%d)", name, sparse.live.Stats().Lines, full.live.Stats().Lines)
	}
	return int(full.live.Stats().Lines - sparse.live.Stats().Lines)
}

// The real engine logs (the corpus, the examples, the parser's and the
// timeline's test logs) give the same phases, ready line and rank names
// whether lines are skipped or not, in small and large chunks.
func TestSparseTrackerMatchesFullOnCorpus(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(testcorpus.Dir(t, "engine-logs"), "*.log"))
	for _, g := range []string{"../examples/*/*.log", "../analyze/timeline/testdata/*.log", "../ingest/enginelog/testdata/*.log"} {
		m, _ := filepath.Glob(g)
		paths = append(paths, m...)
	}
	if len(paths) < 10 {
		t.Fatalf("found only %d logs: %v", len(paths), paths)
	}
	skipped := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, chunk := range []int{64, 256, 4096, 1 << 20} {
			skipped += sameAsFull(t, p, data, chunk)
		}
	}
	if skipped == 0 {
		t.Error("no line of the corpus was skipped: the sparse path was not exercised")
	}
}

// A TP=2 boot that floods between its markers: a process that first
// appears mid-flood gets its rank name, an error fails its rank's open
// phase, the markers inside the flood are all found, and almost every
// flood line is skipped.
func TestSparseTrackerFlood(t *testing.T) {
	var b bytes.Buffer
	line := func(pid, tp int, lvl string, sec int, msg string) {
		fmt.Fprintf(&b, "(Worker_TP%d pid=%d) %s 11-29 23:%02d:%02d [gpu_model_runner.py:2912] %s\n", tp, pid, lvl, sec/60, sec%60, msg)
	}
	flood := func(sec int, pids ...int) {
		for i := 0; i < 5000; i++ {
			for tp, pid := range pids {
				line(pid, tp, "INFO", sec, "flood line "+fmt.Sprint(i)+" padding padding padding")
			}
		}
	}
	line(100, 0, "INFO", 0, "Starting to load model /m...")
	line(101, 1, "INFO", 0, "Starting to load model /m...")
	flood(1, 100, 101)
	line(100, 0, "INFO", 9, "Loading weights took 8.0 seconds")
	flood(10, 100, 101)
	line(101, 1, "INFO", 12, "Loading weights took 11.0 seconds")
	flood(20, 100, 101, 102) // pid 102 first appears in the flood
	line(100, 0, "INFO", 30, "Using cache directory: /c/rank_0_0/backbone for vLLM's torch.compile")
	line(101, 1, "INFO", 30, "Using cache directory: /c/rank_1_0/backbone for vLLM's torch.compile")
	flood(31, 100, 101)
	line(100, 0, "INFO", 40, "Dynamo bytecode transform time: 9.50 s")
	flood(41, 100, 101)
	line(101, 1, "ERROR", 50, "worker died")
	flood(51, 100)
	data := b.Bytes()
	for _, chunk := range []int{4096, 64 << 10, 1 << 20} {
		skipped := sameAsFull(t, "flood", data, chunk)
		// A chunk that holds a marker is parsed whole: of 1 MiB chunks,
		// most hold one of the 8 markers.
		if total := bytes.Count(data, []byte{'\n'}); chunk < 1<<20 && skipped < total*9/10 || skipped == 0 {
			t.Errorf("chunks of %d: skipped %d of %d lines, want at least 90%%", chunk, skipped, total)
		}
	}
	tr := track(data, 64<<10, 0)
	if tr.Rank(102) == "" {
		t.Errorf("pid 102, first seen mid-flood, has no rank name")
	}
	var failed, load int
	for _, p := range tr.Phases() {
		if p.Status == "failed" {
			failed++
		}
		if p.Name == "load" && p.Status == "done" {
			load++
		}
	}
	if load != 2 || failed == 0 {
		t.Errorf("phases %+v: want 2 loads done and a failed phase on the rank that logged an error", tr.Phases())
	}
}

func FuzzSparseTracker(f *testing.F) {
	f.Add([]byte("(Worker_TP0 pid=1) INFO 11-29 23:00:00 [a.py:1] x\n(Worker_TP0 pid=1) INFO 11-29 23:00:00 [a.py:1] y\n(Worker_TP0 pid=1) INFO 11-29 23:00:01 [a.py:1] Loading weights took 1 s\n"))
	f.Add([]byte("(Worker_TP0 pid=1) INFO 11-29 23:00:00 [a.py:1] x\n(Worker_TP0 pid=1) WARNING 11-29 23:00:00 [a.py:1] y\n  continued\n(Worker_TP0 pid=1) ERROR 11-29 23:00:01 [a.py:1] z\nTraceback (most recent call last)\n"))
	if d, err := os.ReadFile(testcorpus.File(f, "engine-logs", "vllm-issue-21858.log")); err == nil {
		f.Add(d[:min(len(d), 8192)])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsFull(t, "fuzz", data, 64)
	})
}
