package stacks

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/ingest/stackdump"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/report"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/stacks"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func seed004(t *testing.T) *stacks.Analysis {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(testcorpus.Root(), "stacks", "testdata", "seed004-snap1", "worker_TP*.txt"))
	if len(files) != 8 {
		t.Fatalf("fixture: %v", files)
	}
	var procs []*record.Process
	for _, f := range files {
		res, err := stackdump.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, res.Processes...)
	}
	set, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return stacks.Analyze(procs, stacks.Options{Level: stacks.DefaultLevel, Conclude: stacks.Conclude(set, nil)})
}

func TestJSONSchema(t *testing.T) {
	var buf bytes.Buffer
	if err := JSON(&buf, seed004(t)); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema    string `json:"schema"`
		Verdict   string `json:"verdict"`
		Processes []struct {
			PID     int    `json:"pid"`
			Rank    string `json:"rank"`
			Source  string `json:"source"`
			Python  string `json:"python"`
			Threads []struct {
				TID    uint64 `json:"tid"`
				Frames []struct {
					Func string `json:"func"`
					File string `json:"file"`
					Line int    `json:"line"`
				} `json:"frames"`
			} `json:"threads"`
		} `json:"processes"`
		Buckets []struct {
			Count   int      `json:"count"`
			Ranks   []string `json:"ranks"`
			RankSet string   `json:"rank_set"`
			PIDs    []int    `json:"pids"`
			Threads []any    `json:"threads"`
			Frames  []struct {
				Func      string `json:"func"`
				Repeat    int    `json:"repeat"`
				RepeatMax int    `json:"repeat_max"`
			} `json:"frames"`
		} `json:"buckets"`
		Shared struct {
			RootPath []any `json:"root_path"`
			LeafPath []any `json:"leaf_path"`
		} `json:"shared"`
		Outliers []any `json:"outliers"`
		Findings []struct {
			Rule  string   `json:"rule"`
			Ranks []string `json:"ranks"`
		} `json:"findings"`
		Warnings []any `json:"warnings"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "bringup.stacks/v1" || len(doc.Processes) != 8 || doc.Processes[3].Rank != "TP3" || doc.Processes[0].Source != "file" || doc.Processes[0].Python != "3.12.11" {
		t.Errorf("header/processes: %q %d %+v", doc.Schema, len(doc.Processes), doc.Processes[0])
	}
	b := doc.Buckets[0]
	if b.Count != 8 || b.RankSet != "ranks 0-7 (8/8)" || len(b.Ranks) != 8 || len(b.PIDs) != 8 || len(b.Threads) != 8 {
		t.Errorf("bucket %+v", b)
	}
	if b.Frames[0].Func != "__str__" || b.Frames[0].Repeat != 72 || b.Frames[0].RepeatMax != 120 {
		t.Errorf("collapsed frame %+v", b.Frames[0])
	}
	if len(doc.Findings) == 0 || doc.Findings[0].Rule != "inductor-implicit-fallback-operator-str" || len(doc.Findings[0].Ranks) != 8 {
		t.Errorf("findings %+v", doc.Findings)
	}
	if doc.Outliers == nil || doc.Warnings == nil || doc.Shared.RootPath == nil {
		t.Error("empty lists must be [] not null")
	}
}

func TestCollapsedRootFirst(t *testing.T) {
	var buf bytes.Buffer
	if err := Collapsed(&buf, seed004(t), false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// Eight main threads, each at its own depth; idle threads left out.
	if len(lines) != 8 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "<module> (<string>:1);spawn_main (multiprocessing/spawn.py:122);") || !strings.HasSuffix(l, " 1") {
			t.Errorf("line %q", l[:min(len(l), 120)])
		}
		if n := strings.Count(l, "__str__ (torch/_inductor/ir.py:"); n < 72 {
			t.Errorf("recursion not kept at its depth: %d frames", n)
		}
	}
	buf.Reset()
	Collapsed(&buf, seed004(t), true)
	if n := strings.Count(buf.String(), "\n"); n != 9 {
		t.Errorf("with idle threads: %d lines, want 9 (8 mains + the pool waits)", n)
	}
}

func TestTextVerdictFirstAndColour(t *testing.T) {
	a := seed004(t)
	var plain, colour bytes.Buffer
	if err := Text(&plain, a, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := plain.String()
	if !strings.HasPrefix(out, "verdict: inductor-implicit-fallback-operator-str") {
		t.Errorf("verdict not first:\n%s", out[:200])
	}
	for _, want := range []string{"#1 · ranks 0-7 (8/8) · 8 thread(s) · MainThread", "↻ ×72–120 __str__", "torch/_inductor/ir.py:*", "ranks 0-7 (8/8)", "2 idle auxiliary bucket(s), 16 thread(s) folded"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q", want)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour escape without a terminal")
	}
	Text(&colour, a, TextOptions{Style: report.Style{Color: true}})
	if !strings.Contains(colour.String(), "\x1b[") {
		t.Error("no colour when asked")
	}
}

// Dumps of unrelated programs (py-spy dumps from issues) share no root
// frame: the text says where each starts instead of "diverge" from a root
// path that is not there, and "no frame shared" when no leaf is shared
// either (it was a "shared by all" heading over nothing).
func TestTextNothingShared(t *testing.T) {
	for _, c := range []struct {
		files []string
		head  string
	}{
		{[]string{"transformers-pr-17308-torchdynamo-pyspy.txt", "accelerate-issue-3104-deepspeed-pyspy.txt"}, "shared by all 2 primary threads:"},
		{[]string{"transformers-pr-17308-torchdynamo-pyspy.txt", "pytorch-pr-174808-debugserver-stacks.txt"}, "no frame shared by all 2 primary threads:"},
	} {
		var procs []*record.Process
		for _, name := range c.files {
			res, err := stackdump.ParseFile(testcorpus.File(t, "stackdumps", name))
			if err != nil {
				t.Fatal(err)
			}
			procs = append(procs, res.Processes...)
		}
		a := stacks.Analyze(procs, stacks.Options{Level: stacks.DefaultLevel})
		if len(a.Shared.RootPath) != 0 || len(a.Shared.Diverge) == 0 {
			t.Fatalf("fixture %v: shared %+v", c.files, a.Shared)
		}
		var buf bytes.Buffer
		if err := Text(&buf, a, TextOptions{}); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if strings.Contains(out, "diverge:") || !strings.Contains(out, "\n"+c.head+"\n") || !strings.Contains(out, "  starts: pid 530235 in ") ||
			!strings.Contains(out, "#1 · pid 530235 · ") {
			t.Errorf("%v: want %q and where pid 530235 starts, no diverge:\n%s", c.files, c.head, out)
		}
	}
}

// Two unranked pids with the same whole stack: "pids A,B" in the bucket
// heading, and the leaf path is not printed as the root path backwards.
func TestTextSameWholeStack(t *testing.T) {
	dump := testcorpus.File(t, "stackdumps", "transformers-pr-17308-torchdynamo-pyspy.txt")
	var procs []*record.Process
	for _, pid := range []int{101, 102} {
		res, err := stackdump.ParseFile(dump)
		if err != nil {
			t.Fatal(err)
		}
		res.Processes[0].PID = pid
		procs = append(procs, res.Processes[0])
	}
	a := stacks.Analyze(procs, stacks.Options{Level: stacks.DefaultLevel})
	var buf bytes.Buffer
	if err := Text(&buf, a, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "#1 · pids 101,102 · 2 thread(s)") {
		t.Errorf("bucket heading:\n%s", out)
	}
	if !regexp.MustCompile(`root path \(\d+ frames, outermost first\)`).MatchString(out) || strings.Contains(out, "leaf path (") {
		t.Errorf("want the root path only:\n%s", out)
	}
}

// A live process read by a command (the py-spy fallback) is named with
// that command under the header; one read by bringup's own reader ("pid
// N"), or a live capture read back from saved JSON without one, is not.
func TestTextSaysWhichCommandCaptured(t *testing.T) {
	frames := record.Stack{{Func: "spin", File: "<string>", Line: 3}}
	procs := []*record.Process{
		{PID: 11, Source: record.SourceLive, Path: "py-spy dump --nonblocking --pid 11", CapturedBy: "py-spy dump --nonblocking --pid 11", RankInfo: record.NoRank, Threads: []record.Thread{{TID: 11, Main: true, Frames: frames}}},
		{PID: 12, Source: record.SourceLive, Path: "pid 12", RankInfo: record.NoRank, Threads: []record.Thread{{TID: 12, Main: true, Frames: frames}}},
		{PID: 13, Source: record.SourceLive, Path: "saved.json", RankInfo: record.NoRank, Threads: []record.Thread{{TID: 13, Main: true, Frames: frames}}},
	}
	var buf bytes.Buffer
	if err := Text(&buf, stacks.Analyze(procs, stacks.Options{Level: stacks.DefaultLevel}), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "pid 11 captured by py-spy dump --nonblocking --pid 11 (bringup's own reader could not read it)") {
		t.Errorf("the py-spy capture is not named:\n%s", out)
	}
	if strings.Contains(out, "pid 12 captured") || strings.Contains(out, "pid 13 captured") {
		t.Errorf("a process read directly or from a file is named as captured by a command:\n%s", out)
	}
}

// pyspy reads a py-spy dump of one process (pid 3) whose main thread has
// the given frames, innermost first ("func (file:line)" lines).
func pyspy(t *testing.T, frames ...string) []*record.Process {
	t.Helper()
	text := "Process 3: python3 rec.py\nPython v3.12.1 (/usr/bin/python3.12)\n\nThread 3 (idle): \"MainThread\"\n"
	for _, f := range frames {
		text += "    " + f + "\n"
	}
	res, err := stackdump.Parse(strings.NewReader(text), "dump.txt")
	if err != nil || len(res.Processes) != 1 {
		t.Fatalf("dump: %v %+v", err, res)
	}
	return res.Processes
}

// times is frame f n times.
func times(n int, f string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = f
	}
	return out
}

func textOf(t *testing.T, a *stacks.Analysis) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Text(&buf, a, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// At the default level the innermost frames inside a recursion (the leaf
// a person looks for) are printed above it, and an irregular recursion
// folded into one region lists each of its functions with line and count.
func TestTextLeafAndRegionMembers(t *testing.T) {
	rec := append([]string{"wait (/usr/lib/python3.12/threading.py:655)", "leaf (/srv/rec.py:20)"}, times(21, "__str__ (/srv/rec.py:16)")...)
	rec = append(rec, "<module> (/srv/rec.py:40)")
	out := textOf(t, stacks.Analyze(pyspy(t, rec...), stacks.Options{Level: stacks.DefaultLevel}))
	leaf := regexp.MustCompile(`(?m)^ +wait +threading\.py:655\n +leaf +/srv/rec\.py:20\n +↻ ×21 +__str__ +/srv/rec\.py:16\n`)
	if !leaf.MatchString(out) {
		t.Errorf("leaf frames not above the recursion:\n%s", out)
	}
	ir := "/x/site-packages/torch/_inductor/ir.py"
	irr := append([]string{"str_helper (" + ir + ":553)"}, times(6, "__str__ ("+ir+":6270)")...)
	irr = append(irr, "inner_fn_str ("+ir+":700)")
	irr = append(irr, times(4, "__str__ ("+ir+":6270)")...)
	irr = append(irr, "lower ("+ir+":90)", "<module> (/srv/rec.py:40)")
	out = textOf(t, stacks.Analyze(pyspy(t, irr...), stacks.Options{Level: stacks.DefaultLevel}))
	region := regexp.MustCompile(`(?m)^ +str_helper +torch/_inductor/ir\.py:553\n +↻ 11 frames of recursion in torch/_inductor/ir\.py, through:\n +↻ ×10 +__str__ +torch/_inductor/ir\.py:6270\n +│ ×1 +inner_fn_str +torch/_inductor/ir\.py:700\n +lower +torch/_inductor/ir\.py:90\n`)
	if !region.MatchString(out) {
		t.Errorf("region members not listed:\n%s", out)
	}
}

// A running thread whose read never settled is busy above its innermost
// settled frame; helper processes are named in their bucket's header and
// on a helpers line, never counted as workers; the JSON carries the
// headline's data.
func TestTextBusyRolesAndWhere(t *testing.T) {
	spin := record.Stack{{Func: "spin", File: "/srv/busy.py", Line: 36}, {Func: "main", File: "/srv/busy.py", Line: 50}, {Func: "<module>", File: "/srv/busy.py", Line: 60}}
	tracker := record.Stack{{Func: "main", File: "/usr/lib/python3.12/multiprocessing/resource_tracker.py", Line: 239}, {Func: "<module>", File: "<string>", Line: 1}}
	procs := []*record.Process{
		{PID: 10, Source: record.SourceLive, RankInfo: record.NoRank, Name: "python3 busy.py", Threads: []record.Thread{{TID: 10, Main: true, State: "active", Partial: true, Frames: spin}}},
		{PID: 11, Source: record.SourceLive, RankInfo: record.NoRank, PPID: 10, Name: "python3 -c from multiprocessing.resource_tracker import main;main(5)",
			Threads: []record.Thread{{TID: 11, Main: true, State: "idle", Frames: tracker}}},
	}
	a := stacks.Analyze(procs, stacks.Options{Level: stacks.DefaultLevel})
	out := textOf(t, a)
	for _, want := range []string{
		"busy: frames above spin kept moving while read",
		"helpers: multiprocessing resource tracker pid 11 (not counted among the workers)",
		"#2 · pid 11 · multiprocessing resource tracker · 1 thread(s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "outer frames only") || strings.Contains(out, "2/2 workers") {
		t.Errorf("old wording or the helper counted:\n%s", out)
	}
	var buf bytes.Buffer
	if err := JSON(&buf, a); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Where struct {
			Workers int    `json:"workers"`
			Text    string `json:"text"`
			Motion  string `json:"motion"`
			Helpers []struct {
				Role string `json:"role"`
				PIDs []int  `json:"pids"`
			} `json:"helpers"`
		} `json:"where"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Where.Workers != 1 || doc.Where.Motion != "busy" || doc.Where.Text != a.Where.Text || len(doc.Where.Helpers) != 1 || doc.Where.Helpers[0].Role != stacks.RoleResourceTracker {
		t.Errorf("where in JSON: %+v", doc.Where)
	}
}

