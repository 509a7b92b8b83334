package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSeenOnValidated: a seen_on that cannot be checked is an error with
// the rule's file:line, not a silent claim.
func TestSeenOnValidated(t *testing.T) {
	const head = "- id: a\n  title: t\n  severity: error\n  cause: c\n  remedy: [r]\n  match: {text: ['Hard failure due to x']}\n"
	dir := t.TempDir()
	for name, c := range map[string]struct{ seen, want string }{
		"no-torch":      {"{artifacts: [recompile_fail/stderr.txt]}", "need the torch versions"},
		"bad-version":   {"{torch: [latest], artifacts: [a/stderr.txt]}", `"latest"`},
		"absolute":      {"{torch: ['2.15.0'], artifacts: [/tmp/x/stderr.txt]}", "relative, clean"},
		"dotdot":        {"{torch: ['2.15.0'], artifacts: [../x/stderr.txt]}", "relative, clean"},
		"no-scenario":   {"{torch: ['2.15.0'], artifacts: [stderr.txt]}", "SCENARIO/FILE"},
		"both":          {"{torch: ['2.15.0'], artifacts: [a/stderr.txt], testbed: gpu-only, why: w}", "exclude each other"},
		"reason":        {"{testbed: needs-love, why: w}", "want one of engine-only, environment, gpu-only"},
		"no-why":        {"{testbed: gpu-only}", "say why"},
		"empty":         {"{}", "needs artifacts"},
		"older-unknown": {"{torch: ['2.15.0'], artifacts: [a/stderr.txt], older: [{text: 'other words', torch: '<2.15', source: s}]}", "no text alternative"},
		"older-version": {"{torch: ['2.15.0'], artifacts: [a/stderr.txt], older: [{text: 'Hard failure due to x', torch: '2.14', source: s}]}", "older[0].torch"},
		"typo":          {"{torch: ['2.15.0'], artefacts: [a/stderr.txt]}", "artefacts not found"},
	} {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(head+"  seen_on: "+c.seen+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := builtin(t).LoadFile(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), name+".yaml:1") {
			t.Errorf("%s: error %v, want %q at %s.yaml:1", name, err, c.want, name)
		}
	}
	ok := filepath.Join(dir, "ok.yaml")
	body := head + "  seen_on: {torch: ['2.15.0'], artifacts: [a/stderr.txt, a/trace], older: [{text: 'Hard failure due to x', torch: '<2.15', source: s}]}\n" +
		strings.Replace(head, "id: a", "id: b", 1) + "  seen_on: {testbed: gpu-only, why: needs CUDA graphs}\n"
	if err := os.WriteFile(ok, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s := builtin(t)
	if err := s.LoadFile(ok); err != nil {
		t.Fatal(err)
	}
	if a := s.Rule("a").SeenOn; a == nil || len(a.Artifacts) != 2 || a.Older[0].Torch != "<2.15" {
		t.Errorf("rule a seen_on %+v", a)
	}
	if b := s.Rule("b").SeenOn; b == nil || b.Testbed != "gpu-only" || b.Why != "needs CUDA graphs" {
		t.Errorf("rule b seen_on %+v", b)
	}
}
