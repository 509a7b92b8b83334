package timeline

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/bringup-tool/bringup/analyze/versions"
	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// FuzzTimeline feeds parsed logs to the timeline and the version detector,
// which read numbers and names out of free text.
func FuzzTimeline(f *testing.F) {
	var files []string
	m, _ := filepath.Glob(filepath.Join(testcorpus.Root(), "..", "shared", "corpus", "engine-logs", "*.log"))
	files = append(files, m...)
	m, _ = filepath.Glob(filepath.Join("testdata", "*.log"))
	files = append(files, m...)
	m, _ = filepath.Glob(filepath.Join("..", "..", "ingest", "enginelog", "testdata", "*.log"))
	files = append(files, m...)
	m, _ = filepath.Glob(filepath.Join("..", "versions", "testdata", "*.log"))
	files = append(files, m...)
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b := New()
		var d versions.Detector
		st, err := enginelog.Parse(bytes.NewReader(data), "f", func(r record.Record) { b.Add(r); d.Add(r) })
		if err != nil {
			t.Fatal(err)
		}
		phases, gaps := b.Finish()
		for _, p := range phases {
			switch p.Status {
			case record.PhaseDone, record.PhaseFailed, record.PhaseUnfinished:
			default:
				t.Fatalf("status %q", p.Status)
			}
			if p.Line < 1 || int64(p.Line) > st.Lines || p.Name == "" {
				t.Fatalf("phase %+v of %d lines", p, st.Lines)
			}
		}
		if len(gaps) > GapsPerSource {
			t.Fatalf("%d gaps", len(gaps))
		}
		for k, v := range d.Versions() {
			if v == "" || v[0] < '0' || v[0] > '9' {
				t.Fatalf("version %s=%q", k, v)
			}
		}
	})
}

// FuzzFeedBorrowed: a Builder fed texts that are overwritten as soon as
// Feed returns (what diagnose does: the texts live in a batch's reused
// memory) ends with exactly the phases and gaps of one fed strings of
// their own without the marker memo and the repeated-stamp shortcut.
// Marker lines repeat, so the memo is exercised.
func FuzzFeedBorrowed(f *testing.F) {
	for _, p := range []string{"../../examples/aot-graph-break/vllm-serve.log", "../../examples/inductor-hang/vllm-serve.log"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("INFO 11-29 00:00:32 [a.py:1] Capturing CUDA graphs (decode, FULL):  52%|#####     | 35/67 [00:08<00:07,  4.12it/s]\n" +
		"INFO 11-29 00:00:33 [a.py:1] Capturing CUDA graphs (decode, FULL): 100%|##########| 67/67 [00:11<00:00,  4.12it/s]\n" +
		"INFO 11-29 00:00:33 [a.py:1] Compiling a graph for compile range (1, 8192) takes 12.5 s\n"))
	// Repeated stamps around untimed lines, a gap, a clock that goes back.
	f.Add([]byte("INFO 12-31 23:59:58 [a.py:1] Model loading took 3.2 GiB and 4.5 seconds\nuntimed\n" +
		"INFO 12-31 23:59:58 [a.py:1] x\nINFO 01-01 00:00:09 [a.py:1] y\nINFO 01-01 00:00:09 [a.py:1] z\n" +
		"INFO 12-31 23:59:59 [a.py:1] back\nINFO 12-31 23:59:59 [a.py:1] back again\nINFO 01-01 00:00:09 [a.py:1] w\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var recs []record.Record
		if _, err := enginelog.Parse(bytes.NewReader(data), "f", func(r record.Record) { recs = append(recs, r) }); err != nil {
			t.Fatal(err)
		}
		own, borrowed := New(), New()
		own.noMemo = true                 // and matches every marker, normalizes every time afresh
		for pass := 0; pass < 2; pass++ { // twice over: the memo knows every line the second time
			for i := range recs {
				own.Feed(&recs[i], true)
				r := recs[i]
				buf := []byte(r.Text) // poisoned below
				if len(buf) > 0 {
					r.Text = unsafe.String(&buf[0], len(buf))
				}
				borrowed.Feed(&r, true)
				for k := range buf {
					buf[k] = 0xA5
				}
			}
		}
		p1, g1 := own.Finish()
		p2, g2 := borrowed.Finish()
		if !reflect.DeepEqual(p1, p2) || !reflect.DeepEqual(g1, g2) {
			t.Fatalf("borrowed texts changed the result:\nown      %+v %+v\nborrowed %+v %+v", p1, g1, p2, g2)
		}
	})
}

// FuzzBarMemo: after the lines of prime went through the Builder's memos
// (the progress-bar prefix of keepBar among them), line matches to what
// the plain match gives it, and so does the first line of line through
// matchFirst, which compares the memos with the start of a text.
func FuzzBarMemo(f *testing.F) {
	bar := "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  52%|#####     | 35/67 [00:08<00:07,  8.93it/s]"
	f.Add(bar, "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  55%|#####     | 37/67 [00:09<00:07,  7.58it/s]")
	f.Add(bar, "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 67/67 [00:12<00:00,  5.10it/s]")
	f.Add(bar, "Capturing CUDA graphs (decode, FULL):  52%|#####     | 35/67 [00:08<00:07,  4.12it/s]")
	f.Add("  Capturing CUDA graph (x):1", "  Capturing CUDA graph (x):100%|")
	f.Add("Capturing CUDA graphs (a 100%|):  1%|", "Capturing CUDA graphs (a 100%|): 2%|")
	f.Add("Capturing CUDA graphs (a):  1%|\nCompiling a graph for (1, 8) takes 2 s", "Capturing CUDA graphs (a): 100")
	f.Add("Model loading took 1 GiB and 2 seconds", "Model loading took 1 GiB and 2 seconds\nModel loading took 1 GiB and 3 seconds")
	f.Add("Model loading took 1 GiB and 2 seconds", "Model loading took 1 GiB and 2 seconds.")
	f.Fuzz(func(t *testing.T, prime, line string) {
		b, c := New(), New()
		for l := range strings.SplitSeq(prime, "\n") {
			b.match(l)
			c.matchFirst(l)
		}
		got, gok := b.match(line)
		want, wok := match(line)
		if gok != wok || !reflect.DeepEqual(got, want) {
			t.Fatalf("after %q, %q:\nmemo  %v %+v\nmatch %v %+v", prime, line, gok, got, wok, want)
		}
		// matchFirst reads the first line of a text of several.
		first, _, _ := strings.Cut(line, "\n")
		want, wok = match(first)
		e, end := c.matchFirst(line)
		if end != len(first) || (e != nil) != wok || e != nil && !reflect.DeepEqual(*e, want) {
			t.Fatalf("after %q, matchFirst(%q) = %+v, %d; want %v %+v, %d", prime, line, e, end, wok, want, len(first))
		}
	})
}
