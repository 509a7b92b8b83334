package diagnosis

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/diagnose"
	"github.com/bringup-tool/bringup/report"
)

func diagnoseExample(t *testing.T, dir string) *diagnose.Diagnosis {
	t.Helper()
	d, err := diagnose.Run([]string{"../../examples/" + dir}, diagnose.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestJSONSchema checks the minimum fields the issue fixes for
// bringup.diagnosis/v1, by name, on a real diagnosis.
func TestJSONSchema(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, diagnoseExample(t, "inlined-keyerror")); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["schema"] != "bringup.diagnosis/v1" {
		t.Errorf("schema %v", doc["schema"])
	}
	need := map[string][]string{
		"inputs":   {"path", "kind", "records", "skipped"},
		"findings": {"rule", "title", "severity", "cause", "remedy", "ranks", "count", "evidence", "references"},
		"errors":   {"rank", "pid", "exception", "message", "frames", "path", "line"},
		"timeline": {"rank", "phase", "start", "end", "seconds", "status"},
		"gaps":     {"path", "line", "seconds"},
	}
	for key, fields := range need {
		list, ok := doc[key].([]any)
		if !ok || len(list) == 0 {
			t.Errorf("%s: missing or empty (%T)", key, doc[key])
			continue
		}
		obj := list[0].(map[string]any)
		for _, f := range fields {
			if _, ok := obj[f]; !ok {
				t.Errorf("%s[0] lacks %q: %v", key, f, obj)
			}
		}
	}
	f := doc["findings"].([]any)[0].(map[string]any)
	ev := f["evidence"].([]any)[0].(map[string]any)
	for _, k := range []string{"path", "line", "rank", "text"} {
		if _, ok := ev[k]; !ok {
			t.Errorf("evidence lacks %q", k)
		}
	}
	fr := doc["errors"].([]any)[0].(map[string]any)["frames"].([]any)[0].(map[string]any)
	for _, k := range []string{"file", "line", "func"} {
		if _, ok := fr[k]; !ok {
			t.Errorf("frame lacks %q", k)
		}
	}
}

// TestJSONEmptyListsAreLists: consumers index arrays; null would break them.
func TestJSONEmptyListsAreLists(t *testing.T) {
	var buf bytes.Buffer
	WriteJSON(&buf, diagnoseExample(t, "healthy"))
	for _, k := range []string{`"findings": []`, `"errors": []`} {
		if !strings.Contains(buf.String(), k) {
			t.Errorf("healthy JSON lacks %s", k)
		}
	}
}

func TestTextVerdictFirstEvidenceRemedy(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteText(&buf, diagnoseExample(t, "aot-graph-break"), report.Style{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "FAILED in phase dynamo on DP0 TP0") || !strings.Contains(lines[0], "aot-compile-graph-break") {
		t.Errorf("first line is not the verdict: %q", lines[0])
	}
	iEv := strings.Index(out, "aot-graph-break/vllm-serve.log:66 [DP0 TP0]  RuntimeError: Graph breaks are not supported")
	iFix := strings.Index(out, "fix: 1. Keep a fullgraph opt-out")
	if iEv < 0 || iFix < 0 || iFix < iEv {
		t.Errorf("want evidence (file:line) then the remedy:\n%s", out)
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour without a terminal")
	}
	if strings.Count(out, "\n") > 60 {
		t.Errorf("report of one failure is %d lines; keep it short", strings.Count(out, "\n"))
	}
}

func TestTextColour(t *testing.T) {
	var buf bytes.Buffer
	WriteText(&buf, diagnoseExample(t, "aot-graph-break"), report.Style{Color: true})
	if !strings.HasPrefix(buf.String(), "\x1b[31m") {
		t.Errorf("verdict not red on a terminal: %q", buf.String()[:20])
	}
}

func TestTextHealthy(t *testing.T) {
	var buf bytes.Buffer
	WriteText(&buf, diagnoseExample(t, "healthy"), report.Style{})
	if !strings.HasPrefix(buf.String(), "no known failure signature found\n") {
		t.Errorf("healthy: %q", buf.String())
	}
}
