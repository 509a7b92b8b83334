// Package ringcache is the predictive memo a streaming parser keeps of the
// last few distinct things it met (a log's emitters, its ranks' prefixes,
// the bodies a TP group repeats): a fixed number of entries, the oldest
// replaced first, searched from a guess. Streams repeat a few entries in
// turn (ranks take turns, each printing the same messages in the same
// order), so a search starts with the entry that followed the last hit
// the last time, then the last hit itself, then the others in ring order;
// a hit is usually the first compare.
//
// An entry holds its own key: Find takes the comparison, so a caller
// compares bytes it has not turned into a string.
package ringcache

// Ring is a memo of at most Size entries. Its zero value holds nothing
// and remembers nothing; make one with New.
type Ring[E any] struct {
	slots []slot[E]
	n     int // slots filled, from 0 up
	next  int // the slot the next Put takes
	last  int // the slot of the last hit or Put
}

type slot[E any] struct {
	e      E
	follow int // the slot hit right after this one last time
}

// New returns an empty ring of size entries (at least 1).
func New[E any](size int) Ring[E] {
	return Ring[E]{slots: make([]slot[E], max(size, 1))}
}

// Size is how many entries the ring keeps.
func (r *Ring[E]) Size() int { return len(r.slots) }

// Len is how many entries it holds now.
func (r *Ring[E]) Len() int { return r.n }

// Find returns the first held entry for which match is true, trying the
// predicted one first, and makes it the last hit; nil when none matches.
// The pointer stays valid until a Put replaces that entry.
func (r *Ring[E]) Find(match func(*E) bool) *E {
	if r.n == 0 {
		return nil
	}
	guess := r.slots[r.last].follow
	if guess < r.n && match(&r.slots[guess].e) {
		return r.hit(guess)
	}
	for k := 0; k < r.n; k++ {
		at := r.last + k
		if at >= r.n {
			at -= r.n
		}
		if at != guess && match(&r.slots[at].e) {
			return r.hit(at)
		}
	}
	return nil
}

func (r *Ring[E]) hit(at int) *E {
	r.slots[r.last].follow = at
	r.last = at
	return &r.slots[at].e
}

// Put stores e in place of the oldest entry (in an empty slot while there
// is one), makes it the last hit and returns where it is kept.
func (r *Ring[E]) Put(e E) *E {
	if len(r.slots) == 0 {
		return &e // a zero Ring remembers nothing
	}
	at := r.next
	if r.next++; r.next == len(r.slots) {
		r.next = 0
	}
	if r.n < len(r.slots) {
		r.n++
	}
	r.slots[at] = slot[E]{e: e, follow: r.next}
	if r.n > 1 {
		r.slots[r.last].follow = at
	}
	r.last = at
	return &r.slots[at].e
}

// Reset forgets every entry.
func (r *Ring[E]) Reset() {
	clear(r.slots)
	r.n, r.next, r.last = 0, 0, 0
}
