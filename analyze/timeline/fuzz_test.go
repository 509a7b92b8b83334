package timeline

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/analyze/versions"
	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/internal/testcorpus"
	"github.com/bringup-tool/bringup/record"
)

// FuzzTimeline feeds parsed logs to the timeline and the version detector,
// which read numbers and names out of free text.
func FuzzTimeline(f *testing.F) {
	var files []string
	m, _ := filepath.Glob(filepath.Join(testcorpus.Root(), "..", "shared", "corpus", "engine-logs", "*.log"))
	files = append(files, m...)
	m, _ = filepath.Glob(filepath.Join("testdata", "*.log"))
	files = append(files, m...)
	m, _ = filepath.Glob(filepath.Join("..", "..", "ingest", "enginelog", "testdata", "*.log"))
	files = append(files, m...)
	m, _ = filepath.Glob(filepath.Join("..", "versions", "testdata", "*.log"))
	files = append(files, m...)
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b := New()
		var d versions.Detector
		st, err := enginelog.Parse(bytes.NewReader(data), "f", func(r record.Record) { b.Add(r); d.Add(r) })
		if err != nil {
			t.Fatal(err)
		}
		phases, gaps := b.Finish()
		for _, p := range phases {
			switch p.Status {
			case StatusDone, StatusFailed, StatusUnfinished:
			default:
				t.Fatalf("status %q", p.Status)
			}
			if p.Line < 1 || int64(p.Line) > st.Lines || p.Name == "" {
				t.Fatalf("phase %+v of %d lines", p, st.Lines)
			}
		}
		if len(gaps) > GapsPerSource {
			t.Fatalf("%d gaps", len(gaps))
		}
		for k, v := range d.Versions() {
			if v == "" || v[0] < '0' || v[0] > '9' {
				t.Fatalf("version %s=%q", k, v)
			}
		}
	})
}
