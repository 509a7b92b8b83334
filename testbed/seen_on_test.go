package testbed

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
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
	set := builtinRules(t)
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

// torchFamilies are the rule files about torch.compile itself: every text
// rule there quotes Dynamo, Inductor, AOTAutograd or their caches.
var torchFamilies = map[string]bool{"dynamo": true, "inductor": true, "cache": true, "cudagraph": true}

// torchWords name PyTorch or a library of it (torch.library, c10d, gloo,
// functorch) in a rule's patterns or examples.
var torchWords = regexp.MustCompile(`(?i)\btorch\b|torch[._/]|\baten\b|_dynamo|_inductor|\bdynamo\b|\binductor\b|\bgloo\b|\bc10d?\b|functorch|aot_?autograd`)

// quotesTorch: the rule matches a message (a text pattern, or an exception
// or fatal record) and that message is PyTorch's: the rule is in a
// torch.compile family, or its patterns, fields, frames or fire examples
// name torch. Rules on stacks or trace structure (frames, facts without a
// text) quote no message.
func quotesTorch(r *brules.Rule) bool {
	var texts []string
	var walk func(m *brules.Match)
	message := false
	walk = func(m *brules.Match) {
		texts = append(texts, m.Text...)
		texts = append(texts, m.Frames...)
		for _, v := range m.Fields {
			texts = append(texts, v)
		}
		if len(m.Text) > 0 || m.Fact == "exception" || m.Fact == "fatal" {
			message = true
		}
		for i := range m.Any {
			walk(&m.Any[i])
		}
	}
	walk(&r.Match)
	if !message || r.CatchAll {
		return false
	}
	file, _, _ := strings.Cut(r.Source, ":") // "rules/dynamo.yaml:313"
	if torchFamilies[strings.TrimSuffix(path.Base(file), ".yaml")] {
		return true
	}
	if exs, err := r.Examples(); err == nil {
		for _, e := range exs.Fire {
			texts = append(texts, e.Text)
			texts = append(texts, e.Frames...)
		}
	}
	for _, s := range texts {
		if torchWords.MatchString(s) {
			return true
		}
	}
	return false
}

// TestRulesQuotingTorchSayWhereSeen: every built-in rule that quotes a
// PyTorch message says where it was seen for real (seen_on.artifacts,
// checked by TestRulesSeenOnArtifacts) or why the CPU testbed cannot
// record it (seen_on.testbed with a why; rules.SeenOn.check refuses a
// reason without one). A new rule quoting torch without either fails here.
func TestRulesQuotingTorchSayWhereSeen(t *testing.T) {
	set := builtinRules(t)
	n := 0
	for _, r := range set.Rules() {
		if !quotesTorch(r) {
			continue
		}
		n++
		if r.SeenOn == nil {
			t.Errorf("%s: %s quotes a PyTorch message but has no seen_on: record it with the testbed (seen_on.artifacts) or say why it cannot be (seen_on.testbed, seen_on.why)", r.Source, r.ID)
		}
	}
	if n < 60 {
		t.Errorf("only %d rules quote a PyTorch message; the check lost its reach", n)
	}
}

// quietKnownMisses are rules that fire on a recorded run whose message
// they do not describe, each with why; the rules are not the testbed's to
// change. TestNotRecordedRulesStayQuiet fails when one stops firing.
var quietKnownMisses = map[string]string{
	"implicit-fallback-format-hang": "fires on silent_compile/stderr.txt, a torch 2.15 run that formats lazily: the stderr names no torch version, so the rule's torch < 2.13 gate cannot hold it back",
}

// TestNotRecordedRulesStayQuiet: a rule whose seen_on says the testbed
// cannot record its message (seen_on.testbed) fires on no recorded run;
// when one does, the run is the recording, and the rule should name it in
// seen_on.artifacts instead. Every scenario's stderr/stdout is diagnosed,
// its trace/ traced and its stacks/ read once.
func TestNotRecordedRulesStayQuiet(t *testing.T) {
	set := builtinRules(t)
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	fired := map[string][]string{} // rule → artifacts it fired on
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		dir := scenario(t, name)
		note := func(art string, fs []finding) {
			for _, f := range fs {
				fired[f.Rule] = append(fired[f.Rule], name+"/"+art)
			}
		}
		var d diagnosis
		bringupJSON(t, dir, -1, "bringup.diagnosis/v1", &d, "diagnose", "--json", "stderr.txt", "stdout.txt")
		note("stderr.txt", d.Findings)
		if _, err := os.Stat(filepath.Join(dir, "trace")); err == nil {
			var tr traceDoc
			bringupJSON(t, dir, -1, "bringup.trace/v1", &tr, "trace", "--json", "trace")
			note("trace", tr.Findings)
		}
		if _, err := os.Stat(filepath.Join(dir, "stacks")); err == nil {
			var st stacksDoc
			bringupJSON(t, dir, -1, "bringup.stacks/v1", &st, "stacks", "--json", "stacks")
			note("stacks", st.Findings)
		}
	}
	if len(fired) == 0 {
		t.Fatal("no rule fired on any recorded run")
	}
	for _, r := range set.Rules() {
		if r.SeenOn == nil || r.SeenOn.Testbed == "" {
			continue
		}
		if why, ok := quietKnownMisses[r.ID]; ok {
			if len(fired[r.ID]) == 0 {
				t.Errorf("%s no longer fires on a recorded run; drop it from quietKnownMisses (%s)", r.ID, why)
			}
			continue
		}
		if len(fired[r.ID]) == 0 {
			continue
		}
		t.Errorf("%s: %s says seen_on.testbed %s (%s), but fires on the recorded %v: name the recording in seen_on.artifacts",
			r.Source, r.ID, r.SeenOn.Testbed, r.SeenOn.Why, fired[r.ID])
	}
}

func builtinRules(t *testing.T) *brules.Set {
	t.Helper()
	set, err := brules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return set
}
