package enginelog

import (
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// levelWordLoop is the reference: the first of levelWords, in order, that
// starts r and is followed by a space.
func levelWordLoop(r []byte) (record.Level, int) {
	for _, w := range levelWords {
		if len(r) > len(w.w) && string(r[:len(w.w)]) == w.w && r[len(w.w)] == ' ' {
			return w.lvl, len(w.w) + 1
		}
	}
	return "", 0
}

func TestLevelWord(t *testing.T) {
	for _, s := range []string{"", "I", "INFO", "INFO ", "INFO  x", "INFOx", "WARNING 1", "WARN 1", "WARNING", "WARNINGS ", "WARN", "ERROR x",
		"DEBUG x", "CRITICAL x", "Capturing CUDA", "E", "info x", "DEBUGGER x", "CRITICAL"} {
		lvl, n := levelWord([]byte(s))
		wl, wn := levelWordLoop([]byte(s))
		if lvl != wl || n != wn {
			t.Errorf("levelWord(%q) = %q %d, want %q %d", s, lvl, n, wl, wn)
		}
	}
}

func FuzzLevelWord(f *testing.F) {
	for _, s := range []string{"INFO 11-29", "WARNING 1", "WARN 1", "ERROR x", "DEBUG x", "CRITICAL x", "Capturing CUDA", "I0227 20:02"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, r []byte) {
		lvl, n := levelWord(r)
		wl, wn := levelWordLoop(r)
		if lvl != wl || n != wn {
			t.Fatalf("levelWord(%q) = %q %d, want %q %d", r, lvl, n, wl, wn)
		}
	})
}
