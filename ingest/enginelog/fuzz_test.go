package enginelog

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bringup-tool/bringup/litscan"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/benchlog"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// seedFiles are the real corpus logs (when ../shared is there) and the
// fixtures in testdata.
func seedFiles() []string {
	var files []string
	for _, sub := range []string{"engine-logs", "stackdumps"} {
		m, _ := filepath.Glob(filepath.Join(testcorpus.Root(), "..", "shared", "corpus", sub, "*"))
		files = append(files, m...)
	}
	m, _ := filepath.Glob(filepath.Join("testdata", "*.log"))
	return append(files, m...)
}

func FuzzParse(f *testing.F) {
	for _, p := range seedFiles() {
		if b, err := os.ReadFile(p); err == nil && filepath.Base(p) != "MANIFEST.md" {
			f.Add(b)
		}
	}
	f.Add([]byte("(Worker pid=1) \x1b[31mERROR\x1b[0m 01-02 03:04:05 [a.py:1]\r\n\x00\xff"))
	f.Add([]byte(`{"log":"\u001b[31mERROR\u0000 x\r\n","stream":"stderr"}` + "\n" + `time="t" level=error msg="a \"b\"\n c"` + "\n"))
	// The tools' own headers: ROCm's runtime log, Rust's tracing, pytest's
	// error lines, trtexec's, vLLM's header cut to its emitter.
	f.Add([]byte(":1:rocmemory.cpp :1043: Failed\n:3:hip_device_runtime.cpp   :652 : 1 us: x\n:9:a.cpp:\n" +
		"2023-10-16T06:54:28.059380Z ERROR text_generation_launcher: Shard 0 failed\n2023-10-16T06:54:28Z  INFO a: \nError: X\n" +
		"E   assert 1 == 0\nE           RuntimeError: x\n[05/25/2023-20:44:13] [E] Error[1]: y\n" +
		"(RayWorkerWrapper pid=1, ip=[2605:340::a7c]) worker_base.py:572] KeyError: 'k' [repeated 3x across cluster]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var recs []record.Record
		st, err := Parse(bytes.NewReader(data), "f.log", func(r record.Record) { recs = append(recs, r) })
		if err != nil {
			t.Fatal(err)
		}
		lines := int64(bytes.Count(data, []byte("\n")))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++
		}
		if st.Lines != lines || st.Bytes != int64(len(data)) || st.Records != int64(len(recs)) {
			t.Fatalf("stats %+v, want %d lines, %d bytes, %d records", st, lines, len(data), len(recs))
		}
		prev := 0
		for _, r := range recs {
			if r.Line <= prev || r.EndLine < r.Line || int64(r.EndLine) > lines {
				t.Fatalf("record lines %d-%d after %d (of %d)", r.Line, r.EndLine, prev, lines)
			}
			prev = r.EndLine
			if !utf8.ValidString(r.Text) {
				t.Fatalf("invalid UTF-8 in %q", r.Text)
			}
			if bytes.IndexByte([]byte(r.Text), 0x1b) >= 0 || bytes.IndexByte([]byte(r.Text), 0) >= 0 {
				t.Fatalf("escape or NUL left in %q", r.Text)
			}
		}
		_ = Sniff("f.log", data)
	})
}

// peelView is what peel decides about a line, for comparisons.
type peelView struct {
	Labels          []span
	Coll, Proc, Key int32
	Body, Emitter   span
	Hdr             hdrKind
	Level           record.Level
	Rank            record.Rank
	Time            string
	Repeat          int
	LabelStrs       []string
	EmitStr         string
	Valid           bool
	Mask            uint64
}

func viewOf(l *peeled) peelView {
	// labelStrs is a memo the first peel of a prefix run leaves unset (the
	// joiner then builds the same strings from the spans).
	strs := l.labelStrs
	if strs == nil {
		for _, s := range l.labels[:l.nlabels] {
			strs = append(strs, strings.ToValidUTF8(string(s.of(l.line)), "\uFFFD"))
		}
	}
	return peelView{Labels: append([]span(nil), l.labels[:l.nlabels]...), Coll: l.collEnd, Proc: l.procEnd, Key: l.keyEnd,
		Body: l.body, Emitter: l.emitter, Hdr: l.hdr, Level: l.level, Rank: l.rank, Time: l.tm.String(), Repeat: l.repeat,
		LabelStrs: strs, EmitStr: l.emitStr, Valid: l.validUTF8, Mask: l.mask}
}

// fuzzScan: literals of both kinds (window scan and byte search) in
// several groups, so masks are compared too, and literals holding digits
// (a body alike but for its numbers may differ in them).
var fuzzScan = litscan.NewGrouped(
	[]string{"Traceback (most recent call last)", `File "`, "==", "gpu_memory_utilization", "Model loading took", "x", "metrics.py", "python3.1", "collect2: fatal error"},
	[]uint64{1, 1, 2, 4, 8, 16, 32, 64, 128})

