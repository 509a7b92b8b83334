package enginelog

import (
	"bytes"
	"os"
	"testing"

	"github.com/bringup-tool/bringup/testsupport/benchlog"
	"github.com/bringup-tool/bringup/testsupport/cputime"
)

// BenchmarkPeelLines: peel alone (no block bookkeeping, no joiner), one
// peeler over the lines of 8 MiB of the benchmark log with its numbers
// varied (or of BRINGUP_BENCH_LOG when set), with a literal scan, in ns
// and CPU ns per line.
func BenchmarkPeelLines(b *testing.B) {
	var in []byte
	if path := os.Getenv("BRINGUP_BENCH_LOG"); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		in = data[:min(len(data), 8<<20)]
	} else {
		var buf bytes.Buffer
		if err := benchlog.WriteVaried(&buf, 8<<20, 8, true); err != nil {
			b.Fatal(err)
		}
		in = buf.Bytes()
	}
	type scanned struct {
		line         []byte
		noCtl, ascii bool
	}
	var lines []scanned
	for len(in) > 0 {
		line, rest, noCtl, ascii := scanLine(in)
		lines = append(lines, scanned{line, noCtl, ascii})
		in = rest
	}
	b.ResetTimer()
	c0 := cputime.Used(cputime.Self)
	for i := 0; i < b.N; i++ {
		p := peeler{scan: benchScan}
		var l peeled
		for _, s := range lines {
			l.line, l.noCtl, l.ascii = s.line, s.noCtl, s.ascii
			p.peel(&l)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(lines)), "ns/line")
	b.ReportMetric(float64((cputime.Used(cputime.Self)-c0).Nanoseconds())/float64(b.N)/float64(len(lines)), "cpu-ns/line")
}
