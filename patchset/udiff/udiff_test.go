package udiff

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// roundTrip diffs a→b, formats, parses the text back and checks that the
// parsed diff turns a into b and its reverse turns b into a, byte-exact.
func roundTrip(t *testing.T, a, b []byte) {
	t.Helper()
	d := Diff("x.py", a, b)
	if bytes.Equal(a, b) {
		if d != nil {
			t.Fatalf("equal inputs gave a diff")
		}
		return
	}
	text := Format(d)
	files, err := Parse([]byte(text), 1)
	if err != nil {
		t.Fatalf("parse own output: %v\n%s", err, text)
	}
	got, err := Apply(a, files[0], Options{})
	if err != nil {
		t.Fatalf("apply own diff: %v\n%s", err, text)
	}
	if !bytes.Equal(got.Content, b) {
		t.Fatalf("apply gave\n%q\nwant\n%q\ndiff:\n%s", got.Content, b, text)
	}
	back, err := Apply(b, Reverse(files[0]), Options{})
	if err != nil {
		t.Fatalf("reverse apply: %v\n%s", err, text)
	}
	if !bytes.Equal(back.Content, a) {
		t.Fatalf("reverse gave %q want %q", back.Content, a)
	}
}

func TestRoundTripCases(t *testing.T) {
	cases := []struct{ a, b string }{
		{"a\nb\nc\n", "a\nB\nc\n"},
		{"", "new\n"},
		{"old\n", ""},
		{"a\nb", "a\nb\n"},           // add final newline
		{"a\nb\n", "a\nb"},           // remove final newline
		{"a\nb", "a\nc"},             // both lack it
		{"x\r\ny\r\n", "x\r\nz\r\n"}, // CRLF kept byte-exact
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n", "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n"},
		{"same\n", "same\n"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) { roundTrip(t, []byte(c.a), []byte(c.b)) })
	}
}

func TestRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	words := []string{"a\n", "b\n", "c\n", "def f():\n", "    return 1\n", "\n", "x\r\n", "end"}
	for n := 0; n < 2000; n++ {
		var a []string
		for range r.Intn(40) {
			a = append(a, words[r.Intn(len(words)-1)])
		}
		b := append([]string(nil), a...)
		for range r.Intn(6) {
			p := 0
			if len(b) > 0 {
				p = r.Intn(len(b) + 1)
			}
			switch r.Intn(3) {
			case 0:
				b = append(b[:p], append([]string{words[r.Intn(len(words)-1)]}, b[p:]...)...)
			case 1:
				if p < len(b) {
					b = append(b[:p], b[p+1:]...)
				}
			case 2:
				if p < len(b) {
					b[p] = "changed\n"
				}
			}
		}
		if r.Intn(4) == 0 {
			b = append(b, "end") // no final newline
		}
		roundTrip(t, []byte(strings.Join(a, "")), []byte(strings.Join(b, "")))
	}
}

