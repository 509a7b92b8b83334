package rules

import (
	"flag"
	"fmt"
	"go/format"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/bringup-tool/bringup/testsupport/cputime"
)

var updateBuiltin = flag.Bool("update-builtin", false, "rewrite builtin_gen.go from rules/*.yaml")

// TestBuiltinGenerated: builtin_gen.go is the embedded YAML decoded
// (what the YAML path gives, written out as Go values, with the YAML's
// digest), so Builtin takes the fast path; and the set Builtin compiles
// from it is the one the YAML gives, rule for rule.
func TestBuiltinGenerated(t *testing.T) {
	fromYAML, err := builtinFromYAML()
	if err != nil {
		t.Fatal(err)
	}
	digest, err := yamlDigest(builtinFS)
	if err != nil {
		t.Fatal(err)
	}
	want := genSource(t, digest, fromYAML)
	if *updateBuiltin {
		if err := os.WriteFile("builtin_gen.go", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile("builtin_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(have) != string(want) {
		t.Fatalf("builtin_gen.go is not the decoded rules/*.yaml (a rule file changed): run go test ./rules -run TestBuiltinGenerated -update-builtin")
	}
	if !builtinGenCurrent() {
		t.Fatalf("builtin_gen.go's digest %s is not the embedded YAML's %s", builtinDigest, digest)
	}
	// Twice: compiling one set must leave the shared table as it was.
	for range 2 {
		s, err := Builtin()
		if err != nil {
			t.Fatal(err)
		}
		if got := genSource(t, digest, s); string(got) != string(want) {
			t.Fatalf("the set compiled from builtin_gen.go differs from the YAML's")
		}
		if len(s.rules) != len(fromYAML.rules) {
			t.Fatalf("%d rules, the YAML has %d", len(s.rules), len(fromYAML.rules))
		}
		for i, r := range s.rules {
			y := fromYAML.rules[i]
			if r.index != y.index || !slices.Equal(r.literals, y.literals) || r.templated != y.templated || r.severities != y.severities {
				t.Errorf("%s: compiled index or prefilter differs from the YAML's", r.ID)
			}
			for j := range r.Match.Any {
				if a, b := &r.Match.Any[j], &y.Match.Any[j]; len(a.text) != len(b.text) || len(a.frames) != len(b.frames) || a.notOnWarning != b.notOnWarning {
					t.Errorf("%s: any[%d] compiled differently from the YAML's", r.ID, j)
				}
			}
		}
		if !slices.Equal(s.lits, fromYAML.lits) || !slices.Equal(s.always, fromYAML.always) || !reflect.DeepEqual(s.byFact, fromYAML.byFact) || !reflect.DeepEqual(s.litOf, fromYAML.litOf) {
			t.Fatalf("the prefilter index differs from the YAML's")
		}
	}
	// Examples of a generated rule come from the YAML.
	s, _ := Builtin()
	for i, r := range s.rules {
		got, err := r.Examples()
		if err != nil {
			t.Fatal(err)
		}
		want, err := fromYAML.rules[i].Examples()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: examples %v, the YAML's %v", r.ID, got, want)
		}
	}
}

// TestDigestTellsAnEdit: one byte changed, a file renamed or one added
// changes the digest Builtin compares with builtin_gen.go's.
func TestDigestTellsAnEdit(t *testing.T) {
	base := fstest.MapFS{
		"a.yaml": {Data: []byte("- id: a\n  severity: error\n")},
		"b.yaml": {Data: []byte("- id: b\n")},
	}
	want, err := yamlDigest(base)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := yamlDigest(base); again != want {
		t.Fatalf("digest not stable: %s, %s", want, again)
	}
	edited := maps.Clone(base)
	edited["a.yaml"] = &fstest.MapFile{Data: []byte("- id: a\n  severity: erroR\n")}
	renamed := fstest.MapFS{"c.yaml": base["a.yaml"], "b.yaml": base["b.yaml"]}
	added := maps.Clone(base)
	added["c.yaml"] = &fstest.MapFile{Data: nil}
	moved := fstest.MapFS{"a.yaml": {Data: []byte("- id: a\n  severity: error\n- id: b\n")}, "b.yaml": {Data: nil}}
	for name, fsys := range map[string]fstest.MapFS{"edited": edited, "renamed": renamed, "added": added, "moved between files": moved} {
		if got, err := yamlDigest(fsys); err != nil || got == want {
			t.Errorf("%s: digest %s (%v), the same as before", name, got, err)
		}
	}
}

// TestGeneratedPatternsConcurrent: a fresh generated set, whose patterns
// compile on first use, matched from several goroutines at once (every
// fire and quiet example of every rule, each goroutine in its own order)
// gives what the YAML's set gives; with -race, the compiling is checked
// for races too.
func TestGeneratedPatternsConcurrent(t *testing.T) {
	fromYAML, err := builtinFromYAML()
	if err != nil {
		t.Fatal(err)
	}
	type ex struct {
		sub Subject
		v   Versions
	}
	var exs []ex
	for _, r := range fromYAML.rules {
		e, err := r.Examples()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range append(e.Fire, e.Quiet...) {
			sub, v := x.Subject()
			exs = append(exs, ex{sub, v})
		}
	}
	want := make([]string, len(exs))
	for i, e := range exs {
		want[i] = strings.Join(ids(fromYAML.Match(e.sub, e.v)), ",")
	}
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	const workers = 4
	got := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		got[w] = make([]string, len(exs))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range exs {
				i := (k + w*len(exs)/workers) % len(exs) // w's own order: rotated,
				if w%2 == 1 {                            // and backwards every other one
					i = len(exs) - 1 - i
				}
				e := exs[i]
				got[w][i] = strings.Join(ids(s.Match(e.sub, e.v)), ",")
				for _, r := range s.Match(e.sub, e.v) {
					r.Locate(e.sub.Text)
					r.causeAndRemedyFor(&e.sub)
				}
			}
		}()
	}
	wg.Wait()
	for w := range workers {
		for i := range exs {
			if got[w][i] != want[i] {
				t.Errorf("goroutine %d, %q: %s, the YAML's set %s", w, exs[i].sub.Text, got[w][i], want[i])
			}
		}
	}
}

