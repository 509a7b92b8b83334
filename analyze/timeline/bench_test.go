package timeline

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/bringup-tool/bringup/analyze/pytrace"
	"github.com/bringup-tool/bringup/analyze/versions"
	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/litscan"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/benchlog"
)

// BenchmarkPipelineFile runs what diagnose runs per engine log, short of
// the rules: Parse feeding the traceback extractor, this timeline and the
// version detector, over the file named by BRINGUP_BENCH_LOG (see
// testsupport/benchlog).
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

// feedRecords parses up to the first 64 MiB of the BRINGUP_BENCH_LOG file
// (without it, a 32 MiB varied log written here) into records, each with
// whether its text holds one of Markers() (what diagnose's literal mask
// tells the timeline's goroutine).
func feedRecords(b *testing.B) ([]record.Record, []bool) {
	var in io.Reader
	name := "bench.log"
	if path := os.Getenv("BRINGUP_BENCH_LOG"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		in, name = io.LimitReader(f, 64<<20), path
	} else {
		var buf bytes.Buffer
		if err := benchlog.WriteVaried(&buf, 32<<20, 8, true); err != nil {
			b.Fatal(err)
		}
		in = &buf
	}
	var recs []record.Record
	st, err := enginelog.Parse(in, name, func(r record.Record) { recs = append(recs, r) })
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Bytes)
	set := litscan.New(Markers())
	marks := make([]bool, len(recs))
	for i := range recs {
		marks[i] = set.Any(recs[i].Text)
	}
	return recs, marks
}

// BenchmarkFeed is the timeline's goroutine in diagnose: every record fed,
// one whose text holds a marker with that text borrowed from elsewhere,
// either through a copy of the record ("copy") or through FeedText
// ("text").
func BenchmarkFeed(b *testing.B) {
	recs, marks := feedRecords(b)
	for _, how := range []string{"copy", "text"} {
		b.Run(how, func(b *testing.B) {
			for b.Loop() {
				feedAll(recs, marks, how == "text")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(recs)), "ns/record")
		})
	}
}

// feedAll is BenchmarkFeed's loop (a function of its own so a profiler can
// count it alone).
//
//go:noinline
func feedAll(recs []record.Record, marks []bool, text bool) {
	tl := New()
	for i := range recs {
		switch {
		case !marks[i]:
			tl.Feed(&recs[i], false)
		case text:
			tl.FeedText(&recs[i], recs[i].Text)
		default:
			r := recs[i]
			tl.Feed(&r, true)
		}
	}
	tl.Finish()
}
