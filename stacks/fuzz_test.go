package stacks_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/ingest/stackdump"
	reportstacks "github.com/bringup-tool/bringup/report/stacks"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/stacks"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// FuzzAnalyze: whatever the reader makes of an input, analysis at every
// level and all three renderers run without panicking, and every thread
// lands in exactly one bucket.
func FuzzAnalyze(f *testing.F) {
	dir := filepath.Join(testcorpus.Root(), "..", "shared", "corpus", "stackdumps")
	files, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	more, _ := filepath.Glob(filepath.Join("testdata", "seed004-*", "worker_TP[05].txt"))
	for _, p := range append(files, more...) {
		if b, err := os.ReadFile(p); err == nil {
			// At most the first 2 KiB of whole lines (the seed004 dumps are
			// 6-7 KiB of recursion): each exec analyses at four levels and
			// renders three ways, and minimizing inputs grown from the big
			// seeds stalled the fuzzer.
			if len(b) > 2048 {
				b = b[:bytes.LastIndexByte(b[:2048], '\n')+1]
			}
			f.Add(b)
		}
	}
	set, err := rules.Builtin()
	if err != nil {
		f.Fatal(err)
	}
	levels := []stacks.Level{{Kind: stacks.LevelExact}, {Kind: stacks.LevelLines}, stacks.DefaultLevel, {Kind: stacks.LevelLeaf, K: 2}}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := stackdump.Parse(bytes.NewReader(data), "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		// Twice: the second copy is a snapshot of the same pids.
		procs := append(append([]*stacks.Process(nil), res.Processes...), res.Processes...)
		for _, lv := range levels {
			a := stacks.Analyze(procs, stacks.Options{Level: lv, Conclude: stacks.Conclude(set, nil)})
			n, want := 0, 0
			for _, b := range a.Buckets {
				n += b.Count
			}
			for _, p := range a.Current {
				want += len(p.Threads)
			}
			if n != want {
				t.Fatalf("level %s: buckets hold %d threads of %d", lv, n, want)
			}
			_ = a.Verdict()
			if err := reportstacks.Text(io.Discard, a, reportstacks.TextOptions{All: true}); err != nil {
				t.Fatal(err)
			}
			if err := reportstacks.JSON(io.Discard, a); err != nil {
				t.Fatal(err)
			}
			if err := reportstacks.Collapsed(io.Discard, a, true); err != nil {
				t.Fatal(err)
			}
		}
	})
}