// FuzzPeelCache: a peeler that has seen the lines before (its prefix,
// header, time and emitter caches warm) peels every line exactly as a
// fresh one does.
func FuzzPeelCache(f *testing.F) {
	for _, p := range seedFiles() {
		if b, err := os.ReadFile(p); err == nil && filepath.Base(p) != "MANIFEST.md" {
			if len(b) > 64<<10 {
				b = b[:64<<10]
			}
			f.Add(b)
		}
	}
	f.Add([]byte("(EngineCore_DP0 pid=1) (Worker_TP1 pid=2) INFO 11-29 00:00:32 [metrics.py:455] x\n" +
		"(EngineCore_DP0 pid=1) (Worker_TP1 pid=2) INFO 11-29 00:00:32 [metrics.py:455]\n" +
		"(EngineCore_DP0 pid=1) (Worker_TP1 pid=2)(x) INFO 11-29 00:00:32 [metrics.py:455] y\n" +
		"(EngineCore_DP0 pid=1) (Worker_TP1 pid=2) [rank1]:INFO 11-29 00:00:32 [metrics.py:455]] z\n"))
	// Bodies alike but for their numbers, with and without a literal
	// holding a digit nearby.
	f.Add([]byte("(Worker_TP1 pid=2) INFO 11-29 00:00:32 [metrics.py:455] Avg prompt throughput: 1440.3 tokens/s, Running: 61 reqs\n" +
		"(Worker_TP2 pid=3) INFO 11-29 00:00:32 [metrics.py:455] Avg prompt throughput: 87.25 tokens/s, Running: 101 reqs\n" +
		"(Worker_TP1 pid=2) INFO 11-29 00:00:33 [x.py:1] /usr/lib/python3.9/site-packages/x.py gpu_memory_utilization=0.9\n" +
		"(Worker_TP2 pid=3) INFO 11-29 00:00:33 [x.py:1] /usr/lib/python3.12/site-packages/x.py gpu_memory_utilization=0.9\n" +
		"(Worker_TP2 pid=3) INFO 11-29 00:00:33 [x.py:1] /usr/lib/python3.1/site-packages/x.py gpu_memory_utilization=0.9\n" +
		"ld: collect2: fatal error: 3\nld: collect12: fatal error: 3\nld: collect2: fatal error: 3\n"))
	// A generated log whose seconds and numbers change as the ranks take
	// turns (new headers every second, alike but for their time), and
	// headers with a fraction that changes on every line.
	var varied bytes.Buffer
	if err := benchlog.WriteVaried(&varied, 24<<10, 4, true); err == nil {
		f.Add(varied.Bytes())
	}
	f.Add([]byte("(Worker_TP0 pid=2) DEBUG 01-02 03:04:05.678 [x.py:1] a\n(Worker_TP1 pid=3) DEBUG 01-02 03:04:05.912 [x.py:1] a\n" +
		"(Worker_TP0 pid=2) DEBUG 01-02 03:04:06.001 [x.py:1] a\n(Worker_TP0 pid=2) DEBUG 01-02 03:04:06.1 [x.py:1] a\n" +
		"(Worker_TP0 pid=2) DEBUG 01-02 23:59:59.999 [x.py:1] a\n(Worker_TP0 pid=2) DEBUG 01-02 24:00:00.000 [x.py:1] a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Twice over, so the second time the caches know every line.
		checkWarmCold(t, append(append(append([]byte(nil), data...), '\n'), data...))
	})
}

// checkWarmCold peels in's lines with one peeler (its caches warm from
// the lines before) and each line again with a new one: the same result.
func checkWarmCold(t *testing.T, in []byte) {
	t.Helper()
	warm := peeler{scan: fuzzScan}
	b := &block{data: in}
	warm.peelBlock(b, 0)
	for k := range b.lines {
		l := &b.lines[k]
		if l.skip != "" {
			continue
		}
		cold := peeler{scan: fuzzScan}
		c := peeled{n: l.n, line: l.line}
		cold.peel(&c)
		if w, f := viewOf(l), viewOf(&c); !reflect.DeepEqual(w, f) {
			t.Fatalf("line %d %q:\nwarm %+v\ncold %+v", l.n, l.line, w, f)
		}
	}
}

// FuzzScanLine: scanLine cuts where the first '\n' is, and its two claims
// hold (no byte under 0x20, no byte from 0x80 in the line); on a plain
// ASCII line it makes both.
func FuzzScanLine(f *testing.F) {
	f.Add([]byte("(Worker_TP1 pid=2) INFO 11-29 00:00:32 [metrics.py:455] Avg prompt throughput\nnext"))
	f.Add([]byte("a\tb\x1b[31mc\r\n\xff\x00"))
	f.Add([]byte("\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		line, rest, noCtl, ascii := scanLine(data)
		wantLine, wantRest := cutLine(data)
		if !bytes.Equal(line, wantLine) || !bytes.Equal(rest, wantRest) || len(rest) != len(wantRest) {
			t.Fatalf("scanLine(%q) = %q, %q; want %q, %q", data, line, rest, wantLine, wantRest)
		}
		ctl, high := false, false
		for _, c := range line {
			ctl = ctl || c < 0x20
			high = high || c >= 0x80
		}
		if noCtl && ctl || ascii && high {
			t.Fatalf("scanLine(%q): noCtl %v ascii %v, but the line has control %v high %v", data, noCtl, ascii, ctl, high)
		}
		if bytes.IndexByte(data, '\n') < 0 && len(data) > 0 && noCtl != !ctl {
			t.Fatalf("scanLine(%q): noCtl %v on a whole input with control %v", data, noCtl, ctl)
		}
		if len(line) == len(data) && !ctl && !high && !(noCtl && ascii) {
			t.Fatalf("scanLine(%q): a plain ASCII line not called so (noCtl %v, ascii %v)", data, noCtl, ascii)
		}
	})
}
