package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// --top and --torch are checked before anything is read: a count below 1
// or a version that is not one is a usage error, one line, exit 2.
func TestTraceFlagsValidated(t *testing.T) {
	log := testcorpus.File(t, "tlparse-inputs", "simple.log")
	for _, args := range [][]string{{"--top", "0"}, {"--top", "-1"}, {"--torch", "banana"}, {"--torch", "2.x"}, {"--torch", "latest"}} {
		code, out, errs := runCLI(append(append([]string{"trace"}, args...), log)...)
		if code != ExitUsage || out != "" || !strings.HasPrefix(errs, "bringup: "+args[0]) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	for _, v := range []string{"2.10.0", "2.6.0a0+git1234", "2.9.0.dev20250701+cu128", "2.4"} {
		out := filepath.Join(t.TempDir(), "t.json")
		code, _, errs := runCLI("trace", "--json", "-o", out, "--torch", v, log)
		if code != ExitOK {
			t.Fatalf("--torch %s: exit %d, %q", v, code, errs)
		}
		var doc struct{ Versions map[string]string }
		b, _ := os.ReadFile(out)
		if json.Unmarshal(b, &doc) != nil || doc.Versions["torch"] != v {
			t.Errorf("--torch %s: versions %v", v, doc.Versions)
		}
	}
	// --top bounds every list, the slowest compiles too.
	_, out, _ := runCLI("trace", "--top", "2", testcorpus.Dir(t, "tlparse-inputs/multi_rank_logs"))
	if !strings.Contains(out, "Slowest compiles (2)") || !strings.Contains(out, "  … 2 more\n") || strings.Contains(out, "Ranks: 3:") {
		t.Errorf("--top 2 not applied:\n%s", out)
	}
}

// A log that compiles the same id again (cache_hit_miss.log runs the test
// three times) tells the occurrences apart in text and JSON.
func TestTraceOccurrences(t *testing.T) {
	log := testcorpus.File(t, "tlparse-inputs", "cache_hit_miss.log")
	_, out, _ := runCLI("trace", log)
	for _, want := range []string{"[1/0]#2", "[1/0]#3", "[0/0]#2", "miss cache_hit_miss.log [1/0]#3 fx_graph"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	js := filepath.Join(t.TempDir(), "t.json")
	runCLI("trace", "--json", "-o", js, log)
	var doc struct {
		Cache []struct {
			CompileID  string `json:"compile_id"`
			Occurrence int    `json:"occurrence"`
		}
	}
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	occ := map[int]int{}
	for _, c := range doc.Cache {
		occ[c.Occurrence]++
	}
	if len(occ) != 3 {
		t.Errorf("cache lookups by occurrence %v, want three occurrences", occ)
	}
}

// An export log reads as an export: its issue, not "OK: 0 compile(s)" or
// "No compile units".
func TestTraceExport(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI("trace", "--html", filepath.Join(dir, "r"), testcorpus.File(t, "tlparse-inputs", "export.log"))
	if code != ExitOK || !strings.HasPrefix(out, "PROBLEM: export found 1 issue(s)") ||
		!strings.Contains(out, "Data Dependent Error: Eq((((-u0)//3)) + 5, 0) → False") || !strings.Contains(out, "test_draft_export.py:279") {
		t.Errorf("exit %d (%q):\n%s", code, errs, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "r", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if strings.Contains(page, "No compile units") || !strings.Contains(page, "Export report") || !strings.Contains(page, "Data Dependent Error") ||
		!strings.Contains(page, "Exported program:") {
		t.Errorf("export report missing from the index:\n%.2000s", page)
	}
	if _, err := os.Stat(filepath.Join(dir, "r", "shapes.html")); err != nil {
		t.Errorf("symbolic shapes page: %v", err)
	}
}

// A folder of unrelated runs is not one run: every rank_0 is its own
// run's rank 0, and runs are not compared with each other.
func TestTraceFolderOfRuns(t *testing.T) {
	root := t.TempDir()
	copyDir := func(src, dst string) {
		os.MkdirAll(dst, 0o755)
		ents, _ := os.ReadDir(src)
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644)
		}
	}
	copyDir(testcorpus.Dir(t, "tlparse-inputs/multi_rank_schedule"), filepath.Join(root, "runA"))
	copyDir(testcorpus.Dir(t, "tlparse-inputs/multi_rank_messy_input"), filepath.Join(root, "runB"))
	// One directory written by two runs: the same rank twice, months apart.
	mixed := filepath.Join(root, "mixed")
	os.MkdirAll(mixed, 0o755)
	for name, src := range map[string]string{
		"dedicated_log_torch_trace_rank_0_aaaa.log": "multi_rank_schedule/dedicated_log_torch_trace_rank_0_6u3fubwl.log",
		"dedicated_log_torch_trace_rank_1_aaaa.log": "multi_rank_schedule/dedicated_log_torch_trace_rank_2.log",
		"dedicated_log_torch_trace_rank_0_bbbb.log": "simple.log",
	} {
		b, err := os.ReadFile(filepath.Join(testcorpus.Dir(t, "tlparse-inputs"), src))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(mixed, name), b, 0o644)
	}
	js := filepath.Join(t.TempDir(), "t.json")
	runCLI("trace", "--json", "-o", js, root)
	var doc struct {
		Inputs []struct {
			Path, Label, Run string
			Rank             int
		}
		Ranks      []struct{ Label, Run string }
		Divergence []struct{ Kind, Run string }
	}
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	runOf := map[string]string{}
	labels := map[string]bool{}
	for _, in := range doc.Inputs {
		rel, _ := filepath.Rel(root, in.Path)
		runOf[filepath.ToSlash(rel)] = in.Run
		if labels[in.Label] {
			t.Errorf("label %q twice", in.Label)
		}
		labels[in.Label] = true
	}
	if len(doc.Inputs) != 8 || len(doc.Ranks) != 8 {
		t.Fatalf("%d inputs, %d rank summaries, want 8 each: %+v", len(doc.Inputs), len(doc.Ranks), doc.Inputs)
	}
	if runOf["runA/dedicated_log_torch_trace_rank_0_6u3fubwl.log"] != "runA" || runOf["runB/dedicated_log_torch_trace_rank_0.log"] != "runB" {
		t.Errorf("runs by folder: %v", runOf)
	}
	a, b0 := runOf["mixed/dedicated_log_torch_trace_rank_0_aaaa.log"], runOf["mixed/dedicated_log_torch_trace_rank_0_bbbb.log"]
	if a == b0 || runOf["mixed/dedicated_log_torch_trace_rank_1_aaaa.log"] != a || !strings.HasPrefix(a, "mixed") || !strings.HasPrefix(b0, "mixed") {
		t.Errorf("one folder, two runs: %v", runOf)
	}
	if !labels["runA rank 0"] || !labels["runB rank 0"] {
		t.Errorf("labels %v", labels)
	}
	kinds := map[string]bool{}
	for _, d := range doc.Divergence {
		if d.Run == "" {
			t.Errorf("divergence %s without its run", d.Kind)
		}
		kinds[d.Run+" "+d.Kind] = true
	}
	if !kinds["runA collective_schedule"] || len(doc.Divergence) > 6 {
		t.Errorf("divergence %+v: want runA's collective schedules, runs not compared with each other", doc.Divergence)
	}
}
