package testbed

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	brules "github.com/bringup-tool/bringup/rules"
)

// TestRulesSeenOnArtifacts: every built-in rule that says its PyTorch
// message was seen in a recorded testbed run (seen_on.artifacts in its
// YAML) still fires on that run, through the command that reads that kind
// of artifact: a stderr/stdout file is diagnosed, a trace/ directory traced,
// a stacks/ directory read by bringup stacks. The torch version the run was
// recorded with (versions.txt) must be one the rule lists in seen_on.torch.
// A rule whose wording drifts from the real message fails here.
func TestRulesSeenOnArtifacts(t *testing.T) {
	set, err := brules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range set.Rules() {
		if r.SeenOn == nil {
			continue
		}
		for _, art := range r.SeenOn.Artifacts {
			n++
			t.Run(r.ID+"/"+art, func(t *testing.T) {
				name, rel, _ := strings.Cut(art, "/")
				checkRecordedTorch(t, r, name)
				dir := scenario(t, name)
				if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
					t.Fatalf("%s: seen_on artifact %s: %v", r.Source, art, err)
				}
				var fs []finding
				switch path.Base(rel) {
				case "trace":
					var tr traceDoc
					bringupJSON(t, dir, -1, "bringup.trace/v1", &tr, "trace", "--json", rel)
					fs = tr.Findings
				case "stacks":
					var st stacksDoc
					bringupJSON(t, dir, -1, "bringup.stacks/v1", &st, "stacks", "--json", rel)
					fs = st.Findings
				default:
					var d diagnosis
					bringupJSON(t, dir, -1, "bringup.diagnosis/v1", &d, "diagnose", "--json", rel)
					fs = d.Findings
				}
				if findingOf(fs, r.ID) == nil {
					t.Errorf("%s: %s no longer fires on the recorded %s (findings %v)", r.Source, r.ID, art, rules(fs))
				}
			})
		}
	}
	if n == 0 {
		t.Fatal("no built-in rule names a testbed artifact in seen_on")
	}
}

// checkRecordedTorch: the scenario's versions.txt names a torch the rule
// lists in seen_on.torch ("2.15.0" covers "2.15.0+cu132").
func checkRecordedTorch(t *testing.T, r *brules.Rule, name string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name, "versions.txt"))
	if err != nil {
		t.Fatalf("%s: %v", r.Source, err)
	}
	torch := ""
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "torch "); ok {
			torch = strings.TrimSpace(v)
		}
	}
	for _, v := range r.SeenOn.Torch {
		if torch == v || strings.HasPrefix(torch, v+"+") {
			return
		}
	}
	t.Errorf("%s: %s was recorded with torch %q, not one of seen_on.torch %v", r.Source, name, torch, r.SeenOn.Torch)
}
