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

// A bracketed number before each line ("[80746] [rank0]:…", a viewer's
// line number) is a collector's prefix when a process prefix follows it:
// left in the body, every line of the paste read as one record with no
// rank. Without a process prefix after it, "[3] x" is the body's.
func TestNumberedLinePrefix(t *testing.T) {
	log := "[80746] [rank0]:[E321 02:07:08.4 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout\n" +
		"[80747] [rank4]:[E321 02:07:08.4 ProcessGroupNCCL.cpp:607] [Rank 4] Watchdog caught collective operation timeout\n" +
		"[12] (Worker_TP3 pid=77) ERROR 03-21 02:07:08 [a.py:1] boom\n" +
		"[3] not a prefix\n" +
		"[3] [note] nor this\n"
	var recs []record.Record
	if _, err := Parse(strings.NewReader(log), "r.log", func(r record.Record) { recs = append(recs, r) }); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		rank, labels, text string
	}{
		{"rank0", "[80746]|[rank0]:", "[E321 02:07:08.4 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout"},
		{"rank4", "[80747]|[rank4]:", "[E321 02:07:08.4 ProcessGroupNCCL.cpp:607] [Rank 4] Watchdog caught collective operation timeout"},
		{"TP3", "[12]|(Worker_TP3 pid=77)", "boom"},
		{"", "", "[3] not a prefix\n[3] [note] nor this"},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	for i, w := range want {
		if r := recs[i]; r.Rank.String() != w.rank || strings.Join(r.Labels, "|") != w.labels || r.Text != w.text {
			t.Errorf("record %d: rank %q labels %q text %q, want %q %q %q", i, r.Rank.String(), r.Labels, r.Text, w.rank, w.labels, w.text)
		}
	}
}

// Ray prints an IPv6 node address in brackets ("ip=[2605:340::a7c]"):
// still Ray's process prefix, so the traceback under it is one record of
// that process (verl#4656's came back as unprefixed text and "ok").
func TestRayPrefixIPv6(t *testing.T) {
	p := "(TaskRunner pid=8143, ip=[2605:340:cdb1:6400::a7c:2d2c]) "
	log := p + "Traceback (most recent call last):\n" +
		p + "  File \"/x/verl/models/mcore/util.py\", line 90, in preprocess_packed_seqs\n" +
		p + "    input_ids_rmpad[0:2] = d[0:2]\n" +
		p + "RuntimeError: The expanded size of the tensor (2) must match the existing size (0)\n" +
		"(TaskRunner pid=8143, ip=[2605:340:zz]) not an address\n"
	recs, _ := parseBytes(t, []byte(log))
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2: %+v", len(recs), recs)
	}
	if r := recs[0]; r.Rank.PID != 8143 || r.Rank.Role != "TaskRunner" || !strings.HasPrefix(r.Text, "Traceback") || !strings.HasSuffix(r.Text, "existing size (0)") {
		t.Errorf("record 0: %+v", r)
	}
	if r := recs[1]; r.Rank.PID == 8143 || !strings.HasPrefix(r.Text, "(TaskRunner") {
		t.Errorf("a bracket that is no address is not a prefix: %+v", r)
	}
}
