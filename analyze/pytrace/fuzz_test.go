package pytrace

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func FuzzExtractor(f *testing.F) {
	var files []string
	for _, sub := range []string{"engine-logs", "stackdumps"} {
		m, _ := filepath.Glob(filepath.Join(testcorpus.Root(), "..", "shared", "corpus", sub, "*"))
		files = append(files, m...)
	}
	m, _ := filepath.Glob(filepath.Join("..", "..", "ingest", "enginelog", "testdata", "*.log"))
	files = append(files, m...)
	m, _ = filepath.Glob(filepath.Join("..", "..", "corpus", "field", "*.log")) // pastes: frameless, flattened, margins
	files = append(files, m...)
	files = append(files, filepath.Join("testdata", "chains.txt"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		x := NewExtractor()
		st, err := enginelog.Parse(bytes.NewReader(data), "f", x.Add)
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range x.Finish() {
			if tb.Line < 1 || tb.EndLine < tb.Line || int64(tb.EndLine) > st.Lines || len(tb.Chain) == 0 {
				t.Fatalf("traceback %d-%d of %d lines, chain %d", tb.Line, tb.EndLine, st.Lines, len(tb.Chain))
			}
			if len(tb.Head) > maxHead || !utf8.ValidString(tb.Head) && utf8.Valid(data) {
				t.Fatalf("head %q", tb.Head)
			}
			for _, e := range tb.Chain {
				if len(e.Code) != len(e.Frames) || (e.Repeated != nil && len(e.Repeated) != len(e.Frames)) {
					t.Fatalf("misaligned frame details: %+v", e)
				}
				if e.Line != 0 && (e.Line < tb.Line || e.Line > tb.EndLine) {
					t.Fatalf("exception line %d outside %d-%d", e.Line, tb.Line, tb.EndLine)
				}
			}
			_ = tb.Root()
		}
	})
}
