package litscan

import (
	"math/bits"
	"strings"
)

// Grouped finds which groups of literals occur in a text, in one pass: each
// literal carries a bit mask of the groups (analyzers) that want it, and
// Mask returns the union of the masks of the literals that occur. A log
// parser runs it once per line in its parallel stage, so each analyzer
// tests a bit instead of scanning the line again.
//
// Literals of at least groupedLong bytes share one strided scan of 8-byte
// windows (a Set); shorter ones are found by a vector byte search for
// their rarest byte ('"' of `File "`, '=' of "=="), one search per
// distinct byte, each hit checked in place. The answer is exact: a bit is
// set if and only if one of its literals occurs.
type Grouped struct {
	long     *Set
	longMask []uint64 // by literal index of long
	// The long literals' anchors by hash, in one array: bucket h holds
	// ents[start[h]:start[h+1]] (a map lookup per bitmap hit cost more
	// than the scan).
	start []uint32
	ents  []gAnchor
	short []byGroup
	all   uint64
	// numLeads: for each literal holding a digit, its bytes before the
	// first digit (see NumbersMatter); numAlways: one starts with a digit.
	numLeads  []string
	numAlways bool
}

// byGroup is the short literals found by one byte: each occurrence of b
// in the text is checked against every literal at its offset of b.
type byGroup struct {
	b    byte
	lits []shortLit
}

type gAnchor struct {
	w    uint64 // the anchor window
	lit  int32
	off  int32
	mask uint64
}

type shortLit struct {
	s    string
	at   int // offset of the byte searched for
	mask uint64
}

// groupedLong is the shortest literal the window scan takes: 8-byte
// windows with a stride of at least 5.
const groupedLong = 12

// NewGrouped compiles lits, where masks[i] is the group bits of lits[i]
// (a literal listed twice gets the union). It returns nil when lits is
// empty, a literal is empty, or len(masks) != len(lits).
func NewGrouped(lits []string, masks []uint64) *Grouped {
	if len(lits) == 0 || len(lits) != len(masks) {
		return nil
	}
	byLit := map[string]uint64{}
	var order []string
	for i, l := range lits {
		if l == "" {
			return nil
		}
		if _, ok := byLit[l]; !ok {
			order = append(order, l)
		}
		byLit[l] |= masks[i]
	}
	g := &Grouped{}
	var long []string
	for _, l := range order {
		g.all |= byLit[l]
		if k := strings.IndexAny(l, "0123456789"); k == 0 {
			g.numAlways = true
		} else if k > 0 {
			g.numLeads = append(g.numLeads, l[:k])
		}
		if len(l) >= groupedLong {
			long = append(long, l)
			g.longMask = append(g.longMask, byLit[l])
		} else {
			g.addShort(l, byLit[l])
		}
	}
	if len(long) > 0 {
		g.long = New(long)
		g.start = make([]uint32, 1<<hashBits+1)
		for w, as := range g.long.anchors {
			g.start[hash(w)+1] += uint32(len(as))
		}
		for h := 1; h < len(g.start); h++ {
			g.start[h] += g.start[h-1]
		}
		g.ents = make([]gAnchor, g.start[len(g.start)-1])
		fill := append([]uint32(nil), g.start...)
		for w, as := range g.long.anchors {
			h := hash(w)
			for _, a := range as {
				g.ents[fill[h]] = gAnchor{w: w, lit: a.lit, off: a.off, mask: g.longMask[a.lit]}
				fill[h]++
			}
		}
	}
	return g
}

// All is the union of every literal's mask.
func (g *Grouped) All() uint64 { return g.all }

// addShort files l under its rarest byte (the first of equal rarity).
func (g *Grouped) addShort(l string, mask uint64) {
	at := 0
	for i := 1; i < len(l); i++ {
		if rarity(l[i]) < rarity(l[at]) {
			at = i
		}
	}
	for k := range g.short {
		if g.short[k].b == l[at] {
			g.short[k].lits = append(g.short[k].lits, shortLit{l, at, mask})
			return
		}
	}
	g.short = append(g.short, byGroup{b: l[at], lits: []shortLit{{l, at, mask}}})
}

