package enginelog

import "testing"

// A quoted tool output that marks its own lines with "> " after an indent
// (Nix's last log lines of a failed build, nixpkgs issue 453992) loses both
// quotes, keeping the indent after them; an indent not followed by '>'
// stays.
func TestUnquoteNested(t *testing.T) {
	for in, want := range map[string]string{
		">        >   File \"/nix/store/x/triton/runtime/cache.py\", line 115, in put": "  File \"/nix/store/x/triton/runtime/cache.py\", line 115, in put",
		">        > OSError: [Errno 28] No space left on device":                       "OSError: [Errno 28] No space left on device",
		">        last 25 log lines:":                                                  "       last 25 log lines:",
		"> > x":                                                                        "x",
		">    >>> import torch":                                                        "   >>> import torch",
		">     a > b":                                                                  "    a > b",
		">  >":                                                                         "",
	} {
		if got := string(unquote([]byte(in))); got != want {
			t.Errorf("unquote(%q) = %q, want %q", in, got, want)
		}
	}
}
