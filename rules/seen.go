package rules

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
)

// SeenOn is where the PyTorch message a rule quotes was seen for real: the
// torch versions it was seen on and, when the testbed (scripts/testbed)
// produces it, the recorded artifacts it fires on (paths under
// testbed/testdata: a stderr/stdout file is diagnosed, a trace/ directory
// traced, a stacks/ directory read by bringup stacks); testbed/ runs every
// rule on its artifacts. A message the testbed cannot produce names why
// (Testbed, one of NotOnTestbed) in words (Why). Older names wordings the
// rule keeps for other torch versions than the artifacts'.
type SeenOn struct {
	Torch     []string  `yaml:"torch,omitempty"`
	Artifacts []string  `yaml:"artifacts,omitempty"`
	Testbed   string    `yaml:"testbed,omitempty"`
	Why       string    `yaml:"why,omitempty"`
	Older     []Wording `yaml:"older,omitempty"`
}

// Wording is a rule's text alternative kept for torch versions other than
// the testbed's, with where that wording was seen.
type Wording struct {
	Text   string `yaml:"text"`   // the wording, as it appears in the log
	Torch  string `yaml:"torch"`  // the versions, a constraint such as '<2.15'
	Source string `yaml:"source"` // where it was read (a reference, an issue)
}

// NotOnTestbed are the reasons the CPU testbed cannot produce a message.
var NotOnTestbed = map[string]string{
	"gpu-only":     "needs a GPU (CUDA/ROCm, Triton kernels, CUDA graphs)",
	"older-torch":  "the message is gone from the testbed's torch; seen on older releases only",
	"engine-only":  "printed by a serving engine (vLLM, SGLang, ATOM), not by torch alone",
	"environment":  "needs a broken machine (toolchain, driver, file system) the testbed does not fake",
	"not-recorded": "the CPU could produce it; no testbed scenario records it yet",
}

var torchVersion = regexp.MustCompile(`^\d+\.\d+(?:\.\d+)?(?:[+.a-z0-9]*)$`)

func (s *SeenOn) check(r *Rule) error {
	if s == nil {
		return nil
	}
	for _, v := range s.Torch {
		if !torchVersion.MatchString(v) {
			return fmt.Errorf("seen_on.torch %q: want a torch version such as 2.15.0", v)
		}
	}
	switch {
	case len(s.Artifacts) > 0 && s.Testbed != "":
		return fmt.Errorf("seen_on: artifacts and testbed: %q exclude each other (a recorded artifact is what the testbed produced)", s.Testbed)
	case len(s.Artifacts) > 0:
		if len(s.Torch) == 0 {
			return fmt.Errorf("seen_on: artifacts need the torch versions they were recorded with (seen_on.torch)")
		}
		for _, a := range s.Artifacts {
			if a == "" || strings.HasPrefix(a, "/") || path.Clean(a) != a || strings.HasPrefix(a, "..") || !strings.Contains(a, "/") {
				return fmt.Errorf("seen_on.artifacts %q: want SCENARIO/FILE under testbed/testdata (relative, clean)", a)
			}
		}
	case s.Testbed != "":
		if _, ok := NotOnTestbed[s.Testbed]; !ok {
			return fmt.Errorf("seen_on.testbed %q: want one of %s", s.Testbed, strings.Join(sortedKeys(NotOnTestbed), ", "))
		}
		if strings.TrimSpace(s.Why) == "" {
			return fmt.Errorf("seen_on.testbed %s: say why in seen_on.why", s.Testbed)
		}
	default:
		return fmt.Errorf("seen_on needs artifacts (with torch) or testbed (a reason the testbed cannot produce the message)")
	}
	for i, w := range s.Older {
		if w.Text == "" || w.Source == "" {
			return fmt.Errorf("seen_on.older[%d]: text and source are required", i)
		}
		if _, err := parseConstraint(w.Torch); err != nil {
			return fmt.Errorf("seen_on.older[%d].torch: %v", i, err)
		}
		if !r.quotes(w.Text) {
			return fmt.Errorf("seen_on.older[%d]: no text alternative of the rule matches %q", i, w.Text)
		}
	}
	return nil
}

// quotes reports whether one of the rule's text alternatives matches text.
func (r *Rule) quotes(text string) bool {
	for _, p := range r.Match.text {
		if p.get().MatchString(text) {
			return true
		}
	}
	for i := range r.Match.Any {
		for _, p := range r.Match.Any[i].text {
			if p.get().MatchString(text) {
				return true
			}
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
