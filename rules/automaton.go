package rules

// automaton is an Aho-Corasick matcher compiled to a byte DFA, so a scan
// costs one table lookup per input byte whatever the number of literals.
// Bytes that occur in no literal share one column, which keeps the table
// small enough to stay in cache.
type automaton struct {
	class  [256]uint8
	nclass int
	// next[state*nclass+class] is the next state, stored pre-multiplied by
	// nclass, with outFlag set when that state ends a literal: the scan
	// loop is one load, one add and one test per byte.
	next []uint32
	out  [][]int32 // literal indices that end at each state (with suffix outputs)
}

const outFlag = 1 << 31

func newAutomaton(lits []string) *automaton {
	if len(lits) == 0 {
		return nil
	}
	a := &automaton{nclass: 1} // class 0: bytes in no literal
	for _, l := range lits {
		for i := 0; i < len(l); i++ {
			if a.class[l[i]] == 0 {
				if a.nclass == 256 {
					break
				}
				a.class[l[i]] = uint8(a.nclass)
				a.nclass++
			}
		}
	}
	// Trie with -1 for missing edges.
	trie := [][]int32{make([]int32, a.nclass)}
	for i := range trie[0] {
		trie[0][i] = -1
	}
	a.out = [][]int32{nil}
	for li, l := range lits {
		s := int32(0)
		for j := 0; j < len(l); j++ {
			c := a.class[l[j]]
			if trie[s][c] < 0 {
				row := make([]int32, a.nclass)
				for k := range row {
					row[k] = -1
				}
				trie = append(trie, row)
				a.out = append(a.out, nil)
				trie[s][c] = int32(len(trie) - 1)
			}
			s = trie[s][c]
		}
		a.out[s] = append(a.out[s], int32(li))
	}
	if len(trie)*a.nclass >= outFlag {
		return nil // too many literals: Match falls back to no prefilter
	}
	// Breadth-first: failure links, folded into the goto table.
	fail := make([]int32, len(trie))
	queue := make([]int32, 0, len(trie))
	for c := 0; c < a.nclass; c++ {
		if t := trie[0][c]; t > 0 {
			queue = append(queue, t)
		} else {
			trie[0][c] = 0
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		a.out[s] = append(a.out[s], a.out[fail[s]]...)
		for c := 0; c < a.nclass; c++ {
			t := trie[s][c]
			if t < 0 {
				trie[s][c] = trie[fail[s]][c]
				continue
			}
			fail[t] = trie[fail[s]][c]
			queue = append(queue, t)
		}
	}
	a.next = make([]uint32, len(trie)*a.nclass)
	for s, row := range trie {
		for c, t := range row {
			v := uint32(t) * uint32(a.nclass)
			if a.out[t] != nil {
				v |= outFlag
			}
			a.next[s*a.nclass+c] = v
		}
	}
	return a
}

// scan appends to cand the rules whose literal occurs in text.
func (a *automaton) scan(text string, litOf [][]int, cand []int) []int {
	next, class, n := a.next, &a.class, uint32(a.nclass)
	s := uint32(0)
	for i := 0; i < len(text); i++ {
		s = next[s+uint32(class[text[i]])]
		if s&outFlag != 0 {
			s &^= outFlag
			for _, li := range a.out[s/n] {
				cand = append(cand, litOf[li]...)
			}
		}
	}
	return cand
}
