package probe

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Reports the probe wrote in real runs (paths rewritten): the position-less
// forward on 3.12 and a spawn child logging its KeyError on 3.10.
func TestReadDirRealRuns(t *testing.T) {
	reports, problems := ReadDir(filepath.Join("testdata", "runs", "nopos-3.12"))
	if len(problems) != 0 || len(reports) != 1 {
		t.Fatalf("%d reports, problems %v", len(reports), problems)
	}
	r := reports[0]
	if !r.Loaded || r.ReportPath == "" || r.MarkerPath == "" || r.Python != "3.12.1" || len(r.Records) != 1 {
		t.Fatalf("report %+v", r)
	}
	e := Explain(r.Records[0])
	if e.Shape != ShapeGenerated || e.Instruction != "LOAD_CONST 'in_proj_qkvbfg_a'; BINARY_SUBSCR" ||
		e.Expression != "self._modules['layers']._modules['3']._modules['in_proj_qkvbfg_a']" || e.Line != 16 {
		t.Errorf("explanation %+v", e)
	}

	reports, problems = ReadDir(filepath.Join("testdata", "runs", "logged-3.10"))
	if len(problems) != 0 || len(reports) != 3 {
		t.Fatalf("%d reports, problems %v", len(reports), problems)
	}
	var withRecords int
	for _, r := range reports {
		if !r.Loaded {
			t.Errorf("pid %d: no marker", r.PID)
		}
		if len(r.Records) > 0 {
			withRecords++
			if lg := r.Records[0].Logged; lg == nil || lg.Message != "WorkerProc hit an exception." {
				t.Errorf("logged %+v", lg)
			}
		}
	}
	if withRecords != 1 {
		t.Errorf("%d processes with records, want the spawn child only", withRecords)
	}
}

func TestReadDirHostile(t *testing.T) {
	run := t.TempDir()
	dir := filepath.Join(run, SubDir)
	if err := os.MkdirAll(filepath.Join(dir, "probe-9-ab.json"), 0o755); err != nil { // a directory with a report's name
		t.Fatal(err)
	}
	markers, _ := filepath.Glob(filepath.Join("testdata", "runs", "nopos-3.12", "probe", "loaded-*.json"))
	if len(markers) != 1 {
		t.Fatalf("markers %v", markers)
	}
	good, err := os.ReadFile(markers[0])
	if err != nil {
		t.Fatal(err)
	}
	goodName := filepath.Base(markers[0])
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(goodName, string(good))
	write("probe-1-aa.json", "{\"schema\": \"bringup.probe/v1\",\n \"kind\": \"report\",\n \"pid\": 1,\n \"stamp\": \"aa\", \"records\": [}\n")
	write("probe-2-aa.json", `{"schema": "bringup.other/v1", "kind": "report", "pid": 2, "stamp": "aa"}`)
	write("probe-3-aa.json", `{"schema": "bringup.probe/v1", "kind": "report", "pid": 4, "stamp": "aa"}`)
	write("probe-5-aa.json", "{\"schema\": \"bringup.probe/v1\", \"kind\": \"report\",\n\"pid\": \"five\", \"stamp\": \"aa\"}")
	write("probe-6-aa.json", `{"schema": "bringup.probe/v1", "kind": "report", "pid": 6, "stamp": "aa", "records": [{"type": "", "stack": []}]}`)
	write("probe-7-aa.json", `{"schema": "bringup.probe/v1", "kind": "report", "pid": 7, "stamp": "aa"} {}`)
	write(".probe-8-aa.json.8.1.tmp", "{")
	write("notes.txt", "not a probe file")
	big := make([]byte, MaxFileBytes+10)
	write("probe-10-aa.json", string(big))
	if err := os.Symlink(filepath.Join(dir, goodName), filepath.Join(dir, "loaded-11-aa.json")); err != nil {
		t.Fatal(err)
	}
	reports, problems := ReadDir(run)
	if len(reports) != 1 || !strings.HasPrefix(goodName, fmt.Sprintf("loaded-%d-", reports[0].PID)) || !reports[0].Loaded {
		t.Errorf("reports %+v, want the one good marker", reports)
	}
	want := map[string]string{
		"probe-1-aa.json":          ":4: invalid character '}'",
		"probe-2-aa.json":          `schema "bringup.other/v1"`,
		"probe-3-aa.json":          "not what its name says",
		"probe-5-aa.json":          ":2: field pid: string where int belongs",
		"probe-6-aa.json":          "record 1 has no exception type",
		"probe-7-aa.json":          "more than one JSON value",
		".probe-8-aa.json.8.1.tmp": "killed while it wrote",
		"probe-10-aa.json":         "larger than",
		"loaded-11-aa.json":        "not a regular file",
	}
	got := map[string]string{}
	for _, p := range problems {
		got[filepath.Base(p.Path)] = p.String()
	}
	for name, w := range want {
		if !strings.Contains(got[name], w) {
			t.Errorf("%s: problem %q, want one saying %q", name, got[name], w)
		}
	}
	if len(problems) != len(want) {
		t.Errorf("%d problems, want %d: %v", len(problems), len(want), problems)
	}
	if _, problems := ReadDir(t.TempDir()); len(problems) != 1 {
		t.Errorf("a run directory without probe/: problems %v, want one", problems)
	}
}

// FuzzParse: a probe document never panics the reader, the explanation or
// the findings, whatever it holds.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "runs", "*", "probe", "*.json"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"schema":"bringup.probe/v1","kind":"report","pid":1,"records":[{"type":"KeyError","stack":[{"file":"x","window":[{"current":true}],"resolved":[{"missing":true,"expr":"]"}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Parse(data)
		if err != nil {
			return
		}
		if doc.Schema != Schema || doc.PID <= 0 {
			t.Fatalf("accepted %q pid %d", doc.Schema, doc.PID)
		}
		for _, r := range doc.Records {
			e := Explain(r)
			if e.Verdict == "" {
				t.Fatalf("no verdict for %+v", r)
			}
		}
		_ = Findings([]Report{{Doc: doc, Loaded: true}})
	})
}
