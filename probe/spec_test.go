package probe

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []Selector
	}{
		{"KeyError", []Selector{{Type: "KeyError"}}},
		{"KeyError:in_proj", []Selector{{Type: "KeyError", Regex: "in_proj"}}},
		{"any", []Selector{{Type: "any"}}},
		{"any:in_proj_[a-z]+", []Selector{{Type: "any", Regex: "in_proj_[a-z]+"}}},
		{"torch._dynamo.exc.Unsupported", []Selector{{Type: "torch._dynamo.exc.Unsupported"}}},
		{"KeyError; AttributeError:has no attribute", []Selector{{Type: "KeyError"}, {Type: "AttributeError", Regex: "has no attribute"}}},
		{`KeyError:a\;b;ValueError`, []Selector{{Type: "KeyError", Regex: `a\;b`}, {Type: "ValueError"}}},
		{"KeyError:'x:y'", []Selector{{Type: "KeyError", Regex: "'x:y'"}}},
		{"KeyError:(?i)IN_PROJ", []Selector{{Type: "KeyError", Regex: "(?i)IN_PROJ"}}},
		{`KeyError:^'in_(?:proj|out)\d+'$`, []Selector{{Type: "KeyError", Regex: `^'in_(?:proj|out)\d+'$`}}},
	} {
		got, err := ParseSpec(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if len(got.Selectors) != len(c.want) {
			t.Errorf("%q: %+v, want %+v", c.in, got.Selectors, c.want)
			continue
		}
		for i := range c.want {
			if got.Selectors[i] != c.want[i] {
				t.Errorf("%q selector %d: %+v, want %+v", c.in, i, got.Selectors[i], c.want[i])
			}
		}
		if again, err := ParseSpec(got.String()); err != nil || again.String() != got.String() {
			t.Errorf("%q: String %q does not read back (%v)", c.in, got.String(), err)
		}
	}
	if s, _ := ParseSpec("any"); s.Selectors[0].AtRaise() {
		t.Error("bare any must not be recorded at raise")
	}
	if s, _ := ParseSpec("any:x"); !s.Selectors[0].AtRaise() {
		t.Error("any:REGEX is recorded at raise")
	}
}

func TestParseSpecRefuses(t *testing.T) {
	for _, c := range []struct{ in, why string }{
		{"", "empty spec"},
		{"KeyError;", "selector 2"},
		{":x", "no exception type"},
		{"Key Error", "not a Python class name"},
		{"KeyError.", "not a Python class name"},
		{"3Error", "not a Python class name"},
		{"KeyError:", "empty message regex"},
		{"KeyError:(", "message regex"},
		{"KeyError:a\nb", "control character"},
		{`KeyError:\z`, `escape \z`},
		{`KeyError:\p{L}`, `escape \p`},
		{`KeyError:\Qa.b\E`, `escape \Q`},
		{`KeyError:\x{41}`, `escape \x`},
		{`KeyError:\1`, `invalid escape`},
		{`KeyError:[[:alpha:]]`, "POSIX class"},
		{`KeyError:a(?i)b`, "only at the start"},
		{`KeyError:(?U)a+`, "flag U"},
		{`KeyError:(?-i)a`, "cannot turn a flag off"},
		{`KeyError:[\b]`, `invalid escape`},
		{"KeyError:" + strings.Repeat("a", MaxSpecLen), "more than"},
	} {
		_, err := ParseSpec(c.in)
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%q: error %v, want one saying %q", c.in, err, c.why)
		}
	}
}

// FuzzParseSpec: never panics; what it accepts reads back the same, every
// regex compiles in Go, and the spec travels in the config without a line
// break or an empty selector.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"KeyError", "KeyError:in_proj", "any", "any:x", `KeyError:a\;b;ValueError`,
		"torch._dynamo.exc.Unsupported", "KeyError:(?i)x", `KeyError:^'in_(?:proj|out)\d+'$`, "a;b;c", `x:[\]]`, `x:[^]a]`, "x:(?P<n>a)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSpec(in)
		if err != nil {
			return
		}
		if len(s.Selectors) == 0 {
			t.Fatalf("%q: accepted with no selector", in)
		}
		for _, sel := range s.Selectors {
			if sel.Type == "" {
				t.Fatalf("%q: selector without a type", in)
			}
			if sel.Regex != "" {
				if _, err := regexp.Compile(sel.Regex); err != nil {
					t.Fatalf("%q: accepted regex %q does not compile: %v", in, sel.Regex, err)
				}
			}
		}
		again, err := ParseSpec(s.String())
		if err != nil || again.String() != s.String() || len(again.Selectors) != len(s.Selectors) {
			t.Fatalf("%q: String %q reads back as %q (%v)", in, s.String(), again.String(), err)
		}
		cfg := config("/run/probe", s, Options{})
		for _, line := range strings.Split(cfg, "\n") {
			if k, v, ok := strings.Cut(line, "="); !ok || k == "" || (k == "sel" && v == "") {
				t.Fatalf("%q: config line %q", in, line)
			}
		}
	})
}

// Every regex ParseSpec accepts among these also compiles in Python's re
// (on every installed CPython) and matches the same sample text there as
// in Go.
func TestAcceptedRegexesReadTheSameInPython(t *testing.T) {
	rxs := []string{"in_proj", "(?i)IN_PROJ", `^'in_(?:proj|out)\d+'$`, `a\;b`, `[\]]x`, `[^]a]`, "(?P<n>a)b",
		`\w+\s\S\W\D\B`, `\Ax`, `a{2,3}`, `(?s:a.b)`, `(?im)^k`, `\.\*\+\?\(\)\[\]\{\}\|\^\$\\`, `[a-z_0-9]+`, `\n\t\r\f`, "x|y|", `'[^']*'`}
	sample := "KeyError 'in_proj12' a;b ]x b ab aab a\nb k .*+?()[]{}|^$\\ xy"
	var want []string
	for _, rx := range rxs {
		s, err := ParseSpec("KeyError:" + rx)
		if err != nil {
			t.Fatalf("%q refused: %v", rx, err)
		}
		want = append(want, strconv.Quote(regexp.MustCompile(s.Selectors[0].Regex).FindString(sample)))
	}
	script := "import json, re, sys\nrxs = json.loads(sys.argv[1])\nfor r in rxs:\n    m = re.search(r, sys.argv[2])\n    print(json.dumps(m.group(0) if m else ''))\n"
	js, _ := json.Marshal(rxs)
	for _, py := range pythons(t) {
		out, err := exec.Command(py.path, "-c", script, string(js), sample).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", py.minor, err, out)
		}
		got := strings.Split(strings.TrimSpace(string(out)), "\n")
		for i := range rxs {
			var g, w string
			_ = json.Unmarshal([]byte(got[i]), &g)
			w, _ = strconv.Unquote(want[i])
			if g != w {
				t.Errorf("%s: %q finds %q in Python, %q in Go", py.minor, rxs[i], g, w)
			}
		}
	}
}
