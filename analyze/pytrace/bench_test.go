package pytrace

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// BenchmarkExtract feeds the records of the corpus engine logs and the
// parser's test logs (every line of each, tracebacks and the rest) to an
// Extractor: the cost of feed and its state handlers.
func BenchmarkExtract(b *testing.B) {
	root := testcorpus.Root()
	var files []string
	for _, g := range []string{
		filepath.Join(root, "..", "shared", "corpus", "engine-logs", "*.log"),
		filepath.Join(root, "examples", "*", "*.log"),
		filepath.Join(root, "ingest", "enginelog", "testdata", "*.log"),
	} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	var recs []record.Record
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := enginelog.Parse(bytes.NewReader(data), p, func(r record.Record) { recs = append(recs, r) }); err != nil {
			b.Fatal(err)
		}
	}
	if len(recs) == 0 {
		b.Skip("no logs")
	}
	b.ResetTimer()
	tbs := 0
	for i := 0; i < b.N; i++ {
		x := NewExtractor()
		for k := range recs {
			x.Feed(&recs[k])
		}
		tbs = len(x.Finish())
	}
	if tbs == 0 {
		b.Fatal("no traceback extracted")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
}
