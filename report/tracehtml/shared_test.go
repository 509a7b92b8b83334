package tracehtml

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/ingest/torchtrace"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// runs is how many times repeatedTrace repeats simple.log: enough that
// its larger payloads and metadata are worth sharing (worthSharing).
const runs = 20

// repeatedTrace writes simple.log runs times over (a log concatenated from
// several runs: every payload logged runs times, the script-injection
// fixture once at the end so some payloads stay unique).
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
	path = filepath.Join(t.TempDir(), "repeated_runs.log")
	if err := os.WriteFile(path, append(bytes.Repeat(b, runs), inj...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSharedPayloadOnEveryPage: a payload (or the metadata of a
// payload-less event) the trace repeats is written once, and every
// compile-unit page that has it shows it (its frame's page holds it in
// full, escaped) and links it; one logged once stays inline; no shared
// page is written for nothing.
func TestSharedPayloadOnEveryPage(t *testing.T) {
	res := analyze(t, repeatedTrace(t))
	dir := render(t, res, Options{})
	pages := checkSite(t, dir)
	s := newSite(res, Options{}.withDefaults())
	if len(s.sharedList) == 0 {
		t.Fatal("no shared payload in a log of repeated runs: the test checks nothing")
	}
	onPages := map[string]map[string]bool{} // md5 → unit pages showing it
	inline := 0
	for _, u := range s.units {
		page := pages[u.File]
		for j, ai := range u.Artifacts {
			a := res.Artifacts[ai]
			if a.Length == 0 {
				continue
			}
			body := shownText(t, &a)
			if !shownOnPage(t, dir, u.File, page, j, body) {
				t.Errorf("%s: payload of %s (line %d) not shown", u.File, a.Name, a.Line)
			}
			if md5 := s.sharedOf(ai); md5 != "" {
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
	envShared := 0
	for _, k := range s.sharedList {
		if res.Artifacts[s.shared[k]].Envelope {
			envShared++
		}
	}
	if envShared == 0 {
		t.Error("no payload-less event's metadata is shared: the test checks nothing of them")
	}
	// Every run has its unit pages: a shared payload of simple.log is on
	// each run's page.
	all := 0
	for _, p := range onPages {
		if len(p) >= runs {
			all++
		}
	}
	if all == 0 {
		t.Errorf("no shared payload is shown on the pages of all %d runs", runs)
	}
	// What is small, or seldom repeated, stays inline.
	for k, ai := range s.shared {
		if n := res.Artifacts[ai].Length; !worthSharing(n, s.sharedTimes[k]) {
			t.Errorf("%s shared: %d bytes shown %d times", k, n, s.sharedTimes[k])
		}
	}
}

// shownText is the text a page shows for an artifact: its payload, or its
// metadata indented.
func shownText(t *testing.T, a *compiles.Artifact) string {
	t.Helper()
	if !a.Envelope {
		body, err := torchtrace.ReadPayload(a.PayloadRef)
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	m, err := torchtrace.ReadEnvelope(a.PayloadRef)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if json.Indent(&buf, m[a.Kind], "", "  ") != nil {
		return string(m[a.Kind])
	}
	return buf.String()
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
		var want []string // shared pages this unit page must load: the frames shown open
		lazy := 0
		for _, ai := range u.Artifacts {
			if md5 := s.sharedOf(ai); md5 != "" {
				if a := &res.Artifacts[ai]; openByDefault[a.Name] || openByDefault[a.Kind] {
					want = append(want, sharedPage(md5))
				} else {
					lazy++
				}
			}
		}
		if len(want) == 0 {
			continue // no frame shown open to see loaded
		}
		checked++
		url := "file://" + filepath.ToSlash(filepath.Join(dir, u.File))
		v, err := b.visit(ctx, url, map[string]string{
			"frames": `String(document.querySelectorAll("iframe.payload").length)`,
			"lazy":   `String(document.querySelectorAll("details:not([open]) > iframe.payload[loading=lazy]").length)`,
		}, "")
		if err != nil {
			t.Fatalf("%s: %v", u.File, err)
		}
		if len(v.Console) > 0 {
			t.Errorf("%s: console/log errors:\n  %s", u.File, strings.Join(v.Console, "\n  "))
		}
		if v.Texts["lazy"] != strconv.Itoa(lazy) {
			t.Errorf("%s: %s frames load when opened, want the %d of closed artifacts", u.File, v.Texts["lazy"], lazy)
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
	// The shared pages themselves show the text: a payload's and a
	// payload-less event's metadata.
	seen := map[bool]bool{}
	for _, key := range s.sharedList {
		a := res.Artifacts[s.shared[key]]
		if seen[a.Envelope] {
			continue
		}
		seen[a.Envelope] = true
		v, err := b.visit(ctx, "file://"+filepath.ToSlash(filepath.Join(dir, sharedPage(key))), map[string]string{
			"text": `document.body.innerText`,
		}, "")
		if err != nil {
			t.Fatal(err)
		}
		// The longest line: the page shows the text whole, not a prefix.
		want := ""
		for _, l := range strings.Split(shownText(t, &a), "\n") {
			if l = strings.TrimSpace(l); len(l) > len(want) {
				want = l
			}
		}
		if !strings.Contains(v.Texts["text"], want) {
			t.Errorf("shared page %s does not show %q:\n%.500s", sharedPage(key), want, v.Texts["text"])
		}
		if len(v.Console) > 0 {
			t.Errorf("%s: console/log errors:\n  %s", sharedPage(key), strings.Join(v.Console, "\n  "))
		}
	}
	if !seen[true] || !seen[false] {
		t.Errorf("shared pages visited: payload %v, metadata %v; want both", seen[false], seen[true])
	}
}
