package watch

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/store"
)

func cpu(who int) time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWatchFlood watches a boot that prints as fast as it can (the
// flood.py fake, vLLM-style lines) with the full live pipeline (tee to
// file and a terminal stand-in, enginelog + timeline + versions on every
// line), and reports bringup's CPU time against the boot's (rusage of
// this process vs its reaped children), the throughput, and lines lost
// (printed minus saved; must be 0).
//
//	FLOOD_LINES=2000000 go test -run XXX -bench WatchFlood -benchtime 1x ./watch
//
// FLOOD_LOGGING=K makes the boot K processes logging through Python's
// logging module (a TP=K boot flooding); FLOOD_NO_PARSE=1 measures the tee
// alone.
func BenchmarkWatchFlood(b *testing.B) {
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("python3 is not on PATH")
	}
	n := 1000000
	if s := os.Getenv("FLOOD_LINES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "flood.py"))
	tracker := NewEngineTracker
	if os.Getenv("FLOOD_NO_PARSE") != "" {
		tracker = nil // tee only: the floor
	}
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		var term countingWriter
		selfBefore, kidsBefore := cpu(syscall.RUSAGE_SELF), cpu(syscall.RUSAGE_CHILDREN)
		start := time.Now()
		command := []string{py, script, strconv.Itoa(n), "stdout"}
		if k := os.Getenv("FLOOD_LOGGING"); k != "" {
			command = append(command, "logging", k)
		}
		run, err := Run(context.Background(), Config{
			Command: command, Dir: dir,
			Stdout: &term, Stderr: &term, NewTracker: tracker, Poll: 200 * time.Millisecond,
		})
		if err != nil {
			b.Fatal(err)
		}
		wall := time.Since(start)
		self, kids := cpu(syscall.RUSAGE_SELF)-selfBefore, cpu(syscall.RUSAGE_CHILDREN)-kidsBefore
		saved, _ := os.ReadFile(filepath.Join(dir, "output.log"))
		lines := bytes.Count(saved, []byte{'\n'})
		if run.Outcome != store.OutcomeExited || lines != n || run.Lines != int64(n) || term.n != run.Bytes {
			b.Fatalf("outcome %s, saved %d lines (counted %d), printed %d; terminal got %d of %d bytes", run.Outcome, lines, run.Lines, n, term.n, run.Bytes)
		}
		b.ReportMetric(float64(n-lines), "lines-lost")
		b.ReportMetric(float64(run.Bytes)/wall.Seconds()/1e6, "MB/s")
		b.ReportMetric(self.Seconds(), "watch-cpu-s")
		b.ReportMetric(kids.Seconds(), "boot-cpu-s")
		b.ReportMetric(100*self.Seconds()/kids.Seconds(), "%cpu-vs-boot")
	}
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkTracker is the live parse alone (enginelog.Live + timeline +
// versions) over vLLM-style lines, fed in 1 MiB chunks as the tee does.
func BenchmarkTracker(b *testing.B) {
	var buf bytes.Buffer
	for i := 0; buf.Len() < 1<<20; i++ {
		buf.WriteString("(Worker_TP" + strconv.Itoa(i%8) + " pid=" + strconv.Itoa(1000+i%8) + ") INFO 11-29 23:00:00 [gpu_model_runner.py:2912] flood line " + strconv.Itoa(i) + " padding padding padding padding\n")
	}
	chunk := buf.Bytes()
	lines := bytes.Count(chunk, []byte{'\n'})
	b.SetBytes(int64(len(chunk)))
	tr := NewEngineTracker("output.log")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr.Write(chunk)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lines), "ns/line")
}
