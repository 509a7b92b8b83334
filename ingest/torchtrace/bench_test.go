package torchtrace

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// BenchmarkScan: envelopes parsed, every payload hashed, none kept.
func BenchmarkScan(b *testing.B) {
	data := testcorpus.TraceBlock(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sc := NewScanner(bytes.NewReader(data), "bench.log")
		for sc.Next() {
		}
	}
}

// BenchmarkScanWantChromium: also keeps every chromium_event payload, as
// the compile analysis does.
func BenchmarkScanWantChromium(b *testing.B) {
	data := testcorpus.TraceBlock(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sc := NewScanner(bytes.NewReader(data), "bench.log")
		sc.Want = func(ev *Event) bool { return ev.Kind == "chromium_event" }
		for sc.Next() {
		}
	}
}

// BenchmarkSkipString: validating one long JSON string (the corpus text
// marshalled: escaped newlines, quotes and HTML characters, as in the
// component lists of cache events).
func BenchmarkSkipString(b *testing.B) {
	data := testcorpus.TraceBlock(b)
	s, err := json.Marshal(string(data[:min(len(data), 1<<20)]))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(s)))
	for i := 0; i < b.N; i++ {
		if j, _, ok := skipString(s, 0); !ok || j != len(s) {
			b.Fatal("not one string")
		}
	}
}
