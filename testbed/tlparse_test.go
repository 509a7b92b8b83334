package testbed

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestTlparseParity runs tlparse (the testbed venv's, 0.4.3) on every
// recorded TORCH_TRACE file and compares its compile directory with
// bringup trace --json on the same file: the compile ids, the graph-break
// records, and the FX-graph / AOTAutograd cache hits, misses and bypasses.
func TestTlparseParity(t *testing.T) {
	venv := testbedVenv(t)
	tlparse := filepath.Join(venv, "bin", "tlparse")
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "trace", "*.log.gz"))
	more, _ := filepath.Glob(filepath.Join("testdata", "*", "trace", "*", "*.log.gz"))
	files = append(files, more...)
	if len(files) < 10 {
		t.Fatalf("%d recorded trace files, want the testbed's", len(files))
	}
	for _, gz := range files {
		rel, _ := filepath.Rel("testdata", gz)
		name := strings.Split(rel, string(filepath.Separator))[0]
		t.Run(strings.TrimSuffix(rel, ".log.gz"), func(t *testing.T) {
			dir := scenario(t, name)
			log := filepath.Join(dir, strings.TrimSuffix(strings.TrimPrefix(rel, name+string(filepath.Separator)), ".gz"))
			out := filepath.Join(t.TempDir(), "tl")
			if b, err := exec.Command(tlparse, log, "-o", out, "--overwrite", "--no-browser").CombinedOutput(); err != nil {
				t.Fatalf("tlparse: %v\n%s", err, firstLines(string(b), 10))
			}
			want := readTlparse(t, out)
			var tr traceDoc
			bringupJSON(t, "", -1, "bringup.trace/v1", &tr, "trace", "--json", log)
			got := tlSummary{cache: map[string]int{}}
			for _, c := range tr.Compiles {
				got.ids = append(got.ids, c.ID)
			}
			for _, g := range tr.GraphBreaks {
				got.graphBreaks += g.Count
			}
			for _, c := range tr.Cache {
				got.cache[c.Kind+"_"+c.Outcome]++
			}
			slices.Sort(got.ids)
			if !slices.Equal(got.ids, want.ids) {
				t.Errorf("compile ids: bringup %v, tlparse %v", got.ids, want.ids)
			}
			if got.graphBreaks != want.graphBreaks {
				t.Errorf("graph-break records: bringup %d, tlparse %d", got.graphBreaks, want.graphBreaks)
			}
			for k, n := range want.cache {
				if got.cache[k] != n {
					t.Errorf("cache %s: bringup %d, tlparse %d", k, got.cache[k], n)
				}
			}
			for k, n := range got.cache {
				if _, ok := want.cache[k]; !ok {
					t.Errorf("cache %s: bringup %d, tlparse none", k, n)
				}
			}
		})
	}
}

type tlSummary struct {
	ids         []string // frame/compile, attempts folded
	graphBreaks int
	cache       map[string]int // fx_graph_hit, aotautograd_miss, ...
}

var (
	tlID    = regexp.MustCompile(`^\[(\d+)/(\d+)(?:_\d+)?\]$`)
	tlCache = regexp.MustCompile(`^(fx_graph|aotautograd)_cache_(hit|miss|bypass)_\d+\.json$`)
)

// readTlparse reads tlparse's compile_directory.json: one entry per compile
// id and attempt ("[0/0_1]" is [0/0]'s second attempt), each listing the
// artifacts written for it.
func readTlparse(t *testing.T, out string) tlSummary {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, "compile_directory.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dir map[string]struct {
		Artifacts []struct {
			Name string `json:"name"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(data, &dir); err != nil {
		t.Fatalf("compile_directory.json: %v", err)
	}
	s := tlSummary{cache: map[string]int{}}
	seen := map[string]bool{}
	for key, e := range dir {
		if m := tlID.FindStringSubmatch(key); m != nil && !seen[m[1]+"/"+m[2]] {
			seen[m[1]+"/"+m[2]] = true
			s.ids = append(s.ids, m[1]+"/"+m[2])
		}
		for _, a := range e.Artifacts {
			if strings.HasPrefix(a.Name, "dynamo_graph_break_reason_") {
				s.graphBreaks++
			}
			if m := tlCache.FindStringSubmatch(a.Name); m != nil {
				s.cache[m[1]+"_"+m[2]]++
			}
		}
	}
	slices.Sort(s.ids)
	return s
}
