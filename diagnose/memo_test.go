package diagnose

import (
	"testing"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
)

// The rules memo serves a repeated text without a copy of the batch's
// bytes: memoed finds the entry by the borrowed bytes, and its text is
// the memo's own, unchanged when the bytes are overwritten. A text the
// memo does not keep (too long, no rule literal) is not found.
func TestMemoedSharesTheMemosText(t *testing.T) {
	set, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	m := matcher{set: set, res: &logResult{hits: rules.NewCollector()}, fields: map[string]string{},
		memo: map[string]map[string]*memoEntry{}}
	const text = "RuntimeError: CUDA error: out of memory"
	buf := []byte(text)
	if e := m.memoed("Worker", buf, gRules); e != nil {
		t.Fatal("an entry before the text was matched")
	}
	rec := record.Record{Source: "x.log", Line: 1, Rank: record.NoRank, Level: record.LevelError, Text: text}
	rec.Rank.Role = "Worker"
	want := m.hitsOf(&rec, nil)
	e := m.memoed("Worker", buf, gRules)
	if e == nil || e.text != text || len(e.hits) != len(want) {
		t.Fatalf("entry %+v after matching, want %d hits", e, len(want))
	}
	for i := range buf {
		buf[i] = '#'
	}
	if e.text != text {
		t.Fatalf("the memo's text changed with the batch's bytes: %q", e.text)
	}
	if m.memoed("Worker", []byte(text), gVersions) != nil || m.memoed("APIServer", []byte(text), gRules) != nil {
		t.Fatal("an entry for a record the rules do not read, or of another role")
	}
	if got := m.hitsOf(&rec, e); len(got) != len(want) {
		t.Fatalf("%d hits from the entry, want %d", len(got), len(want))
	}
}

// rankString is Rank.String, whatever the order of the ranks asked for
// (the last one, one kept, one past maxRanks), and keeps at most maxRanks.
func TestRankStringIsRankString(t *testing.T) {
	m := matcher{ranks: map[record.Rank]string{}}
	var ranks []record.Rank
	for i := 0; i < 2*maxRanks; i++ {
		r := record.NoRank
		r.Role, r.TP, r.PID = "Worker", i%8, 1000+i
		if i%3 == 0 {
			r.TP, r.Global = -1, i
		}
		ranks = append(ranks, r, r, record.NoRank)
		if len(ranks) > 8 {
			ranks = append(ranks, ranks[len(ranks)/2]) // one asked for before
		}
	}
	for round := 0; round < 2; round++ {
		for _, r := range ranks {
			if got, want := m.rankString(r), r.String(); got != want {
				t.Fatalf("rankString(%+v) = %q, want %q", r, got, want)
			}
		}
	}
	if len(m.ranks) > maxRanks {
		t.Fatalf("%d ranks kept, bound %d", len(m.ranks), maxRanks)
	}
}
