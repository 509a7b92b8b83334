package rules

import (
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary YAML to the rule loader (seeded with the
// knowledge base itself): it must return rules or an error naming the
// file, never panic, and rules it accepts must be usable.
func FuzzLoad(f *testing.F) {
	entries, err := builtinFS.ReadDir(".")
	if err != nil {
		f.Fatal(err)
	}
	// One seed per rule: small inputs keep the fuzzer fast.
	for _, e := range entries {
		b, _ := builtinFS.ReadFile(e.Name())
		for _, part := range strings.Split(string(b), "\n- ")[1:] {
			f.Add([]byte("- " + part))
		}
	}
	f.Add([]byte("- id: a\n  title: t\n  severity: error\n  cause: c\n  remedy: [r]\n  match: {any: [{text: [x]}, {fact: f}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &Set{byID: map[string]*Rule{}}
		if err := s.add("fuzz.yaml", data); err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		s.build()
		for _, sub := range []Subject{{Text: string(data)}, {Fact: "exception", Text: "KeyError: 'x'"}, {Fact: "timeline.unfinished", Fields: map[string]string{"phase": "inductor"}}} {
			for _, r := range s.Match(sub, Versions{"torch": "2.10.0"}) {
				r.Locate(sub.Text)
			}
		}
	})
}

// FuzzConstraint: version constraints and versions as printed in the wild.
func FuzzConstraint(f *testing.F) {
	f.Add("<2.13", "2.10.0+rocm7.0")
	f.Add(">=0.9,<0.12", "0.20.2rc1.dev189+g1d5e2f0")
	f.Fuzz(func(t *testing.T, c, v string) {
		k, err := parseConstraint(c)
		if err != nil {
			return
		}
		k.allows(v)
	})
}
