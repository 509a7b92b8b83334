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

// skeleton is text with every maximal run of digits replaced by one '0'
// (SameButNumbers the slow way: alike texts have equal skeletons).
func skeleton(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		if isDigit(text[i]) {
			if i == 0 || !isDigit(text[i-1]) {
				b.WriteByte('0')
			}
			continue
		}
		b.WriteByte(text[i])
	}
	return b.String()
}

// renumber rewrites every run of digits of text with 1 to 3 digits taken
// from seed (cycled): a text SameButNumbers must call alike.
func renumber(text, seed string) string {
	if seed == "" {
		seed = "7"
	}
	var b strings.Builder
	k := 0
	for i := 0; i < len(text); i++ {
		if !isDigit(text[i]) {
			b.WriteByte(text[i])
			continue
		}
		if i > 0 && isDigit(text[i-1]) {
			continue
		}
		n := 1 + int(seed[k%len(seed)])%3
		for range n {
			b.WriteByte('0' + seed[k%len(seed)]%10)
			k++
		}
	}
	return b.String()
}

func TestSameButNumbers(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"", "", true},
		{"took 3.2 s", "took 10.75 s", true},
		{"took 3 s", "took s", false},
		{"took 3 s", "took 3 s", true},
		{"12", "3", true},
		{"12", "", false},
		{"x1", "x", false},
		{"1x", "x", false},
		{"x12y", "x1y", true},
		{"x12y", "x1z", false},
		{"Avg prompt throughput: 1440.3 tokens/s, Running: 61 reqs", "Avg prompt throughput: 987.25 tokens/s, Running: 101 reqs", true},
		{"Avg prompt throughput: 1440.3 tokens/s, Running: 61 reqs", "Avg prompt throughput: 1440.3 tokens/s, Running: 61 req", false},
		{" 52%|#####     | 35/67 [00:08<00:07,  3.66it/s]", " 100%|##########| 67/67 [00:11<00:00,  1.20it/s]", false},
		{" 52%|#####| 35/67 [00:08<00:07,  3.66it/s]", " 9%|#####| 5/67 [00:18<00:17,  1.2it/s]", true},
	} {
		if got := SameButNumbers(c.a, c.b); got != c.want {
			t.Errorf("SameButNumbers(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := SameButNumbers(c.b, c.a); got != c.want {
			t.Errorf("SameButNumbers(%q, %q) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
	g := NewGrouped([]string{"collect2: fatal error: c", "Traceback (most recent call last)", "python3."}, []uint64{1, 2, 4})
	for _, c := range []struct {
		text string
		want bool
	}{
		{"Avg prompt throughput: 1440.3 tokens/s", false},
		{"ld: collect9: fatal error: c", true},
		{"/usr/lib/python3.12/x.py", true},
		{"Traceback (most recent call last):", false},
	} {
		if got := g.NumbersMatter(c.text); got != c.want {
			t.Errorf("NumbersMatter(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	if !NewGrouped([]string{"3.10", "abcdefghijklmn"}, []uint64{1, 2}).NumbersMatter("x") {
		t.Error("a literal starting with a digit: numbers always matter")
	}
}

// FuzzSameButNumbers: SameButNumbers agrees with comparing skeletons, and
// a text it calls alike has the same Mask when NumbersMatter says so,
// for the fixed literal sets, sets with digits in their literals, and
// one taken from the input.
func FuzzSameButNumbers(f *testing.F) {
	f.Add("Avg prompt throughput: 1440.3 tokens/s, Running: 61 reqs", "Avg prompt throughput: 7.3 tokens/s, Running: 1 reqs", "9381", "python3.")
	f.Add("ld: collect2: fatal error: collect7: x", "", "12", "collect2: fatal error: c")
	f.Add("/usr/lib/python3.10/site-packages", "/usr/lib/python3.9/site-packages", "3", "3.10")
	f.Add("12345678x12345678y", "1x2y", "0", "x1")
	// Same lengths: numbers of the same widths, a letter off in the
	// last word (the tail word overlaps), in a word of the pair, a run of
	// digits that is one digit longer on one side and shorter after.
	f.Add("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  52%|#####     | 35/67 [00:08<00:07,  8.93it/s]",
		"Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  55%|#####     | 37/67 [00:09<00:07,  7.58it/s]", "5", "it/s")
	f.Add("Running: 61 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.1%x", "Running: 11 reqs, Waiting: 9 reqs, GPU KV cache usage: 7.3%y", "7", "%y")
	f.Add("0123456789abcdefXYZ", "0123456789abcdegXYZ", "1", "efX")
	f.Add("took 12 s and 3 s to go", "took 1 s and 34 s to go", "2", "s a")
	f.Fuzz(func(t *testing.T, a, b, seed, lit string) {
		if got, want := SameButNumbers(a, b), skeleton(a) == skeleton(b); got != want {
			t.Fatalf("SameButNumbers(%q, %q) = %v, skeletons %q and %q", a, b, got, skeleton(a), skeleton(b))
		}
		r := renumber(a, seed)
		if !SameButNumbers(a, r) || !SameButNumbers(r, a) {
			t.Fatalf("SameButNumbers(%q, %q) = false", a, r)
		}
		if len(lit) > 40 {
			lit = lit[:40]
		}
		sets := groupedSets(lit)
		sets = append(sets, struct {
			lits  []string
			masks []uint64
		}{[]string{"collect2: fatal error: c", "/python3.", " python3.", "==", "Traceback (most recent call last)", "x1y2", "0.9"}, []uint64{1, 2, 2, 2, 4, 8, 16}})
		for _, gs := range sets {
			g := NewGrouped(gs.lits, gs.masks)
			if g == nil || g.NumbersMatter(a) {
				continue
			}
			for _, other := range []string{r, b} {
				if SameButNumbers(a, other) && g.Mask(a) != g.Mask(other) {
					t.Fatalf("over %q: %q and %q alike but for numbers, NumbersMatter false, masks %b and %b",
						gs.lits, a, other, g.Mask(a), g.Mask(other))
				}
			}
		}
	})
}

func TestDigits8(t *testing.T) {
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 8; pos++ {
			// The other bytes: every kind of neighbour.
			for _, fill := range []byte{0, '0', '9', '/', ':', 0x7f, 0x80, 0xb9, 0xff} {
				var buf [8]byte
				for k := range buf {
					buf[k] = fill
				}
				buf[pos] = byte(c)
				w := le64(string(buf[:]), 0)
				got := digits8(w)>>(8*pos+7)&1 == 1
				if got != isDigit(byte(c)) {
					t.Fatalf("digits8(% x): byte %d (%#x) digit %v", buf, pos, c, got)
				}
			}
		}
	}
}