func TestMinimalDiff(t *testing.T) {
	a := []byte("a\nb\nc\nd\ne\nf\ng\n")
	b := []byte("a\nb\nX\nd\ne\nf\ng\n")
	d := Diff("f", a, b)
	want := "--- a/f\n+++ b/f\n@@ -1,6 +1,6 @@\n a\n b\n-c\n+X\n d\n e\n f\n"
	if got := Format(d); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestFarApartChangesMakeTwoHunks(t *testing.T) {
	var a, b []string
	for i := range 30 {
		a = append(a, fmt.Sprintf("%d\n", i))
		b = append(b, fmt.Sprintf("%d\n", i))
	}
	b[2], b[25] = "two\n", "twentyfive\n"
	d := Diff("f", []byte(strings.Join(a, "")), []byte(strings.Join(b, "")))
	if len(d.Hunks) != 2 {
		t.Fatalf("want 2 hunks, got %d:\n%s", len(d.Hunks), Format(d))
	}
	if h := d.Hunks[1]; h.OldStart != 23 || h.OldLines != 7 {
		t.Fatalf("second hunk -%d,%d, want -23,7", h.OldStart, h.OldLines)
	}
}

const wrapperDiff = `--- a/w.py
+++ b/w.py
@@ -2,3 +2,4 @@
 b
 c
+NEW
 d
`

func TestExactContextNoFuzz(t *testing.T) {
	files, err := Parse([]byte(wrapperDiff), 1)
	if err != nil {
		t.Fatal(err)
	}
	base := []byte("a\nb\nc\nd\ne\n")
	got, err := Apply(base, files[0], Options{})
	if err != nil || string(got.Content) != "a\nb\nc\nNEW\nd\ne\n" {
		t.Fatalf("exact apply: %v %+v", err, got)
	}
	// One changed context line: must be refused, naming the line.
	_, err = Apply([]byte("a\nB\nc\nd\ne\n"), files[0], Options{})
	var ae *ApplyError
	if !errors.As(err, &ae) || ae.Hunk != 1 || ae.FileLine != 2 || !strings.Contains(ae.Reason, `expected "b", found "B"`) {
		t.Fatalf("fuzz-1 target: got %v", err)
	}
	// Shifted by 3 lines: refused without offsets, found with them.
	shifted := []byte("x\ny\nz\na\nb\nc\nd\ne\n")
	if _, err := Apply(shifted, files[0], Options{}); err == nil {
		t.Fatal("shifted target applied without offsets")
	}
	got, err = Apply(shifted, files[0], Options{MaxOffset: 10})
	if err != nil || got.Offsets[0] != 3 || string(got.Content) != "x\ny\nz\na\nb\nc\nNEW\nd\ne\n" {
		t.Fatalf("offset apply: %v %+v", err, got)
	}
	// CRLF target for an LF patch: the reason names line endings.
	_, err = Apply([]byte("a\r\nb\r\nc\r\nd\r\ne\r\n"), files[0], Options{})
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "line endings differ: the file has CRLF, the patch LF") {
		t.Fatalf("CRLF: got %v", err)
	}
}

func TestParseErrorsHaveLines(t *testing.T) {
	cases := map[string]int{
		"--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n":                  5,
		"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n?b\n+c\n":              5,
		"--- a/x\n@@ -1 +1 @@\n":                                       1,
		"@@ -1 +1 @@\n-a\n+b\n":                                        1,
		"--- a/x\n+++ b/x\n@@ -1,x +1 @@\n":                            3,
		"--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+a\n":                  1,
		"--- a/x\n+++ b/x\n@@ -5 +5 @@\n-a\n+b\n@@ -1 +1 @@\n-a\n+b\n": 6,
	}
	for in, line := range cases {
		_, err := Parse([]byte(in), 1)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != line {
			t.Errorf("%q: got %v, want error at line %d", in, err, line)
		}
	}
}

func TestNoNewlineMarker(t *testing.T) {
	in := "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
	files, err := Parse([]byte(in), 1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Apply([]byte("a\nb"), files[0], Options{})
	if err != nil || string(got.Content) != "a\nc" {
		t.Fatalf("%v %+v", err, got)
	}
	if _, err := Apply([]byte("a\nb\n"), files[0], Options{}); err == nil {
		t.Fatal("applied a no-newline hunk to a file that has one")
	}
}

// seeds: the real patch of the project and our own fixtures.
func fuzzSeeds(f *testing.F) {
	f.Add([]byte(wrapperDiff))
	f.Add([]byte("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"))
	for _, p := range []string{"../../../shared/seeds/000_9ec8939dfa491181.txt"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	ms, _ := filepath.Glob("../testdata/*.patch")
	for _, m := range ms {
		if b, err := os.ReadFile(m); err == nil {
			f.Add(b)
		}
	}
}

// FuzzParse: any input parses or fails with a located error; what parses
// formats and re-parses to the same hunks, and applies to its own old side.
func FuzzParse(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := Parse(data, 1)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error without location: %v", err)
			}
			return
		}
		for _, fd := range files {
			again, err := Parse([]byte(Format(fd)), 1)
			if err != nil {
				t.Fatalf("own format does not re-parse: %v\n%s", err, Format(fd))
			}
			if len(again[0].Hunks) != len(fd.Hunks) {
				t.Fatalf("hunk count changed")
			}
			_, _ = Apply(data, fd, Options{MaxOffset: 5})
		}
	})
}

// FuzzDiff: the generator's output always round-trips.
func FuzzDiff(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nc\nd"))
	f.Add([]byte("x\r\n"), []byte(""))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		roundTrip(t, a, b)
	})
}
