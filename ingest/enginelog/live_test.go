package enginelog

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// Feeding a log line by line through Live gives the same records as Parse.
func TestLiveMatchesParse(t *testing.T) {
	dir := testcorpus.Dir(t, "engine-logs")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		data, err := os.ReadFile(dir + "/" + e.Name())
		if err != nil || len(data) > 4<<20 {
			continue
		}
		var want, got []record.Record
		if _, err := Parse(bytes.NewReader(data), "x", func(r record.Record) { want = append(want, r) }); err != nil {
			t.Fatal(err)
		}
		l := NewLive("x", func(r record.Record) { got = append(got, r) })
		var buf []byte
		for len(data) > 0 {
			k := bytes.IndexByte(data, '\n')
			if k < 0 {
				k = len(data) - 1
			}
			// Through one buffer, overwritten after each Write: the caller
			// may reuse it, so a record held open must not point into it.
			buf = append(buf[:0], data[:k+1]...)
			l.Write(buf)
			for i := range buf {
				buf[i] = 0xA5
			}
			data = data[k+1:]
		}
		l.Flush()
		if len(got) != len(want) {
			t.Errorf("%s: live gave %d records, Parse %d", e.Name(), len(got), len(want))
			continue
		}
		for i := range want {
			if got[i].Text != want[i].Text || got[i].Line != want[i].Line || got[i].Rank != want[i].Rank {
				t.Errorf("%s: record %d differs:\nlive  %+v\nparse %+v", e.Name(), i, got[i], want[i])
				break
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no corpus log compared")
	}
}

// Skipped lines keep the later records' line numbers and end the open
// record: the line after a skip starts a record of its own even when it
// would have continued the one before.
func TestLiveSkip(t *testing.T) {
	var got []record.Record
	l := NewLive("x", func(r record.Record) { got = append(got, r) })
	l.Write([]byte("INFO 11-29 23:00:00 [a.py:1] first\n"))
	l.Skip(2)
	l.Skip(-1) // ignored
	l.Write([]byte("INFO 11-29 23:00:00 [a.py:1] same header, would continue\nERROR 11-29 23:00:01 [b.py:2] boom\n"))
	l.Flush()
	want := []struct {
		line int
		text string
	}{{1, "first"}, {4, "same header, would continue"}, {5, "boom"}}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Line != w.line || got[i].EndLine != w.line || got[i].Text != w.text {
			t.Errorf("record %d: line %d-%d %q, want line %d %q", i, got[i].Line, got[i].EndLine, got[i].Text, w.line, w.text)
		}
	}
}
