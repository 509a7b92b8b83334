package pyproc

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

type lineFixture struct {
	Version string `json:"version"`
	Codes   []struct {
		Name  string   `json:"name"`
		First int      `json:"first"`
		Table string   `json:"table"`
		Lines [][3]int `json:"lines"`
	} `json:"codes"`
}

func loadLineFixtures(tb testing.TB) map[string]*lineFixture {
	tb.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", "linetables", "*.json"))
	if len(files) == 0 {
		tb.Fatal("no testdata/linetables/*.json")
	}
	out := map[string]*lineFixture{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var fx lineFixture
		if err := json.Unmarshal(data, &fx); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f[:len(f)-len(".json")])] = &fx
	}
	return out
}

func lineFunc(minor string) func([]byte, int, int) int {
	if minor == "3.10" {
		return line310
	}
	return line311
}

// TestLineTables checks the decoders, at every instruction offset, against
// the ranges CPython itself derived from the same tables (co_lines()).
func TestLineTables(t *testing.T) {
	for minor, fx := range loadLineFixtures(t) {
		decode := lineFunc(minor)
		checked := 0
		for _, c := range fx.Codes {
			table, err := hex.DecodeString(c.Table)
			if err != nil {
				t.Fatalf("%s %s: %v", minor, c.Name, err)
			}
			for _, r := range c.Lines {
				for off := r[0]; off < r[1]; off += 2 {
					if got := decode(table, off, c.First); got != r[2] {
						t.Errorf("%s %s offset %d: line %d, CPython says %d", minor, c.Name, off, got, r[2])
					}
					checked++
				}
			}
		}
		if checked < 1000 {
			t.Errorf("%s: only %d offsets checked", minor, checked)
		}
		t.Logf("%s (%s): %d codes, %d offsets agree with co_lines()", minor, fx.Version, len(fx.Codes), checked)
	}
	// Before the first instruction (a frame not started) is the first line.
	if line311([]byte{0x80}, -2, 7) != 7 || line310(nil, -2, 7) != 7 {
		t.Error("negative offset must give co_firstlineno")
	}
}

func TestDecodeUCS(t *testing.T) {
	cases := []struct {
		raw   []byte
		kind  int
		ascii bool
		want  string
	}{
		{[]byte("wait"), 1, true, "wait"},
		{[]byte{'c', 0xe9}, 1, false, "cé"},
		{[]byte{0x1b, 0x6d, 0x00, 0x4e}, 2, false, "洛一"},
		{[]byte{0x00, 0xf6, 0x01, 0x00}, 4, false, "😀"},
		{[]byte{0xff, 0xff, 0xff, 0x7f}, 4, false, "\uFFFD"}, // not a code point
	}
	for _, c := range cases {
		if got := decodeUCS(c.raw, c.kind, c.ascii); got != c.want {
			t.Errorf("decodeUCS(%x, %d) = %q, want %q", c.raw, c.kind, got, c.want)
		}
	}
}

func FuzzLineTable(f *testing.F) {
	for _, fx := range loadLineFixtures(f) {
		for i, c := range fx.Codes {
			if i%7 != 0 {
				continue
			}
			table, _ := hex.DecodeString(c.Table)
			f.Add(table, 10, c.First)
		}
	}
	f.Fuzz(func(t *testing.T, table []byte, addr, first int) {
		a := line310(table, addr, first)
		b := line311(table, addr, first)
		// A line is either "none" or reached by summing deltas; an offset
		// beyond everything the table covers must say none.
		if addr >= 2*127*len(table)+2 && (a != -1 || b != -1) && addr >= 0 {
			t.Fatalf("offset %d past a %d-byte table gave lines %d, %d", addr, len(table), a, b)
		}
	})
}
