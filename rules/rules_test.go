package rules

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/cputime"
)

// quiet are realistic healthy lines and near misses that no rule may match.
var quiet = []Subject{
	{Text: "Dynamo bytecode transform time: 12.31 s"},
	{Text: "Compiling a graph for dynamic shape takes 41.20 s"},
	{Text: "torch.compile takes 53.51 s in total"},
	{Text: "Graph capturing finished in 23 secs, took 0.51 GiB"},
	{Text: "Available KV cache memory: 21.20 GiB"},
	{Text: "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 67/67"},
	{Text: "init engine (profile, create kv cache, warmup model) took 95.31 seconds"},
	{Text: "Using cache directory: /root/.cache/vllm/torch_compile_cache/1a2b3c4d5e/rank_0_0/backbone for vLLM's torch.compile"},
	{Fact: "exception", Text: "KeyError: 'x'", Fields: map[string]string{"def_line_source": "return self.layers[x]"}},
}

func builtin(t testing.TB) *Set {
	t.Helper()
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hasRule(rs []*Rule, id string) bool {
	for _, r := range rs {
		if r.ID == id {
			return true
		}
	}
	return false
}

// TestEnoughRules: the knowledge base is not accidentally empty (each
// rule's own examples are run by TestRuleExamples).
func TestEnoughRules(t *testing.T) {
	if n := len(builtin(t).Rules()); n < 25 {
		t.Errorf("knowledge base has %d rules, want at least 25", n)
	}
}

func TestQuietOnHealthyLines(t *testing.T) {
	s := builtin(t)
	for _, sub := range quiet {
		if got := s.Match(sub, Versions{"torch": "2.9.0", "vllm": "0.11.0"}); len(got) > 0 {
			t.Errorf("%q (fact %q) matched %v", sub.Text, sub.Fact, ids(got))
		}
	}
}

func TestCaptureOOMNeedsHighUtilisation(t *testing.T) {
	sub := Subject{Fact: "timeline.unfinished", Fields: map[string]string{"phase": "cudagraph", "gpu_memory_utilization": "0.9"}}
	if got := builtin(t).Match(sub, nil); hasRule(got, "cudagraph-capture-oom") || !hasRule(got, "startup-stuck") {
		t.Errorf("unfinished capture at 0.9 matched %v, want only startup-stuck", ids(got))
	}
}

func ids(rs []*Rule) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func TestRulesAreComplete(t *testing.T) {
	for _, r := range builtin(t).Rules() {
		if len(r.References) == 0 {
			t.Errorf("%s: no references", r.ID)
		}
		if r.Phase == "" || r.Confidence == "" {
			t.Errorf("%s: phase and confidence are required in the knowledge base", r.ID)
		}
		for _, l := range r.literals {
			// A literal that starts with a digit makes every text's numbers
			// matter to the parser's mask memo (litscan.NumbersMatter): a
			// log whose lines differ in their numbers runs the scan anew.
			if l != "" && l[0] >= '0' && l[0] <= '9' {
				t.Errorf("%s: prefilter literal %q starts with a digit; anchor the regex on words", r.ID, l)
			}
		}
		if r.Match.text != nil && len(r.literals) == 0 {
			t.Errorf("%s: no prefilter literal derivable from %q: add literal:", r.ID, r.Match.Text)
		}
	}
}

func TestVersionGates(t *testing.T) {
	s := builtin(t)
	hang := Subject{Fact: "timeline.unfinished", Fields: map[string]string{"phase": "inductor"}}
	if hasRule(s.Match(hang, Versions{"torch": "2.13.0"}), "implicit-fallback-format-hang") {
		t.Error("implicit-fallback-format-hang fired on torch 2.13")
	}
	if !hasRule(s.Match(hang, Versions{"torch": "2.12.1+cu128"}), "implicit-fallback-format-hang") {
		t.Error("implicit-fallback-format-hang did not fire on torch 2.12.1")
	}
	if !hasRule(s.Match(hang, nil), "implicit-fallback-format-hang") {
		t.Error("an unknown torch version must not block")
	}
	nex, _ := s.Rule("nightly-regression").Examples()
	nightly, _ := nex.Fire[0].Subject()
	nightly.Fields = map[string]string{"vllm": "0.20.1"}
	if hasRule(s.Match(nightly, nil), "nightly-regression") {
		t.Error("nightly-regression fired on a release")
	}
	aot := Subject{Text: "RuntimeError: Graph breaks are not supported with aot compile. Please use torch.compile(fullgraph=True)."}
	if hasRule(s.Match(aot, Versions{"sglang": "0.4.0"}), "aot-compile-graph-break") {
		t.Error("a vLLM rule fired on an SGLang run")
	}
}

func TestConstraint(t *testing.T) {
	for _, c := range []struct {
		c, v string
		want bool
	}{
		{"<2.13", "2.10.0+rocm7.0", true}, {"<2.13", "2.13.0", false}, {"<2.13", "2.13", false},
		{">=2.10,<2.13", "2.9.1", false}, {"<=2.7.1", "2.7.1+cu126", true}, {"<=2.7.1", "2.8.0", false},
		{"<0.9", "0.8.5.post1", true}, {"<0.9", "v0.20.2rc1.dev189", false}, {"==2.10", "2.10.0", true},
		{"<2.13", "nightly", true},
	} {
		k, err := parseConstraint(c.c)
		if err != nil {
			t.Fatal(err)
		}
		if got := k.allows(c.v); got != c.want {
			t.Errorf("%s allows %s = %v, want %v", c.c, c.v, got, c.want)
		}
	}
	if _, err := parseConstraint("2.13"); err == nil {
		t.Error("a constraint without an operator must be rejected")
	}
}

func TestRequiredLiterals(t *testing.T) {
	for expr, want := range map[string]string{
		`Graph breaks are not supported with aot compile`:                 "Graph breaks are not supported with aot compile",
		`torch\._dynamo hit config\.(?:recompile_limit|cache_size_limit)`: "torch._dynamo hit config.",
		`(?:VllmBackend|SGLangBackend) can only be called once`:           " can only be called once",
		`Unsupported: Unsupported (?:function|method) call`:               "Unsupported: Unsupported ",
		`(?i)out of memory`:  "",
		`^FileNotFoundError`: "FileNotFoundError",
	} {
		got := strings.Join(requiredOf(expr), "|")
		if got != want {
			t.Errorf("requiredOf(%q) = %q, want %q", expr, got, want)
		}
	}
}

func TestAutomatonAgreesWithContains(t *testing.T) {
	lits := []string{"he", "she", "his", "hers", "Python.h", "out of memory"}
	a := newAutomaton(lits)
	litOf := make([][]int, len(lits))
	for i := range lits {
		litOf[i] = []int{i}
	}
	for _, text := range []string{"ushers", "fatal error: Python.h: No such file", "CUDA out of memory.", "", "h", "xxhisxx"} {
		got := map[int]bool{}
		for _, i := range a.scan(text, litOf, nil) {
			got[i] = true
		}
		for i, l := range lits {
			if strings.Contains(text, l) != got[i] {
				t.Errorf("%q: literal %q found=%v, Contains=%v", text, l, got[i], !got[i])
			}
		}
	}
}

func TestLoadFileErrorsNameFileAndLine(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ body, want string }{
		"syntax.yaml":   {"- id: x\n  title: [unclosed\n", "syntax.yaml:1: did not find expected"},
		"regex.yaml":    {"- id: a\n  title: t\n  severity: error\n  cause: c\n  remedy: [r]\n  match: {text: ['(']}\n", "regex.yaml:1"},
		"title.yaml":    {"- id: a\n  title: 't {x}'\n  severity: error\n  cause: c\n  remedy: [r]\n  match: {text: ['(?P<x>y)']}\n", "title.yaml:1"},
		"unknown.yaml":  {"- id: a\n  title: t\n  severity: error\n  cause: c\n  remedy: [r]\n  match: {text: [x]}\n- id: b\n  title: t\n  severity: error\n  cause: c\n  remedies: [r]\n  match: {txt: [x]}\n", "unknown.yaml:7"},
		"empty.yaml":    {"- id: a\n  title: t\n  severity: error\n  cause: c\n  remedy: [r]\n  match: {}\n", "matches everything"},
		"severity.yaml": {"- id: a\n  title: t\n  severity: fatal\n  cause: c\n  remedy: [r]\n  match: {text: [x]}\n", "severity"},
		"notlist.yaml":  {"id: a\n", "notlist.yaml:1"},
		"topsev.yaml":   {"- id: a\n  title: t\n  severity: error\n  cause: c\n  remedy: [r]\n  match: {text: [x], severity: warning}\n", "belongs in an any-block"},
		"anysev.yaml":   {"- id: a\n  title: t\n  severity: warning\n  cause: c\n  remedy: [r]\n  match: {any: [{text: [x], severity: warning}]}\n", "below the rule's"},
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		s := builtin(t)
		err := s.LoadFile(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", name, err, c.want)
		}
	}
}

