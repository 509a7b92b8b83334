package versions

import (
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// FuzzMarkerGate: skipping records without a marker word finds the same
// versions as running every check on every line (seeded with the test
// logs and one line per banner and pin).
func FuzzMarkerGate(f *testing.F) {
	for _, name := range []string{"testdata/collect-env.log", "testdata/rocm.log"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			f.Add(l)
		}
	}
	for _, l := range markerWords() {
		f.Add("x " + l + " 2.7.1+cu126")
	}
	for _, p := range pins {
		f.Add(p.pkg + "2.10.0+rocm7.0")
	}
	f.Add("INFO 11-29 [api_server.py:1] vLLM API server version 0.11.2\n  File \"/usr/lib/python3.12/site-packages/x.py\"")
	f.Fuzz(func(t *testing.T, text string) {
		var gated, every Detector
		gated.Add(record.Record{Text: text, Source: "s", Line: 1})
		for i, line := range strings.Split(text, "\n") {
			every.scan(line, "s", 1+i)
		}
		if g, e := gated.Versions(), every.Versions(); !maps.Equal(g, e) {
			t.Fatalf("gated %v, every line %v, on %q", g, e, text)
		}
	})
}
