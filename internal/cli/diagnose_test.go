package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiagnoseExitCodes(t *testing.T) {
	if code, out, errs := runCLI("diagnose", "../../examples/healthy"); code != ExitOK || !strings.HasPrefix(out, "no known failure") {
		t.Errorf("healthy: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := runCLI("diagnose", "../../examples/aot-graph-break"); code != ExitFindings || !strings.HasPrefix(out, "FAILED") {
		t.Errorf("failed boot: exit %d\n%s", code, out)
	}
	if code, _, errs := runCLI("diagnose", "no/such/dir"); code != ExitUsage || !strings.Contains(errs, "no/such/dir") {
		t.Errorf("missing path: exit %d %q", code, errs)
	}
	if code, _, errs := runCLI("diagnose"); code != ExitUsage || !strings.Contains(errs, "PATH") {
		t.Errorf("no args: exit %d %q", code, errs)
	}
}

func TestDiagnoseJSONToFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "d.json")
	code, out, _ := runCLI("diagnose", "--json", "-o", p, "../../examples/inlined-keyerror")
	if code != ExitFindings || out != "" {
		t.Errorf("exit %d, stdout %q (want the report in the file only)", code, out)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Schema   string `json:"schema"`
		Findings []struct{ Rule string }
	}
	if err := json.Unmarshal(b, &d); err != nil || d.Schema != "bringup.diagnosis/v1" || d.Findings[0].Rule != "inlined-callee-def-line" {
		t.Errorf("json %v %+v", err, d)
	}
}

func TestDiagnoseUserRules(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("- id: x\n  title: t\n  severity: error\n  cause: c\n  remedy: [r]\n  match: {text: ['(unclosed']}\n"), 0o644)
	if code, _, errs := runCLI("diagnose", "--rules", bad, "../../examples/healthy"); code != ExitUsage || !strings.Contains(errs, "bad.yaml:1") {
		t.Errorf("bad rules: exit %d %q", code, errs)
	}
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("- id: engine-ready\n  title: Engine reached ready\n  severity: error\n  cause: test rule\n  remedy: [none]\n  match: {text: ['Application startup complete']}\n"), 0o644)
	code, out, _ := runCLI("diagnose", "--rules", good, "../../examples/healthy")
	if code != ExitFindings || !strings.Contains(out, "engine-ready") || !strings.Contains(out, "vllm-serve.log:73") {
		t.Errorf("user rule: exit %d\n%s", code, out)
	}
}

func TestDiagnoseStdinAndNotes(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "core.bin"), []byte{0x7f, 'E', 'L', 'F', 0, 1}, 0o644)
	data, _ := os.ReadFile("../../examples/inductor-hang/vllm-serve.log")
	os.WriteFile(filepath.Join(dir, "boot.log"), data, 0o644)
	code, out, errs := runCLI("diagnose", dir)
	// The hang's stack signature is only guessed without stacks: a
	// warning (exit 0) that says what to capture.
	if code != 0 || !strings.Contains(errs, "core.bin: not a recognised input") || !strings.Contains(out, "implicit-fallback-format-hang") ||
		!strings.Contains(out, "bringup stacks --tree") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}

// TestDiagnoseBadTorchDir: a --torch-dir that is not a directory here is
// said, with its path, on stderr and in inputs[]; the diagnosis is the
// same as without the flag (exit status, verdict).
func TestDiagnoseBadTorchDir(t *testing.T) {
	log := "../../examples/inlined-keyerror"
	code0, out0, _ := runCLI("diagnose", log)
	firstLine := func(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
	file := filepath.Join(t.TempDir(), "torch")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for dir, why := range map[string]string{filepath.Join(t.TempDir(), "no", "such"): "no such directory", file: "not a directory"} {
		code, out, errs := runCLI("diagnose", "--torch-dir", dir, log)
		if code != code0 || firstLine(out) != firstLine(out0) {
			t.Errorf("--torch-dir %s: exit %d, verdict %q; without it: %d, %q", dir, code, firstLine(out), code0, firstLine(out0))
		}
		if !strings.Contains(errs, dir+": "+why+" (--torch-dir)") {
			t.Errorf("--torch-dir %s: stderr %q does not say %q with the path", dir, errs, why)
		}
		_, js, _ := runCLI("diagnose", "--json", "--torch-dir", dir, log)
		var d struct {
			Inputs []struct{ Path, Kind, Error string }
		}
		if err := json.Unmarshal([]byte(js), &d); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, in := range d.Inputs {
			found = found || in.Path == dir && in.Kind == torchDirKind && strings.HasPrefix(in.Error, why)
		}
		if !found {
			t.Errorf("--torch-dir %s: inputs %+v do not list it", dir, d.Inputs)
		}
	}
	// A directory is used as given: no note.
	if _, _, errs := runCLI("diagnose", "--torch-dir", t.TempDir(), log); strings.Contains(errs, "--torch-dir") {
		t.Errorf("a directory was noted: %q", errs)
	}
}
