package patchset

import "testing"

// TestParseEnvKnob: the Env: value New writes reads back the same, from
// the header and from `patch new --env`, separated by spaces or tabs.
func TestParseEnvKnob(t *testing.T) {
	for in, want := range map[string]EnvKnob{
		"VLLM_COMPILE_FULLGRAPH=1  (0 disables fullgraph)": {Name: "VLLM_COMPILE_FULLGRAPH", Value: "1", Note: "0 disables fullgraph"},
		"A=1\t(tab)":  {Name: "A", Value: "1", Note: "tab"},
		"  B  ":       {Name: "B"},
		"C= (empty)":  {Name: "C", Note: "empty"},
		"D=x=y extra": {Name: "D", Value: "x=y", Note: "extra"},
	} {
		got, ok := ParseEnvKnob(in)
		if !ok || got != want {
			t.Errorf("ParseEnvKnob(%q) = %+v, %v; want %+v", in, got, ok, want)
		}
	}
	if _, ok := ParseEnvKnob(" \t"); ok {
		t.Error("a blank value read as a knob")
	}
}
