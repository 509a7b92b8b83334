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

// TestPythonLoggingHeader: the formats people give Python's logging
// module are headers: their level and time are the record's, a
// "[Rank N] " after them its global rank. A message logged below error
// runs on in its indented lines only: a line at column 0 after it (a
// crash's traceback, a compiler's output) is not covered by its level.
func TestPythonLoggingHeader(t *testing.T) {
	log := "22:36:40 [INFO] [Rank 0] Caught an exception, terminating children\n" +
		"22:36:40 [INFO] [Rank 0] NoValidChoicesError: No choices to select\n" +
		"  target: flex_attention_backward\n" +
		"2025-03-26 13:18:06,621 - lmdeploy - ERROR - model_agent.py:470 - Task failed\n" +
		"Traceback (most recent call last):\n" +
		"2025-03-26 23:00:15 - INFO - __main__ - *** Train ***\n" +
		"/usr/bin/ld: cannot find -lcurand: No such file or directory\n" +
		"2025-03-26 23:00:16 [WARNING] low disk\n" +
		"12:00:00 [NOTICE] not a level\n" +
		"2025-03-26 23:00:17 - a b - INFO - a name has no space\n"
	var got []record.Record
	if _, err := Parse(strings.NewReader(log), "x.log", func(r record.Record) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		lvl  record.Level
		rank string
		tm   string
		text string
	}{
		{record.LevelInfo, "rank0", "22:36:40", "Caught an exception, terminating children"},
		{record.LevelInfo, "rank0", "22:36:40", "NoValidChoicesError: No choices to select\n  target: flex_attention_backward"},
		{record.LevelError, "", "13:18:06", "model_agent.py:470 - Task failed\nTraceback (most recent call last):"},
		{record.LevelInfo, "", "23:00:15", "__main__ - *** Train ***"},
		{"", "", "00:00:00", "/usr/bin/ld: cannot find -lcurand: No such file or directory"},
		{record.LevelWarning, "", "23:00:16", "low disk"},
		{"", "", "00:00:00", "12:00:00 [NOTICE] not a level\n2025-03-26 23:00:17 - a b - INFO - a name has no space"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Level != w.lvl || g.Rank.String() != w.rank || g.Time.Format("15:04:05") != w.tm || g.Text != w.text {
			t.Errorf("record %d: %q %q %s %q, want %+v", i, g.Level, g.Rank.String(), g.Time.Format("15:04:05"), g.Text, w)
		}
	}
}
