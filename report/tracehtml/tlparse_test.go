package tracehtml

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// Parity with tlparse, the tool bringup trace replaces: on every corpus
// trace, tlparse 0.4.3 and bringup are run on the same file and each view's
// counts compared. The differences that are bringup's on purpose are
// listed, with why, in docs/trace.md ("Parity with tlparse"); any other is
// a failure.

// tlparseBin finds tlparse: $BRINGUP_TLPARSE, then PATH, then the
// testbed's virtual environment.
func tlparseBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("BRINGUP_TLPARSE"); p != "" {
		return p
	}
	if p, err := exec.LookPath("tlparse"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "bringup", "testbed", "venv", "bin", "tlparse")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("tlparse is not installed (pip install tlparse==0.4.3, or set BRINGUP_TLPARSE): parity with tlparse not checked")
	return ""
}

// tlparseOut is what one tlparse report says, counted.
type tlparseOut struct {
	ids      map[string]bool // compile ids with outputs, attempts folded
	trie     []string        // stack-trie links, "id status", in page order
	restarts int             // failures_and_restarts rows of type RestartAnalysis
	failures int             // the other rows
	cache    map[string]int  // ✅ ❌ ❓ suffixes of compile_directory.json
	prov     map[string]bool // compile dirs with an inductor_provenance_tracking_node_mappings output
	export   []string        // draft-export failure types (--export)
	landing  string          // multi-rank landing page
}

var (
	trieLinkRE  = regexp.MustCompile(`<a href='#\[([^\]]*)\]' class='status-([a-z]+)'>`)
	frRowRE     = regexp.MustCompile(`(?s)<tr>\s*<td>.*?</td>\s*<td>\s*(?:<pre>)?\s*([^<]*?)\s*(?:</pre>)?\s*</td>`)
	exportRowRE = regexp.MustCompile(`(?s)<tr>\s*<td>\s*([A-Z][A-Za-z ]+?)\s*</td>`)
	attemptRE   = regexp.MustCompile(`_\d+$`)
)

func runTlparse(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "tl")
	cmd := exec.Command(bin, append(args, "-o", out, "--overwrite", "--no-browser")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tlparse %v: %v\n%s", args, err, b)
	}
	return out
}

func readTlparse(t *testing.T, dir string) tlparseOut {
	t.Helper()
	o := tlparseOut{ids: map[string]bool{}, cache: map[string]int{}, prov: map[string]bool{}}
	b, err := os.ReadFile(filepath.Join(dir, "compile_directory.json"))
	if os.IsNotExist(err) {
		b, err = []byte("{}"), nil // --export writes none
	}
	if err != nil {
		t.Fatal(err)
	}
	var cd map[string]struct {
		Artifacts []struct {
			Name, URL, Suffix string
		}
	}
	if err := json.Unmarshal(b, &cd); err != nil {
		t.Fatal(err)
	}
	for k, v := range cd {
		id := strings.Trim(k, "[]")
		if id != "-/-" && id != "unknown" {
			o.ids[attemptRE.ReplaceAllString(id, "")] = true
		}
		for _, a := range v.Artifacts {
			if a.Suffix != "" {
				o.cache[a.Suffix]++
			}
			if strings.HasPrefix(a.Name, "inductor_provenance_tracking_node_mappings") {
				o.prov[attemptRE.ReplaceAllString(strings.Trim(k, "[]"), "")] = true
			}
		}
	}
	idx, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	page := string(idx)
	if i := strings.Index(page, "stack-trie"); i >= 0 {
		end := strings.Index(page[i:], "</details>")
		for _, m := range trieLinkRE.FindAllStringSubmatch(page[i:i+max(end, 0)], -1) {
			o.trie = append(o.trie, m[1]+" "+m[2])
		}
	}
	if fr, err := os.ReadFile(filepath.Join(dir, "failures_and_restarts.html")); err == nil {
		for _, m := range frRowRE.FindAllStringSubmatch(string(fr), -1) {
			if m[1] == "RestartAnalysis" {
				o.restarts++
			} else {
				o.failures++
			}
		}
	}
	if i := strings.Index(page, "Draft Export Report"); i >= 0 {
		if j := strings.Index(page, "<table"); j >= 0 {
			for _, m := range exportRowRE.FindAllStringSubmatch(page[j:], -1) {
				o.export = append(o.export, m[1])
			}
		}
	}
	return o
}

