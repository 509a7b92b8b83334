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
	// guess is Probe(0): the follower of last (last itself when that
	// slot is not filled yet), kept by Hit and Add so that the first,
	// usually the only, probe of a search is one load.
	guess int
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
	for k := 0; k < r.n; k++ {
		if at := r.Probe(k); match(&r.slots[at].e) {
			return r.Hit(at)
		}
	}
	return nil
}

// Probe is the slot of the k-th entry a search tries, k from 0 to
// Len()-1: first the one that followed the last hit the last time (the
// last hit itself when none did), then the others from the last hit on,
// each once. A hot loop calls Probe, At and Hit, small enough to be
// inlined, where Find would call match through a func value.
func (r *Ring[E]) Probe(k int) int {
	g := r.guess
	if k == 0 {
		return g
	}
	last := r.last
	d := g - last // where the guess is in ring order from last
	if d < 0 {
		d += r.n
	}
	if k--; k >= d {
		k++
	}
	at := last + k
	if at >= r.n {
		at -= r.n
	}
	return at
}

// At is the entry in slot at (from Probe).
func (r *Ring[E]) At(at int) *E { return &r.slots[at].e }

// Hit makes the entry in slot at the last hit, the follower of the one
// before, and returns it.
func (r *Ring[E]) Hit(at int) *E {
	r.slots[r.last].follow = at
	r.last = at
	r.setGuess()
	return &r.slots[at].e
}

// setGuess recomputes guess after last or its follower changed.
func (r *Ring[E]) setGuess() {
	g := r.slots[r.last].follow
	if g >= r.n {
		g = r.last
	}
	r.guess = g
}

// Put stores e in place of the oldest entry (in an empty slot while there
// is one), makes it the last hit and returns where it is kept.
func (r *Ring[E]) Put(e E) *E {
	if len(r.slots) == 0 {
		return &e // a zero Ring remembers nothing
	}
	p := r.Add()
	*p = e
	return p
}

// Add is Put for a caller that fills the entry in place: it takes the
// slot of the oldest entry (an empty one while there is one), makes it
// the last hit and returns it still holding the entry it replaces (the
// zero E in an empty slot), whose buffers the caller may reuse. A zero
// Ring returns a new zero E it does not keep.
func (r *Ring[E]) Add() *E {
	if len(r.slots) == 0 {
		return new(E)
	}
	at := r.next
	if r.next++; r.next == len(r.slots) {
		r.next = 0
	}
	if r.n < len(r.slots) {
		r.n++
	}
	r.slots[at].follow = r.next
	if r.n > 1 {
		r.slots[r.last].follow = at
	}
	r.last = at
	r.setGuess()
	return &r.slots[at].e
}

// Reset forgets every entry.
func (r *Ring[E]) Reset() {
	clear(r.slots)
	r.n, r.next, r.last, r.guess = 0, 0, 0, 0
}
