package report

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text, tabs\tand\nnewlines", "plain text, tabs\tand\nnewlines"},
		{"日本語 ▶ é ×3 …", "日本語 ▶ é ×3 …"},
		// The sequence: set the terminal title, clear the screen.
		{"broken\x1b]0;PWNED\x07\x1b[2J backend", "broken backend"},
		{"osc with ST \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ end", "osc with ST link end"},
		{"colour \x1b[1;31mred\x1b[0m", "colour red"},
		{"cursor \x1b[?25l\x1b[10;20H moves", "cursor  moves"},
		{"dcs \x1bPq#0;2;0;0;0\x1b\\ gone", "dcs  gone"},
		{"charset \x1b(B and reset \x1bc", "charset  and reset "},
		{"c1 csi \u009b2J and osc \u009d0;T\u0007 end", "c1 csi  and osc  end"},
		{"raw 0x9b \x9b2J", "raw 0x9b \uFFFD2J"},
		{"bell\x07 backspace\x08 cr\r del\x7f nul\x00 vt\v ff\f", "bell backspace cr del nul vt ff"},
		{"unterminated \x1b]0;title\nnext line", "unterminated \nnext line"},
		{"trailing escape \x1b", "trailing escape "},
		{"bad utf-8 \xff\xfe end", "bad utf-8 \uFFFD\uFFFD end"},
	} {
		if got := Clean(c.in); got != c.want {
			t.Errorf("Clean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Text with nothing to clean is not copied.
func TestCleanNoCopy(t *testing.T) {
	s := strings.Repeat("ExternKernel.__str__ (torch/_inductor/ir.py:21) ▶\n", 100)
	if n := testing.AllocsPerRun(100, func() { _ = Clean(s) }); n != 0 {
		t.Errorf("%v allocations for clean text", n)
	}
}

// FuzzClean: whatever the input, the output holds no control character
// but tab and newline, no C1 control, no ESC, and is valid UTF-8; cleaning
// it again changes nothing.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"broken\x1b]0;PWNED\x07\x1b[2J backend", "\u009b2J\u009d0;x\u0007", "\xff\x9b[2J", "a\tb\nc", "\x1bP\x1b\\", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Clean(in)
		if !utf8.ValidString(out) {
			t.Fatalf("Clean(%q) = %q: not UTF-8", in, out)
		}
		for _, r := range out {
			if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f || r >= 0x80 && r < 0xa0 {
				t.Fatalf("Clean(%q) = %q holds %U", in, out, r)
			}
		}
		if again := Clean(out); again != out {
			t.Fatalf("Clean is not idempotent on %q: %q then %q", in, out, again)
		}
	})
}
