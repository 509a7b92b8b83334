package rules

import (
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"slices"
	"sort"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Builtin returns the embedded knowledge base.
//
// The YAML files are the knowledge base; decoding them is most of what a
// command that diagnoses a short log costs (yaml.v3 parses ~270 KB into a
// node tree, several times the rules' size in garbage). builtin_gen.go
// holds the same rules already decoded, as Go values, with the digest of
// the YAML they were decoded from: when that digest is the embedded YAML's,
// Builtin compiles those; otherwise (a YAML file edited and the file not
// regenerated) it decodes the YAML, so what a run uses is always what the
// YAML says. TestBuiltinGenerated fails while the two differ
// (`go test ./rules -run TestBuiltinGenerated -update-builtin` rewrites
// builtin_gen.go).
func Builtin() (*Set, error) {
	if !builtinGenCurrent() {
		return builtinFromYAML()
	}
	s := &Set{byID: make(map[string]*Rule, len(builtinRules))}
	rs := slices.Clone(builtinRules)
	for i := range rs {
		r := &rs[i]
		// compile fills the any-blocks' compiled fields: each set gets
		// its own blocks, not the ones of the shared table.
		r.Match.Any = slices.Clone(r.Match.Any)
		r.generated = true
		if err := s.put(r); err != nil {
			return nil, err
		}
	}
	s.build()
	return s, nil
}

// builtinFromYAML decodes and compiles the embedded YAML files.
func builtinFromYAML() (*Set, error) {
	s := &Set{byID: map[string]*Rule{}}
	entries, err := fs.ReadDir(builtinFS, ".")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		data, err := builtinFS.ReadFile(e.Name())
		if err != nil {
			return nil, err
		}
		if err := s.add("rules/"+e.Name(), data); err != nil {
			return nil, err
		}
	}
	s.build()
	return s, nil
}

// builtinGenCurrent reports whether builtin_gen.go was generated from the
// embedded YAML (once a process: the embedded files do not change).
var builtinGenCurrent = sync.OnceValue(func() bool {
	d, err := yamlDigest(builtinFS)
	return err == nil && d == builtinDigest
})

// yamlDigest is the CRC-32C of the files of fsys's top folder (the
// embedded YAML), each one's name, size and content in the order Builtin
// reads them: enough to tell an edited file (TestBuiltinGenerated compares
// the whole table), and a million instructions where SHA-256 took 9 M.
func yamlDigest(fsys fs.FS) (string, error) {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		f, err := fsys.Open(e.Name())
		if err != nil {
			return "", err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", e.Name(), fi.Size())
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("crc32c:%08x", h.Sum32()), nil
}

// builtinExamples maps a built-in rule's Source to its examples node: a
// rule compiled from builtin_gen.go has no node of its own, and only tests
// ask for examples, so they are decoded from the YAML the first time.
var builtinExamples = sync.OnceValues(func() (map[string]*yaml.Node, error) {
	s, err := builtinFromYAML()
	if err != nil {
		return nil, err
	}
	m := map[string]*yaml.Node{}
	for _, r := range s.rules {
		m[r.Source] = r.examples
	}
	return m, nil
})

// requiredLits is requiredOf's answer for one expression.
type requiredLits struct {
	expr string
	lits []string
}

// generatedRequired is requiredOf(expr) as builtin_gen.go's table has it
// (builtinRequired, sorted by expression): the generated rules' literals
// without parsing their patterns; ok is false for an expression not in it.
// TestBuiltinGenerated regenerates the table, so it follows requiredOf.
func generatedRequired(expr string) (lits []string, ok bool) {
	i := sort.Search(len(builtinRequired), func(i int) bool { return builtinRequired[i].expr >= expr })
	if i < len(builtinRequired) && builtinRequired[i].expr == expr {
		return builtinRequired[i].lits, true
	}
	return nil, false
}
