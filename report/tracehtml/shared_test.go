package tracehtml

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/ingest/torchtrace"
	"github.com/bringup-tool/bringup/internal/testcorpus"
)

// repeatedTrace writes simple.log three times over (a log concatenated
// from three runs: every payload logged three times, the script-injection
// fixture once at the end so one payload stays unique) and analyses it.
func repeatedTrace(t *testing.T) (path string) {
	t.Helper()
	b, err := os.ReadFile(testcorpus.File(t, "tlparse-inputs", "simple.log"))
	if err != nil {
		t.Fatal(err)
	}
	inj, err := os.ReadFile(filepath.Join("testdata", "script_injection.log"))
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "three_runs.log")
	if err := os.WriteFile(path, append(bytes.Repeat(b, 3), inj...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSharedPayloadOnEveryPage: a payload the trace repeats is written
// once, and every compile-unit page that has it shows it (its frame's page
// holds it in full, escaped) and links it; a payload logged once stays
// inline; no shared page is written for nothing.
func TestSharedPayloadOnEveryPage(t *testing.T) {
	res := analyze(t, repeatedTrace(t))
	dir := render(t, res, Options{})
	pages := checkSite(t, dir)
	s := newSite(res, Options{}.withDefaults())
	if len(s.sharedList) == 0 {
		t.Fatal("no shared payload in a log repeated three times: the test checks nothing")
	}
	onPages := map[string]map[string]bool{} // md5 → unit pages showing it
	inline := 0
	for _, u := range s.units {
		page := pages[u.File]
		for j, ai := range u.Artifacts {
			a := res.Artifacts[ai]
			if a.Envelope || a.Length == 0 {
				continue
			}
			body, err := torchtrace.ReadPayload(a.PayloadRef)
			if err != nil {
				t.Fatal(err)
			}
			if !shownOnPage(t, dir, u.File, page, j, body) {
				t.Errorf("%s: payload of %s (line %d) not shown", u.File, a.Name, a.Line)
			}
			if md5 := s.sharedOf(&a); md5 != "" {
				if strings.Contains(page, htmlEscaped(body)) && len(body) > 200 {
					t.Errorf("%s: shared payload of %s (line %d) also written inline", u.File, a.Name, a.Line)
				}
				if !strings.Contains(page, `href="`+strings.Repeat("../", strings.Count(u.File, "/"))+sharedPage(md5)+`"`) {
					t.Errorf("%s: shared payload of %s not linked", u.File, a.Name)
				}
				if onPages[md5] == nil {
					onPages[md5] = map[string]bool{}
				}
				onPages[md5][u.File] = true
			} else {
				inline++
			}
		}
	}
	for _, md5 := range s.sharedList {
		if len(onPages[md5]) == 0 {
			t.Errorf("shared payload %s shown on no page", md5)
		}
		if _, ok := pages[sharedPage(md5)]; !ok {
			t.Errorf("shared payload %s: %s not written", md5, sharedPage(md5))
		}
	}
	written := 0
	for p := range pages {
		if strings.HasPrefix(p, "payloads/") {
			written++
		}
	}
	if written != len(s.sharedList) {
		t.Errorf("%d shared pages written for %d shared payloads", written, len(s.sharedList))
	}
	if inline == 0 {
		t.Error("the payloads logged once are not inline")
	}
	// Three runs: every payload of simple.log is on three unit pages.
	three := 0
	for _, p := range onPages {
		if len(p) >= 3 {
			three++
		}
	}
	if three == 0 {
		t.Error("no shared payload is shown on the three runs' pages")
	}
}

// TestSharedPayloadInBrowser: in Chromium, a unit page loads the frames of
// its shared payloads from file:// (the page's CSP allows it; nothing is
// blocked or logged), and the shared page shows the payload's text.
func TestSharedPayloadInBrowser(t *testing.T) {
	chromiumPath(t)
	res := analyze(t, repeatedTrace(t))
	dir := t.TempDir()
	if err := Write(dir, res, Options{}); err != nil {
		t.Fatal(err)
	}
	s := newSite(res, Options{}.withDefaults())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := startBrowser(t, ctx)
	checked := 0
	for _, u := range s.units {
		if checked == 3 {
			break
		}
		var want []string // shared pages this unit page must load
		for _, ai := range u.Artifacts {
			if md5 := s.sharedOf(&res.Artifacts[ai]); md5 != "" {
				want = append(want, sharedPage(md5))
			}
		}
		if len(want) == 0 {
			continue
		}
		checked++
		url := "file://" + filepath.ToSlash(filepath.Join(dir, u.File))
		v, err := b.visit(ctx, url, map[string]string{
			"frames": `String(document.querySelectorAll("iframe.payload").length)`,
		}, "")
		if err != nil {
			t.Fatalf("%s: %v", u.File, err)
		}
		if len(v.Console) > 0 {
			t.Errorf("%s: console/log errors:\n  %s", u.File, strings.Join(v.Console, "\n  "))
		}
		for _, w := range want {
			loaded := false
			for _, r := range v.Requests {
				loaded = loaded || strings.HasSuffix(r, "/"+w)
			}
			if !loaded {
				t.Errorf("%s: frame %s never loaded (requests %q)", u.File, w, v.Requests)
			}
		}
		for _, r := range v.Requests {
			if !strings.HasPrefix(r, "file://") {
				t.Errorf("%s: requested %s; the report must not touch the network", u.File, r)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no unit page with a shared payload: the test checks nothing")
	}
	// The shared page itself shows the payload as text.
	md5 := s.sharedList[0]
	a := res.Artifacts[s.shared[md5]]
	body, err := torchtrace.ReadPayload(a.PayloadRef)
	if err != nil {
		t.Fatal(err)
	}
	v, err := b.visit(ctx, "file://"+filepath.ToSlash(filepath.Join(dir, sharedPage(md5))), map[string]string{
		"text": `document.body.innerText`,
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	first := strings.TrimSpace(strings.SplitN(body, "\n", 2)[0])
	if !strings.Contains(v.Texts["text"], first) {
		t.Errorf("shared page %s does not show %q:\n%.500s", sharedPage(md5), first, v.Texts["text"])
	}
	if len(v.Console) > 0 {
		t.Errorf("%s: console/log errors:\n  %s", sharedPage(md5), strings.Join(v.Console, "\n  "))
	}
}
