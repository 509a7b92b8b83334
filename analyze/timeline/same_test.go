package timeline

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
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

var update = flag.Bool("update", false, "rewrite testdata/phases.golden.json from the logs present")

// goldenFile holds, per log of sameLogs (named by goldenName), the phases,
// gaps and drop count one Builder makes of it, recorded with -update and
// checked in: a change to the matcher or to apply that moves a phase
// shows as a diff of it.
const goldenFile = "testdata/phases.golden.json"

type golden struct {
	Phases  []goldenPhase `json:"phases"`
	Gaps    []Gap         `json:"gaps"`
	Dropped int           `json:"dropped"`
}

// goldenPhase is a phase as the golden file records it: the keys it was
// recorded with, every one written but end_line (record.Phase leaves out
// an empty rank and zero times, and names the source "path").
type goldenPhase struct {
	Rank    string    `json:"rank"`
	Name    string    `json:"name"`
	Detail  string    `json:"detail,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
	Status  string    `json:"status"`
	Source  string    `json:"source"`
	Line    int       `json:"line"`
	EndLine int       `json:"end_line,omitempty"`
	Open    bool      `json:"open,omitempty"` // never set by the timeline: a golden file holding it fails
}

func goldenPhases(ps []record.Phase) []goldenPhase {
	if ps == nil {
		return nil // null, as recorded
	}
	out := make([]goldenPhase, len(ps))
	for i, p := range ps {
		out[i] = goldenPhase{Rank: p.Rank, Name: p.Name, Detail: p.Detail, Start: p.Start, End: p.End, Seconds: p.Seconds,
			Status: p.Status, Source: p.Path, Line: p.Line, EndLine: p.EndLine, Open: p.Open}
	}
	return out
}

// goldenName names a log by its path below the repository, the shared
// corpus beside it as "shared/…".
func goldenName(p string) string {
	rel, err := filepath.Rel(testcorpus.Root(), p)
	if err != nil {
		rel = p
	}
	rel = filepath.ToSlash(rel)
	if r, ok := strings.CutPrefix(rel, "../"); ok {
		return r
	}
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "..") {
		return "analyze/timeline/" + rel
	}
	return rel
}

// records parses data as an engine log.
func records(t *testing.T, data []byte) []record.Record {
	var recs []record.Record
	if _, err := enginelog.Parse(bytes.NewReader(data), "f", func(r record.Record) { recs = append(recs, r) }); err != nil {
		t.Fatal(err)
	}
	return recs
}

// phasesOf is what one Builder fed every record once makes of data.
func phasesOf(t *testing.T, data []byte) golden {
	b := New()
	for _, rec := range records(t, data) {
		b.Add(rec)
	}
	p, g := b.Finish()
	return golden{goldenPhases(p), g, b.Dropped}
}

// feedSame feeds the records of data, twice over, to a Builder without
// memos (every marker matched afresh, every time normalized) and to one
// fed the way diagnose feeds it: a record with no marker with marks
// false, a record with one through FeedText with a text that is
// overwritten as soon as the call returns. Both must end with the same
// phases, gaps and drop count.
func feedSame(t *testing.T, data []byte) {
	recs := records(t, data)
	plain, fast := New(), New()
	plain.noMemo = true
	var buf []byte
	for pass := 0; pass < 2; pass++ { // the second time the memos know every line
		for i := range recs {
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
	p1, g1 := plain.Finish()
	p2, g2 := fast.Finish()
	if !reflect.DeepEqual(p1, p2) || !reflect.DeepEqual(g1, g2) || plain.Dropped != fast.Dropped {
		t.Fatalf("memos change the result:\nplain %d %+v\n      %+v\nfast  %d %+v\n      %+v", plain.Dropped, p1, g1, fast.Dropped, p2, g2)
	}
}

// TestGoldenPhases: every log of sameLogs gives the phases recorded in
// goldenFile (go test ./analyze/timeline -run TestGoldenPhases -update rewrites it; the
// entries of logs absent here, such as the shared corpus, are kept).
func TestGoldenPhases(t *testing.T) {
	want := map[string]json.RawMessage{}
	if data, err := os.ReadFile(goldenFile); err == nil {
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("%s: %v", goldenFile, err)
		}
	} else if !*update {
		t.Fatalf("%v (go test -run TestGoldenPhases -update records it)", err)
	}
	files := sameLogs()
	if len(files) == 0 {
		t.Skip("no logs")
	}
	checked := 0
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := goldenName(p)
		got, err := json.Marshal(phasesOf(t, data))
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			want[name] = got
			continue
		}
		w, ok := want[name]
		if !ok {
			t.Errorf("%s: no golden phases (go test -run TestGoldenPhases -update records them)", name)
			continue
		}
		var c bytes.Buffer
		if err := json.Compact(&c, w); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c.Bytes(), got) {
			t.Errorf("%s: phases differ from %s:\ngot  %s\nwant %s", name, goldenFile, got, c.Bytes())
		}
		checked++
	}
	if *update {
		out, err := json.MarshalIndent(want, "", "\t")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenFile, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if checked == 0 {
		t.Error("no log checked against the golden phases")
	}
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
