package tracehtml

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// writeBoth renders res with the templates and with their Go twins and
// fails on any file that differs.
func writeBoth(t *testing.T, res *compiles.Result, opts Options) {
	t.Helper()
	dirs := [2]string{t.TempDir(), t.TempDir()}
	for i, templates := range []bool{true, false} {
		o := opts
		o.templates = templates
		if err := Write(dirs[i], res, o); err != nil {
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

// FuzzRenderEscapes: the Go twins escape every string, URL and number the
// way the templates do, on views built from arbitrary text (no trace, no
// disk: thousands of cases a second).
func FuzzRenderEscapes(f *testing.F) {
	f.Add("<script>x</script>", "../../", "unit_0_0.html#a1", "a&b'c\"+d", 12.5, 3)
	f.Add("javascript:alert(1)", "", "mailto:x@y", "\x00\xff\xfe", 1e21, 9)
	f.Add("%zz %41 é", "http://h/", "HTTPS://x/y?q=1&r=2", "title", -0.0001, 0)
	f.Fuzz(func(t *testing.T, a, b, c, d string, x float64, n int) {
		page := pageMeta{Title: a, Subtitle: d, Root: b, Footer: c, Back: n%2 == 0}
		tl := &timelineView{Width: x, Height: x * 2, Ticks: []tick{{X: x, Label: a}}, Lanes: []laneView{{Name: b, Full: c, LabelY: x}},
			Bars:   []bar{{X: x, Y: 1, W: x / 3, H: 2, Class: d, Title: a, Href: c}, {Class: "f-open", Title: b}},
			Legend: legend, Dropped: n, Relative: n%3 == 0}
		top := unitTop{Page: page, Status: a, StatusClass: b, VerdictClass: c, Headline: d, Points: []string{a, d},
			Facts: []kv{{a, b}, {c, d}}, Timeline: tl, PhaseNote: c, Stack: []frameRow{{a, b}, {c, d}}, Inner: frameRow{d, a},
			Metrics: []kv{{d, c}}, Links: []kv{{b, a}}, Artifacts: []artifactHead{{Anchor: a, Href: c, Name: b, Meta: d, Open: n%2 == 1}}}
		if n%4 == 0 {
			top.Timeline, top.Stack, top.Artifacts, top.Points = nil, nil, nil, nil
		}
		head := artifactHead{Anchor: a, Href: c, Name: b, Meta: d, Open: n%2 == 0}
		cases := []struct {
			name string
			data any
		}{
			{"unit_top", top}, {"unit_bottom", top}, {"artifact_open", head},
			{"artifact_close", artifactTail{Full: c, Shown: a, Err: b}}, {"artifact_close", artifactTail{}},
			{"artifact_shared", sharedHead{artifactHead: head, Src: c, Full: b, Times: n, Height: d}},
			{"artifact_shared", sharedHead{artifactHead: head, Src: b, Times: n}},
		}
		for _, k := range cases {
			var want, got bytes.Buffer
			if err := pages().ExecuteTemplate(&want, k.name, k.data); err != nil {
				t.Skip(err) // the template itself refuses (nothing to compare)
			}
			if err := (&site{}).renderPage(&got, k.name, k.data); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				w, g := want.Bytes(), got.Bytes()
				i := 0
				for i < len(g) && i < len(w) && g[i] == w[i] {
					i++
				}
				t.Fatalf("%s differs at byte %d:\ntemplate %q\ngo       %q", k.name, i, w[max(0, i-60):min(len(w), i+60)], g[max(0, i-60):min(len(g), i+60)])
			}
		}
	})
}
