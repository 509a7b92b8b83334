package rules

import (
	"regexp"
	"testing"
)

// TestMatchesOffWarning: an error rule's words on a line Python's warnings
// module printed do not count; the same words elsewhere in the text do.
func TestMatchesOffWarning(t *testing.T) {
	re := regexp.MustCompile(`does not know how to trace`)
	for text, want := range map[string]bool{
		"functions.py:2607: UserWarning: Dynamo does not know how to trace the builtin `cmath.isinf.`":               false,
		"a.py:1: UserWarning: Dynamo does not know how to trace x\nUnsupported: Dynamo does not know how to trace y": true,
		"torch._dynamo.exc.Unsupported: Dynamo does not know how to trace the builtin `x`":                           true,
		"UserWarning: Dynamo does not know how to trace x":                                                           true, // raised (warnings as errors)
		"nothing here": false,
	} {
		if got := matchesOffWarning(re, text); got != want {
			t.Errorf("%q: %v, want %v", text, got, want)
		}
	}
}
