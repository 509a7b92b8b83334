package compiles

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/internal/testcorpus"
)

// BenchmarkAnalyzeCorpus analyses the top-level corpus logs, concatenated
// into one file: the summary path of bringup trace, minus output.
func BenchmarkAnalyzeCorpus(b *testing.B) {
	root := testcorpus.Dir(b, "tlparse-inputs")
	matches, _ := filepath.Glob(filepath.Join(root, "*.log"))
	more, _ := filepath.Glob(filepath.Join(root, "*.txt"))
	var data []byte
	for _, m := range append(matches, more...) {
		d, err := os.ReadFile(m)
		if err != nil {
			b.Fatal(err)
		}
		data = append(data, d...)
	}
	p := filepath.Join(b.TempDir(), "corpus.log")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	in := []Input{{Path: p, Rank: -1, RankFrom: "none", Bytes: int64(len(data))}}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		AnalyzeInputs(in, nil, Options{})
	}
}

// BenchmarkAnalyzeFile analyses the trace named by $BENCH_TRACE (skipped
// when unset): a profile of the summary path on a large input, e.g. the
// file scripts/bench-trace builds, with -cpuprofile or -memprofile.
func BenchmarkAnalyzeFile(b *testing.B) {
	p := os.Getenv("BENCH_TRACE")
	if p == "" {
		b.Skip("BENCH_TRACE names no trace file")
	}
	st, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	in := []Input{{Path: p, Rank: -1, RankFrom: "none", Bytes: st.Size()}}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		AnalyzeInputs(in, nil, Options{})
	}
}
