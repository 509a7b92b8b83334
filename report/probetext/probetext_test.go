package probetext

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/probe"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/report"
)

func render(t *testing.T, st report.Style, in Input) string {
	t.Helper()
	var b bytes.Buffer
	Write(&b, st, in)
	return b.String()
}

func TestWriteRealRun(t *testing.T) {
	dir := filepath.Join("..", "..", "probe", "testdata", "runs", "nopos-3.12")
	reports, problems := probe.ReadDir(dir)
	out := render(t, report.Style{}, Input{
		Dir: dir, Spec: "KeyError:in_proj", Reports: reports, Problems: problems, Scanned: true,
		Missing: []probe.NotLoaded{{Proc: probe.Proc{PID: 42, Cmdline: []string{"python3", "-I", "x.py"}}, Reason: "-I (isolated mode ignores PYTHONPATH)"}},
	})
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "probe: KeyError: 'in_proj_qkvbfg_a' raised by code of forward with no source position (nopos.py:16, its def line: the instruction has no source position; torch._dynamo was not loaded, so not code Dynamo generated): LOAD_CONST 'in_proj_qkvbfg_a'; BINARY_SUBSCR evaluating self._modules['layers']._modules['3']._modules['in_proj_qkvbfg_a']") {
		t.Errorf("verdict line %q", lines[0])
	}
	for _, w := range []string{
		"error  KeyError: 'in_proj_qkvbfg_a'  [probe-generated-code]",
		"  instruction  LOAD_CONST 'in_proj_qkvbfg_a'; BINARY_SUBSCR\n",
		"  seen         where raised, then uncaught (printed by Python)\n",
		"    /srv/boot/nopos.py:16 in forward  BINARY_SUBSCR  [generated]\n",
		"    -->   88 BINARY_SUBSCR  (no source position)\n",
		"probe: 1 Python process loaded the probe, 1 did not\n",
		"probe: pid 42 (python3 -I x.py) did not load the probe: -I (isolated mode ignores PYTHONPATH)\n",
		"probe: reports in " + dir + "\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour without a terminal")
	}
	if col := render(t, report.Style{Color: true}, Input{Reports: reports}); !strings.Contains(col, "\x1b[31m") {
		t.Error("no colour on a terminal")
	}
}

func TestWriteNothingRecorded(t *testing.T) {
	reports, _ := probe.ReadDir(filepath.Join("..", "..", "probe", "testdata", "runs", "logged-3.10"))
	var quiet []probe.Report
	for _, r := range reports {
		r.Records = nil
		r.Errors = []string{"write: PermissionError: denied"}
		quiet = append(quiet, r)
	}
	out := render(t, report.Style{}, Input{Spec: "ValueError", Reports: quiet,
		Problems: []record.Skip{{Path: "probe/probe-1-a.json", Line: 3, Reason: "bad"}}})
	for _, w := range []string{
		"probe: nothing matching ValueError was recorded in 3 Python processes that loaded the probe\n",
		"probe: raise: sys.monitoring needs Python 3.12+; recorded where reported only (pid ",
		"probe error pid ",
		"probe: probe/probe-1-a.json:3: bad\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "did not") {
		t.Errorf("no scan, yet a count of processes that did not load:\n%s", out)
	}
}

// A trace-time raise torch caught itself is counted in one line, not
// shown as an exception of the boot.
func TestWriteCaughtInLibrary(t *testing.T) {
	line := 573
	caught := probe.Record{Type: "KeyError", Message: "'__path__'", SeenAt: "raise", Phase: "trace", Followed: true,
		HandledIn: &probe.Place{File: "torch/utils/_config_module.py", Function: "ConfigModule.__getattr__", Line: &line},
		Stack:     []probe.Frame{{File: "torch/utils/_config_module.py", Function: "ConfigModule.__getattr__", Line: &line}}}
	out := render(t, report.Style{}, Input{Spec: "KeyError", Reports: []probe.Report{{Doc: probe.Doc{PID: 7, Records: []probe.Record{caught}}, Loaded: true}}})
	if !strings.HasPrefix(out, "probe: nothing matching KeyError reached code outside torch, numpy or the standard library in 1 Python process") || strings.Contains(out, "'__path__'") {
		t.Errorf("the caught raise is shown:\n%s", out)
	}
	if !strings.Contains(out, "probe: 1 raise made while Dynamo traced caught inside torch, numpy or the standard library, never reaching other code: not evidence, not shown\n") {
		t.Errorf("the caught raise is not counted:\n%s", out)
	}
}
