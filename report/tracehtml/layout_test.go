package tracehtml

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// layoutJS measures what a reader sees at the current viewport: whether
// the page scrolls sideways (and which elements stick out, outside any box
// that scrolls on its own), and where the verdict and its error sit.
const layoutJS = `(() => {
  const iw = %d, ih = window.innerHeight;
  const de = document.documentElement;
  const out = {sw: Math.max(de.scrollWidth, document.body.scrollWidth), iw, ih, offenders: []};
  const scrolls = (el) => { for (let p = el.parentElement; p; p = p.parentElement) {
    const o = getComputedStyle(p).overflowX; if (o === "auto" || o === "scroll" || o === "hidden") return true; } return false; };
  if (out.sw > iw) {
    for (const el of document.body.querySelectorAll("*")) {
      const r = el.getBoundingClientRect();
      if (r.right > iw + 1 && r.width > 0 && !scrolls(el) && !Array.from(el.children).some(c => c.getBoundingClientRect().right > iw + 1)) {
        out.offenders.push(el.tagName.toLowerCase() + (el.className ? "." + String(el.className).split(" ").join(".") : "") +
          " right=" + Math.round(r.right) + " text=" + (el.textContent || "").slice(0, 60));
        if (out.offenders.length >= 4) break;
      }
    }
  }
  const v = document.querySelector(".verdict");
  if (v) { const r = v.getBoundingClientRect(); out.verdictTop = r.top; }
  const exc = document.querySelector(".verdict .exc");
  if (exc) { const r = exc.getBoundingClientRect(); out.excBottom = r.bottom; out.excRight = r.right; out.exc = exc.textContent; }
  return JSON.stringify(out);
})()`

type layout struct {
	SW, IW, IH  float64
	Offenders   []string
	VerdictTop  *float64
	ExcBottom   *float64
	ExcRight    *float64
	Exc         string
	Page, Width string
}

// measureLayout opens each page in one tab at a viewport and measures it.
func (b *browser) measureLayout(ctx context.Context, urls []string, width, height int, mobile bool) ([]layout, error) {
	sid, closeTab, err := b.openTab(ctx)
	if err != nil {
		return nil, err
	}
	defer closeTab()
	if _, err := b.cdp.call(ctx, sid, "Page.enable", nil); err != nil {
		return nil, err
	}
	if _, err := b.cdp.call(ctx, sid, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height,
		"deviceScaleFactor": 1, "mobile": mobile}); err != nil {
		return nil, err
	}
	var out []layout
	for _, u := range urls {
		if _, err := b.cdp.call(ctx, sid, "Page.navigate", map[string]any{"url": u}); err != nil {
			return out, err
		}
		deadline := time.After(30 * time.Second)
	wait:
		for {
			select {
			case ev := <-b.cdp.events:
				if ev.SessionID == sid && ev.Method == "Page.loadEventFired" {
					break wait
				}
			case <-deadline:
				return out, fmt.Errorf("%s did not load within 30s", u)
			case <-ctx.Done():
				return out, ctx.Err()
			}
		}
		r, err := b.cdp.call(ctx, sid, "Runtime.evaluate", map[string]any{"expression": fmt.Sprintf(layoutJS, width), "returnByValue": true})
		if err != nil {
			return out, err
		}
		var ev struct {
			Result struct {
				Value string `json:"value"`
			} `json:"result"`
		}
		json.Unmarshal(r, &ev)
		var l layout
		if err := json.Unmarshal([]byte(ev.Result.Value), &l); err != nil {
			return out, fmt.Errorf("%s: layout result %q: %v", u, ev.Result.Value, err)
		}
		l.Page = u
		out = append(out, l)
	}
	return out, nil
}

// corpusReports writes the reports the corpus gives: the whole corpus
// folder (every run, every page) and each trace and folder on its own
// (their summaries and side pages, which differ from the whole's).
func corpusReports(t *testing.T) (pages []string) {
	t.Helper()
	root := testcorpus.Dir(t, "tlparse-inputs")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	write := func(name string, all bool, args ...string) {
		dir := filepath.Join(out, name)
		if err := Write(dir, analyze(t, args...), Options{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			if all || !strings.HasPrefix(rel, "units") && !strings.HasPrefix(rel, "payloads") {
				pages = append(pages, "file://"+filepath.ToSlash(p))
			}
			return nil
		})
	}
	write("whole", true, root)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		write(e.Name(), false, filepath.Join(root, e.Name()))
	}
	sort.Strings(pages)
	return pages
}

// TestLayoutWidths opens every page of the corpus reports in headless
// Chromium at a laptop width (1366 px) and a phone width (390 px): no page
// scrolls sideways (long names and paths wrap; code scrolls in its own
// box), and a failure's headline error (the exception raised, innermost
// first) is on the first screen, not below a fold or off to the right.
func TestLayoutWidths(t *testing.T) {
	chromiumPath(t)
	if testing.Short() {
		t.Skip("-short: the layout check opens every page of the corpus reports twice")
	}
	pages := corpusReports(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	b := startBrowser(t, ctx)
	for _, vp := range []struct {
		name          string
		width, height int
		mobile        bool
	}{{"laptop", 1366, 768, false}, {"phone", 390, 844, true}} {
		ls, err := b.measureLayout(ctx, pages, vp.width, vp.height, vp.mobile)
		if err != nil {
			t.Fatalf("%s: %v", vp.name, err)
		}
		if len(ls) != len(pages) {
			t.Fatalf("%s: measured %d of %d pages", vp.name, len(ls), len(pages))
		}
		failures := 0
		for _, l := range ls {
			page := l.Page[strings.Index(l.Page, "/whole/")+1:]
			if i := strings.LastIndex(l.Page, "/"); !strings.Contains(l.Page, "/whole/") {
				page = filepath.Base(filepath.Dir(l.Page[:i+1])) + "/" + l.Page[i+1:]
			}
			// On a phone the layout viewport widens to fit what sticks out
			// (innerWidth grows with it): compare with the device width.
			w := float64(vp.width)
			if l.SW > w+1 {
				t.Errorf("%s %dpx: %s scrolls sideways (%.0f px wide): %s", vp.name, vp.width, page, l.SW,
					strings.Join(l.Offenders, " | "))
			}
			if l.ExcBottom != nil {
				failures++
				if *l.ExcBottom > float64(vp.height) || *l.ExcRight > w+1 {
					t.Errorf("%s %dpx: %s: the headline error %q ends at (%.0f, %.0f), outside the first %d×%d screen",
						vp.name, vp.width, page, l.Exc, *l.ExcRight, *l.ExcBottom, vp.width, vp.height)
				}
			}
			if l.VerdictTop != nil && *l.VerdictTop > float64(vp.height)/2 {
				t.Errorf("%s %dpx: %s: the verdict starts %.0f px down, below half the first screen", vp.name, vp.width, page, *l.VerdictTop)
			}
		}
		if failures == 0 {
			t.Errorf("%s: no page showed a headline error: the corpus has failed compiles (comp_failure.log)", vp.name)
		}
		t.Logf("%s %dpx: %d pages measured, %d with a headline error", vp.name, vp.width, len(ls), failures)
	}
}
