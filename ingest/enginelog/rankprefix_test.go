package enginelog

import (
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// PyTorch prefixes each line a rank prints to stderr with "[rank0]: ": the
// space is the prefix's. Left in the body, every line of a traceback read
// one column deeper and its exception line read as quoted source, so the
// traceback had no exception ("cut off before its exception line").
// torchrun's "[default0]:" adds no space, and a body that starts with "["
// right after "[rank0]:" keeps it.
func TestRankPrefixSpace(t *testing.T) {
	// Twice: the second line is peeled by the cached prefix "[rank0]:".
	log := "[rank0]:[W108 20:56:17.0 ProcessGroupNCCL.cpp:1250] Warning: y\n" +
		"[rank0]:[W108 20:56:17.0 ProcessGroupNCCL.cpp:1250] Warning: y\n" +
		"[rank0]: Traceback (most recent call last):\n" +
		"[rank0]:   File \"/x/a.py\", line 35, in <module>\n" +
		"[rank0]:     f()\n" +
		"[rank0]: ValueError: bad thing happened\n" +
		"[default1]: two spaces kept\n" +
		"[rank1]:[W108 20:56:17.1 ProcessGroupNCCL.cpp:1250] Warning: x\n"
	var recs []record.Record
	if _, err := Parse(strings.NewReader(log), "r.log", func(r record.Record) { recs = append(recs, r) }); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		text string
		rank int
	}{
		{"[W108 20:56:17.0 ProcessGroupNCCL.cpp:1250] Warning: y", 0},
		{"Traceback (most recent call last):\n  File \"/x/a.py\", line 35, in <module>\n    f()\nValueError: bad thing happened", 0},
		{" two spaces kept", 1},
		{"[W108 20:56:17.1 ProcessGroupNCCL.cpp:1250] Warning: x", 1},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	for i, w := range want {
		if !strings.HasSuffix(recs[i].Text, w.text) || recs[i].Rank.Global != w.rank {
			t.Errorf("record %d: text %q rank %+v, want %q rank %d", i, recs[i].Text, recs[i].Rank, w.text, w.rank)
		}
	}
	if recs[1].Text != want[1].text {
		t.Errorf("traceback %q, want %q (after a cached \"[rank0]:\")", recs[1].Text, want[1].text)
	}
}