func TestUserRuleAddsAndOverrides(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mine.yaml")
	body := `- id: my-oom
  title: My OOM
  severity: warning
  phase: runtime
  match:
    text: ['HIP out of memory']
  cause: too big
  remedy: ['smaller']
- id: kv-cache-negative
  title: overridden
  severity: info
  match: {text: ['Available KV cache memory: -\d']}
  cause: c
  remedy: [r]
`
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s := builtin(t)
	n := len(s.Rules())
	if err := s.LoadFile(p); err != nil {
		t.Fatal(err)
	}
	if len(s.Rules()) != n+1 {
		t.Errorf("rules %d, want %d", len(s.Rules()), n+1)
	}
	if got := s.Match(Subject{Text: "torch.OutOfMemoryError: HIP out of memory. Tried"}, nil); !hasRule(got, "my-oom") {
		t.Error("user rule did not fire")
	}
	if r := s.Rule("kv-cache-negative"); r.Severity != "info" || !strings.HasSuffix(r.Source, "mine.yaml:9") {
		t.Errorf("override not applied: %s %s", r.Severity, r.Source)
	}
}

func TestCollector(t *testing.T) {
	s := builtin(t)
	c := NewCollector()
	add := func(text, rank, path string, line int) {
		sub := Subject{Text: text, Evidence: record.Evidence{Path: path, Line: line, Rank: rank, Text: text}}
		for _, r := range s.Match(sub, nil) {
			c.Add(r, sub)
		}
	}
	for tp := 7; tp >= 0; tp-- {
		add("RuntimeError: Graph breaks are not supported with aot compile.", "TP"+strconv.Itoa(tp), "a.log", 100+tp)
	}
	add("RuntimeError: Graph breaks are not supported with aot compile.", "TP3", "a.log", 103) // the same line seen twice
	add("Available KV cache memory: -1 GiB", "TP0", "a.log", 50)
	add("torch._dynamo hit config.recompile_limit (8)", "TP1", "a.log", 10)
	fs := c.Findings()
	if len(fs) != 3 {
		t.Fatalf("%d findings, want 3", len(fs))
	}
	if fs[0].Rule != "aot-compile-graph-break" || fs[1].Rule != "kv-cache-negative" || fs[2].Rule != "recompile-limit" {
		t.Errorf("order %s %s %s: want errors by phase (dynamo before ready), then the warning", fs[0].Rule, fs[1].Rule, fs[2].Rule)
	}
	f := fs[0]
	if strings.Join(f.Ranks, ",") != "TP0,TP1,TP2,TP3,TP4,TP5,TP6,TP7" {
		t.Errorf("ranks %v", f.Ranks)
	}
	if f.Count != 8 || len(f.Evidence) != MaxEvidence {
		t.Errorf("count %d evidence %d, want 8 and %d", f.Count, len(f.Evidence), MaxEvidence)
	}
}

