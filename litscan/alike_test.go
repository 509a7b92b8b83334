package litscan

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/bringup-tool/bringup/testsupport/benchlog"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// alikePrefix is alikeAVX2 the slow way: the first place where a and b
// differ and are not both digits.
func alikePrefix(a, b string) int {
	for i := 0; i < len(a); i++ {
		if a[i] != b[i] && !(isDigit(a[i]) && isDigit(b[i])) {
			return i
		}
	}
	return len(a)
}

// checkAlike compares SameButNumbers of a and b both ways with the Go
// version and the skeletons, and the vector prefix with alikePrefix.
func checkAlike(t *testing.T, a, b string) {
	t.Helper()
	want := skeleton(a) == skeleton(b)
	for _, p := range [][2]string{{a, b}, {b, a}} {
		if got, gogot := SameButNumbers(p[0], p[1]), sameButNumbers(p[0], p[1], false); got != want || gogot != want {
			t.Fatalf("SameButNumbers(%q, %q) = %v, Go %v; skeletons say %v", p[0], p[1], got, gogot, want)
		}
	}
	if haveAVX2 && len(a) == len(b) && len(a) >= 32 {
		if got, want := alikeAVX2(a, b), alikePrefix(a, b); got != want {
			t.Fatalf("alikeAVX2(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
}

// unsafeString is b as a string in place (the offset in memory kept).
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// alikeBytes: digits, their neighbours, and bytes from 0x80 whose low
// seven bits are a digit's.
var alikeBytes = []byte{0x00, '\n', ' ', '.', '/', '0', '1', '5', '9', ':', 'a', 0x7f, 0x80, 0xaf, 0xb0, 0xb9, 0xba, 0xff}

// checkAlikeGo compares SameButNumbers of a and b both ways with the Go
// version, and the vector prefix with alikePrefix (checkAlike without
// the skeletons, for the many cases of TestAlikeEdges).
func checkAlikeGo(t *testing.T, a, b string) {
	t.Helper()
	for _, p := range [][2]string{{a, b}, {b, a}} {
		if got, want := SameButNumbers(p[0], p[1]), sameButNumbers(p[0], p[1], false); got != want {
			t.Fatalf("SameButNumbers(%q, %q) = %v, Go %v", p[0], p[1], got, want)
		}
	}
	if haveAVX2 && len(a) == len(b) && len(a) >= 32 {
		if got, want := alikeAVX2(a, b), alikePrefix(a, b); got != want {
			t.Fatalf("alikeAVX2(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
}

// alikeBases: plain letters, digits, and both in turn.
var alikeBases = []string{strings.Repeat("x", 200), strings.Repeat("7", 200), strings.Repeat("ab12", 50), strings.Repeat("1.5 s, ", 30)}

// TestAlikeEdges: texts of one length 0..100 (the 32-byte steps and the
// last, overlapping one) over each base, each pair of alikeBytes at every
// place, alone and with a second byte changed further on.
func TestAlikeEdges(t *testing.T) {
	if !haveAVX2 {
		t.Log("no AVX2: SameButNumbers is the Go compare here")
	}
	for _, base := range alikeBases {
		for n := 0; n <= 100; n++ {
			a, b := []byte(base[:n]), []byte(base[:n])
			checkAlike(t, string(a), string(b))
			for p := 0; p < n; p++ {
				for _, ca := range alikeBytes {
					for _, cb := range alikeBytes {
						a[p], b[p] = ca, cb
						if p == 0 {
							// Both versions return early on a first
							// byte: against the skeletons.
							checkAlike(t, string(a), string(b))
						} else {
							checkAlikeGo(t, string(a), string(b))
						}
						if q := p + 1 + (n-p)/2; q < n && ca == cb {
							kq := b[q]
							b[q] = 'q'
							checkAlikeGo(t, string(a), string(b))
							b[q] = kq
						}
					}
				}
				a[p], b[p] = base[p], base[p]
			}
		}
	}
}

// TestAlikeWidths: texts of other lengths, over each base: a digit or a
// letter put in at every place, or the byte there taken out, and the
// rest of the text compared 32 bytes a step from there on.
func TestAlikeWidths(t *testing.T) {
	for _, base := range alikeBases {
		for n := 0; n <= 100; n++ {
			a := base[:n]
			for p := 0; p <= n; p++ {
				for _, c := range []string{"4", "x"} {
					checkAlike(t, a, a[:p]+c+a[p:])
				}
				if p < n {
					checkAlike(t, a, a[:p]+a[p+1:])
				}
			}
		}
	}
}

// TestAlikeOffsets: the same at every offset of each text in memory (the
// vector loads are unaligned), with a digit against a digit and against
// a letter at every place, and the texts ending where their memory does.
func TestAlikeOffsets(t *testing.T) {
	for _, base := range alikeBases {
		for n := 0; n <= 100; n++ {
			for off := 0; off < 32; off++ {
				ab, bb := []byte(base[:off+n]), []byte(base[(off+5)%32:(off+5)%32+n])
				a, b := ab[off:off+n:off+n], bb[:n:n]
				copy(b, a)
				checkAlikeGo(t, unsafeString(a), unsafeString(b))
				for p := 0; p < n; p++ {
					for _, x := range [][2]byte{{'1', '8'}, {'5', 'x'}, {0xb1, '1'}} {
						ka, kb := a[p], b[p]
						a[p], b[p] = x[0], x[1]
						checkAlikeGo(t, unsafeString(a), unsafeString(b))
						a[p], b[p] = ka, kb
					}
				}
			}
		}
	}
}

// TestAlikeRandom: random texts of one length, mostly alike (numbers of
// the same widths), with a few bytes changed to anything.
func TestAlikeRandom(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	const chars = "abc .:/%|#0123456789"
	for iter := 0; iter < 100000; iter++ {
		n := r.Intn(300)
		a := make([]byte, n)
		for k := range a {
			a[k] = chars[r.Intn(len(chars))]
		}
		b := append([]byte(nil), a...)
		for k := range b {
			if isDigit(b[k]) && r.Intn(2) == 0 {
				b[k] = byte('0' + r.Intn(10))
			}
		}
		for k := r.Intn(3); k > 0 && n > 0; k-- {
			b[r.Intn(n)] = byte(r.Intn(256))
		}
		checkAlike(t, string(a), string(b))
		// Numbers of other widths, and a byte more or less.
		w := renumber(string(b), string(rune('0'+r.Intn(10)))+string(rune('0'+r.Intn(10))))
		checkAlike(t, string(a), w)
		if p := r.Intn(len(w) + 1); r.Intn(2) == 0 {
			checkAlike(t, string(a), w[:p]+string(chars[r.Intn(len(chars))])+w[p:])
		} else if p < len(w) {
			checkAlike(t, string(a), w[:p]+w[p+1:])
		}
	}
}

// corpusLines: the lines of the real engine logs and of the parser's
// fixtures.
func corpusLines(t testing.TB) []string {
	var files []string
	for _, pat := range []string{
		filepath.Join(testcorpus.Root(), "..", "shared", "corpus", "engine-logs", "*.log"),
		filepath.Join(testcorpus.Root(), "ingest", "enginelog", "testdata", "*.log"),
		filepath.Join(testcorpus.Root(), "examples", "*", "*.log"),
	} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	var lines []string
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		lines = append(lines, strings.Split(string(b), "\n")...)
	}
	if len(lines) == 0 {
		t.Skip("no corpus")
	}
	return lines
}

// widths rewrites every digit of text with one from seed (cycled): the
// same length, alike, numbers of the same widths.
func widths(text, seed string) string {
	if seed == "" {
		seed = "3"
	}
	b := []byte(text)
	k := 0
	for i, c := range b {
		if isDigit(c) {
			b[i] = '0' + seed[k%len(seed)]%10
			k++
		}
	}
	return string(b)
}

// TestAlikeCorpus: each corpus line against itself renumbered (same and
// other widths), against the lines near it, and with one byte changed at
// every place.
func TestAlikeCorpus(t *testing.T) {
	lines := corpusLines(t)
	for i, l := range lines {
		checkAlike(t, l, widths(l, "917"))
		checkAlike(t, l, renumber(l, "42"))
		for d := 1; d <= 4 && i+d < len(lines); d++ {
			checkAlike(t, l, lines[i+d])
		}
		w := []byte(widths(l, "5"))
		for p := range w {
			c := w[p]
			for _, x := range []byte{'x', '0', 0xb5} {
				w[p] = x
				checkAlike(t, l, string(w))
			}
			w[p] = c
		}
	}
}

// FuzzAlikeAVX2: SameButNumbers against the Go version and the skeletons
// on texts of one length (a, a with its digits rewritten from seed, that
// with b's bytes laid over it from place at) and of others (a with its
// numbers rewritten from seed, in widths of 1 to 3).
func FuzzAlikeAVX2(f *testing.F) {
	for i, l := range corpusLines(f) {
		if i%7 == 0 && len(l) >= 32 {
			f.Add(l, "x", "19", uint8(i))
		}
	}
	f.Add("Avg prompt throughput: 1440.3 tokens/s, Running: 61 reqs, Waiting: 0 reqs", "", "7", uint8(0))
	f.Add("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  52%|#####     | 35/67 [00:08<00:07,  8.93it/s]", "9", "5", uint8(63))
	f.Fuzz(func(t *testing.T, a, b, seed string, at uint8) {
		r := []byte(widths(a, seed))
		if len(r) > 0 {
			copy(r[int(at)%len(r):], b)
		}
		checkAlike(t, a, widths(a, seed))
		checkAlike(t, a, string(r))
		checkAlike(t, a, renumber(a, seed))
		checkAlike(t, string(r), renumber(a, seed))
		if len(b) >= len(a) {
			checkAlike(t, a, b[:len(a)])
		}
	})
}

// memoBodies: the message bodies of a varied generated log (each line
// after its "] "), as the peeler's mask memo compares them.
func memoBodies(b *testing.B) []string {
	var buf bytes.Buffer
	if err := benchlog.WriteVaried(&buf, 512<<10, 8, true); err != nil {
		b.Fatal(err)
	}
	var bodies []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if k := strings.Index(l, "] "); k >= 0 {
			l = l[k+2:]
		}
		if l != "" {
			bodies = append(bodies, l)
		}
	}
	return bodies
}

// memoPairs: each body of a varied generated log with the 8 bodies
// before it, nearest first, up to the first alike one: the compares the
// peeler's mask memo makes, apart into those that say alike (hits) and
// those that do not.
func memoPairs(b *testing.B) (hits, misses [][2]string) {
	bodies := memoBodies(b)
	for i := 8; i < len(bodies); i++ {
		for d := 1; d <= 8; d++ {
			if sameButNumbers(bodies[i-d], bodies[i], false) {
				hits = append(hits, [2]string{bodies[i-d], bodies[i]})
				break
			}
			misses = append(misses, [2]string{bodies[i-d], bodies[i]})
		}
	}
	return hits, misses
}

// BenchmarkSameButNumbers: the mask memo's compares (memoPairs), in ns
// per compare, SameButNumbers and the Go version.
func BenchmarkSameButNumbers(b *testing.B) {
	hits, misses := memoPairs(b)
	for _, s := range []struct {
		name string
		same func(a, b string) bool
	}{{"vector", SameButNumbers}, {"go", func(a, b string) bool { return sameButNumbers(a, b, false) }}} {
		for _, set := range []struct {
			name  string
			pairs [][2]string
			want  bool
		}{{"hits", hits, true}, {"misses", misses, false}} {
			b.Run(set.name+"/"+s.name, func(b *testing.B) {
				n := 0
				for b.Loop() {
					for _, p := range set.pairs {
						if s.same(p[0], p[1]) == set.want {
							n++
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(set.pairs)), "ns/compare")
				if n != b.N*len(set.pairs) {
					b.Fatal("a compare says otherwise than it did")
				}
			})
		}
	}
}
