package enginelog

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/testsupport/guardpage"
)

// scanExact is what scanLine must say of data, the slow way: the line up
// to the first '\n', and whether that line holds a byte under 0x20 or one
// from 0x80.
func scanExact(data []byte) (line, rest []byte, ctl, high bool) {
	line, rest = cutLine(data)
	for _, c := range line {
		ctl = ctl || c < 0x20
		high = high || c >= 0x80
	}
	return line, rest, ctl, high
}

// checkScan compares scanLine and scanLineGo of data with scanExact: the
// same cut, no claim that is false; and scanLine makes no conservative
// false where the Go scan makes the claim.
func checkScan(t *testing.T, data []byte) {
	t.Helper()
	line, rest, noCtl, ascii := scanLine(data)
	wantLine, wantRest, ctl, high := scanExact(data)
	if !bytes.Equal(line, wantLine) || !bytes.Equal(rest, wantRest) || (rest == nil) != (wantRest == nil) ||
		len(line) > 0 && &line[0] != &data[0] || len(rest) > 0 && &rest[len(rest)-1] != &data[len(data)-1] {
		t.Fatalf("scanLine(%q) = %q, %q; want %q, %q", data, line, rest, wantLine, wantRest)
	}
	if noCtl && ctl || ascii && high {
		t.Fatalf("scanLine(%q): noCtl %v ascii %v, but the line has control %v high %v", data, noCtl, ascii, ctl, high)
	}
	goLine, goRest, goNoCtl, goASCII := scanLineGo(data)
	if !bytes.Equal(goLine, wantLine) || !bytes.Equal(goRest, wantRest) || (goRest == nil) != (wantRest == nil) ||
		goNoCtl && ctl || goASCII && high {
		t.Fatalf("scanLineGo(%q) = %q, %q, %v, %v; want %q, %q, control %v high %v", data, goLine, goRest, goNoCtl, goASCII, wantLine, wantRest, ctl, high)
	}
	if goNoCtl && !noCtl || goASCII && !ascii {
		t.Fatalf("scanLine(%q): noCtl %v ascii %v, the Go scan %v %v", data, noCtl, ascii, goNoCtl, goASCII)
	}
	if haveAVX2 && len(data) >= 32 && (noCtl != !ctl || ascii != !high) {
		t.Fatalf("scanLine(%q): noCtl %v ascii %v, not exact (control %v high %v)", data, noCtl, ascii, ctl, high)
	}
}

// scanBytes are the bytes around each class boundary scanLine tells apart.
var scanBytes = []byte{0x00, 0x01, '\t', '\n', '\r', 0x1b, 0x1f, 0x20, 'a', '0', 0x7e, 0x7f, 0x80, 0x81, 0xbf, 0xc3, 0xdf, 0xe0, 0xfe, 0xff}

// TestScanLineEdges: every length 0..100 (the 32-byte steps and the last,
// overlapping one), every offset of the slice in memory, a '\n' and a
// flagged byte at every place, and the input ending right after it.
func TestScanLineEdges(t *testing.T) {
	if !haveAVX2 {
		t.Log("no AVX2: scanLine is scanLineGo here")
	}
	buf := make([]byte, 256)
	for n := 0; n <= 100; n++ {
		for off := 0; off < 32; off++ {
			data := buf[off : off+n : off+n]
			for k := range data {
				data[k] = 'x'
			}
			checkScan(t, data)
			for p := 0; p < n; p++ {
				for _, c := range scanBytes {
					data[p] = c
					checkScan(t, data)
					// A '\n' later on: the flagged byte is before or after it.
					for _, nl := range []int{0, p / 2, p + 1, n - 1} {
						if nl < n && nl != p {
							data[nl] = '\n'
							checkScan(t, data)
							data[nl] = 'x'
						}
					}
					data[p] = 'x'
				}
			}
		}
	}
}

