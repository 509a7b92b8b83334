package torchtrace

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

var jsonSeeds = []string{
	`{"a": 1}`, `{}`, ` { "a" : [1, 2.5e-3, -0, "x\u00e9\n", true, false, null, {"b": {}}] } `,
	`{"a": 01}`, `{"a": 1.}`, `{"a": "\x"}`, `{"a": "` + "\x01" + `"}`, `{"a" 1}`, `{"a": 1,}`, `[1]`,
	`{"a": 1} x`, `{"k\"ey": 2}`, `{"a": -}`, `{"a": 1e}`, `{"a": tru}`, `{"a": "unterminated}`,
}

// FuzzJSONScan: the hand-written scanner must accept exactly the objects
// encoding/json accepts, and find the same top-level keys and values.
func FuzzJSONScan(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m map[string]json.RawMessage
		err := json.Unmarshal(b, &m)
		wantOK := err == nil && m != nil
		got := map[string]string{}
		ok := eachField(b, func(k string, v []byte) { got[k] = string(v) })
		if ok != wantOK {
			t.Fatalf("%q: scanner says %v, encoding/json says %v (%v)", b, ok, wantOK, err)
		}
		if !ok {
			return
		}
		for k, v := range m {
			if got[k] != string(v) {
				t.Fatalf("%q: key %q: scanner %q, encoding/json %q", b, k, got[k], v)
			}
		}
	})
}

func TestFieldAndValues(t *testing.T) {
	obj := []byte(`{"name": "fx_graph_cache_miss", "n": 42, "f": 1.5, "esc": "a\"b", "null": null}`)
	if v, ok := Field(obj, "name"); !ok || string(v) != `"fx_graph_cache_miss"` {
		t.Errorf("name %q %v", v, ok)
	}
	if v, _ := Field(obj, "n"); func() bool { n, ok := IntValue(v); return !ok || n != 42 }() {
		t.Errorf("n %q", v)
	}
	if v, _ := Field(obj, "esc"); func() bool { s, ok := StringValue(v); return !ok || s != `a"b` }() {
		t.Errorf("esc %q", v)
	}
	if v, _ := Field(obj, "null"); intPtr(v) != nil {
		t.Error("null is not an int")
	}
	if _, ok := Field(obj, "missing"); ok {
		t.Error("missing key found")
	}
}

// TestSkipStringWordBoundaries puts each byte that ends or breaks a string
// at every position of the eight-byte words skipString tests at once, and
// checks the verdict against encoding/json.
func TestSkipStringWordBoundaries(t *testing.T) {
	specials := []string{`"`, `\"`, `\\`, `\n`, `\u00e9`, "\x00", "\x1f", "\n", "\x7f", "é", "\xff", " ", `\x`}
	for n := 0; n < 24; n++ {
		for pos := 0; pos <= n; pos++ {
			for _, sp := range specials {
				body := make([]byte, 0, n+8)
				for i := 0; i < n; i++ {
					if i == pos {
						body = append(body, sp...)
					}
					body = append(body, byte('a'+i%26))
				}
				doc := []byte(`{"k": "` + string(body) + `"}`)
				var m map[string]json.RawMessage
				want := json.Unmarshal(doc, &m) == nil
				got := eachField(doc, func(string, []byte) {})
				if got != want {
					t.Fatalf("%q: scanner %v, encoding/json %v", doc, got, want)
				}
			}
		}
	}
}

// FuzzInternEntry: InternEntry decodes a "str" event's metadata exactly as
// the encoding/json route it replaced.
func FuzzInternEntry(f *testing.F) {
	for _, s := range []string{`["torch/_dynamo/utils.py", 0]`, `[null, 3]`, `["a\u00e9", 12]`, `["a", 1, 2]`, `["a"]`,
		`[1, 1]`, `["a", null]`, `["a", -4]`, `["a", 1.5]`, `[ "x" , 7 ]`, `"x"`, `["\xff", 2]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		wantOK := false
		var want string
		wantIdx := 0
		var pair []json.RawMessage
		if json.Unmarshal(b, &pair) == nil && len(pair) == 2 {
			idx, ok := IntValue(pair[1])
			if json.Unmarshal(pair[0], &want) == nil && ok {
				wantOK, wantIdx = true, idx
			}
		}
		got, idx, ok := InternEntry(b)
		if ok != wantOK || (ok && (got != want || idx != wantIdx)) {
			t.Fatalf("%q: InternEntry (%q, %d, %v), encoding/json (%q, %d, %v)", b, got, idx, ok, want, wantIdx, wantOK)
		}
	})
}

// FuzzEnvelopeValue: EnvelopeValue answers what ReadEnvelope's map does for
// one key (value, presence, error), on envelope lines from the corpus and
// mutations of them (duplicate keys, escaped keys, bad JSON, no prefix).
func FuzzEnvelopeValue(f *testing.F) {
	for _, name := range []string{"comp_metrics.log", "simple.log", "links.log"} {
		b, err := os.ReadFile(testcorpus.File(f, "tlparse-inputs", name))
		if err != nil {
			continue
		}
		for i, line := range bytes.Split(b, []byte("\n")) {
			if i%7 == 0 && len(line) > 0 && line[0] == 'V' {
				f.Add(line, "compilation_metrics")
				f.Add(line, "dynamo_start")
			}
		}
	}
	f.Add([]byte(`V0101 00:00:00.000000 1 a.py:1] {"k": 1, "k": {"a": 2}, "\u006b": 3}`), "k")
	f.Add([]byte(`V0101 00:00:00.000000 1 a.py:1] {"k": 1,}`), "k")
	f.Add([]byte(`not an envelope`), "k")
	f.Fuzz(func(t *testing.T, line []byte, key string) {
		p := filepath.Join(t.TempDir(), "t.log")
		if err := os.WriteFile(p, line, 0o644); err != nil {
			t.Fatal(err)
		}
		ref := PayloadRef{Path: p, Length: int64(len(line))}
		got, found, err := EnvelopeValue(ref, key)
		m, werr := ReadEnvelope(ref)
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("error %v, ReadEnvelope %v", err, werr)
		}
		want, wfound := m[key]
		if found != wfound || !bytes.Equal(got, want) {
			t.Fatalf("%q: got %q (%v), ReadEnvelope %q (%v)", key, got, found, want, wfound)
		}
	})
}
