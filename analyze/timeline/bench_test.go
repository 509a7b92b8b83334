package timeline

import (
	"os"
	"testing"

	"github.com/bringup-tool/bringup/analyze/versions"
	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/ingest/pytrace"
	"github.com/bringup-tool/bringup/internal/benchlog"
	"github.com/bringup-tool/bringup/record"
)

// BenchmarkPipelineFile runs what diagnose runs per engine log, short of
// the rules: Parse feeding the traceback extractor, this timeline and the
// version detector, over the file named by BRINGUP_BENCH_LOG (see
// internal/benchlog).
func BenchmarkPipelineFile(b *testing.B) {
	path := benchlog.FileFromEnv(b)
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
