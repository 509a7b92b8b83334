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
// payloads are the likely repeats). Safe for concurrent use: the files of a
// directory are read on several goroutines and share one.
type Verified struct {
	mu    sync.Mutex
	bytes int
	m     map[string][]byte // announced MD5 → payload that matched it
}

// VerifiedBudget bounds the bytes a Verified holds.
const VerifiedBudget = 16 << 20

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
		return true
	}
	if !CheckMD5(ev) {
		return false
	}
	if n := len(ev.HashInput); n <= maxVerifiedPayload && !ok {
		cp := bytes.Clone(ev.HashInput)
		if cp == nil {
			cp = []byte{}
		}
		v.mu.Lock()
		if v.bytes+n > VerifiedBudget {
			clear(v.m)
			v.bytes = 0
		}
		if _, dup := v.m[ev.HasPayload]; !dup {
			v.m[ev.HasPayload] = cp
			v.bytes += n
		}
		v.mu.Unlock()
	}
	return true
}