// TestWarningsWireShape: a dump's skipped lines are record.Skips in the
// analysis and bringup.stacks/v1's warnings with "message" and an
// always-present "path", as before the one bad-input type.
func TestWarningsWireShape(t *testing.T) {
	a := &stacks.Analysis{
		Warnings:    []record.Warning{{Path: "d.txt", Line: 4, Reason: "not a faulthandler frame line"}, {Line: 2, Reason: "no path"}},
		Interleaved: []record.Warning{{Path: "d.txt", Reason: "interleaved"}},
	}
	var b bytes.Buffer
	if err := JSON(&b, a); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"warnings": [
    {
      "path": "d.txt",
      "line": 4,
      "message": "not a faulthandler frame line"
    },
    {
      "path": "",
      "line": 2,
      "message": "no path"
    }
  ]`,
		`"interleaved": [
    {
      "path": "d.txt",
      "line": 0,
      "message": "interleaved"
    }
  ]`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("JSON lacks\n%s\nin\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), `"reason"`) {
		t.Errorf("the record's key leaked into v1: %s", b.String())
	}
}

// TestWriteFormats: Write gives each format's own renderer output, the
// folded stacks with idle threads only when All is set.
func TestWriteFormats(t *testing.T) {
	a := seed004(t)
	var text, js, folded, foldedAll bytes.Buffer
	if err := Text(&text, a, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := JSON(&js, a); err != nil {
		t.Fatal(err)
	}
	if err := Collapsed(&folded, a, false); err != nil {
		t.Fatal(err)
	}
	if err := Collapsed(&foldedAll, a, true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f    Format
		all  bool
		want *bytes.Buffer
	}{
		{FormatText, false, &text}, {FormatJSON, false, &js}, {FormatCollapsed, false, &folded}, {FormatCollapsed, true, &foldedAll},
	} {
		var got bytes.Buffer
		if err := Write(&got, a, c.f, TextOptions{All: c.all}); err != nil {
			t.Fatal(err)
		}
		if got.String() != c.want.String() {
			t.Errorf("format %d (all %v): %.200q, want %.200q", c.f, c.all, got.String(), c.want.String())
		}
	}
	if text.String() == js.String() || js.String() == folded.String() || folded.String() == foldedAll.String() {
		t.Error("the fixture does not tell the formats (or the idle threads) apart")
	}
}
