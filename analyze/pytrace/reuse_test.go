package pytrace

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"unsafe"

	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// corpusRecords are the records of every corpus engine log and field
// paste, one source each.
func corpusRecords(t *testing.T) []record.Record {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(testcorpus.Dir(t, "engine-logs"), "*.log"))
	m, _ := filepath.Glob(filepath.Join("..", "..", "corpus", "field", "*.log"))
	files = append(files, m...)
	files = append(files, filepath.Join("testdata", "chains.txt"))
	var recs []record.Record
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := enginelog.Parse(bytes.NewReader(b), filepath.Base(p), func(r record.Record) { recs = append(recs, r) }); err != nil {
			t.Fatal(err)
		}
	}
	if len(recs) < 100 {
		t.Fatalf("only %d records in the corpus", len(recs))
	}
	return recs
}

// extractRecords is what a fresh Extractor finds in recs.
func extractRecords(recs []record.Record) []Traceback {
	x := NewExtractor()
	for _, r := range recs {
		x.Add(r)
	}
	return x.Finish()
}

// A kept traceback owns its strings (detach): the record texts it was
// read from may be overwritten once fed, as a parser's batch is reused,
// and its frame slices hold no spare capacity.
func TestKeptTracebacksOwnTheirText(t *testing.T) {
	recs := corpusRecords(t)
	want := extractRecords(recs)
	if len(want) < 10 {
		t.Fatalf("only %d tracebacks", len(want))
	}

	x := NewExtractor()
	var bufs [][]byte
	for _, r := range recs {
		b := []byte(r.Text)
		bufs = append(bufs, b)
		if len(b) > 0 {
			r.Text = unsafe.String(&b[0], len(b)) // borrowed, like a batch's text
		}
		x.Feed(&r)
	}
	got := x.Finish()
	for _, b := range bufs {
		for i := range b {
			b[i] = '#'
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("tracebacks changed when the texts they were read from were overwritten")
	}
	for _, tb := range got {
		for _, e := range tb.Chain {
			if cap(e.Frames) != len(e.Frames) || cap(e.Code) != len(e.Code) || cap(e.UserCode) != len(e.UserCode) {
				t.Fatalf("%s:%d: frames %d/%d, code %d/%d, user code %d/%d (len/cap)", tb.Source, tb.Line,
					len(e.Frames), cap(e.Frames), len(e.Code), cap(e.Code), len(e.UserCode), cap(e.UserCode))
			}
		}
	}
}

// One Extractor reuses the frame buffers of the tracebacks it finished
// (x.spare): the corpus fed again and again, each round a source of its
// own, gives each round what a fresh Extractor gives it alone, and the
// spare buffers stay within their bound.
func TestFrameBuffersReusedWarmEqualsCold(t *testing.T) {
	recs := corpusRecords(t)
	want := extractRecords(recs)

	warm := NewExtractor()
	const rounds = 4
	for k := 0; k < rounds; k++ {
		for _, r := range recs {
			r.Source = fmt.Sprintf("round%d/%s", k, r.Source)
			warm.Add(r)
			if len(warm.spare) > maxSpare {
				t.Fatalf("%d spare frame buffers, bound %d", len(warm.spare), maxSpare)
			}
			for _, b := range warm.spare {
				if cap(b.frames) > maxSpareCap || len(b.frames) != 0 || len(b.code) != 0 {
					t.Fatalf("spare buffer len %d cap %d", len(b.frames), cap(b.frames))
				}
			}
		}
	}
	got := warm.Finish()
	if len(got) != rounds*len(want) {
		t.Fatalf("%d tracebacks, want %d", len(got), rounds*len(want))
	}
	if len(warm.spare) == 0 {
		t.Fatal("no frame buffer was kept for reuse")
	}
	for k := 0; k < rounds; k++ {
		for i, w := range want {
			g := got[k*len(want)+i]
			w.Source = fmt.Sprintf("round%d/%s", k, w.Source)
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("round %d, traceback %d (%s:%d) differs from a fresh extractor's", k, i, w.Source, w.Line)
			}
		}
	}
}

// Once MaxTracebacks are kept the Extractor is Full: feeding it more
// changes nothing Finish returns (a caller may stop), only Dropped.
func TestFullSettlesFinish(t *testing.T) {
	rec := func(i int) record.Record {
		return record.Record{Source: "loop.log", Line: 4*i + 1, Rank: record.NoRank, Level: record.LevelError,
			Text: fmt.Sprintf("Traceback (most recent call last):\n  File \"/w/x.py\", line %d, in f\n    g()\nValueError: round %d", i+1, i)}
	}
	fed, stopped := NewExtractor(), NewExtractor()
	n := 0
	for ; !stopped.Full(); n++ {
		if n > MaxTracebacks {
			t.Fatalf("not Full after %d tracebacks", n)
		}
		r := rec(n)
		stopped.Feed(&r)
		fed.Feed(&r)
	}
	// A traceback is finished by what follows it: the first is kept when
	// the second starts.
	if n != MaxTracebacks+1 {
		t.Fatalf("Full after %d tracebacks, want %d", n, MaxTracebacks+1)
	}
	for i := n; i < n+500; i++ {
		r := rec(i)
		fed.Feed(&r)
	}
	a, b := fed.Finish(), stopped.Finish()
	if !reflect.DeepEqual(a, b) || len(a) != MaxTracebacks {
		t.Fatalf("%d and %d tracebacks, or they differ", len(a), len(b))
	}
	if fed.Dropped != 501 || stopped.Dropped != 1 {
		t.Fatalf("dropped %d and %d, want 501 and 1", fed.Dropped, stopped.Dropped)
	}
}

// detach gives a traceback slices of its own even when it holds no text
// at all (frames of empty names): the buffers it was built in go back to
// the pool and are written again.
func TestDetachCopiesSlicesWithoutText(t *testing.T) {
	frames := make(record.Stack, 2, 16)
	code := make([]string, 2, 16)
	tb := Traceback{Chain: []Exception{{Frames: frames, Code: code}}}
	detach(&tb)
	e := tb.Chain[0]
	if &e.Frames[0] == &frames[0] || &e.Code[0] == &code[0] || cap(e.Frames) != 2 || cap(e.Code) != 2 {
		t.Fatalf("frames %d/%d, code %d/%d, shared: %v %v", len(e.Frames), cap(e.Frames), len(e.Code), cap(e.Code),
			&e.Frames[0] == &frames[0], &e.Code[0] == &code[0])
	}
}
