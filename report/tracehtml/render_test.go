package tracehtml

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/internal/testcorpus"
)

// writeBoth renders res with the templates and with their Go twins and
// fails on any file that differs.
func writeBoth(t *testing.T, res *compiles.Result, opts Options) {
	t.Helper()
	dirs := [2]string{t.TempDir(), t.TempDir()}
	for i, goPath := range []bool{false, true} {
		goRender = goPath
		err := Write(dirs[i], res, opts)
		goRender = true
		if err != nil {
			t.Fatal(err)
		}
	}
	files := 0
	err := filepath.WalkDir(dirs[0], func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dirs[0], p)
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(dirs[1], rel))
		if err != nil {
			t.Errorf("%s: written by the templates only", rel)
			return nil
		}
		files++
		if !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Errorf("%s differs at byte %d:\ntemplate %q\ngo       %q", rel, i,
				want[max(0, i-60):min(len(want), i+60)], got[max(0, i-60):min(len(got), i+60)])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 2 {
		t.Fatalf("only %d files written", files)
	}
}

// TestGoRenderSameAsTemplates: the hand-written Go twins of the unit-page
// templates write the templates' bytes, escaping included, on every corpus
// trace, the script-injection fixture, a trace with shared payloads and
// small budgets (continuation pages, side files).
func TestGoRenderSameAsTemplates(t *testing.T) {
	root := testcorpus.Dir(t, "tlparse-inputs")
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var inputs []string
	for _, e := range ents {
		if n := e.Name(); e.IsDir() || filepath.Ext(n) == ".log" || filepath.Ext(n) == ".txt" {
			inputs = append(inputs, filepath.Join(root, n))
		}
	}
	inputs = append(inputs, filepath.Join("testdata", "script_injection.log"), repeatedTrace(t))
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			res := analyze(t, in)
			writeBoth(t, res, Options{})
			writeBoth(t, res, Options{MaxInline: 300, MaxPageInline: 2000, Title: `a <b>"title"</b> & 'q' + x`, Footer: "f\x00oot <i>"})
		})
	}
}

// FuzzGoRenderSameAsTemplates: on arbitrary trace bytes through the real
// parser and analysis, the Go twins write the templates' bytes.
func FuzzGoRenderSameAsTemplates(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "script_injection.log")); err == nil {
		f.Add(b)
	}
	for _, name := range []string{"comp_failure.log", "comp_metrics.log", "links.log", "cache_hit_miss.log"} {
		if b, err := os.ReadFile(testcorpus.File(f, "tlparse-inputs", name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		trace := filepath.Join(t.TempDir(), "dedicated_log_torch_trace_rank_0.log")
		if err := os.WriteFile(trace, data, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := compiles.Analyze([]string{trace}, compiles.Options{Parallel: 1})
		if err != nil {
			return
		}
		writeBoth(t, res, Options{})
	})
}
