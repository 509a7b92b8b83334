package tracehtml

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// TestReportInBrowser renders real corpus traces and the <script> fixture,
// opens the index and compile-unit pages from file:// in headless Chromium
// and checks what a user would see: the page loads, nothing is logged to
// the console, nothing but file:// is requested, injected markup shows as
// text and never runs. Set BRINGUP_SCREENSHOTS=<dir> to keep screenshots.
func TestReportInBrowser(t *testing.T) {
	chromiumPath(t)
	shots := os.Getenv("BRINGUP_SCREENSHOTS")
	cases := []struct {
		name  string
		args  []string
		units int // how many unit pages to open (the first ones linked)
	}{
		{"multi_rank_logs", []string{testcorpus.Dir(t, "tlparse-inputs/multi_rank_logs")}, 2},
		{"script_injection", []string{filepath.Join("testdata", "script_injection.log")}, 2},
		{"cache_hit_miss", []string{testcorpus.File(t, "tlparse-inputs", "cache_hit_miss.log")}, 1},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b := startBrowser(t, ctx)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := analyze(t, tc.args...)
			dir := t.TempDir()
			if err := Write(dir, res, Options{}); err != nil {
				t.Fatal(err)
			}
			pages := []string{"index.html"}
			for i := range min(tc.units, len(res.Compiles)) {
				pages = append(pages, newSite(res, Options{}.withDefaults()).units[i].File)
			}
			for i, page := range pages {
				shot := ""
				if shots != "" {
					shot = filepath.Join(shots, tc.name+"-"+strconv.Itoa(i)+".png")
				}
				url := "file://" + filepath.ToSlash(filepath.Join(dir, page))
				v, err := b.visit(ctx, url, map[string]string{
					"text":    `document.body.innerText`,
					"scripts": `String(document.scripts.length)`,
					"pwned":   `String(typeof window.__pwned)`,
					"title":   `document.title`,
					"rects":   `String(document.querySelectorAll("svg rect.bar").length)`,
					"css":     `getComputedStyle(document.body).backgroundColor`,
				}, shot)
				if err != nil {
					t.Fatalf("%s: %v", page, err)
				}
				if len(v.Console) > 0 {
					t.Errorf("%s: console/log errors:\n  %s", page, strings.Join(v.Console, "\n  "))
				}
				for _, r := range v.Requests {
					if !strings.HasPrefix(r, "file://") {
						t.Errorf("%s: requested %s; the report must not touch the network", page, r)
					}
				}
				if len(v.Requests) < 3 {
					t.Errorf("%s: requests = %q, want the page, its stylesheet and its script", page, v.Requests)
				}
				if v.Texts["scripts"] != "1" {
					t.Errorf("%s: %s <script> elements in the DOM, want only the report's own", page, v.Texts["scripts"])
				}
				if v.Texts["pwned"] != "undefined" {
					t.Errorf("%s: injected script ran (window.__pwned is %s)", page, v.Texts["pwned"])
				}
				if v.Texts["css"] != "rgb(246, 247, 249)" {
					t.Errorf("%s: body background %q: the stylesheet did not load", page, v.Texts["css"])
				}
				text := v.Texts["text"]
				if page == "index.html" {
					if !strings.Contains(text, "Compile phases per rank") || !strings.Contains(text, "Compile units") {
						t.Errorf("index text lacks its sections:\n%.600s", text)
					}
					if n, _ := strconv.Atoi(v.Texts["rects"]); len(res.Spans)+len(res.OpenSpans) > 0 && n == 0 {
						t.Errorf("index: %d phases but no timeline bars", len(res.Spans)+len(res.OpenSpans))
					}
				}
				if tc.name == "script_injection" {
					// The fixture's envelope and payload text must be shown verbatim.
					want := map[string]string{
						"index.html": "backend='<script>window.__pwned=1</script>'",
						pages[1]:     "# </pre><script>window.__pwned=2</script>",
					}
					if w, ok := want[page]; ok && !strings.Contains(text, w) {
						t.Errorf("%s: visible text lacks %q as text:\n%.1500s", page, w, text)
					}
				}
			}
		})
	}
}
