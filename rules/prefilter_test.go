package rules

import (
	"slices"
	"strings"
	"testing"
)

// winScan is what Match collects from the literal scan.
func winScan(s *Set, text string) []int {
	var c []int
	s.win.Each(text, func(li int) { c = append(c, s.litOf[li]...) })
	return c
}

// candidates returns the sorted, de-duplicated rule indices a scan found.
func candidates(c []int) []int {
	slices.Sort(c)
	return slices.Compact(c)
}

// FuzzWindowScan: the anchored window scan finds exactly the rules the
// Aho-Corasick automaton finds, on any text (seeded with every builtin
// literal in context, overlapping and cut at either end).
func FuzzWindowScan(f *testing.F) {
	s, err := Builtin()
	if err != nil {
		f.Fatal(err)
	}
	if s.win == nil {
		f.Fatal("builtin literals should all allow the window scan")
	}
	ac := newAutomaton(s.lits) // what Match scans with when the window scan cannot
	for _, l := range s.win.Literals() {
		f.Add("INFO 11-29 [x.py:1] " + l + " tail")
		f.Add(l)
		f.Add(l[1:] + l + l[:len(l)-1])
	}
	f.Add("Avg prompt throughput: 1532.4 tokens/s, torch_compile_cache/3f9c1e7a2b/rank_0_0")
	f.Fuzz(func(t *testing.T, text string) {
		want := candidates(ac.scan(text, s.litOf, nil))
		got := candidates(winScan(s, text))
		if !slices.Equal(got, want) {
			t.Fatalf("window scan %v, automaton %v on %q", got, want, text)
		}
	})
}

// TestWindowScanFindsEveryLiteral: each literal is found wherever it sits,
// and a near miss (one byte changed) is not taken for it.
func TestWindowScanFindsEveryLiteral(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	ac := newAutomaton(s.lits)
	for li, l := range s.win.Literals() {
		for _, text := range []string{l, "x" + l, l + "x", strings.Repeat("ab", 40) + l + strings.Repeat("cd", 40)} {
			got := candidates(winScan(s, text))
			for _, r := range s.litOf[li] {
				if !slices.Contains(got, r) {
					t.Errorf("literal %q in %q: rule %d not found (got %v)", l, text, r, got)
				}
			}
		}
		miss := []byte(l)
		miss[len(miss)-1] ^= 0x20
		if got, want := candidates(winScan(s, string(miss))), candidates(ac.scan(string(miss), s.litOf, nil)); !slices.Equal(got, want) {
			t.Errorf("near miss %q: window %v, automaton %v", miss, got, want)
		}
	}
}
