package rules

import (
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// The collector counts a line once however often it is reached (a log
// record, then the root of a traceback), in any order, until it has kept
// maxSeen lines; past that every new line counts. Its line watermark
// (collected.maxLine) skips the lookup only for lines past every kept one:
// the counts equal a plain set's.
func TestCollectorCountsEachLineOnce(t *testing.T) {
	r := &Rule{ID: "r", Title: "r", Severity: "error"}
	c := NewCollector()
	want := 0
	kept := map[seenKey]bool{}
	add := func(path string, line int, rank string) {
		k := seenKey{path, line, rank}
		if !kept[k] {
			want++
			if len(kept) < maxSeen {
				kept[k] = true
			}
		}
		c.Add(r, Subject{Evidence: record.Evidence{Path: path, Line: line, Rank: rank, Text: "x"}})
	}
	for l := 1; l <= 3*maxSeen; l += 3 { // past the bound, in order
		add("a.log", l, "TP0")
	}
	add("a.log", 3*maxSeen-2, "TP0")       // the last line kept, the watermark itself
	for l := 3 * maxSeen; l >= 0; l -= 7 { // again, backwards: kept ones are not counted twice
		add("a.log", l, "TP0")
		add("a.log", l, "TP1")
	}
	add("b.log", 5, "TP0")
	add("a.log", -1, "")
	add("a.log", -1, "")
	fs := c.Findings()
	if len(fs) != 1 || fs[0].Count != want {
		t.Fatalf("count %d, want %d", fs[0].Count, want)
	}
	if col := c.byRule["r"]; len(col.seen) != maxSeen {
		t.Fatalf("%d lines kept, bound %d", len(col.seen), maxSeen)
	}
	// Merged into a collector that has seen some of them, the same.
	m := NewCollector()
	m.Add(r, Subject{Evidence: record.Evidence{Path: "a.log", Line: 1, Rank: "TP0"}})
	m.Merge(c)
	if f := m.Findings()[0]; f.Count != want+1 {
		t.Fatalf("merged count %d, want %d", f.Count, want+1)
	}
}
