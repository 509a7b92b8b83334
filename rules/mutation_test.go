package rules

import (
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
)

func matchedIDs(t *testing.T, sub Subject, v Versions) map[string]bool {
	t.Helper()
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, r := range s.Match(sub, v) {
		ids[r.ID] = true
	}
	return ids
}

// TestRecompileLimitOlderTorchWording: torch before the rename says
// cache_size_limit; the rule must fire on it and its remedy must name the
// old knob too.
func TestRecompileLimitOlderTorchWording(t *testing.T) {
	for _, knob := range []string{"cache_size_limit", "accumulated_cache_size_limit"} {
		text := "torch._dynamo hit config." + knob + " (8)\n   function: 'forward' (/m/model.py:100)\n   last reason: 0/7: tensor 'L['x']' size mismatch at index 0. expected 8, actual 9"
		if !matchedIDs(t, Subject{Text: text}, nil)["recompile-limit"] {
			t.Errorf("recompile-limit does not fire on the older wording %q", knob)
		}
	}
	s, _ := Builtin()
	if r := s.Rule("recompile-limit"); r == nil || !strings.Contains(strings.Join(r.Remedy, "\n"), "cache_size_limit") {
		t.Errorf("the recompile-limit remedy no longer names cache_size_limit for older torch")
	}
}

// TestFramePatternsAllInOrder: a rule with several frame patterns needs
// every one of them, innermost first and in order; one of them alone, or
// both out of order, is not a match.
func TestFramePatternsAllInOrder(t *testing.T) {
	inner := record.Frame{Func: "profile_cudagraph_memory", File: "vllm/v1/worker/gpu_model_runner.py"}
	outer := record.Frame{Func: "determine_available_memory", File: "vllm/v1/worker/xpu_worker.py"}
	other := record.Frame{Func: "run", File: "vllm/x.py"}
	for _, c := range []struct {
		name   string
		frames record.Stack
		want   bool
	}{
		{"both in order", record.Stack{inner, other, outer}, true},
		{"only the inner", record.Stack{inner, other}, false},
		{"only the outer", record.Stack{other, outer}, false},
		{"out of order", record.Stack{outer, inner}, false},
	} {
		got := matchedIDs(t, Subject{Fact: "exception", Text: "RuntimeError: UR error", Frames: c.frames}, nil)["xpu-cudagraph-mem-estimate"]
		if got != c.want {
			t.Errorf("%s: xpu-cudagraph-mem-estimate matched = %v, want %v", c.name, got, c.want)
		}
	}
}
