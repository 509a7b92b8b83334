package compiles

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// BenchmarkAnalyzeCorpus analyses the top-level corpus logs, concatenated
// into one file: the summary path of bringup trace, minus output.
func BenchmarkAnalyzeCorpus(b *testing.B) {
	data := testcorpus.TraceBlock(b)
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
	in := benchTrace(b)
	b.SetBytes(in[0].Bytes)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		AnalyzeInputs(in, nil, Options{})
	}
}

// BenchmarkResultHeap reports the live heap a finished analysis of
// $BENCH_TRACE holds (skipped when unset): live-MB in all, B per compile,
// and the counts of what grows with a trace's length; with
// $BENCH_HEAP_PROFILE it also writes a heap profile taken while the
// result is alive.
func BenchmarkResultHeap(b *testing.B) {
	in := benchTrace(b)
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res := AnalyzeInputs(in, nil, Options{})
		runtime.GC()
		runtime.ReadMemStats(&after)
		live := float64(after.HeapAlloc) - float64(before.HeapAlloc)
		b.ReportMetric(live/1e6, "live-MB")
		b.ReportMetric(live/float64(max(len(res.Compiles), 1)), "B/compile")
		b.ReportMetric(float64(len(res.Compiles)), "compiles")
		b.ReportMetric(float64(len(res.Cache)), "lookups")
		b.ReportMetric(float64(len(res.Spans)), "phases")
		b.ReportMetric(float64(len(res.Artifacts)), "artifacts")
		if hp := os.Getenv("BENCH_HEAP_PROFILE"); hp != "" { // what the result holds, by allocation site
			f, err := os.Create(hp)
			if err != nil {
				b.Fatal(err)
			}
			pprof.WriteHeapProfile(f)
			f.Close()
		}
		runtime.KeepAlive(res)
	}
}

// benchTrace is the input named by $BENCH_TRACE; the benchmark is skipped
// when it is unset.
func benchTrace(b *testing.B) []Input {
	p := os.Getenv("BENCH_TRACE")
	if p == "" {
		b.Skip("BENCH_TRACE names no trace file")
	}
	st, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	return []Input{{Path: p, Rank: -1, RankFrom: "none", Bytes: st.Size()}}
}
