package litscan

import (
	"strings"
	"testing"
)

// occurrences counts, per literal, its occurrences in text (overlapping
// ones too) the slow way.
func occurrences(lits []string, text string) []int {
	n := make([]int, len(lits))
	for li, l := range lits {
		for i := 0; i+len(l) <= len(text); i++ {
			if text[i:i+len(l)] == l {
				n[li]++
			}
		}
	}
	return n
}

func check(t *testing.T, s *Set, text string) {
	t.Helper()
	want := occurrences(s.lits, text)
	got := make([]int, len(s.lits))
	s.Each(text, func(li int) { got[li]++ })
	any := false
	for li := range want {
		if got[li] != want[li] {
			t.Fatalf("stride %d, literal %q in %q: found %d times, occurs %d", s.stride, s.lits[li], text, got[li], want[li])
		}
		any = any || want[li] > 0
	}
	if s.Any(text) != any {
		t.Fatalf("Any(%q) = %v, want %v", text, !any, any)
	}
}

var sets = [][]string{
	{"gpu_memory_utilization"},
	{"aot_compile is not suppo", "torch_compile_cache", "Graph breaks are not supported", "CUDA out of memory"},
	{"ersion", "ERSION", "LLM engine (v", "PyTorch:", "vllm==", "torch==", "ython3."}, // stride 3
	{"aaaa", "aaaaa", "abab", "==x=", "CUDA"},                                         // stride 1, self-overlapping
	{"aaaaaa", "ababab"}, // stride 3, self-overlapping
	{"aaaaaaaaaaaa", "abababababab", "Graph breaks are not sup"}, // 8-byte windows, stride 5
}

func TestEveryOccurrenceFound(t *testing.T) {
	for _, lits := range sets {
		s := New(lits)
		for _, l := range lits {
			for _, text := range []string{"", "abc", l, "x" + l, l + "x", "xy" + l + "z", "xyz" + l + l, l + l + l,
				strings.Repeat("ab", 30) + l + strings.Repeat("cd", 30), l[:len(l)-1], l[1:]} {
				check(t, s, text)
			}
		}
		check(t, s, strings.Repeat("a", 100))
		check(t, s, strings.Repeat("ab", 100))
	}
}

func TestShortLiteralRefused(t *testing.T) {
	if New([]string{"abcd", "=="}) != nil || New(nil) != nil {
		t.Fatal("a literal under 4 bytes, or none at all, must give nil")
	}
}

// FuzzEach: Each finds exactly the occurrences a brute-force search finds,
// for the fixed sets and for a literal taken from the input.
func FuzzEach(f *testing.F) {
	f.Add("INFO 11-29 [x.py:1] gpu_memory_utilization=0.9 aot_compile is not supported", "ython3.")
	f.Add("aaaaaaaaaaab", "aaab")
	f.Add("PyTorch version: 2.7.1 vllm==0.11 torch==2.10", "on: 2")
	f.Fuzz(func(t *testing.T, text, lit string) {
		for _, lits := range sets {
			check(t, New(lits), text)
		}
		if len(lit) >= MinLen && len(lit) < 40 {
			check(t, New([]string{lit, "ersion"}), text)
			check(t, New([]string{lit, "gpu_memory_utilization"}), text)
		}
	})
}

func BenchmarkAny(b *testing.B) {
	line := "Avg prompt throughput: 1532.4 tokens/s, Avg generation throughput: 412.9 tokens/s, Running: 64 reqs, Swapped: 0 reqs, Pending: 3 reqs, GPU KV cache usage: 41.2%, CPU KV cache usage: 0.0%."
	for _, c := range []struct {
		name string
		lits []string
	}{{"width8", sets[1]}, {"width4-stride3", sets[2]}} {
		s := New(c.lits)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for i := 0; i < b.N; i++ {
				if s.Any(line) {
					b.Fatal("hit")
				}
			}
		})
	}
}

// maskOf is Grouped.Mask the slow way.
func maskOf(lits []string, masks []uint64, text string) uint64 {
	var m uint64
	for i, l := range lits {
		if strings.Contains(text, l) {
			m |= masks[i]
		}
	}
	return m
}

// groupedSets: the literal sets above, with a group per literal (bits
// 0..n-1), one shared by every literal, and literals of both scans.
func groupedSets(extra string) (out []struct {
	lits  []string
	masks []uint64
}) {
	add := func(lits []string, masks []uint64) {
		out = append(out, struct {
			lits  []string
			masks []uint64
		}{lits, masks})
	}
	for _, lits := range sets {
		ms := make([]uint64, len(lits))
		one := make([]uint64, len(lits))
		for i := range lits {
			ms[i] = 1 << (i % 64)
			one[i] = 1 << 5
		}
		add(lits, ms)
		add(lits, one)
	}
	add([]string{"==", `File "`, "Traceback (most recent call last)", "python3.", "gpu_memory_utilization", "Traceback (m", "=="},
		[]uint64{1, 2, 2, 1, 4, 8, 16})
	if extra != "" {
		add([]string{extra, "Traceback (most recent call last)", "==", extra + extra}, []uint64{1, 2, 4, 1 | 8})
	}
	return out
}

func checkGrouped(t *testing.T, lits []string, masks []uint64, text string) {
	t.Helper()
	g := NewGrouped(lits, masks)
	if got, want := g.Mask(text), maskOf(lits, masks, text); got != want {
		t.Fatalf("Mask(%q) over %q = %b, want %b", text, lits, got, want)
	}
}

func TestGroupedMask(t *testing.T) {
	for _, gs := range groupedSets("") {
		for _, l := range gs.lits {
			for _, text := range []string{"", "abc", l, "x" + l, l + "x", "xy" + l + "z", "xyz" + l + l,
				strings.Repeat("ab", 30) + l + strings.Repeat("cd", 30), l[:len(l)-1], l[1:]} {
				checkGrouped(t, gs.lits, gs.masks, text)
			}
		}
	}
	if NewGrouped(nil, nil) != nil || NewGrouped([]string{""}, []uint64{1}) != nil || NewGrouped([]string{"abc"}, nil) != nil {
		t.Fatal("no literals, an empty literal, or masks not matching lits must give nil")
	}
	if g := NewGrouped([]string{"==", "gpu_memory_utilization"}, []uint64{1, 6}); g.All() != 7 {
		t.Fatalf("All = %b, want 111", g.All())
	}
}

// FuzzGroupedMask: Mask equals the union of the masks of the literals a
// brute-force search finds, for the fixed sets and one taken from the input.
func FuzzGroupedMask(f *testing.F) {
	f.Add("INFO 11-29 [x.py:1] gpu_memory_utilization=0.9 File \"x.py\" python3.12 ==", "ython3.")
	f.Add("Traceback (most recent call last):", "Trace")
	f.Add("aaaaaaaaaaaaaaaaaaab", "aaab")
	f.Fuzz(func(t *testing.T, text, lit string) {
		if len(lit) > 40 {
			lit = lit[:40]
		}
		for _, gs := range groupedSets(lit) {
			checkGrouped(t, gs.lits, gs.masks, text)
		}
	})
}
