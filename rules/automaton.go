package rules

// automaton is an Aho-Corasick matcher compiled to a full byte DFA, so a
// scan costs one table lookup per input byte whatever the number of
// literals.
type automaton struct {
	next [][256]int32 // goto with failure transitions folded in
	out  [][]int32    // literal indices that end at each state (with suffix outputs)
}

func newAutomaton(lits []string) *automaton {
	if len(lits) == 0 {
		return nil
	}
	a := &automaton{next: make([][256]int32, 1), out: make([][]int32, 1)}
	for i := range a.next[0] {
		a.next[0][i] = -1
	}
	for li, l := range lits {
		s := int32(0)
		for j := 0; j < len(l); j++ {
			c := l[j]
			if a.next[s][c] < 0 {
				var row [256]int32
				for k := range row {
					row[k] = -1
				}
				a.next = append(a.next, row)
				a.out = append(a.out, nil)
				a.next[s][c] = int32(len(a.next) - 1)
			}
			s = a.next[s][c]
		}
		a.out[s] = append(a.out[s], int32(li))
	}
	// Breadth-first: failure links, then fold them into the goto table.
	fail := make([]int32, len(a.next))
	queue := make([]int32, 0, len(a.next))
	for c := 0; c < 256; c++ {
		if t := a.next[0][c]; t > 0 {
			fail[t] = 0
			queue = append(queue, t)
		} else {
			a.next[0][c] = 0
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		a.out[s] = append(a.out[s], a.out[fail[s]]...)
		for c := 0; c < 256; c++ {
			t := a.next[s][c]
			if t < 0 {
				a.next[s][c] = a.next[fail[s]][c]
				continue
			}
			fail[t] = a.next[fail[s]][c]
			queue = append(queue, t)
		}
	}
	return a
}

// scan appends to cand the rules whose literal occurs in text.
func (a *automaton) scan(text string, litOf [][]int, cand []int) []int {
	next, out := a.next, a.out
	s := int32(0)
	for i := 0; i < len(text); i++ {
		s = next[s][text[i]]
		if o := out[s]; o != nil {
			for _, li := range o {
				cand = append(cand, litOf[li]...)
			}
		}
	}
	return cand
}
