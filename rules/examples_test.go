package rules

import (
	"testing"
)

// TestRuleExamples runs the examples every rule carries in its YAML entry:
// each fire example must make the rule match and each quiet one must not;
// every rule has at least one of each, and every alternative of its match
// (each text pattern, each any-block) is what some fire example matches.
func TestRuleExamples(t *testing.T) {
	s := builtin(t)
	for _, r := range s.Rules() {
		exs, err := r.Examples()
		if err != nil {
			t.Error(err)
			continue
		}
		if len(exs.Fire) == 0 || len(exs.Quiet) == 0 {
			t.Errorf("%s (%s): needs at least one fire and one quiet example", r.ID, r.Source)
		}
		var subs []Subject
		for i, ex := range exs.Fire {
			sub, v := ex.Subject()
			subs = append(subs, sub)
			if !hasRule(s.Match(sub, v), r.ID) {
				t.Errorf("%s (%s): fire example %d did not fire: %q (got %v)", r.ID, r.Source, i, sub.Text, ids(s.Match(sub, v)))
			}
		}
		for i, ex := range exs.Quiet {
			sub, v := ex.Subject()
			if hasRule(s.Match(sub, v), r.ID) {
				t.Errorf("%s (%s): quiet example %d fired: %q", r.ID, r.Source, i, sub.Text)
			}
		}
		alts := func(where string, res []*pattern) {
			for _, re := range res {
				hit := false
				for _, sub := range subs {
					hit = hit || re.MatchString(sub.Text)
				}
				if !hit {
					t.Errorf("%s (%s): no fire example matches %s pattern %q", r.ID, r.Source, where, re)
				}
			}
		}
		alts("text", r.Match.text)
		for i := range r.Match.Any {
			a := &r.Match.Any[i]
			alts("any", a.text)
			hit := false
			for _, sub := range subs {
				hit = hit || a.matchNoAny(&sub, nil)
			}
			if !hit {
				t.Errorf("%s (%s): no fire example matches any[%d]", r.ID, r.Source, i)
			}
		}
	}
}
