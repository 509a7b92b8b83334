package diagnose

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/testsupport/benchlog"
	"github.com/bringup-tool/bringup/testsupport/cputime"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// benchLog is the benchmark log (testsupport/benchlog, the log
// scripts/bench-diagnose measures) of about size bytes.
func benchLog(size int) []byte {
	var b bytes.Buffer
	benchlog.Write(&b, int64(size), 8)
	return b.Bytes()
}

// BenchmarkDiagnose is the whole pipeline on a 32 MiB multi-rank log read
// from a file (parse, tracebacks, timeline, versions, rules).
func BenchmarkDiagnose(b *testing.B) {
	data := benchLog(32 << 20)
	p := filepath.Join(b.TempDir(), "bench.log")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	runPipeline(b, p, int64(len(data)), func(d *Diagnosis) {
		if d.Findings[0].Rule != "aot-compile-graph-break" {
			b.Fatalf("%+v", d.Findings)
		}
	})
}

// runPipeline runs diagnose on path b.N times, with check on each
// diagnosis, and reports MB per CPU-second: what the pipeline costs,
// whatever else runs on the machine.
func runPipeline(b *testing.B, path string, size int64, check func(*Diagnosis)) {
	set, err := rules.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cputime.Used(cputime.Self)
	for i := 0; i < b.N; i++ {
		d, err := Run([]string{path}, Options{Rules: set})
		if err != nil {
			b.Fatal(err)
		}
		check(d)
	}
	cpu := (cputime.Used(cputime.Self) - c0).Seconds()
	b.ReportMetric(float64(size)*float64(b.N)/1e6/cpu, "MB/cpu-s")
}

// BenchmarkDiagnoseFile runs the whole pipeline on the log named by
// BRINGUP_BENCH_LOG (e.g. one written by `OUT=… scripts/bench-diagnose`),
// for CPU profiles on a realistic size; skipped when unset.
func BenchmarkDiagnoseFile(b *testing.B) {
	p := benchlog.FileFromEnv(b)
	fi, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	runPipeline(b, p, fi.Size(), func(*Diagnosis) {})
}

// BenchmarkCrashLoop is the whole pipeline on a crash loop: the corpus
// engine logs concatenated and repeated to 96 MiB (the 500 MB log of
// docs/PERFORMANCE.md's crash-loop sections, smaller), so almost every
// line is an error or a traceback's. Two tracebacks a copy: the extractor
// is full (pytrace.MaxTracebacks) about three quarters of the way in.
func BenchmarkCrashLoop(b *testing.B) {
	logs, _ := filepath.Glob(filepath.Join(testcorpus.Dir(b, "engine-logs"), "*.log"))
	var one []byte
	for _, p := range logs {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		one = append(one, data...)
	}
	if len(one) == 0 {
		b.Fatal("no corpus engine logs")
	}
	data := bytes.Repeat(one, (96<<20)/len(one)+1)
	p := filepath.Join(b.TempDir(), "crashloop.log")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	runPipeline(b, p, int64(len(data)), func(d *Diagnosis) {
		if len(d.Findings) == 0 {
			b.Fatal("no findings")
		}
	})
}

// BenchmarkSmallFiles: a directory of 500 one-line logs (per-input setup:
// parser blocks, record batches, goroutines).
func BenchmarkSmallFiles(b *testing.B) {
	dir := b.TempDir()
	for i := 0; i < 500; i++ {
		body := fmt.Sprintf("(Worker_TP%d pid=%d) INFO 05-28 18:58:32 [gpu_worker.py:298] Available KV cache memory: 18.36 GiB\n", i%8, 1000+i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.log", i)), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	set, err := rules.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Run([]string{dir}, Options{Rules: set}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/500, "µs/file")
}

// BenchmarkGateMask: the per-line literal scan of the built-in rules and
// analyzers (what the parser's peelers run on every body) over the bodies
// of the benchmark log.
func BenchmarkGateMask(b *testing.B) {
	set, err := rules.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	g := gateFor(set)
	var bodies []string
	size := 0
	for _, line := range bytes.Split(benchLog(1<<20), []byte("\n")) {
		// The body follows the vLLM header's "] ".
		if k := bytes.Index(line, []byte("] ")); k >= 0 {
			bodies = append(bodies, string(line[k+2:]))
			size += len(line) - k - 2
		}
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	var m uint64
	c0 := cputime.Used(cputime.Self)
	for i := 0; i < b.N; i++ {
		for _, s := range bodies {
			m |= g.scan.Mask(s)
		}
	}
	// CPU time, not wall: a loaded machine does not inflate it as much.
	b.ReportMetric(float64((cputime.Used(cputime.Self)-c0).Nanoseconds())/float64(b.N)/float64(len(bodies)), "cpu-ns/line")
	if m == 0 {
		b.Fatal("no literal found")
	}
}
