package timeline

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"unsafe"

	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/litscan"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/benchlog"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// sameLogs are the logs FuzzFeedSame and TestFeedSame start from: the
// corpus engine logs, the examples and the parser's and analyzers' test
// logs.
func sameLogs() []string {
	var files []string
	root := testcorpus.Root()
	for _, g := range []string{
		filepath.Join(root, "..", "shared", "corpus", "engine-logs", "*.log"),
		filepath.Join(root, "examples", "*", "*.log"),
		filepath.Join("testdata", "*.log"),
		filepath.Join(root, "ingest", "enginelog", "testdata", "*.log"),
		filepath.Join(root, "analyze", "versions", "testdata", "*.log"),
	} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	return files
}

var markerSet = litscan.New(Markers())

// feedSame feeds the records of data, twice over, to the reference
// Builder (reference_test.go: the code before phases were numbered,
// every marker matched afresh, each record with a string of its own), to
// a Builder without memos, and to one fed the way diagnose feeds it: a
// record with no marker with marks false, a record with one through
// FeedText with a text that is overwritten as soon as the call returns.
// All three must end with the same phases, gaps and drop count.
func feedSame(t *testing.T, data []byte) {
	var recs []record.Record
	if _, err := enginelog.Parse(bytes.NewReader(data), "f", func(r record.Record) { recs = append(recs, r) }); err != nil {
		t.Fatal(err)
	}
	ref, plain, fast := newRef(), New(), New()
	plain.noMemo = true
	var buf []byte
	for pass := 0; pass < 2; pass++ { // the second time the memos know every line
		for i := range recs {
			ref.Feed(&recs[i], true)
			plain.Feed(&recs[i], true)
			rec := &recs[i]
			if !markerSet.Any(rec.Text) {
				fast.Feed(rec, false)
				continue
			}
			buf = append(buf[:0], rec.Text...)
			fast.FeedText(rec, unsafe.String(unsafe.SliceData(buf), len(buf)))
			for k := range buf {
				buf[k] = 0xA5
			}
		}
	}
	p0, g0 := ref.Finish()
	p1, g1 := plain.Finish()
	p2, g2 := fast.Finish()
	p0 = sortTies(p0)
	for _, c := range []struct {
		name string
		p    []Phase
		g    []Gap
		drop int
	}{{"plain", sortTies(p1), g1, plain.Dropped}, {"fast", sortTies(p2), g2, fast.Dropped}} {
		if !reflect.DeepEqual(p0, c.p) || !reflect.DeepEqual(g0, c.g) || ref.Dropped != c.drop {
			t.Fatalf("%s differs from the reference:\nref  %d %+v\n     %+v\n%-4s %d %+v\n     %+v", c.name, ref.Dropped, p0, g0, c.name, c.drop, c.p, c.g)
		}
	}
}

// sortTies orders phases of one rank that Finish lists at the same line
// by name. The reference closes a rank's open phases on a ready line in
// map order, so among those it has no order of its own.
func sortTies(ps []Phase) []Phase {
	for i := 0; i < len(ps); {
		j := i + 1
		for j < len(ps) && ps[j].Source == ps[i].Source && ps[j].Line == ps[i].Line && ps[j].Rank == ps[i].Rank {
			j++
		}
		g := ps[i:j]
		sort.SliceStable(g, func(a, c int) bool { return g[a].Name < g[c].Name })
		i = j
	}
	return ps
}

// TestFeedSame runs feedSame over every test log whole.
func TestFeedSame(t *testing.T) {
	files := sameLogs()
	if len(files) == 0 {
		t.Skip("no logs")
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p), func(t *testing.T) { feedSame(t, data) })
	}
	// 8 ranks fill the Builder's list of recent ones; 11 take turns
	// through it and the map.
	for _, tp := range []int{8, 11} {
		var gen bytes.Buffer
		if err := benchlog.WriteVaried(&gen, 2<<20, tp, true); err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("benchlog-tp%d", tp), func(t *testing.T) { feedSame(t, gen.Bytes()) })
	}
}

// FuzzFeedSame: feedSame on mutations of the test logs and of the
// generated serving log (tqdm bars, repeated markers on every rank).
func FuzzFeedSame(f *testing.F) {
	for _, p := range sameLogs() {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, tp := range []int{4, 10} {
		var gen bytes.Buffer
		if err := benchlog.WriteVaried(&gen, 16<<10, tp, true); err != nil {
			f.Fatal(err)
		}
		f.Add(gen.Bytes())
	}
	f.Add([]byte("INFO 11-29 00:00:32 [a.py:1] Capturing CUDA graphs (decode, FULL):  52%|#####     | 35/67 [00:08<00:07,  4.12it/s]\n" +
		"INFO 11-29 00:00:33 [a.py:1] Capturing CUDA graphs (decode, FULL): 100%|##########| 67/67 [00:11<00:00,  4.12it/s]\n" +
		"INFO 11-29 00:00:33 [a.py:1] Compiling a graph for compile range (1, 8192) takes 12.5 s\n" +
		"INFO 11-29 00:00:34 [a.py:1] Start compiling function x\nINFO 11-29 00:00:35 [a.py:1] init engine (profile) took 3 seconds\n"))
	f.Fuzz(feedSame)
}
