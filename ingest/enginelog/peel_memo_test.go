package enginelog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"bytes"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
	"testing"

	"github.com/bringup-tool/bringup/testsupport/benchlog"
)

// TestPeelMemoVaried: over a generated log whose timestamps and numbers
// change (new headers every second, the ranks taking turns), peeling
// with warm memos equals peeling each line cold.
func TestPeelMemoVaried(t *testing.T) {
	var buf bytes.Buffer
	if err := benchlog.WriteVaried(&buf, 2<<20, 8, true); err != nil {
		t.Fatal(err)
	}
	checkWarmCold(t, buf.Bytes())
}

// TestRetime: a header stored, then one like it but for its timestamp.
// retime takes it only when vllmHeader would parse it the same way but
// for the time, and the peel then equals a cold one.
func TestRetime(t *testing.T) {
	const pre = "(EngineCore_DP0 pid=1) (Worker_TP1 pid=2) "
	const first = pre + "INFO 11-29 00:00:32 [metrics.py:455] Avg prompt throughput: 1.5 tokens/s"
	for _, c := range []struct {
		line string
		ok   bool
	}{
		{pre + "INFO 11-29 00:00:33 [metrics.py:455] Avg prompt throughput: 1.5 tokens/s", true},
		{pre + "INFO 12-31 23:59:59 [metrics.py:455] x", true},
		{pre + "INFO 11-29 00:00:60 [metrics.py:455] leap second", true},
		{pre + "INFO 11-29 24:00:00 [metrics.py:455] no such hour", false},
		{pre + "INFO 11-29 00:60:00 [metrics.py:455] no such minute", false},
		{pre + "INFO 11-29 00:00:61 [metrics.py:455] no such second", false},
		{pre + "INFO 13-29 00:00:32 [metrics.py:455] no such month", false},
		{pre + "INFO 11-32 00:00:32 [metrics.py:455] no such day", false},
		{pre + "INFO 00-29 00:00:32 [metrics.py:455] month 0", false},
		{pre + "INFO 11-29 00-00:32 [metrics.py:455] bad separator", false},
		{pre + "INFO 11-29 00:00:3x [metrics.py:455] letter", false},
		{pre + "INFO 11-29 00:00:32.5 [metrics.py:455] fraction", false},
		{pre + "INFO 11-29 00:00:32 [metrics.py:456] other emitter line", false},
		{pre + "WARNING 11-29 00:00:32 [metrics.py:455] other level", false},
		{pre + "INFO 11-29 00:00:32 [metrics.py:455]", false},
	} {
		lines := [][]byte{[]byte(first), []byte(c.line)}
		checkWarmCold(t, bytes.Join(lines, []byte{'\n'}))
		// The first line leaves one entry; call retime on it directly.
		var p peeler
		l := peeled{line: []byte(first)}
		p.peel(&l)
		at := p.hdrs.Find(func(*hdrEntry) bool { return true })
		if p.hdrs.Len() != 1 || at == nil || at.key == nil {
			t.Fatalf("not one header entry after %q", first)
		}
		l2 := peeled{line: []byte(c.line)}
		i := len(pre)
		j, ok := p.retime(&l2, l2.line, i, at)
		if ok != c.ok {
			t.Fatalf("retime(%q) ok %v, want %v", c.line, ok, c.ok)
		}
		if !ok {
			continue
		}
		var q peeler
		want := peeled{line: []byte(c.line)}
		q.peel(&want)
		if j != int(want.body.a) || l2.hdr != want.hdr || l2.level != want.level || l2.emitter != want.emitter ||
			l2.emitStr != want.emitStr || l2.keyEnd != want.keyEnd || !l2.tm.Equal(want.tm) || l2.tm.String() != want.tm.String() {
			t.Fatalf("retime(%q) = %d %+v, want %+v", c.line, j, l2, want)
		}
	}
}

// TestRetimeFraction: headers with milliseconds, as some vLLM builds
// print them, changing every line.
func TestRetimeFraction(t *testing.T) {
	var lines [][]byte
	for _, ts := range []string{"00:00:32.125", "00:00:32.250", "00:00:33.000", "00:00:33.1", "00:00:33.12", "00:00:33.999", "23:59:59.999", "24:00:00.000"} {
		for _, pre := range []string{"(Worker_TP0 pid=2) ", "(Worker_TP1 pid=3) ", ""} {
			lines = append(lines, []byte(pre+"DEBUG 01-02 "+ts+" [x.py:1] body"))
		}
	}
	checkWarmCold(t, bytes.Join(lines, []byte{'\n'}))
}

