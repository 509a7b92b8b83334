package compiles

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/ingest/torchtrace"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// TestBatchBound: whatever the payload sizes, a batch holds at most
// arenaSize copied bytes unless it is a single event, its arena never
// reallocates (copies stay valid), and every copy equals its source.
func TestBatchBound(t *testing.T) {
	sizes := []int{0, 10, 900 << 10, ownAlloc, ownAlloc + 1, 3 << 20, 100, arenaSize / 3, 200 << 10}
	var batches []*evBatch
	b := &evBatch{arena: make([]byte, 0, arenaSize)}
	for i := 0; i < 200; i++ {
		n := sizes[i%len(sizes)]
		src := make([]byte, n)
		for j := range src {
			src[j] = byte(i + j)
		}
		ev := torchtrace.Event{Meta: []byte("{}"), Body: src, HashInput: src[:n/2]}
		if !b.fits(&ev) || len(b.evs) == batchEvents {
			batches = append(batches, b)
			b = &evBatch{arena: make([]byte, 0, arenaSize)}
		}
		base := cap(b.arena)
		ev.Meta, ev.Body, ev.HashInput = b.copy(ev.Meta), b.copy(ev.Body), b.copy(ev.HashInput)
		if cap(b.arena) != base {
			t.Fatalf("event %d: arena reallocated", i)
		}
		if string(ev.Body) != string(src) || string(ev.HashInput) != string(src[:n/2]) || string(ev.Meta) != "{}" {
			t.Fatalf("event %d: copy differs", i)
		}
		b.evs = append(b.evs, ev)
	}
	batches = append(batches, b)
	for i, b := range batches {
		if len(b.evs) > 1 && b.total > arenaSize {
			t.Errorf("batch %d: %d events, %d bytes copied (bound %d)", i, len(b.evs), b.total, arenaSize)
		}
	}
}

// FuzzPipelineSameAsDirect: the three-stage pipeline (borrowed bodies,
// deferred MD5 checks, reused arenas) gives the same Result, counts
// included, as feeding the scanner's events to the analysis one by one.
func FuzzPipelineSameAsDirect(f *testing.F) {
	for _, name := range []string{"comp_metrics.log", "cache_hit_miss.log", "chromium_events.log", "simple_corrupted_json.log", "export.log"} {
		b, err := os.ReadFile(corpusPath(f, name))
		if err == nil {
			f.Add(b[:min(len(b), 32768)])
		}
	}
	// A payload whose MD5 does not match, then one that does.
	f.Add([]byte("V1206 15:20:13.926000 1 a.py:1] {\"artifact\": {\"name\": \"x\", \"encoding\": \"string\"}, \"frame_id\": 0, \"frame_compile_id\": 0, \"has_payload\": \"0123\"}\n\tabc\n" +
		"V1206 15:20:13.926000 1 a.py:1] {\"artifact\": {\"name\": \"x\", \"encoding\": \"string\"}, \"frame_id\": 0, \"frame_compile_id\": 0, \"has_payload\": \"900150983cd24fb0d6963f7d28e17f72\"}\n\tabc\n"))
	f.Fuzz(func(t *testing.T, data []byte) { samePipelined(t, data) })
}

// TestPipelineSameAsDirectCorpus: the same on every top-level corpus log
// concatenated, twice over (3.6 MB each: many batches, arenas reused).
func TestPipelineSameAsDirectCorpus(t *testing.T) {
	data := testcorpus.TraceBlock(t)
	samePipelined(t, append(data, data...))
}

// analyzeJSON analyzes data as one file, directly or through the
// pipelined scan, and returns the merged Result as JSON.
func analyzeJSON(data []byte, pipelined bool) ([]byte, *fileAnalysis) {
	in := Input{Path: "fuzz.log", Rank: -1, RankFrom: "none"}
	fa := newFileAnalysis(in, 100)
	sc := torchtrace.NewScanner(bytes.NewReader(data), "fuzz.log")
	sc.Want = fa.want
	if pipelined {
		scanPipelined(sc, fa, torchtrace.NewVerified())
	} else {
		for sc.Next() {
			fa.add(sc.Event())
		}
	}
	fa.finish(sc.Stats())
	res := merge([]*fileAnalysis{fa}, []*torchtrace.Stats{sc.Stats()}, nil)
	out, err := json.Marshal(res)
	if err != nil {
		panic(err)
	}
	return out, fa
}

func samePipelined(t *testing.T, data []byte) {
	direct, _ := analyzeJSON(data, false)
	piped, _ := analyzeJSON(data, true)
	if !bytes.Equal(direct, piped) {
		i := 0
		for i < len(direct) && i < len(piped) && direct[i] == piped[i] {
			i++
		}
		t.Fatalf("pipelined result differs at byte %d:\ndirect %s\npiped  %s", i,
			strings.TrimSpace(string(direct[max(0, i-80):min(len(direct), i+80)])), strings.TrimSpace(string(piped[max(0, i-80):min(len(piped), i+80)])))
	}
}

// TestStackKeyIsFrameStrings: sharedStack's key is the frames as
// record.Frame.String prints them, so stacks are shared exactly as before.
func TestStackKeyIsFrameStrings(t *testing.T) {
	f := newFileAnalysis(Input{Path: "k.log"}, 100)
	st := record.Stack{{Func: "forward", File: "/m.py", Line: 12}, {Func: "a (b", File: "c:d", Line: 0}, {Func: "", File: "", Line: -3}}
	f.sharedStack(st)
	var want strings.Builder
	for _, fr := range st {
		want.WriteString(fr.String() + "\n")
	}
	if string(f.stackKey) != want.String() {
		t.Errorf("key %q, want %q", f.stackKey, want.String())
	}
	again := record.Stack{st[0], st[1], st[2]}
	if got := f.sharedStack(again); &got[0] != &st[0] {
		t.Error("an identical stack is not shared")
	}
}
