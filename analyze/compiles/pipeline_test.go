package compiles

import (
	"testing"

	"github.com/bringup-tool/bringup/ingest/torchtrace"
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
