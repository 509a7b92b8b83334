package diagnose

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/stacks/hang"
)

// FuzzRunFacts: any run.json is read or refused with the reason, never a
// panic; one whose stop lies before a finding's line drops it.
func FuzzRunFacts(f *testing.F) {
	f.Add([]byte(`{"schema":"bringup.run/v1","id":2,"outcome":"hung","stop":{"by":"watch","line":9}}`))
	f.Add([]byte(`{"schema":"bringup.run/v1","outcome":"failed","stop":{"by":"watch","line":-1}}`))
	f.Add([]byte(`{"schema":"bringup.runs/v1"}`))
	f.Add([]byte(`{"schema":"bringup.run/v1","stop":null,"command":[1]}`))
	f.Add([]byte("\x00not json"))
	f.Add([]byte(`{"schema":"bringup.run/v1","outcome":"timeout","started":"2026-12-02T01:45:19Z","ended":"2026-12-02T01:45:24Z",` +
		`"stop":{"by":"watch","at":"2026-12-02T01:45:23Z","line":9,"last_output":"2026-12-02T01:45:20Z"},` +
		`"timeline":[{"rank":"TP0","name":"inductor","status":"unfinished","seconds":3.7,"open":true,"line":5}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "run.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		rf, in := readRunFacts(dir)
		if in == nil {
			t.Fatal("no input entry for a run.json that exists")
		}
		if (rf == nil) == (in.Error == "") {
			t.Fatalf("facts %v with error %q", rf, in.Error)
		}
		log := filepath.Join(dir, "output.log")
		d := &Diagnosis{Findings: []record.Finding{{Rule: "unrecognised-exception", Severity: record.SeverityError,
			Title: "t", Evidence: []record.Evidence{{Path: log, Line: 24, Text: "KeyboardInterrupt: terminated"}}}}}
		applyRun(d, dir, rf, in, nil)
		if len(d.Inputs) != 1 {
			t.Fatalf("inputs %v", d.Inputs)
		}
		if rf != nil && rf.Stop != nil && rf.Stop.Line < 24 && len(d.Findings) != 0 {
			t.Errorf("a finding after the stop at line %d kept: %v", rf.Stop.Line, d.Findings)
		}
		// The hang verdict of any record: one for a hung, timed-out or
		// interrupted run, none for another.
		formed := formHang(d, []runDir{{dir: dir, rf: rf, in: in}})
		if hung := rf != nil && (rf.Outcome == hang.Hung || rf.Outcome == hang.Timeout || rf.Outcome == hang.Interrupted); formed != hung || (d.Hang != "") != hung || (d.hangLine != "") != hung {
			t.Errorf("outcome %v: formed %v, hang %q, verdict %q", rf, formed, d.Hang, d.hangLine)
		}
	})
}