// ours counts the same views in bringup's analysis and report of inputs.
func ours(res *compiles.Result, paths map[string]bool) tlparseOut {
	o := tlparseOut{ids: map[string]bool{}, cache: map[string]int{}, prov: map[string]bool{}}
	s := newSite(res, Options{}.withDefaults())
	for _, c := range res.Compiles {
		// tlparse lists an id only when it wrote an output for it.
		if paths[c.Path] && len(c.Artifacts) > 0 {
			o.ids[c.ID] = true
		}
	}
	sc := scope(paths)
	trie, _ := s.stackTrie(sc, "")
	var walk func(n *trieNode)
	walk = func(n *trieNode) {
		for _, u := range n.Units {
			o.trie = append(o.trie, strings.Trim(strings.SplitN(u.ID, "#", 2)[0], "[]")+" "+tlStatus[u.StatusClass])
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	for _, n := range trie {
		walk(n)
	}
	fv := s.failuresView(sc)
	o.failures, o.restarts = len(fv.Failures), len(fv.Restarts)
	for _, ce := range res.Cache {
		if paths[ce.Path] && !ce.FromHash {
			o.cache[map[string]string{compiles.OutcomeHit: "✅", compiles.OutcomeMiss: "❌", compiles.OutcomeBypass: "❓"}[ce.Outcome]]++
		}
	}
	for _, p := range res.Provenance {
		if p.NodeMappings > 0 && paths[p.Path] {
			id := "-/-"
			if p.CompileID != "" {
				id = p.CompileID
			}
			o.prov[id] = true
		}
	}
	for _, e := range res.Exports {
		if paths[e.Path] {
			for _, is := range e.Issues {
				o.export = append(o.export, is.Type)
			}
		}
	}
	return o
}

// tlStatus maps a unit's status pill to tlparse's stack-trie colours.
var tlStatus = map[string]string{"s-ok": "ok", "s-break": "break", "s-error": "error", "s-empty": "empty", "s-missing": "missing", "s-running": "missing"}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedCopy(l []string) []string {
	c := append([]string(nil), l...)
	sort.Strings(c)
	return c
}

// compared counts what the parity checks saw, so that a check that
// compares nothing (a page tlparse no longer writes) fails.
var compared = map[string]int{}

func compare(t *testing.T, name string, tl, bu tlparseOut) {
	t.Helper()
	compared["ids"] += len(tl.ids)
	compared["trie"] += len(tl.trie)
	compared["failures"] += tl.failures
	compared["restarts"] += tl.restarts
	compared["cache"] += len(tl.cache)
	compared["prov"] += len(tl.prov)
	diff := func(view string, a, b any) {
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s: %s: tlparse %v, bringup %v", name, view, a, b)
		}
	}
	diff("compile ids", keys(tl.ids), keys(bu.ids))
	diff("stack trie (id status)", sortedCopy(tl.trie), sortedCopy(bu.trie))
	diff("failures", tl.failures, bu.failures)
	diff("restarts", tl.restarts, bu.restarts)
	diff("cache hit/miss/bypass", tl.cache, bu.cache)
	diff("provenance graphs", keys(tl.prov), keys(bu.prov))
}

func TestTlparseParity(t *testing.T) {
	bin := tlparseBin(t)
	root := testcorpus.Dir(t, "tlparse-inputs")
	var files []string
	for _, pat := range []string{"*.log", "*.txt"} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		files = append(files, m...)
	}
	// The testbed's recorded traces (gzipped; tlparse reads plain files),
	// where the tree has them.
	var recorded []string
	for _, pat := range []string{"*/trace/*.log.gz", "*/trace/*/*.log.gz"} {
		m, _ := filepath.Glob(filepath.Join(testcorpus.Root(), "testbed", "testdata", pat))
		recorded = append(recorded, m...)
	}
	if len(recorded) == 0 {
		t.Log("no testbed traces in this tree (testbed/testdata): only the corpus is compared")
	}
	tmp := t.TempDir()
	for i, gz := range recorded {
		f, err := os.Open(gz)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", gz, err)
		}
		rel, _ := filepath.Rel(filepath.Join(testcorpus.Root(), "testbed", "testdata"), gz)
		dst := filepath.Join(tmp, fmt.Sprintf("%02d_", i)+strings.ReplaceAll(strings.TrimSuffix(rel, ".gz"), string(filepath.Separator), "_"))
		out, err := os.Create(dst)
		if err == nil {
			_, err = io.Copy(out, zr)
			out.Close()
		}
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, dst)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			res := analyze(t, f)
			tl := readTlparse(t, runTlparse(t, bin, f))
			compare(t, name, tl, ours(res, map[string]bool{f: true}))
			if strings.HasPrefix(name, "export") {
				// Draft-export mode: its issue table, type by type.
				ex := readTlparse(t, runTlparse(t, bin, f, "--export"))
				compared["export"] += len(ex.export)
				if fmt.Sprint(ex.export) != fmt.Sprint(ours(res, map[string]bool{f: true}).export) || len(ex.export) == 0 {
					t.Errorf("%s: export issues: tlparse %q, bringup %q", name, ex.export, ours(res, map[string]bool{f: true}).export)
				}
			}
		})
	}
	// Multi-rank folders: each rank's report, and the landing page's
	// divergence warnings against bringup's divergence kinds.
	warnings := map[string]string{
		"Diverging Compilation IDs":                    compiles.DivCompileIDs,
		"Diverging Cache hit/miss patterns":            compiles.DivCache,
		"Diverging collective operation sequences":     compiles.DivCollectives,
		"Ranks exhibit divergent inductor tensor meta": compiles.DivTensorMeta,
		"Graph execution order differs across ranks":   compiles.DivExecOrder,
		"Runtime analysis not available":               "runtime_note",
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "dedicated_log_torch_trace_rank_*.log"))
	seen := map[string]bool{}
	for _, d := range dirs {
		dir := filepath.Dir(d)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			res := analyze(t, dir)
			out := runTlparse(t, bin, dir, "--all-ranks-html")
			for _, in := range res.Inputs {
				rd := filepath.Join(out, fmt.Sprintf("rank_%d", in.Rank))
				if _, err := os.Stat(rd); err != nil {
					t.Errorf("%s: tlparse wrote no report for rank %d", name, in.Rank)
					continue
				}
				compare(t, fmt.Sprintf("%s rank %d", name, in.Rank), readTlparse(t, rd), ours(res, map[string]bool{in.Path: true}))
			}
			landing, err := os.ReadFile(filepath.Join(out, "index.html"))
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]bool{}
			for _, d := range res.Divergence {
				kinds[d.Kind] = true
			}
			if res.RuntimeNote != "" {
				kinds["runtime_note"] = true
			}
			for text, kind := range warnings {
				compared["warnings"]++
				if tlSays := strings.Contains(string(landing), text); tlSays != kinds[kind] {
					t.Errorf("%s: tlparse says %q: %v; bringup's %s: %v", name, text, tlSays, kind, kinds[kind])
				}
			}
		})
	}
	for _, view := range []string{"ids", "trie", "failures", "restarts", "cache", "prov", "export", "warnings"} {
		if compared[view] == 0 {
			t.Errorf("the %s view was compared on nothing: tlparse's output format changed?", view)
		}
	}
	t.Logf("compared with tlparse: %v", compared)
}
