package timeline

import (
	"os"
	"testing"

	"github.com/bringup-tool/bringup/analyze/versions"
	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/ingest/pytrace"
	"github.com/bringup-tool/bringup/record"
)

// BenchmarkPipelineFile runs what diagnose runs per engine log, short of
// the rules: Parse feeding the traceback extractor, this timeline and the
// version detector, over the file named by BRINGUP_BENCH_LOG (see
// ingest/enginelog's TestGenerateBenchLog).
func BenchmarkPipelineFile(b *testing.B) {
	path := os.Getenv("BRINGUP_BENCH_LOG")
	if path == "" {
		b.Skip("set BRINGUP_BENCH_LOG to a log file")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	for i := 0; i < b.N; i++ {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		x := pytrace.NewExtractor()
		tl := New()
		var vd versions.Detector
		_, err = enginelog.Parse(f, path, func(r record.Record) { x.Add(r); tl.Add(r); vd.Add(r) })
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		tbs := x.Finish()
		phases, _ := tl.Finish()
		b.ReportMetric(float64(len(tbs)), "tracebacks")
		b.ReportMetric(float64(len(phases)), "phases")
	}
}
