package tracehtml

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// FuzzWriteEscapes feeds arbitrary trace bytes through the real parser and
// analysis into the report and checks the one property a report of
// untrusted text must keep: whatever the input, each page carries exactly
// the report's own <script> tag and no markup from the trace. Seeded with
// the <script> fixture and small corpus traces.
func FuzzWriteEscapes(f *testing.F) {
	for _, p := range []string{filepath.Join("testdata", "script_injection.log")} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, name := range []string{"comp_failure.log", "comp_metrics.log", "links.log", "export_guard_added.log"} {
		if b, err := os.ReadFile(testcorpus.File(f, "tlparse-inputs", name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		trace := filepath.Join(dir, "dedicated_log_torch_trace_rank_0.log")
		if err := os.WriteFile(trace, data, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := compiles.Analyze([]string{trace}, compiles.Options{Parallel: 1})
		if err != nil {
			return // nothing usable: the CLI reports it, there is no report to write
		}
		out := filepath.Join(dir, "html")
		if err := Write(out, res, Options{}); err != nil {
			t.Fatalf("Write: %v", err)
		}
		filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
				return err
			}
			b, _ := os.ReadFile(p)
			if n := strings.Count(strings.ToLower(string(b)), "<script"); n != 1 {
				t.Errorf("%s: %d <script tags, want only the report's own", p, n)
			}
			return nil
		})
	})
}
