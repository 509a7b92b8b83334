package record

import "testing"

// TestSkipString: the one bad-input type prints what it has, in the forms
// the stack model ("path:line: reason") and patch files ("line 3: reason")
// printed before they shared it.
func TestSkipString(t *testing.T) {
	for _, c := range []struct {
		s    Skip
		want string
	}{
		{Skip{Path: "d.txt", Line: 12, Reason: "cut"}, "d.txt:12: cut"},
		{Skip{Path: "d.txt", Reason: "interleaved"}, "d.txt: interleaved"},
		{Skip{Line: 3, Reason: "no Base-SHA256"}, "line 3: no Base-SHA256"},
		{Skip{Reason: "series: x ignored"}, "series: x ignored"},
	} {
		if got := c.s.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.s, got, c.want)
		}
	}
}
