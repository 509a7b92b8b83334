// Package litscan finds which of a fixed set of literals occur in a text,
// at a fraction of a nanosecond per byte: the shared first pass that lets
// log analyzers skip the lines none of their markers can be on.
//
// Each literal is anchored on k consecutive windows of itself (8 bytes
// wide when every literal has at least 11 bytes, else 4; k, the stride, is
// at most the window width and at most the shortest literal's length minus
// the width plus one), hashed into a small bitmap. The scan reads only every
// k-th window of the text: any occurrence of a literal covers k consecutive
// window positions, exactly one of which the scan visits, and that window
// is one of the literal's anchors. A bitmap hit is verified by comparing
// the literals anchored on that exact window in place, so the answer is
// exact: no false positives, no misses. Unlike an Aho–Corasick automaton,
// the test at one position does not depend on the previous one, so the CPU
// pipelines it; and an 8-byte window rarely occurs in a line that does not
// hold its literal ("raph" is in every "graph", "ot suppo" is not).
package litscan

// Set is an immutable compiled literal set, safe for concurrent use.
type Set struct {
	bits    []uint64
	anchors map[uint64][]anchor // exact window value -> literals anchored on it
	lits    []string
	width   int // window width, 4 or 8
	stride  int
}

// anchor: literal lit holds the anchor window at byte offset off.
type anchor struct {
	lit int32
	off int32
}

const hashBits = 16 // 8 KiB bitmap: stays in L1

func hash(w uint64) uint64 { return (w * 0x9E3779B97F4A7C15) >> (64 - hashBits) }

// MinLen is the shortest literal a Set can hold.
const MinLen = 4

// New compiles lits; nil when one is shorter than MinLen (the caller needs
// another way to find it) or there are none.
func New(lits []string) *Set {
	if len(lits) == 0 {
		return nil
	}
	short := 1 << 30
	for _, l := range lits {
		short = min(short, len(l))
	}
	if short < MinLen {
		return nil
	}
	width := 4
	if short >= 11 {
		width = 8
	}
	stride := min(width, short-width+1)
	s := &Set{bits: make([]uint64, 1<<hashBits/64), anchors: map[uint64][]anchor{}, lits: lits, width: width, stride: stride}
	for li, l := range lits {
		// Anchor on the stride windows that are least common in log
		// text, so unrelated lines rarely hit the bitmap.
		best, bestScore := 0, 1<<30
		for i := 0; i+width-1+stride <= len(l); i++ {
			score := 0
			for _, c := range []byte(l[i : i+width-1+stride]) {
				score += commonness(c)
			}
			if score < bestScore {
				best, bestScore = i, score
			}
		}
		for off := best; off < best+stride; off++ {
			w := s.window(l, off)
			h := hash(w)
			s.bits[h/64] |= 1 << (h % 64)
			s.anchors[w] = append(s.anchors[w], anchor{lit: int32(li), off: int32(off)})
		}
	}
	return s
}

// commonness is a rough frequency rank of a byte in log text.
func commonness(c byte) int {
	switch {
	case c == ' ' || c == 'e' || c == 't' || c == 'a' || c == 'o' || c == 'i' || c == 'n' || c == 's' || c == 'r':
		return 4
	case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		return 3
	case c == '.' || c == '_' || c == '/' || c == ':' || c == ',' || c == '(' || c == ')':
		return 2
	case c >= 'A' && c <= 'Z':
		return 1
	}
	return 0
}

// window reads the width bytes at s[i:] as a little-endian number.
func (set *Set) window(s string, i int) uint64 {
	if set.width == 8 {
		return le64(s, i)
	}
	return uint64(le32(s, i))
}

// le64 and le32 slice first, leaving one bounds check, after which the
// compiler loads the bytes at once.
func le64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string, i int) uint32 {
	s = s[i : i+4]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// Literals returns the literals in the order given to New.
func (s *Set) Literals() []string { return s.lits }

// Each calls fn with the index of the literal found, once per occurrence,
// in order of the window that anchors it (not necessarily text order).
func (s *Set) Each(text string, fn func(lit int)) { s.scan(text, fn) }

// Any reports whether text contains one of the literals.
func (s *Set) Any(text string) bool { return s.scan(text, nil) }

// scan calls fn for each occurrence; with fn nil it stops at the first and
// reports whether there was one. One loop per window width keeps the loads
// inline (the loop is the hot path of every log line).
func (s *Set) scan(text string, fn func(int)) bool {
	b, k := s.bits, s.stride
	if s.width == 8 {
		for i := 0; i+8 <= len(text); i += k {
			w := le64(text, i)
			if h := hash(w); b[h/64]&(1<<(h%64)) != 0 && s.verify(text, i, w, fn) && fn == nil {
				return true
			}
		}
		return false
	}
	for i := 0; i+4 <= len(text); i += k {
		w := uint64(le32(text, i))
		if h := hash(w); b[h/64]&(1<<(h%64)) != 0 && s.verify(text, i, w, fn) && fn == nil {
			return true
		}
	}
	return false
}

// verify compares the literals anchored on window w, read at text[i:],
// in place; it calls fn for each that is there and reports whether one was.
func (s *Set) verify(text string, i int, w uint64, fn func(int)) bool {
	found := false
	for _, a := range s.anchors[w] {
		l := s.lits[a.lit]
		start := i - int(a.off)
		if start >= 0 && start+len(l) <= len(text) && text[start:start+len(l)] == l {
			found = true
			if fn == nil {
				return true
			}
			fn(int(a.lit))
		}
	}
	return found
}
