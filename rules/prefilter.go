package rules

// windowFilter is a cheap first pass before the automaton: every literal
// contributes one 4-byte window of itself (its "anchor"), hashed into a
// bitmap. A text that contains a literal contains its anchor, so a text
// none of whose 4-byte windows hits the bitmap cannot match any literal.
// Unlike the automaton, the test at each position does not depend on the
// previous one, so the CPU pipelines it: most log lines are rejected at a
// fraction of the automaton's per-byte cost.
type windowFilter struct {
	bits []uint64
}

const windowHashBits = 18 // 32 KiB bitmap: stays in L1/L2

func windowHash(w uint32) uint32 { return (w * 2654435761) >> (32 - windowHashBits) }

// newWindowFilter returns nil when some literal is shorter than a window:
// then every text goes to the automaton.
func newWindowFilter(lits []string) *windowFilter {
	f := &windowFilter{bits: make([]uint64, 1<<windowHashBits/64)}
	for _, l := range lits {
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
		h := windowHash(le32(l, best))
		f.bits[h/64] |= 1 << (h % 64)
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

// mayContain reports whether text might contain one of the literals.
func (f *windowFilter) mayContain(text string) bool {
	b := f.bits
	if len(text) < 4 {
		return false
	}
	// w holds text[i-3:i+1], little-endian, as le32 reads it.
	w := uint32(text[0])<<8 | uint32(text[1])<<16 | uint32(text[2])<<24
	for i := 3; i < len(text); i++ {
		w = w>>8 | uint32(text[i])<<24
		h := windowHash(w)
		if b[h/64]&(1<<(h%64)) != 0 {
			return true
		}
	}
	return false
}
