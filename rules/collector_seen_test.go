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

// A rule gives way (Unless) to another that matched every line it did as
// another subject (the log record holds the error's first line, the
// error's own subject all of it); a line only it matched keeps it.
func TestCollectorYieldsAcrossSubjects(t *testing.T) {
	general := &Rule{ID: "general", Title: "g", Severity: "error", Unless: []string{"specific"}}
	specific := &Rule{ID: "specific", Title: "s", Severity: "error"}
	at := func(line int) Subject {
		return Subject{Evidence: record.Evidence{Path: "a.log", Line: line, Rank: "TP0", Text: "x"}}
	}
	ids := func(c *Collector) []string {
		var out []string
		for _, f := range c.Findings() {
			out = append(out, f.Rule)
		}
		return out
	}
	c := NewCollector()
	c.Add(general, at(3))
	c.Add(specific, at(3))
	if got := ids(c); len(got) != 1 || got[0] != "specific" {
		t.Errorf("same line: %v, want [specific]", got)
	}
	c.Add(general, Subject{Evidence: record.Evidence{Path: "a.log", Line: 9, Rank: "TP0", Text: "other words"}})
	if got := ids(c); len(got) != 2 {
		t.Errorf("a line only the general rule matched: %v, want both", got)
	}
	c = NewCollector()
	c.Add(general, at(3))
	c.Add(general, Subject{Evidence: record.Evidence{Path: "a.log", Line: 4, Rank: "TP1", Text: "x"}})
	c.Add(specific, at(3))
	if got := ids(c); len(got) != 1 || got[0] != "specific" {
		t.Errorf("the same words at another line: %v, want [specific]", got)
	}
	c = NewCollector()
	c.Add(general, at(3))
	c.Add(&Rule{ID: "other", Title: "o", Severity: "error"}, at(3))
	if got := ids(c); len(got) != 2 {
		t.Errorf("a rule not named in Unless: %v, want both", got)
	}
}
