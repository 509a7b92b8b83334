package enginelog

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/bringup-tool/bringup/internal/testcorpus"
	"github.com/bringup-tool/bringup/record"
)

// seedFiles are the real corpus logs (when ../shared is there) and the
// fixtures in testdata.
func seedFiles() []string {
	var files []string
	for _, sub := range []string{"engine-logs", "stackdumps"} {
		m, _ := filepath.Glob(filepath.Join(testcorpus.Root(), "..", "shared", "corpus", sub, "*"))
		files = append(files, m...)
	}
	m, _ := filepath.Glob(filepath.Join("testdata", "*.log"))
	return append(files, m...)
}

func FuzzParse(f *testing.F) {
	for _, p := range seedFiles() {
		if b, err := os.ReadFile(p); err == nil && filepath.Base(p) != "MANIFEST.md" {
			f.Add(b)
		}
	}
	f.Add([]byte("(Worker pid=1) \x1b[31mERROR\x1b[0m 01-02 03:04:05 [a.py:1]\r\n\x00\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var recs []record.Record
		st, err := Parse(bytes.NewReader(data), "f.log", func(r record.Record) { recs = append(recs, r) })
		if err != nil {
			t.Fatal(err)
		}
		lines := int64(bytes.Count(data, []byte("\n")))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++
		}
		if st.Lines != lines || st.Bytes != int64(len(data)) || st.Records != int64(len(recs)) {
			t.Fatalf("stats %+v, want %d lines, %d bytes, %d records", st, lines, len(data), len(recs))
		}
		prev := 0
		for _, r := range recs {
			if r.Line <= prev || r.EndLine < r.Line || int64(r.EndLine) > lines {
				t.Fatalf("record lines %d-%d after %d (of %d)", r.Line, r.EndLine, prev, lines)
			}
			prev = r.EndLine
			if !utf8.ValidString(r.Text) {
				t.Fatalf("invalid UTF-8 in %q", r.Text)
			}
			if bytes.IndexByte([]byte(r.Text), 0x1b) >= 0 || bytes.IndexByte([]byte(r.Text), 0) >= 0 {
				t.Fatalf("escape or NUL left in %q", r.Text)
			}
		}
		_ = Sniff("f.log", data)
	})
}
