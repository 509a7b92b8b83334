package tracehtml

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBrowserHarnessSeesFaults proves the browser checks can fail: a page
// with a console error and a remote image must be reported as such.
func TestBrowserHarnessSeesFaults(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.html")
	page := `<!doctype html><html><body><p id=x>&lt;script&gt;hi</p>` +
		`<script>console.error("boom")</script><img src="http://example.invalid/x.png"></body></html>`
	if err := os.WriteFile(p, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := startBrowser(t, ctx)
	v, err := b.visit(ctx, "file://"+p, map[string]string{"x": `document.getElementById("x").textContent`}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(v.Console, func(s string) bool { return strings.Contains(s, "boom") }) {
		t.Errorf("console error not seen; console = %q", v.Console)
	}
	if !slices.Contains(v.Requests, "http://example.invalid/x.png") {
		t.Errorf("remote request not seen; requests = %q", v.Requests)
	}
	if v.Texts["x"] != "<script>hi" {
		t.Errorf("text = %q, want <script>hi", v.Texts["x"])
	}
}
