package torchtrace

import (
	"bytes"
	"sync"
)

// Verified remembers payloads whose MD5 matched, so that a later payload
// announcing the same MD5 with the same bytes is known to match by a byte
// comparison (memory speed) instead of hashing it again (MD5 runs at
// ~0.5 GB/s and was the largest single cost of a trace). Traces repeat
// payloads: every rank of a run logs the same graphs and guards, a
// recompile or a restarted process logs them again, and logs are often
// concatenated. A payload that differs in any byte is hashed as usual, so
// the answer is always the MD5 check's.
//
// It holds at most VerifiedBudget bytes of payloads; when a new one would
// not fit, everything is forgotten and filling starts again (recent
// payloads are the likely repeats), after a pause when none of them was
// seen again (see skip). Safe for concurrent use: the files of a
// directory are read on several goroutines and share one.
type Verified struct {
	mu    sync.Mutex
	bytes int
	m     map[string][]byte // announced MD5 → payload that matched it, in arena
	// arena holds the remembered payloads of this generation: one
	// allocation per budget instead of one per payload (fewer, larger
	// objects: less GC work and less heap left fragmented). A reset starts
	// a new arena, so comparisons still running against the old one are
	// never overwritten.
	arena []byte
	hits  int // answers by comparison since the last reset
	// skip is how many payload bytes are still to pass unremembered: a
	// trace whose payloads do not repeat would otherwise have every one
	// copied for nothing (allocation and GC), so a budget's worth without
	// a single hit backs off for 16 budgets' worth before trying again.
	skip int
}

// VerifiedBudget bounds the bytes a Verified holds: enough for the
// payloads the ranks of a run log at about the same time (they are read
// together) and for a short repeated stretch; every byte of it is held
// live, about twice that in peak RSS.
const VerifiedBudget = 4 << 20

// maxVerifiedPayload: payloads larger than this are not remembered (a few
// of them would flush the rest).
const maxVerifiedPayload = VerifiedBudget / 16

// NewVerified returns an empty cache of verified payloads.
func NewVerified() *Verified { return &Verified{m: map[string][]byte{}} }

// CheckMD5 is CheckMD5(ev) answered from the cache when ev's payload is one
// that matched before.
func (v *Verified) CheckMD5(ev *Event) bool {
	if v == nil {
		return CheckMD5(ev)
	}
	v.mu.Lock()
	prev, ok := v.m[ev.HasPayload]
	v.mu.Unlock()
	// prev is never modified once stored, so it is compared unlocked.
	if ok && bytes.Equal(prev, ev.HashInput) {
		v.mu.Lock()
		v.hits++
		v.mu.Unlock()
		return true
	}
	if !CheckMD5(ev) {
		return false
	}
	n := len(ev.HashInput)
	if n > maxVerifiedPayload || ok {
		return true
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.skip > 0 {
		v.skip -= n
		return true
	}
	if v.bytes+n > VerifiedBudget {
		if v.hits == 0 {
			v.skip = 16 * VerifiedBudget
		}
		clear(v.m)
		v.bytes, v.hits, v.arena = 0, 0, nil
		if v.skip > 0 {
			return true
		}
	}
	if _, dup := v.m[ev.HasPayload]; !dup {
		if v.arena == nil {
			v.arena = make([]byte, 0, VerifiedBudget)
		}
		start := len(v.arena)
		v.arena = append(v.arena, ev.HashInput...) // within cap: bytes+n <= budget
		v.m[ev.HasPayload] = v.arena[start:len(v.arena):len(v.arena)]
		v.bytes += n
	}
	return true
}