// FuzzPeelRetime: a peeler that has peeled a and then b peels b as a
// fresh one does. Seeds are pairs of headers alike but for their time,
// so mutations reach the timestamp memo's edges.
func FuzzPeelRetime(f *testing.F) {
	pairs := [][2]string{
		{"(EngineCore_DP0 pid=1) (Worker_TP1 pid=2) INFO 11-29 00:00:32 [metrics.py:455] x", "(EngineCore_DP0 pid=1) (Worker_TP1 pid=2) INFO 11-29 00:00:33 [metrics.py:455] y"},
		{"INFO 11-29 00:00:32 [metrics.py:455] x", "INFO 11-29 00:00:33 [metrics.py:455] x"},
		{"DEBUG 01-02 03:04:05.678 [compilation/backends.py:124] a", "DEBUG 01-02 03:04:06.012 [compilation/backends.py:124] b"},
		{"WARNING  12-31 23:59:59 worker.py:241] a", "WARNING  01-01 00:00:00 worker.py:241] a"},
		{"ERROR 12-17 13:32:44 [multiproc_executor.py:815] Traceback", "ERROR 12-17 13:32:45 [multiproc_executor.py:815]"},
		{"[rank0]:INFO 11-29 00:00:32 [a.py:1] x", "[rank0]:INFO 11-29 00:00:39 [a.py:1] x"},
		{"I1129 00:00:32.123456 139 torch/x.py:789] a", "I1129 00:00:33.123456 139 torch/x.py:789] a"},
	}
	var buf bytes.Buffer
	if err := benchlog.WriteVaried(&buf, 64<<10, 4, true); err == nil {
		ls := bytes.Split(buf.Bytes(), []byte("\n"))
		for k := 0; k+16 < len(ls) && k < 400; k += 37 {
			pairs = append(pairs, [2]string{string(ls[k]), string(ls[k+16])})
		}
	}
	for _, p := range pairs {
		f.Add([]byte(p[0]), []byte(p[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if bytes.IndexByte(a, '\n') >= 0 || bytes.IndexByte(b, '\n') >= 0 {
			return
		}
		// a twice so its entry is hit as well as stored, then b, a, b.
		checkWarmCold(t, bytes.Join([][]byte{a, a, b, a, b}, []byte{'\n'}))
	})
}

// TestMaskMemoCrashLoop: the corpus logs repeated, as a crash loop
// prints them, peeled with warm memos equal each line peeled cold; from
// the second round on the whole-body memo predicts every body it keeps
// (the follow chain), and a body it mispredicts is still looked up whole.
func TestMaskMemoCrashLoop(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(testcorpus.Dir(t, "engine-logs"), "*.log"))
	if len(paths) == 0 {
		t.Fatal("no corpus engine logs")
	}
	var one []byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		one = append(one, data...)
		if len(one) > 0 && one[len(one)-1] != '\n' {
			one = append(one, '\n')
		}
	}
	loop := bytes.Repeat(one, 3)
	checkWarmCold(t, loop)

	// Count the bodies the chain predicts in the third round: all that
	// the memo keeps and the ring does not catch.
	p := peeler{scan: fuzzScan}
	b := &block{data: bytes.Repeat(one, 2)}
	p.peelBlock(b, 0)
	hits, misses := 0, 0
	for data := one; len(data) > 0; {
		var l peeled
		line, rest, noCtl, ascii := scanLine(data)
		data = rest
		l.line, l.noCtl, l.ascii = line, noCtl, ascii
		before := p.prevKnown
		p.peel(&l)
		body := l.body.of(l.line)
		if len(body) == 0 || len(body) > maxMemoBody || before == nil {
			continue
		}
		if before.follow != nil && before.follow.body == string(body) {
			hits++
		} else {
			misses++
		}
	}
	if hits == 0 || misses > hits/10 {
		t.Fatalf("third round: the follow chain predicted %d bodies, missed %d", hits, misses)
	}
}

// TestMaskMemoFull: once the whole-body memo holds maxMemoBodies, a new
// body is neither kept nor linked from the last one (a run of bodies
// that never repeat must not grow a chain), and the masks stay right.
func TestMaskMemoFull(t *testing.T) {
	p := peeler{scan: fuzzScan}
	p.rings()
	for k := 0; k < maxMemoBodies+50; k++ {
		// Bodies that differ in letters, not only numbers (the ring
		// would take those).
		body := []byte(fmt.Sprintf("unique body %s: Traceback (most recent call last)", strings.Map(func(r rune) rune { return 'a' + r - '0' }, fmt.Sprint(k))))
		if got, want := p.maskOf(body), p.fresh(string(body), body); got != want {
			t.Fatalf("body %d: mask %x, want %x", k, got, want)
		}
	}
	if len(p.maskMap) != maxMemoBodies {
		t.Fatalf("%d bodies kept, want %d", len(p.maskMap), maxMemoBodies)
	}
	if p.prevKnown != nil {
		t.Fatalf("an unkept body is the chain's last: %q", p.prevKnown.body)
	}
	for key, k := range p.maskMap {
		if f := k.follow; f != nil && p.maskMap[f.body] != f {
			t.Fatalf("kept body %q links to an unkept one %q", key, f.body)
		}
	}
	p.masks.Find(func(e *maskEntry) bool {
		if e.known != nil && p.maskMap[e.known.body] != e.known {
			t.Fatalf("ring entry %q points to an unkept body", e.body)
		}
		return false
	})
}
