package enginelog

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/bringup-tool/bringup/litscan"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/benchlog"
	"github.com/bringup-tool/bringup/testsupport/cputime"
)

func benchInput(b *testing.B) []byte {
	var buf bytes.Buffer
	if err := benchlog.Write(&buf, 64<<20, 8); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkParse: the parser alone, on 64 MiB in memory.
func BenchmarkParse(b *testing.B) {
	in := benchInput(b)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cputime.Used(cputime.Self)
	for i := 0; i < b.N; i++ {
		var n int64
		if _, err := Parse(bytes.NewReader(in), "bench.log", func(r record.Record) { n++ }); err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			b.Fatal("no records")
		}
	}
	// CPU time as well: what the parse costs, whatever else runs.
	b.ReportMetric(float64((cputime.Used(cputime.Self)-c0).Nanoseconds())/float64(b.N)/1e6, "cpu-ms/op")
}

// BenchmarkParseFile parses the file named by BRINGUP_BENCH_LOG (made by
// go run ./testsupport/benchlog/genlog), for throughput and peak-RSS runs on large inputs.
func BenchmarkParseFile(b *testing.B) {
	path := benchlog.FileFromEnv(b)
	for i := 0; i < b.N; i++ {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		st, err := Parse(f, path, func(record.Record) {})
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Records), "records")
	}
}

// The generated log parses as intended: every line recognised, tracebacks
// and multi-line messages joined per worker.
func TestGeneratedLogShape(t *testing.T) {
	var buf bytes.Buffer
	// 4 MiB reaches the first traceback (at 500 s of serving); the pip
	// freeze lines that head the log carry no prefix by design.
	if err := benchlog.Write(&buf, 4<<20, 8); err != nil {
		t.Fatal(err)
	}
	recs, st := parseBytes(t, bytes.TrimPrefix(buf.Bytes(), []byte(benchlog.Header)))
	if st.Recognized != st.Lines || st.Skipped != 0 {
		t.Fatalf("stats %+v", st)
	}
	joined := 0
	for _, r := range recs {
		if r.EndLine > r.Line {
			joined++
		}
		if r.Rank.Role == "Worker" && r.Rank.PID != benchlog.WorkerPID(r.Rank.TP) {
			t.Fatalf("line %d: rank %+v", r.Line, r.Rank)
		}
	}
	if joined == 0 || int64(len(recs)) >= st.Lines {
		t.Errorf("%d records from %d lines, %d joined", len(recs), st.Lines, joined)
	}
}

// BenchmarkScanLine: peelBlock's line scan over the benchmark log, in
// CPU ns per line.
func BenchmarkScanLine(b *testing.B) {
	in := benchInput(b)[:8<<20]
	lines := bytes.Count(in, []byte("\n"))
	b.SetBytes(int64(len(in)))
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		for data := in; len(data) > 0; {
			var ok bool
			_, data, ok, _ = scanLine(data)
			if ok {
				n++
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(lines), "ns/line")
	if n == 0 {
		b.Fatal("no plain line")
	}
}

// benchScan: literals like the ones diagnose's gate scans for (both
// kinds, and two holding a digit).
var benchScan = litscan.NewGrouped(
	[]string{"Traceback (most recent call last)", `File "`, "==", "gpu_memory_utilization", "/python3.", " python3.",
		"collect2: fatal error: c", "vLLM version", "Capturing CUDA graph", "Model loading took", "CUDA out of memory", "NCCL error"},
	[]uint64{1, 1, 2, 4, 2, 2, 8, 2, 16, 16, 8, 8})

// BenchmarkPeelBlock: one peeler over 1 MiB blocks of 64 MiB of the
// benchmark log with its numbers varied (or of BRINGUP_BENCH_LOG when
// set), with a literal scan, in CPU ns per line.
func BenchmarkPeelBlock(b *testing.B) {
	var in []byte
	if path := os.Getenv("BRINGUP_BENCH_LOG"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		in = make([]byte, 64<<20)
		n, _ := io.ReadFull(f, in)
		f.Close()
		in = in[:n]
	} else {
		var buf bytes.Buffer
		if err := benchlog.WriteVaried(&buf, 64<<20, 8, true); err != nil {
			b.Fatal(err)
		}
		in = buf.Bytes()
	}
	var blocks []*block
	for len(in) > 0 {
		k := min(len(in), 1<<20)
		if j := bytes.LastIndexByte(in[:k], '\n'); j >= 0 && k < len(in) {
			k = j + 1
		}
		blocks = append(blocks, &block{data: in[:k]})
		in = in[k:]
	}
	lines := 0
	for _, bl := range blocks {
		lines += bytes.Count(bl.data, []byte("\n"))
	}
	b.ResetTimer()
	c0 := cputime.Used(cputime.Self)
	for i := 0; i < b.N; i++ {
		p := peeler{scan: benchScan}
		for _, bl := range blocks {
			p.peelBlock(bl, 0)
		}
	}
	b.ReportMetric(float64((cputime.Used(cputime.Self)-c0).Nanoseconds())/float64(b.N)/float64(lines), "cpu-ns/line")
}
