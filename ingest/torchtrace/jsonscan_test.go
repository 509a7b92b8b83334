package torchtrace

import (
	"encoding/json"
	"testing"
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