// rarity ranks a byte by how often it occurs in log text (lower: rarer),
// so the byte search of a short literal stops seldom.
func rarity(c byte) int {
	switch {
	case c >= 'a' && c <= 'z':
		if c == 'j' || c == 'q' || c == 'x' || c == 'z' || c == 'y' || c == 'k' || c == 'v' || c == 'w' {
			return 2
		}
		return 4
	case c >= '0' && c <= '9', c == ' ', c == '.', c == '/', c == ':', c == ',', c == '_':
		return 4
	case c >= 'A' && c <= 'Z', c == '(' || c == ')' || c == '[' || c == ']' || c == '-':
		return 3
	}
	return 1
}

// Mask returns the union of the masks of the literals that occur in text.
func (g *Grouped) Mask(text string) uint64 {
	var m uint64
	for k := range g.short {
		m |= g.short[k].find(text, m)
	}
	if s := g.long; s != nil {
		b, k := s.bits, s.stride
		for i := 0; i+8 <= len(text); i += k {
			w := le64(text, i)
			if h := hash(w); b[h/64]&(1<<(h%64)) != 0 {
				m |= g.verify(text, i, w, m)
			}
		}
	}
	return m
}

// find returns the masks of bg's literals found in text; literals adding
// no bit to have are not looked for.
func (bg *byGroup) find(text string, have uint64) uint64 {
	var want, m uint64
	for _, l := range bg.lits {
		want |= l.mask
	}
	if want&^have == 0 {
		return 0
	}
	for off := 0; ; {
		i := strings.IndexByte(text[off:], bg.b)
		if i < 0 {
			return m
		}
		i += off
		for _, l := range bg.lits {
			start := i - l.at
			if start >= 0 && start+len(l.s) <= len(text) && text[start:start+len(l.s)] == l.s {
				m |= l.mask
			}
		}
		if want&^(have|m) == 0 {
			return m
		}
		off = i + 1
	}
}

// verify returns the masks of the literals anchored on window w, read at
// text[i:], that are there; literals adding no bit to have are skipped.
func (g *Grouped) verify(text string, i int, w uint64, have uint64) uint64 {
	var m uint64
	h := hash(w)
	for _, a := range g.ents[g.start[h]:g.start[h+1]] {
		if a.w != w || a.mask&^(have|m) == 0 {
			continue
		}
		l := g.long.lits[a.lit]
		start := i - int(a.off)
		if start >= 0 && start+len(l) <= len(text) && text[start:start+len(l)] == l {
			m |= a.mask
		}
	}
	return m
}

// NumbersMatter reports whether Mask could differ between text and a text
// that differs from it only in its numbers (see SameButNumbers). A literal
// with no digit lies, wherever it occurs, inside one run of non-digits,
// and such texts have the same runs; a literal holding a digit needs its
// bytes before the first digit to end a run, so it cannot occur in any of
// them when those bytes occur nowhere in text (or only when the literal
// starts with a digit). When NumbersMatter is false, Mask of every text
// SameButNumbers says is alike equals Mask(text).
func (g *Grouped) NumbersMatter(text string) bool {
	if g.numAlways {
		return true
	}
	for _, l := range g.numLeads {
		if strings.Contains(text, l) {
			return true
		}
	}
	return false
}

func isDigit(c byte) bool { return c-'0' < 10 }

const ones, highs = 0x0101010101010101, 0x8080808080808080

// alike8 reports whether every byte of wa equals wb's or both are digits.
func alike8(wa, wb uint64) bool {
	x := wa ^ wb
	if x == 0 {
		return true
	}
	const low7 = 0x7f7f7f7f7f7f7f7f
	diff := ((x & low7) + low7 | x) & highs
	return diff&^(digits8(wa)&digits8(wb)) == 0
}

// digits8 has the high bit of each byte of w that is an ASCII digit set.
func digits8(w uint64) uint64 {
	v := w &^ highs // no carry out of a byte below
	return (v + 0x50*ones) &^ (v + 0x46*ones) &^ w & highs
}