// TestScanLineRandom: random bytes with the classes in every mix, and
// random lengths and offsets.
func TestScanLineRandom(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	buf := make([]byte, 1024)
	for iter := 0; iter < 200000; iter++ {
		off, n := r.Intn(64), r.Intn(300)
		data := buf[off : off+n : off+n]
		// Mostly plain text with a few bytes of any value.
		rate := 1 + r.Intn(100)
		for k := range data {
			if r.Intn(rate) == 0 {
				data[k] = byte(r.Intn(256))
			} else {
				data[k] = byte(0x20 + r.Intn(0x5f))
			}
		}
		checkScan(t, data)
	}
}

// TestScanLineCorpus: every line of the corpus logs and fixtures, as
// peelBlock sees them (the rest of the file after each).
func TestScanLineCorpus(t *testing.T) {
	files := seedFiles()
	if len(files) == 0 {
		t.Skip("no corpus")
	}
	for _, p := range files {
		if filepath.Base(p) == "MANIFEST.md" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// At the end of an allocation of its exact size, so that a read
		// past the end would show under the race detector or ASan.
		data := append([]byte(nil), b...)
		for len(data) > 0 {
			checkScan(t, data)
			_, data, _, _ = scanLine(data)
		}
	}
}

// TestScanLinePageEnd: data that ends at the end of a mapped page, with
// the next page unmapped: a read past the end would fault.
func TestScanLinePageEnd(t *testing.T) {
	data := guardpage.End(t, 4096)
	for n := 0; n <= 100; n++ {
		d := data[len(data)-n:]
		for k := range d {
			d[k] = 'y'
		}
		checkScan(t, d)
		if n > 0 {
			d[n-1] = '\n'
			checkScan(t, d)
			d[n-1] = 0x80
			checkScan(t, d)
		}
	}
}

// FuzzScanLineAVX2: scanLine against the slow answer and the Go scan,
// at every offset of the input in memory.
func FuzzScanLineAVX2(f *testing.F) {
	for _, p := range seedFiles() {
		b, err := os.ReadFile(p)
		if err != nil || filepath.Base(p) == "MANIFEST.md" {
			continue
		}
		// A few lines of each, from a few places.
		for _, at := range []int{0, len(b) / 3, len(b) / 2} {
			end := at
			for k := 0; k < 3 && end < len(b); k++ {
				if i := bytes.IndexByte(b[end:], '\n'); i >= 0 {
					end += i + 1
				} else {
					end = len(b)
				}
			}
			f.Add(b[at:end])
		}
	}
	f.Add([]byte("a\tb\x1b[31mc\r\n\xff\x00"))
	f.Add([]byte("(Worker_TP1 pid=2) INFO 11-29 00:00:32 [metrics.py:455] Avg prompt throughput: 0.0 tokens/s\n\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		buf := make([]byte, len(data)+32)
		for off := 0; off < 32; off++ {
			d := buf[off : off+len(data) : off+len(data)]
			copy(d, data)
			checkScan(t, d)
		}
	})
}

// BenchmarkScanLineCorpus: scanLine over the corpus engine logs, whose
// lines are real ones of every length, in bytes per second.
func BenchmarkScanLineCorpus(b *testing.B) {
	var in []byte
	for _, p := range seedFiles() {
		if filepath.Base(p) == "MANIFEST.md" {
			continue
		}
		if d, err := os.ReadFile(p); err == nil {
			in = append(in, d...)
		}
	}
	if len(in) == 0 {
		b.Skip("no corpus")
	}
	for _, s := range []struct {
		name string
		scan func([]byte) ([]byte, []byte, bool, bool)
	}{{"scanLine", scanLine}, {"go", scanLineGo}} {
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			n := 0
			for b.Loop() {
				for data := in; len(data) > 0; {
					var ok bool
					_, data, ok, _ = s.scan(data)
					if ok {
						n++
					}
				}
			}
			if n == 0 {
				b.Fatal("no plain line")
			}
		})
	}
}
