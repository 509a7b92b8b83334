package rules

// windowFilter finds the literals in a text without the automaton: every
// literal contributes one 4-byte window of itself (its "anchor"), hashed
// into a bitmap. Every occurrence of a literal contains its anchor at a
// known offset, so the scan tests each 4-byte window of the text against
// the bitmap and, on a hit, compares the literals anchored on that exact
// window in place. Unlike the automaton, the test at each position does
// not depend on the previous one, so the CPU pipelines it (~1 ns/byte
// against the automaton's ~2); and a window that hits by chance (a log
// line that contains "_com" without "aot_compile") costs a map lookup and
// a failed compare instead of an automaton pass over the whole line.
type windowFilter struct {
	bits    []uint64
	anchors map[uint32][]anchor // exact window value -> literals anchored on it
	lits    []string
}

// anchor: literal lit holds its anchor window at byte offset off.
type anchor struct {
	lit int32
	off int32
}

const windowHashBits = 18 // 32 KiB bitmap: stays in L1/L2

func windowHash(w uint32) uint32 { return (w * 2654435761) >> (32 - windowHashBits) }

// newWindowFilter returns nil when some literal is shorter than a window:
// then every text goes to the automaton.
func newWindowFilter(lits []string) *windowFilter {
	f := &windowFilter{bits: make([]uint64, 1<<windowHashBits/64), anchors: map[uint32][]anchor{}, lits: lits}
	for li, l := range lits {
		if len(l) < 4 {
			return nil
		}
		best, bestScore := 0, 1<<30
		for i := 0; i+4 <= len(l); i++ {
			s := 0
			for _, c := range []byte(l[i : i+4]) {
				s += byteCommonness(c)
			}
			if s < bestScore {
				best, bestScore = i, s
			}
		}
		w := le32(l, best)
		h := windowHash(w)
		f.bits[h/64] |= 1 << (h % 64)
		f.anchors[w] = append(f.anchors[w], anchor{lit: int32(li), off: int32(best)})
	}
	return f
}

// byteCommonness is a rough frequency rank of a byte in log text; the
// anchor is the literal's least common window, so unrelated lines rarely
// hit it.
func byteCommonness(c byte) int {
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

func le32(s string, i int) uint32 {
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
}

// scan appends to cand the rules of every literal occurring in text, once
// per occurrence (Match de-duplicates), like automaton.scan.
func (f *windowFilter) scan(text string, litOf [][]int, cand []int) []int {
	b := f.bits
	if len(text) < 4 {
		return cand
	}
	// w holds text[i-3:i+1], little-endian, as le32 reads it.
	w := uint32(text[0])<<8 | uint32(text[1])<<16 | uint32(text[2])<<24
	for i := 3; i < len(text); i++ {
		w = w>>8 | uint32(text[i])<<24
		h := windowHash(w)
		if b[h/64]&(1<<(h%64)) == 0 {
			continue
		}
		for _, a := range f.anchors[w] {
			l := f.lits[a.lit]
			start := i - 3 - int(a.off)
			if start >= 0 && start+len(l) <= len(text) && text[start:start+len(l)] == l {
				cand = append(cand, litOf[a.lit]...)
			}
		}
	}
	return cand
}