// SameButNumbers reports whether a and b are the same text but for their
// numbers: cut at every maximal run of digits, both give the same pieces
// in the same order, with a run of digits in the same places (of any
// length and value). "took 3.2 s" and "took 10.75 s" are alike; "took 3 s"
// and "took s" are not. Equal texts are alike. Equal bytes are compared 8
// at a time; with AVX2, 32 at a time while 32 are left on both sides.
func SameButNumbers(a, b string) bool { return sameButNumbers(a, b, haveAVX2) }

// sameButNumbers is SameButNumbers, with the vector compare only when
// vector is true: false is the fallback, and the reference the vector
// compare is tested against.
func sameButNumbers(a, b string, vector bool) bool {
	// Most texts a caller tries are other messages, which differ in their
	// first byte.
	if len(a) != 0 && len(b) != 0 {
		if x, y := a[0], b[0]; x != y && (x-'0' >= 10 || y-'0' >= 10) {
			return false
		}
	}
	i, j := 0, 0
	if vector && len(a) >= 32 && len(b) >= 32 {
		// Up to the first place that is not alike, or the end of the
		// shorter: with numbers of the same widths (most of them) the
		// end of both.
		m := min(len(a), len(b))
		if i = alikeAVX2(a[:m], b[:m]); i == len(a) && i == len(b) {
			return true
		}
		j = i
	} else if n := len(a); n == len(b) && n >= 8 {
		// Numbers of the same widths (most of them): two texts of one
		// length whose bytes, place by place, are equal or digits on
		// both sides are alike. Two words a step; the last few bytes in
		// the word that ends the text (it overlaps the bytes checked).
		// Where a word is not so, sameFrom goes on from it.
		for i+16 <= n {
			wa0, wb0, wa1, wb1 := le64(a, i), le64(b, i), le64(a, i+8), le64(b, i+8)
			if (wa0^wb0)|(wa1^wb1) != 0 && !(alike8(wa0, wb0) && alike8(wa1, wb1)) {
				break
			}
			i += 16
		}
		if i+16 > n {
			if i+8 <= n && alike8(le64(a, i), le64(b, i)) {
				i += 8
			}
			if i == n || i+8 > n && alike8(le64(a, n-8), le64(b, n-8)) {
				return true
			}
		}
		j = i
	}
	return sameFrom(a, b, i, j, vector)
}

// sameFrom is SameButNumbers of a[i:] and b[j:] where a[:i] and b[:j] are
// alike and end at the same place in a number or out of one (places
// compared one to one up to i and j, each equal or digits on both sides,
// are).
func sameFrom(a, b string, i, j int, vector bool) bool {
	for {
		for i+8 <= len(a) && j+8 <= len(b) {
			wa, wb := le64(a, i), le64(b, j)
			if x := wa ^ wb; x != 0 {
				// Bytes that differ where both are digits keep the runs
				// of digits where they were: "1440.3" and "1550.6". Stop
				// at the first byte that is not so (a run of digits
				// longer on one side, or other text), not at the first
				// digit that differs: numbers of the same widths pass.
				const low7 = 0x7f7f7f7f7f7f7f7f
				diff := ((x & low7) + low7 | x) & highs
				if odd := diff &^ (digits8(wa) & digits8(wb)); odd != 0 {
					k := bits.TrailingZeros64(odd) / 8
					i, j = i+k, j+k
					break
				}
			}
			i, j = i+8, j+8
		}
		if i == len(a) || j == len(b) || a[i] != b[j] {
			// At the end of either, or where they differ: alike only
			// inside runs of digits on both sides.
			da, db := i < len(a) && isDigit(a[i]), j < len(b) && isDigit(b[j])
			if !da && !db {
				if i == len(a) && j == len(b) {
					return true
				}
				return false
			}
			if !da || !db {
				// One run of digits ended before the other: both were in
				// one only if the byte before (equal on both sides) is a
				// digit.
				if i == 0 || !isDigit(a[i-1]) {
					return false
				}
			}
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			if vector {
				// As in sameButNumbers: up to the next place that is
				// not alike, or the end of the shorter.
				if m := min(len(a)-i, len(b)-j); m >= 32 {
					t := alikeAVX2(a[i:i+m], b[j:j+m])
					i, j = i+t, j+t
				}
			}
			continue
		}
		i, j = i+1, j+1
	}
}
