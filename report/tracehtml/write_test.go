package tracehtml

import (
	"fmt"
	"html"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/ingest/torchtrace"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func analyze(t testing.TB, args ...string) *compiles.Result {
	t.Helper()
	res, err := compiles.Analyze(args, compiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Findings as `bringup trace` concludes them, so the report shows them.
	set, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	res.Findings = compiles.Conclude(res, set)
	return res
}

func render(t testing.TB, res *compiles.Result, opts Options) string {
	t.Helper()
	dir := t.TempDir()
	if err := Write(dir, res, opts); err != nil {
		t.Fatal(err)
	}
	return dir
}

var linkRE = regexp.MustCompile(`(href|src)="([^"]*)"`)

// checkSite walks a written report: every local link resolves, nothing
// points off the machine, and each page has exactly the one script tag the
// report ships.
func checkSite(t *testing.T, dir string) (pages map[string]string) {
	t.Helper()
	pages = map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		page := string(b)
		pages[filepath.ToSlash(rel)] = page
		if n := strings.Count(strings.ToLower(page), "<script"); n != 1 {
			t.Errorf("%s: %d <script tags, want 1 (the report's own)", rel, n)
		}
		for _, m := range linkRE.FindAllStringSubmatch(page, -1) {
			u := html.UnescapeString(m[2])
			switch {
			case m[1] == "href" && strings.HasPrefix(u, "https://"):
				// a reference a person may click; nothing loads it
				if !strings.Contains(page, `rel="noopener noreferrer" href="`+m[2]) {
					t.Errorf("%s: external link %s without rel=noopener noreferrer", rel, u)
				}
			case strings.HasPrefix(u, "#"):
				if !strings.Contains(page, `id="`+u[1:]+`"`) {
					t.Errorf("%s: anchor %s has no target", rel, u)
				}
			case strings.Contains(u, "://") || strings.HasPrefix(u, "//"):
				t.Errorf("%s: links off the machine: %s", rel, u)
			default:
				file, frag, _ := strings.Cut(u, "#")
				target, err := os.ReadFile(filepath.Join(filepath.Dir(p), filepath.FromSlash(file)))
				if err != nil {
					t.Errorf("%s: broken link %s", rel, u)
				} else if frag != "" && !strings.Contains(string(target), `id="`+frag+`"`) {
					t.Errorf("%s: link %s: no such anchor there", rel, u)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pages["index.html"]; !ok {
		t.Fatal("no index.html")
	}
	return pages
}

func TestWriteCorpus(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want []string // strings the index must contain (HTML-escaped form)
	}{
		{"comp_failure", []string{testcorpus.File(t, "tlparse-inputs", "comp_failure.log")},
			[]string{"BackendCompilerFailed", "broken_backend", "1 compile of 1 failed", `id="findings"`}},
		{"comp_metrics", []string{testcorpus.File(t, "tlparse-inputs", "comp_metrics.log")},
			[]string{"graph break", "[0/0]", "[1/0]", "[2/0]"}},
		{"cache_hit_miss", []string{testcorpus.File(t, "tlparse-inputs", "cache_hit_miss.log")},
			[]string{`class="pill c-hit">hit`, `class="pill c-miss">miss`, `class="pill c-bypass">bypass`, "flex_attention"}},
		{"multi_rank_logs", []string{testcorpus.Dir(t, "tlparse-inputs/multi_rank_logs")},
			[]string{"rank 0", "rank 3", "Diverging", "<li>rank 0, rank 2:"}},
		{"links", []string{testcorpus.File(t, "tlparse-inputs", "links.log")},
			[]string{"[0/0]"}},
		{"export", []string{testcorpus.File(t, "tlparse-inputs", "export.log")},
			[]string{"no compile id", "outside any compile"}},
	}
	// strings some unit page must contain
	unitWant := map[string][]string{
		"links":        {"link: manifold_url</dt><dd>https://www.google.com"},
		"comp_failure": {"dynamo_error", "BackendCompilerFailed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := analyze(t, tc.args...)
			dir := render(t, res, Options{})
			pages := checkSite(t, dir)
			index := pages["index.html"]
			for _, w := range tc.want {
				if !strings.Contains(index, html.EscapeString(w)) && !strings.Contains(index, w) {
					t.Errorf("index lacks %q", w)
				}
			}
			for _, w := range unitWant[tc.name] {
				found := false
				for name, page := range pages {
					found = found || (name != "index.html" && strings.Contains(page, w))
				}
				if !found {
					t.Errorf("no unit page contains %q", w)
				}
			}
			// One page per compile unit (plus pages for events outside any compile).
			units := 0
			for p := range pages {
				if strings.HasPrefix(p, "units/") {
					units++
				}
			}
			if units < len(res.Compiles) {
				t.Errorf("%d unit pages for %d compile units", units, len(res.Compiles))
			}
			// Every payload shown in full on its page, escaped: inline, or,
			// when the trace repeats it, in the artifact's frame, whose
			// shared page holds it.
			s := newSite(res, Options{}.withDefaults())
			for _, u := range s.units {
				page := pages[u.File]
				for j, ai := range u.Artifacts {
					a := res.Artifacts[ai]
					if a.Envelope || a.Length == 0 || a.Length > 64<<10 {
						continue
					}
					body, err := torchtrace.ReadPayload(a.PayloadRef)
					if err != nil {
						t.Fatalf("%s:%d: %v", a.Path, a.Line, err)
					}
					if !shownOnPage(t, dir, u.File, page, j, body) {
						t.Errorf("%s: payload of %s (line %d) not shown in full", u.File, a.Name, a.Line)
					}
				}
			}
		})
	}
}

var frameRE = regexp.MustCompile(`<iframe class="payload [^"]*" src="([^"]*)"`)

// shownOnPage says whether unit page file (text page) shows body in full as
// artifact j: escaped in the page, or, for a payload the trace repeats,
// in artifact j's frame, whose page holds exactly the escaped payload.
func shownOnPage(t *testing.T, dir, file, page string, j int, body string) bool {
	t.Helper()
	if strings.Contains(page, htmlEscaped(body)) {
		return true
	}
	start := strings.Index(page, fmt.Sprintf(`<details class="artifact" id="a%d"`, j))
	if start < 0 {
		return false
	}
	art := page[start:]
	art = art[:strings.Index(art, "</details>")]
	m := frameRE.FindStringSubmatch(art)
	if m == nil {
		return false
	}
	shared, err := os.ReadFile(filepath.Join(dir, filepath.Dir(filepath.FromSlash(file)), filepath.FromSlash(html.UnescapeString(m[1]))))
	if err != nil {
		t.Errorf("%s: artifact %d frames %s: %v", file, j, m[1], err)
		return false
	}
	return strings.Contains(string(shared), "<pre>"+htmlEscaped(body)+"</pre>")
}

// htmlEscaped is what escapeText writes for s.
func htmlEscaped(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case 0:
			b.WriteString("\uFFFD")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestWriteEscapesInjectedMarkup(t *testing.T) {
	res := analyze(t, filepath.Join("testdata", "script_injection.log"))
	dir := render(t, res, Options{})
	pages := checkSite(t, dir)
	all := ""
	for _, p := range pages {
		all += p
	}
	if strings.Contains(all, "<script>window.__pwned") || strings.Contains(all, "<b>graph break</b>") {
		t.Fatal("trace text reached a page unescaped")
	}
	for _, want := range []string{
		"&lt;script&gt;window.__pwned=1&lt;/script&gt;", // compilation_metrics fail_reason (envelope)
		"&lt;/pre&gt;&lt;script&gt;window.__pwned=2",    // dynamo_output_graph payload
		"&lt;/title&gt;&lt;script&gt;window.__pwned=3",  // interned file name in a stack
		"&lt;script&gt;window.__pwned=5&lt;/script&gt;", // graph-break reason artifact
	} {
		if !strings.Contains(all, want) {
			t.Errorf("pages lack the escaped text %q", want)
		}
	}
}

func TestWriteLargePayloadGoesBesideThePage(t *testing.T) {
	res := analyze(t, testcorpus.File(t, "tlparse-inputs", "simple.log"))
	dir := render(t, res, Options{MaxInline: 256})
	s := newSite(res, Options{}.withDefaults())
	sides := 0
	for _, u := range s.units {
		page, err := os.ReadFile(filepath.Join(dir, u.File))
		if err != nil {
			t.Fatal(err)
		}
		for j, ai := range u.Artifacts {
			a := res.Artifacts[ai]
			if a.Envelope || a.Length <= 256 {
				continue
			}
			side := filepath.Join(dir, strings.TrimSuffix(u.File, ".html"), sideName(j, a.Name))
			got, err := os.ReadFile(side)
			if err != nil {
				t.Errorf("%s: %v", a.Name, err)
				continue
			}
			want, _ := torchtrace.ReadPayload(a.PayloadRef)
			if string(got) != want {
				t.Errorf("%s: side file has %d bytes, payload has %d", side, len(got), len(want))
			}
			if !strings.Contains(string(page), filepath.Base(side)) {
				t.Errorf("%s does not link %s", u.File, filepath.Base(side))
			}
			sides++
		}
	}
	if sides == 0 {
		t.Fatal("no payload over 256 bytes in simple.log: the test checks nothing")
	}
}

func TestWritePageBudget(t *testing.T) {
	res := analyze(t, testcorpus.File(t, "tlparse-inputs", "simple.log"))
	dir := render(t, res, Options{MaxPageInline: 16 << 10})
	pages := checkSite(t, dir)
	s := newSite(res, Options{}.withDefaults())
	continued := 0
	for _, u := range s.units {
		// Every artifact is on the unit's page or one of its continuation
		// pages, and no page holds much more than the budget.
		shown := 0
		stem := strings.TrimSuffix(u.File, ".html")
		for name, page := range pages {
			if name == u.File || strings.HasPrefix(name, stem+"_p") {
				shown += strings.Count(page, `<details class="artifact"`)
				if name != u.File {
					continued++
				}
				// chrome + budget + one artifact (MaxInline), escaping can grow it
				if len(page) > 16<<10+512<<10+64<<10 {
					t.Errorf("%s is %d bytes with a 16 KiB inline budget", name, len(page))
				}
			}
		}
		if shown != len(u.Artifacts) {
			t.Errorf("%s: %d artifacts shown over its pages, want %d", u.File, shown, len(u.Artifacts))
		}
	}
	if continued == 0 {
		t.Error("no continuation page written with a 16 KiB budget: the test checks nothing")
	}
}

func TestWriteNilAndEmpty(t *testing.T) {
	if err := Write(t.TempDir(), nil, Options{}); err == nil {
		t.Error("Write(nil result) succeeded")
	}
	dir := render(t, &compiles.Result{Schema: compiles.Schema}, Options{})
	pages := checkSite(t, dir)
	if !strings.Contains(pages["index.html"], "No compile units") {
		t.Error("empty result: index does not say there are no compile units")
	}
}

func BenchmarkWrite(b *testing.B) {
	path := testcorpus.Dir(b, "tlparse-inputs/multi_rank_logs")
	res := analyze(b, path)
	var size int64
	for _, in := range res.Inputs {
		size += in.Bytes
	}
	b.SetBytes(size)
	dir := b.TempDir()
	for b.Loop() {
		if err := Write(dir, res, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
