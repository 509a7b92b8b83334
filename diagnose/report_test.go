package diagnose

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/report/perfetto"
	"github.com/bringup-tool/bringup/report/tracehtml"
	"github.com/bringup-tool/bringup/store"
)

// ownOutputs writes what bringup writes for a real TORCH_TRACE into dir,
// under the names users give them: the Perfetto export as
// docs/trace-html.md's example names it (phases.json), the HTML report, a
// run record under another name than run.json, a run store. It returns
// the trace and the outputs by path, with the word each input's note must
// say.
func ownOutputs(t *testing.T, dir string) (string, map[string]string) {
	t.Helper()
	trace := filepath.Join("..", "testbed", "testdata", "inlined_exception_fullgraph", "trace", "dedicated_log_torch_trace_hrd_rbr7.log.gz")
	res, err := compiles.Analyze([]string{trace}, compiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var pf bytes.Buffer
	if err := perfetto.Write(&pf, res); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	write := func(name string, data []byte, word string) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out[p] = word
	}
	write("phases.json", pf.Bytes(), "Perfetto")
	html := filepath.Join(t.TempDir(), "html")
	if err := tracehtml.Write(html, res, tracehtml.Options{}); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(html, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	write("report.txt", page, "HTML")
	rec, err := json.MarshalIndent(store.Run{Schema: store.Schema, ID: 3, Command: []string{"vllm", "serve"}, Outcome: store.OutcomeHung}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	write("run-3.json", rec, "run record")
	st, err := store.Open(filepath.Join(dir, "runs.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile(filepath.Join(dir, "runs.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "runs.sqlite3"))
	write("runs.bak", db, "SQLite")
	return trace, out
}

// bringup's own outputs are recognised by what they hold, whatever their
// name, and never read as logs: in a directory diagnose walks and given
// by name, each is an input of kind report whose note says what it is,
// and no record, finding or error comes from it. The trace beside them is
// read as what it is.
func TestOwnOutputsAreNotLogs(t *testing.T) {
	dir := t.TempDir()
	trace, outs := ownOutputs(t, dir)
	given := []string{trace}
	for p := range outs {
		given = append(given, p)
	}
	for _, paths := range [][]string{{dir, trace}, given} {
		d := run(t, paths...)
		seen := 0
		for _, in := range d.Inputs {
			word, ok := outs[in.Path]
			if !ok {
				continue
			}
			seen++
			if in.Kind != KindReport || in.Records != 0 || !strings.Contains(in.Error, word) || !strings.Contains(in.Error, "not a log") {
				t.Errorf("%v: input %+v: want kind %q, no records, a note naming it %s", paths, in, KindReport, word)
			}
		}
		if seen != len(outs) {
			t.Errorf("%v: %d of the %d outputs among the inputs %+v", paths, seen, len(outs), d.Inputs)
		}
		for _, f := range d.Findings {
			for _, e := range f.Evidence {
				if _, ok := outs[e.Path]; ok {
					t.Errorf("finding %s from %s", f.Rule, e.Path)
				}
			}
		}
		for _, e := range d.Errors {
			if _, ok := outs[e.Path]; ok {
				t.Errorf("error %s from %s", e.Exception, e.Path)
			}
		}
		if len(d.Timeline) > 0 {
			for _, p := range d.Timeline {
				if _, ok := outs[p.Path]; ok {
					t.Errorf("phase %s from %s", p.Name, p.Path)
				}
			}
		}
	}
}

// What is not bringup's output stays what it is: JSON-lines logs, py-spy
// --json, bringup's own stacks JSON (a dump), a log line with "schema" in
// it.
func TestReportOfLeavesInputsAlone(t *testing.T) {
	for _, head := range []string{
		`{"timestamp": "2025-01-01T00:00:00Z", "level": "INFO", "message": "Loading weights took 1.2 s"}` + "\n",
		`[{"pid": 12, "thread_id": 1, "os_thread_id": 3, "frames": [{"name": "wait", "filename": "threading.py", "line": 1}]}]`,
		`{"schema": "bringup.stacks/v1", "verdict": "x", "processes": []}`,
		`{"schema": "other.tool/v1"}`,
		"INFO 12-17 13:32:44 [core.py:1] schema bringup.run/v1\n",
		"",
	} {
		if got := reportOf([]byte(head)); got != "" {
			t.Errorf("reportOf(%q) = %q, want not a report", head, got)
		}
	}
	for head, want := range map[string]string{
		`{"traceEvents": [{"name": "a", "ph": "X", "ts": 1}]}`:              "Perfetto",
		`[{"name": "a", "ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]`: "Perfetto",
		"\ufeff  <!DOCTYPE html><html><body>x</body></html>":                "HTML",
		`{"schema": "bringup.diagnosis/v1", "status": "ok"}`:                "diagnosis",
		`{"schema": "bringup.future/v9", "x": 1}`:                           "bringup.future/v9",
		`{"id": 4, "schema": "bringup.run/v1", "command": ["a"`:             "run record",
	} {
		if got := reportOf([]byte(head)); !strings.Contains(got, want) {
			t.Errorf("reportOf(%q) = %q, want it to name %s", head, got, want)
		}
	}
}

// FuzzReportOf: any head is named or left alone, never a panic, and the
// same head always gets the same answer.
func FuzzReportOf(f *testing.F) {
	f.Add([]byte(`{"schema":"bringup.perfetto/v1","displayTimeUnit":"ms","traceEvents":[`))
	f.Add([]byte(`{"schema":"bringup.run/v1","id":2,"outcome":"hung"}`))
	f.Add([]byte(`[{"ph":"X","ts":1}`))
	f.Add([]byte("<!doctype HTML>"))
	f.Add([]byte("SQLite format 3\x00\x10\x00"))
	f.Add([]byte(`{"a":{"b":[1,2,{"c":"schema"}]},"schema":`))
	f.Add([]byte("INFO 12-17 13:32:44 [core.py:1] hello\n"))
	f.Fuzz(func(t *testing.T, head []byte) {
		a := reportOf(head)
		if b := reportOf(head); a != b {
			t.Fatalf("reportOf gave %q then %q", a, b)
		}
		if (a != "") != (sniffReport("x", head) == 100) {
			t.Fatalf("reportOf %q, sniff %d", a, sniffReport("x", head))
		}
	})
}
