package stacks_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/ingest/stackdump"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/stacks"
)

// manyRanks parses the seed-004 dumps n/8 times over, each copy with its
// own pids, as a stand-in for a large job (n ranks).
func manyRanks(b *testing.B, n int) []*stacks.Process {
	files, _ := filepath.Glob(filepath.Join("testdata", "seed004-snap1", "worker_TP*.txt"))
	var procs []*stacks.Process
	for i := 0; len(procs) < n; i++ {
		for _, f := range files {
			res, err := stackdump.ParseFile(f)
			if err != nil {
				b.Fatal(err)
			}
			for _, p := range res.Processes {
				p.PID += i * 1000
				p.Rank = fmt.Sprintf("rank%d", len(procs))
				procs = append(procs, p)
			}
		}
	}
	return procs
}

func BenchmarkAnalyze512Ranks(b *testing.B) {
	procs := manyRanks(b, 512)
	set, err := rules.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		stacks.Analyze(procs, stacks.Options{Level: stacks.DefaultLevel, Conclude: stacks.Conclude(set, nil)})
	}
}

func BenchmarkParseDump(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "seed004-snap1", "worker_TP3.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := stackdump.Parse(bytes.NewReader(data), "x"); err != nil {
			b.Fatal(err)
		}
	}
}
