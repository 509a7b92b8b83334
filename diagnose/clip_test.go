package diagnose

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestClipToKeepsUTF8: a clip at every length of a text of multi-byte
// runes is valid UTF-8, at most n bytes before its mark, and a prefix.
func TestClipToKeepsUTF8(t *testing.T) {
	s := strings.Repeat("Fehler: Größe ✗ 文件 ", 4)
	for n := 0; n <= len(s); n++ {
		got := clipTo(s, n)
		if !utf8.ValidString(got) {
			t.Fatalf("clipTo(%d) = %q: not valid UTF-8", n, got)
		}
		body := strings.TrimSuffix(got, "…")
		if len(body) > n || !strings.HasPrefix(s, body) {
			t.Fatalf("clipTo(%d) = %q: not a prefix of at most %d bytes", n, got, n)
		}
	}
	if got := clipTo("short", 10); got != "short" {
		t.Errorf("clipTo of a short text = %q", got)
	}
}