// genSource writes the rules of s as builtin_gen.go.
func genSource(t *testing.T, digest string, s *Set) []byte {
	t.Helper()
	var b strings.Builder
	b.WriteString("// Code generated by TestBuiltinGenerated from rules/*.yaml; DO NOT EDIT.\n")
	b.WriteString("// go test ./rules -run TestBuiltinGenerated -update-builtin rewrites it.\n\n")
	b.WriteString("package rules\n\n")
	b.WriteString("// builtinDigest is yamlDigest of the YAML builtinRules was decoded from.\n")
	fmt.Fprintf(&b, "const builtinDigest = %q\n\n", digest)
	b.WriteString("// builtinRules are the rules of rules/*.yaml as decoded, in Builtin's order; see Builtin.\n")
	b.WriteString("var builtinRules = []Rule{\n")
	for _, r := range s.rules {
		goValue(&b, reflect.ValueOf(*r), true)
		b.WriteString(",\n")
	}
	b.WriteString("}\n\n")
	// The literals of every text pattern (requiredOf), so that compiling
	// the table parses no pattern.
	req := map[string][]string{}
	for _, r := range s.rules {
		for _, m := range append([]Match{r.Match}, r.Match.Any...) {
			for _, t := range m.Text {
				req[t] = requiredOf(t)
			}
		}
	}
	b.WriteString("// builtinRequired is requiredOf of each text pattern of builtinRules, sorted by pattern; see generatedRequired.\n")
	b.WriteString("var builtinRequired = []requiredLits{\n")
	for _, t := range slices.Sorted(maps.Keys(req)) {
		b.WriteString("{" + strconv.Quote(t) + ", ")
		if req[t] == nil {
			b.WriteString("nil")
		} else {
			goValue(&b, reflect.ValueOf(req[t]), false)
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		t.Fatalf("generated source does not format: %v", err)
	}
	return src
}

// goValue writes v as a Go expression: the exported fields of a struct
// (those not zero), slices, maps (keys sorted), strings, ints, bools; the
// type is left out where a composite literal's element may omit it.
func goValue(b *strings.Builder, v reflect.Value, elided bool) {
	typ := strings.ReplaceAll(v.Type().String(), "rules.", "")
	switch v.Kind() {
	case reflect.String:
		b.WriteString(strconv.Quote(v.String()))
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Pointer:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		if !elided {
			b.WriteString("&")
		}
		goValue(b, v.Elem(), elided)
	case reflect.Slice:
		b.WriteString(typ + "{")
		for i := 0; i < v.Len(); i++ {
			goValue(b, v.Index(i), true)
			b.WriteString(", ")
		}
		b.WriteString("}")
	case reflect.Map:
		b.WriteString(typ + "{")
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			goValue(b, k, true)
			b.WriteString(": ")
			goValue(b, v.MapIndex(k), true)
			b.WriteString(", ")
		}
		b.WriteString("}")
	case reflect.Struct:
		if !elided {
			b.WriteString(typ)
		}
		b.WriteString("{\n")
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() || v.Field(i).IsZero() {
				continue
			}
			b.WriteString(f.Name + ": ")
			goValue(b, v.Field(i), false)
			b.WriteString(",\n")
		}
		b.WriteString("}")
	default:
		panic(fmt.Sprintf("goValue: %s not supported", v.Type()))
	}
}

// BenchmarkBuiltin is the fixed start-up cost of every command that
// diagnoses: compiling the embedded knowledge base (the generated table,
// or with -bench 'Builtin/yaml' the YAML decoded). Run with -benchmem;
// "cpu-ns/op" is CPU time (getrusage), which a loaded machine disturbs
// less than wall time.
func BenchmarkBuiltin(b *testing.B) {
	for _, c := range []struct {
		name string
		load func() (*Set, error)
	}{{"generated", Builtin}, {"yaml", builtinFromYAML}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			c0 := cputime.Used(cputime.Self)
			for i := 0; i < b.N; i++ {
				if _, err := c.load(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cputime.Used(cputime.Self)-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