// BenchmarkMatch reports, besides wall time, CPU time per call
// ("cpu-ns/op", from getrusage), which a loaded machine disturbs less.
func BenchmarkMatch(b *testing.B) {
	s := builtin(b)
	for _, c := range []struct{ name, text string }{
		{"healthy-70B", "Model loading took 15.23 GiB and 12.345 seconds for the whole thing ok"},
		{"healthy-180B", `Directly load the 3-th graph for compile range (1, 8192) from inductor via handle ("artifact_shape_None_subgraph_3", "/root/.cache/vllm/torch_compile_cache/3f9c1e7a2b/rank_0_0/backbone")`},
		{"window-hit-190B", "Avg prompt throughput: 1532.4 tokens/s, Avg generation throughput: 412.9 tokens/s, Running: 64 reqs, Swapped: 0 reqs, Pending: 3 reqs, GPU KV cache usage: 41.2%, CPU KV cache usage: 0.0%."},
		{"error-hit", "RuntimeError: Graph breaks are not supported with aot compile. Please use torch.compile(fullgraph=True)."},
	} {
		b.Run(c.name, func(b *testing.B) {
			sub := Subject{Text: c.text}
			b.SetBytes(int64(len(c.text)))
			c0 := cputime.Used(cputime.Self)
			for i := 0; i < b.N; i++ {
				s.Match(sub, nil)
			}
			b.ReportMetric(float64((cputime.Used(cputime.Self)-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// TestSeverityOfWording: a rule whose any-block names a lower severity
// reports a recovered graph break (Dynamo's log line) as a warning, the
// same signature raised or in its fatal wording as an error, and a
// finding that saw both wordings as an error.
func TestSeverityOfWording(t *testing.T) {
	s := builtin(t)
	r := s.Rule("data-dependent-value")
	warn := Subject{Text: "Graph break from `Tensor.item()`, consider setting:"}
	fatal := Subject{Text: "torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode: Could not guard on data-dependent expression Eq(u0, 1)"}
	raised := Subject{Text: "torch._dynamo.exc.Unsupported: Graph break from `Tensor.item()`", Fact: "exception"}
	for _, c := range []struct {
		sub  Subject
		want string
	}{{warn, "warning"}, {fatal, "error"}, {raised, "error"}} {
		if !hasRule(s.Match(c.sub, nil), r.ID) {
			t.Errorf("%q: %s did not match", c.sub.Text, r.ID)
		}
		if got := r.SeverityFor(&c.sub); got != c.want {
			t.Errorf("%q: severity %s, want %s", c.sub.Text, got, c.want)
		}
	}
	c := NewCollector()
	c.Add(r, warn)
	if fs := c.Findings(); fs[0].Severity != record.SeverityWarning {
		t.Errorf("after the graph break line: %s, want warning", fs[0].Severity)
	}
	c.Add(r, fatal)
	if fs := c.Findings(); fs[0].Severity != record.SeverityError {
		t.Errorf("after the fatal wording: %s, want error", fs[0].Severity)
	}
	o := NewCollector()
	o.Add(r, warn)
	m := NewCollector()
	m.Add(r, fatal)
	o.Merge(m)
	if fs := o.Findings(); fs[0].Severity != record.SeverityError {
		t.Errorf("merged: %s, want error", fs[0].Severity)
	}
}
