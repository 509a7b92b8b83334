package enginelog

import (
	"strings"
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

// TestTorchLoggerField: torch 2.0/2.1 printed "[time] logger: [LEVEL] ";
// the level is the record's, the logger its emitter, and the body what
// follows (a traceback that torch logged as a warning stays a warning).
func TestTorchLoggerField(t *testing.T) {
	log := "[2023-08-16 19:29:22,940] torch._dynamo.convert_frame: [WARNING] Traceback (most recent call last):\n" +
		"[2023-08-16 19:29:22,941] torch._inductor.utils: [ERROR] boom\n" +
		"[2023-08-16 19:29:22,942] torch._dynamo.convert_frame: [WARNING] \n" +
		"[2023-08-16 19:29:22,943] not a logger: [WARNING] x\n"
	var got []record.Record
	if _, err := Parse(strings.NewReader(log), "x.log", func(r record.Record) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		lvl        record.Level
		emit, text string
	}{
		{record.LevelWarning, "torch._dynamo.convert_frame", "Traceback (most recent call last):"},
		{record.LevelError, "torch._inductor.utils", "boom"},
		{record.LevelWarning, "torch._dynamo.convert_frame", ""},
		{"", "", "not a logger: [WARNING] x"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Level != w.lvl || got[i].Emitter != w.emit || got[i].Text != w.text {
			t.Errorf("record %d: %q %q %q, want %+v", i, got[i].Level, got[i].Emitter, got[i].Text, w)
		}
	}
}
