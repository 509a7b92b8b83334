package stackdump

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/input"
)

func parseString(t *testing.T, s string) *Result {
	t.Helper()
	res, err := Parse(strings.NewReader(s), "t.txt")
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestFaulthandler314NamesCapAndTimeout(t *testing.T) {
	var b strings.Builder
	b.WriteString("Timeout (0:05:00)!\n")
	b.WriteString("Thread 0x00007f58c25be6c0 [sleeper] (most recent call first):\n")
	b.WriteString("  File \"/usr/lib/python3.14/threading.py\", line 359 in wait\n\n")
	b.WriteString("Current thread 0x00007f58c3a1f740 [python3] (most recent call first):\n")
	for i := 0; i < 100; i++ {
		b.WriteString("  File \"/usr/lib/python3.14/site-packages/torch/_inductor/ir.py\", line 6270 in __str__\n")
	}
	b.WriteString("  ...\n\n")
	b.WriteString("Current thread's C stack trace (most recent call first):\n")
	b.WriteString("  Binary file \"/usr/lib/libc.so.6\", at +0x3def0 [0x77b73226bef0]\n\n")
	b.WriteString("Extension modules: numpy, torch (total: 2)\n")
	res := parseString(t, b.String())
	if len(res.Processes) != 1 || len(res.Processes[0].Threads) != 2 {
		t.Fatalf("%+v", res.Processes)
	}
	th := res.Processes[0].Threads
	if th[0].Name != "sleeper" || th[0].Ident != "0x00007f58c25be6c0" || len(th[0].Frames) != 1 || th[0].Frames[0].Func != "wait" || th[0].Frames[0].Line != 359 {
		t.Errorf("named thread %+v", th[0])
	}
	if th[1].State != "current" || th[1].Name != "python3" || len(th[1].Frames) != 100 || !th[1].Truncated {
		t.Errorf("capped thread: state %q name %q frames %d truncated %v", th[1].State, th[1].Name, len(th[1].Frames), th[1].Truncated)
	}
	if len(res.Warnings) != 0 || res.Interleaved != nil {
		t.Errorf("warnings %v interleaved %v", res.Warnings, res.Interleaved)
	}
}

func TestFaulthandlerStackAndUnknowns(t *testing.T) {
	res := parseString(t, "Fatal Python error: Segmentation fault\n\nStack (most recent call first):\n  File ???, line ??? in ???\n  File \"x.py\", line 11 in killme\n")
	if len(res.Processes) != 1 {
		t.Fatalf("%+v", res)
	}
	th := res.Processes[0].Threads[0]
	if th.State != "current" || len(th.Frames) != 2 || th.Frames[0].File != "???" || th.Frames[1].Func != "killme" {
		t.Errorf("%+v", th)
	}
}

func TestPystack(t *testing.T) {
	in := `Traceback for thread 789 (python3) [Has the GIL,Garbage collecting] (most recent call last):
    (Python) File "/usr/lib/python3.12/threading.py", line 966, in _bootstrap
        self._bootstrap_inner()
    (C) File "/src/x.c", line 123, in some_symbol (libfoo.so)
    (Python) File "/site-packages/torch/_inductor/ir.py", line 6270, in ExternKernel.__str__
        return self.str_helper(lines)

Traceback for thread 790 (python3) [] (most recent call last):
    (Python) File "/usr/lib/python3.12/threading.py", line 359, in wait
`
	res := parseString(t, in)
	if len(res.Processes) != 1 || len(res.Processes[0].Threads) != 2 {
		t.Fatalf("%+v", res.Processes)
	}
	th := res.Processes[0].Threads[0]
	if th.TID != 789 || th.State != "active+gil" || len(th.Frames) != 3 {
		t.Fatalf("%+v", th)
	}
	// pystack prints most recent call last: turned innermost first.
	if th.Frames[0].Func != "ExternKernel.__str__" || th.Frames[1].Func != "some_symbol" || !th.Frames[1].Native || th.Frames[2].Func != "_bootstrap" {
		t.Errorf("frames %v", th.Frames)
	}
}

func TestPyspyLocalsSubprocessesHexIDs(t *testing.T) {
	in := `Process 100: python serve.py
Python v3.11.4 (/usr/bin/python3.11)

Thread 0x7ED3637AE700 (active): "ThreadPoolExecutor-275_6"
    work (serve.py:10)
        Arguments:
            n: 3
        Locals:
            acc: [1, 2]
    run (threading.py:975)

----------------------------------------------------------------------
Process 101: VLLM::Worker_TP3
Python v3.11.4 (/usr/bin/python3.11)
Parent Process 100: python serve.py

Thread 101 (idle): "MainThread"
    poll (zmq/sugar/poll.py:106)
`
	res := parseString(t, in)
	if len(res.Processes) != 2 {
		t.Fatalf("%d processes", len(res.Processes))
	}
	a, b := res.Processes[0], res.Processes[1]
	if a.PID != 100 || len(a.Threads) != 1 || a.Threads[0].Ident != "0x7ed3637ae700" || a.Threads[0].TID != 0x7ED3637AE700 || len(a.Threads[0].Frames) != 2 {
		t.Errorf("parent %+v", a)
	}
	if b.PID != 101 || b.PPID != 100 || b.Rank != "TP3" || b.RankInfo.Role != "Worker" || len(b.Threads) != 1 || !b.Threads[0].Main {
		t.Errorf("child %+v", b)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings %v", res.Warnings)
	}
}

func TestCxxFrameFromTheRight(t *testing.T) {
	f, ok := parsePyspyFrame("std::function<void (int)>::operator() (const int&) (libfoo.so)")
	if !ok || f.Func != "std::function<void (int)>::operator() (const int&)" || f.File != "libfoo.so" || !f.Native {
		t.Errorf("%+v %v", f, ok)
	}
	f, ok = parsePyspyFrame("forward (vllm/model.py:12)")
	if !ok || f.Func != "forward" || f.File != "vllm/model.py" || f.Line != 12 || f.Native {
		t.Errorf("%+v", f)
	}
	if _, ok := parsePyspyFrame("no location here"); ok {
		t.Error("a frame without location parsed")
	}
}

// Line-granular interleaving (each line carries its process prefix) is
// recoverable: one stream per prefix.
func TestLineInterleavedPrefixesAreSeparated(t *testing.T) {
	a := []string{"Process 11: VLLM::Worker_TP0", "Python v3.12.1 (/usr/bin/python3.12)", "", `Thread 11 (active): "MainThread"`, "    f (a.py:1)", "    g (a.py:2)"}
	b := []string{"Process 12: VLLM::Worker_TP1", "Python v3.12.1 (/usr/bin/python3.12)", "", `Thread 12 (idle): "MainThread"`, "    h (b.py:1)", "    g (a.py:2)"}
	var sb strings.Builder
	for i := range a {
		fmt.Fprintf(&sb, "(Worker_TP0 pid=11) %s\n", a[i])
		fmt.Fprintf(&sb, "(Worker_TP1 pid=12) %s\n", b[i])
	}
	res := parseString(t, sb.String())
	if len(res.Processes) != 2 {
		t.Fatalf("%d processes", len(res.Processes))
	}
	for i, p := range res.Processes {
		if p.PID != 11+i || p.Rank != fmt.Sprintf("TP%d", i) || len(p.Threads) != 1 || len(p.Threads[0].Frames) != 2 {
			t.Errorf("process %d: %+v", i, p)
		}
	}
}

func TestBringupJSONRoundTrip(t *testing.T) {
	in := `{"schema": "bringup.stacks/v1", "processes": [{"pid": 7, "rank": "TP2", "name": "VLLM::Worker_TP2", "python": "3.12.1", "source": "live",
  "threads": [{"tid": 7, "name": "MainThread", "frames": [{"func": "ExternKernel.__str__", "file": "torch/_inductor/ir.py", "line": 1}]}]}], "buckets": []}
`
	res := parseString(t, in)
	if len(res.Processes) != 1 || res.Processes[0].RankInfo.TP != 2 || res.Processes[0].Threads[0].Frames[0].Func != "ExternKernel.__str__" {
		t.Fatalf("%+v %v", res.Processes, res.Warnings)
	}
}

func TestGarbageNeverPanics(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	buf := make([]byte, 1<<16)
	r.Read(buf)
	// Random bytes are binary: refused whole, with what they are.
	res, err := Parse(bytes.NewReader(buf), "garbage.bin")
	if !errors.Is(err, input.ErrNotText) || err.Error() != "garbage.bin: binary data, not a stack dump" || len(res.Processes) != 0 {
		t.Fatalf("random bytes: %v, %d process(es)", err, len(res.Processes))
	}
	// The line reader still survives them, and random printable lines.
	for i := 0; i < len(buf); i++ {
		if i%2 == 1 {
			buf[i] = ' ' + buf[i]%95
		}
	}
	for _, b := range [][]byte{buf, bytes.Map(func(r rune) rune { return ' ' + r%95 }, buf)} {
		if res, err = parseLines(bufio.NewReader(bytes.NewReader(b)), "garbage.txt"); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range res.Processes {
		for _, th := range p.Threads {
			if len(th.Frames) > 0 {
				t.Errorf("frames out of random bytes: %+v", th)
			}
		}
	}
	// A line longer than MaxLine is cut with a warning, not an error.
	long := strings.Repeat("x", MaxLine+10) + "\nThread 1 (idle)\n"
	res = parseString(t, long)
	if len(res.Warnings) == 0 || len(res.Processes) != 1 {
		t.Errorf("long line: warnings %v processes %d", res.Warnings, len(res.Processes))
	}
}

func TestSniff(t *testing.T) {
	cases := map[string]int{
		"Process 1: python x.py\nPython v3.12.1 (/usr/bin/python3)\n": 80,
		"=== Rank 0: http://h:1/handler/dump_traceback? ===\n":        95,
		"just a log line\n": 0,
	}
	for in, want := range cases {
		if got := Sniff("x", []byte(in)); got != want {
			t.Errorf("Sniff(%q) = %d, want %d", in, got, want)
		}
	}
}

// A frame line wrapped by a terminal or a log shipper continues on the
// next physical line.
func TestWrappedFrameLineIsJoined(t *testing.T) {
	res := parseString(t, "Thread 5 (active): \"MainThread\"\n    a_rather_long_function_name (vllm/model_executor/la\nyers/linear.py:12)\n    caller (x.py:3)\n")
	if len(res.Processes) != 1 || len(res.Warnings) != 0 {
		t.Fatalf("%+v %v", res.Processes, res.Warnings)
	}
	fr := res.Processes[0].Threads[0].Frames
	if len(fr) != 2 || fr[0].File != "vllm/model_executor/layers/linear.py" || fr[0].Line != 12 || fr[1].Func != "caller" {
		t.Errorf("frames %v", fr)
	}
}

// The prefixes are cut by enginelog's peeler; these are the cuts and rank
// tags the stack parser relies on.
func TestHandParsedPrefixesAgreeWithTheirGrammar(t *testing.T) {
	var lp enginelog.LinePeeler
	for in, want := range map[string][2]any{
		"[2025-10-29 11:25:58 TP6] Pyspy dump": {26, "TP6"},
		"[2026-01-29 13:12:37 PP2 TP1] x":      {30, "PP2 TP1"},
		"[2026-04-27 02:36:06] Load weight":    {22, ""},
		"[2026-04-27 02:36:06,123 DP1 TP0]":    {33, "DP1 TP0"},
		"[2026-04-27 02:36] x":                 {0, ""},
		"[default3]:x":                         {0, ""},
	} {
		pl := lp.Peel(in)
		n, tags := 0, ""
		if pl.Logger == "sglang" {
			n, tags = len(in)-len(pl.Body), pl.Rank.Key()
		}
		if n != want[0].(int) || tags != want[1].(string) {
			t.Errorf("sglang header of %q = %d %q, want %v", in, n, tags, want)
		}
	}
	if pl := lp.Peel("[default3]:Thread 1 (idle)"); pl.Body != "Thread 1 (idle)" || pl.Rank.Global != 3 {
		t.Errorf("torchrun %q %d", pl.Body, pl.Rank.Global)
	}
	if pl := lp.Peel("[rank12]:x"); pl.Body != "x" || pl.Rank.Global != 12 {
		t.Errorf("rank prefix %q %d", pl.Body, pl.Rank.Global)
	}
	if pl := lp.Peel("[pod/x/y] z"); pl.Rank.Global != -1 || pl.Body != "z" {
		t.Errorf("kubectl taken as torchrun")
	}
}

func TestTorchrunKubectlPrefixesAndFileNameRank(t *testing.T) {
	in := "[pod/vllm-0/engine] [default3]:Thread 77 (active): \"MainThread\"\n[pod/vllm-0/engine] [default3]:    forward (vllm/model.py:10)\n"
	res := parseString(t, in)
	if len(res.Processes) != 1 || res.Processes[0].Rank != "rank3" || len(res.Processes[0].Threads[0].Frames) != 1 {
		t.Fatalf("%+v %v", res.Processes, res.Warnings)
	}
	res, err := Parse(strings.NewReader("Thread 5 (idle): \"MainThread\"\n    f (a.py:1)\n"), "/dumps/pyspy_rank6.txt")
	if err != nil || len(res.Processes) != 1 || res.Processes[0].Rank != "rank6" {
		t.Errorf("rank from file name: %+v", res.Processes)
	}
}

// A cut frame line followed by a log record is dropped, not glued to the
// record's text and mistaken for a frame.
func TestCutFrameBeforeLogRecord(t *testing.T) {
	res := parseString(t, "Thread 5 (idle): \"MainThread\"\n    f (a.py:1)\n    allgather_f\n[2025-10-29 11:25:58 TP3] Watchdog timeout (self.watchdog_timeout=300)\n")
	fr := res.Processes[0].Threads[0].Frames
	if len(fr) != 1 || len(res.Warnings) != 1 || res.Warnings[0].Line != 3 {
		t.Errorf("frames %v warnings %v", fr, res.Warnings)
	}
	if _, ok := parsePyspyFrame("allgather_fWatchdog timeout (self.watchdog_timeout=300)"); ok {
		t.Error("log text parsed as a frame")
	}
}

// damaged is a faulthandler dump as a copy taken mid-write or a paste
// gives it: the first thread's header is gone and the last line is cut in
// the middle.
func damaged(dump []byte) []byte {
	lines := strings.SplitAfter(strings.TrimRight(string(dump), "\n"), "\n")
	last := lines[len(lines)-1]
	lines[len(lines)-1] = last[:strings.Index(last, ", line")+4]
	return []byte(strings.Join(lines[1:], ""))
}

// A dump whose first thread has no header and whose last line is cut is
// read: the headerless frames are a thread of unknown id, the cut line is
// noted and its thread marked as missing its outer frames; it is not
// called interleaved. The same damage in the middle of an input (a line
// another line follows) still is.
func TestFaulthandlerHeaderlessAndCut(t *testing.T) {
	whole, err := os.ReadFile(filepath.Join("testdata", "faulthandler-two-threads.txt"))
	if err != nil {
		t.Fatal(err)
	}
	res := parseString(t, string(damaged(whole)))
	if res.Interleaved != nil {
		t.Fatalf("called interleaved: %v", res.Interleaved)
	}
	if len(res.Processes) != 1 || len(res.Processes[0].Threads) != 2 {
		t.Fatalf("processes %+v", res.Processes)
	}
	th := res.Processes[0].Threads
	if th[0].TID != 0 || th[0].Ident != "" || len(th[0].Frames) != 6 || th[0].Frames[2].Func != "worker_loop" || th[0].Frames[2].Line != 4 || th[0].Line != 1 {
		t.Errorf("headerless thread %+v", th[0])
	}
	if th[1].State != "current" || len(th[1].Frames) != 4 || !th[1].Truncated {
		t.Errorf("cut thread: state %q, %d frames, truncated %v", th[1].State, len(th[1].Frames), th[1].Truncated)
	}
	var notes []string
	for _, w := range res.Warnings {
		notes = append(notes, w.String())
	}
	got := strings.Join(notes, "\n")
	if !strings.Contains(got, "t.txt:1: faulthandler frames without a thread header") || !strings.Contains(got, `t.txt:13: last line cut off (input ends mid-line), dropped: "File \"/srv/app/gen.py\", li"`) || len(notes) != 2 {
		t.Errorf("warnings:\n%s", got)
	}
	// Trailing blank lines do not make the cut line a middle one.
	if res := parseString(t, string(damaged(whole))+"\n\n"); res.Interleaved != nil {
		t.Errorf("cut line before blank lines called interleaved")
	}
	// Cut lines with more dump after them are interleaving.
	mid := string(damaged(whole)) + "\n" + string(whole)
	if res := parseString(t, mid); res.Interleaved == nil || res.Interleaved.Line != 13 {
		t.Errorf("a damaged line in the middle: interleaved %v", res.Interleaved)
	}
}

// TestSniffScoresRank: the agreement between this reader's and the
// engine-log reader's scores. A file that is a dump, in each dialect,
// scores above what the engine-log reader gives it; a log with engine
// headers that holds only SGLang's watchdog line stays the engine log's.
func TestSniffScoresRank(t *testing.T) {
	dumps := map[string]string{
		"py-spy":       "Process 1: python x.py\nPython v3.12.1 (/usr/bin/python3)\n\nThread 0x7F01 (idle): \"MainThread\"\n    f (x.py:1)\n",
		"faulthandler": "Thread 0x00007f01 (most recent call first):\n  File \"x.py\", line 1 in f\n",
		"pystack":      "Traceback for thread 12 (python) [] (most recent call last):\n    (Python) File \"x.py\", line 1, in f\n",
		"debug-server": "=== Rank 0: http://h:1/handler/dump_traceback? ===\n",
		"fatal":        "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f01 (most recent call first):\n  File \"x.py\", line 1 in f\n",
		"watchdog":     "[2025-01-01 00:00:00 TP0] Pyspy dump for PID 12:\nThread 0x7F01 (idle): \"MainThread\"\n    f (x.py:1)\n",
	}
	for name, in := range dumps {
		ours, log := Sniff("x.txt", []byte(in)), enginelog.Sniff("x.txt", []byte(in))
		if ours <= log || ours <= enginelog.ScoreHoldsDump {
			t.Errorf("%s: stack-dump sniff %d, engine-log sniff %d: the dump's own parser must win", name, ours, log)
		}
	}
	in := "[2025-01-01 00:00:00 TP0] Scheduler hit an exception\n[2025-01-01 00:00:01 TP0] Pyspy dump for PID 12 failed\n"
	if ours, log := Sniff("x.log", []byte(in)), enginelog.Sniff("x.log", []byte(in)); ours == 0 || ours >= log || log != enginelog.ScoreEngine {
		t.Errorf("watchdog line in an engine log: stack-dump sniff %d, engine-log sniff %d: the engine log must win", ours, log)
	}
	for _, s := range []int{ScoreOwnJSON, ScoreDebugServer, ScorePyspyJSON, ScorePystack, ScoreDump, ScoreWatchdogDump, ScoreFatal} {
		if s <= enginelog.ScoreHoldsDump {
			t.Errorf("score %d does not beat enginelog.ScoreHoldsDump (%d)", s, enginelog.ScoreHoldsDump)
		}
	}
}
