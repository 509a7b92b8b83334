package enginelog

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/internal/testcorpus"
	"github.com/bringup-tool/bringup/record"
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
		for len(data) > 0 {
			k := bytes.IndexByte(data, '\n')
			if k < 0 {
				k = len(data) - 1
			}
			l.Write(data[:k+1])
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
