package cli

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// layers is the order docs/ARCHITECTURE.md states, top first: a package
// imports only packages in layers below its own, never one in its own layer
// or above. "x/..." is x and every package under it; a more specific
// pattern in another layer wins. Every package of the module must be in
// exactly one layer, so a new package is placed on purpose.
var layers = [][]string{
	{"cmd/...", "scripts/...", "testbed", "corpus/...", "pyproc/internal/...", "testsupport/benchlog/genlog"}, // programs and test-only trees
	{"internal/cli"},
	{"watch"},
	{"report/cluster"},
	{"report/..."}, // the renderers, above the pipelines whose models they print
	{"report"},     // terminal style every renderer shares
	{"cluster"},
	{"cluster/node"},
	{"stacks/live"},
	{"diagnose"}, // the composition root of diagnose: every input kind
	{"stacks/hang"},
	{"analyze/...", "stacks"},
	{"ingest/stackdump"},
	{"ingest/enginelog", "ingest/torchtrace"},
	{"ingest"},
	{"rules", "probe", "store", "patchset", "pyproc"},
	{"patchset/udiff", "patchset/beneath"},
	{"record"},
	{"atomicfile"},
	{"litscan", "input", "diagnose/fatal", "ringcache"},
	{"internal/lazyre"},
	{"testsupport/..."}, // imported by tests only
}

// testSupport is the folder only tests (and the programs of the first
// layer) import.
const testSupport = "testsupport"

// knownUp are the imports that still go up the order, each to be removed
// by the move that fixes it; an entry that no longer occurs fails the
// test too, so the list only shrinks.
var knownUp = map[string]bool{}

// layerOf is the index of the layer pkg is in (by the longest pattern
// that matches), or -1.
func layerOf(pkg string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, pat := range l {
			ok := pkg == pat
			if base, dots := strings.CutSuffix(pat, "/..."); dots {
				ok = pkg == base || strings.HasPrefix(pkg, base+"/")
			}
			if n := len(strings.TrimSuffix(pat, "/...")); ok && (n > bestLen || n == bestLen && !strings.HasSuffix(pat, "/...")) {
				best, bestLen = i, n
			}
		}
	}
	return best
}

// imports reads every package of the module under root: its import path
// relative to the module, and the module packages its non-test and test
// files import.
func imports(t *testing.T, root, module string) (code, tests map[string]map[string]bool) {
	t.Helper()
	code, tests = map[string]map[string]bool{}, map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		into := code
		if strings.HasSuffix(name, "_test.go") {
			into = tests
		}
		if into[pkg] == nil {
			into[pkg] = map[string]bool{}
		}
		for _, im := range f.Imports {
			p := strings.Trim(im.Path.Value, `"`)
			if rest, ok := strings.CutPrefix(p, module+"/"); ok {
				into[pkg][rest] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return code, tests
}

func TestImportsFollowTheLayers(t *testing.T) {
	root := filepath.Join("..", "..")
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := ""
	for _, l := range strings.Split(string(gomod), "\n") {
		if m, ok := strings.CutPrefix(l, "module "); ok {
			module = strings.TrimSpace(m)
		}
	}
	code, tests := imports(t, root, module)
	var pkgs []string
	for p := range code {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	if len(pkgs) < 40 {
		t.Fatalf("found %d packages under %s: not the module's tree", len(pkgs), root)
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		from := layerOf(p)
		if from < 0 {
			t.Errorf("%s is in no layer: place it in internal/cli/layers_test.go and docs/ARCHITECTURE.md", p)
			continue
		}
		var ims []string
		for im := range code[p] {
			ims = append(ims, im)
		}
		sort.Strings(ims)
		for _, im := range ims {
			to := layerOf(im)
			edge := p + " -> " + im
			switch {
			case to < 0:
				t.Errorf("%s: %s is in no layer", edge, im)
			case to <= from && knownUp[edge]:
				seen[edge] = true
			case to <= from:
				t.Errorf("%s goes up the order (layer %d imports layer %d)", edge, from, to)
			case strings.HasPrefix(im+"/", testSupport+"/") && from != 0 && !strings.HasPrefix(p+"/", testSupport+"/"):
				t.Errorf("%s: %s is for tests only", edge, im)
			}
		}
	}
	for p := range tests {
		if layerOf(p) < 0 && code[p] == nil {
			t.Errorf("%s (tests only) is in no layer", p)
		}
	}
	for edge := range knownUp {
		if !seen[edge] {
			t.Errorf("%s no longer goes up: take it off knownUp", edge)
		}
	}
}
