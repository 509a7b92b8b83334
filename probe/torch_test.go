package probe

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testbedPython is the testbed's venv interpreter with torch
// ($BRINGUP_TESTBED or ~/.cache/bringup/testbed), or "" with the reason.
func testbedPython() (string, string) {
	root := os.Getenv("BRINGUP_TESTBED")
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err.Error()
		}
		root = filepath.Join(home, ".cache", "bringup", "testbed")
	}
	py := filepath.Join(root, "venv", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		return "", "no testbed venv (" + err.Error() + ")"
	}
	site, _ := filepath.Glob(filepath.Join(root, "venv", "lib", "python3*", "site-packages", "torch", "__init__.py"))
	if len(site) == 0 {
		return "", "the testbed venv has no torch"
	}
	return py, ""
}

// torchBoot runs a testdata script in the testbed venv with the probe for
// spec, or skips the test with the reason.
func torchBoot(t *testing.T, spec, script string) (boot, []Report) {
	t.Helper()
	py, why := testbedPython()
	if py == "" {
		t.Skip("real torch.compile test skipped: " + why)
	}
	if testing.Short() {
		t.Skip("real torch.compile test skipped in -short mode (torch import and compile take ~10 s)")
	}
	cache := t.TempDir()
	base := append(cleanEnv(), "TORCHINDUCTOR_CACHE_DIR="+cache, "TRITON_CACHE_DIR="+cache)
	b, reports, _ := probed(t, spec, Options{}, base, py, testdata(t, script))
	return b, reports
}

// A real torch.compile boot dying of a KeyError raised by Dynamo-generated
// bytecode at a def line: the probe names the instruction, the code object
// and the module it ran on.
func TestRealTorchCompileDefLineKeyError(t *testing.T) {
	b, reports := torchBoot(t, "KeyError:in_proj", "torchboot.py")
	if b.code != 1 || !bytes.Contains(b.stderr, []byte("in forward\n    def forward(self, x):\nKeyError: 'in_proj_qkvbfg_a'\n")) {
		t.Fatalf("the boot did not end at the def line: exit %d\n%s", b.code, b.stderr)
	}
	recs := records(reports)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	e := Explain(r)
	o, _ := r.Origin()
	if e.Shape != ShapeGenerated || !r.DynamoLoaded || r.Phase != "runtime" {
		t.Errorf("shape %s, dynamo %v, phase %s", e.Shape, r.DynamoLoaded, r.Phase)
	}
	if e.Instruction != "LOAD_CONST 'in_proj_qkvbfg_a'; BINARY_SUBSCR" || o.Expression != "self._modules['self_attn']._modules['in_proj_qkvbfg_a']" {
		t.Errorf("instruction %q expression %q", e.Instruction, o.Expression)
	}
	if o.Function != "Layer.forward" || !o.DefLine || o.CacheEntries == nil || *o.CacheEntries != 1 || !strings.Contains(strings.Join(o.GeneratedWhy, ";"), "orig_code_map") {
		t.Errorf("code object: %+v", o)
	}
	if o.Self == nil || o.Self.Kind != "nn.Module" || o.Self.Type != "__main__.Layer" || o.Self.Attrs["layer_idx"] != "1" {
		t.Errorf("self %+v", o.Self)
	}
	m, ok := missingStep(o)
	if !ok || m.On == nil || m.On.Type != "__main__.MLA" || strings.Join(m.Keys, ",") != "q_proj" {
		t.Errorf("missing step %+v", m)
	}
	if !strings.HasPrefix(e.Mechanism, "code compiled for one module running on another") {
		t.Errorf("mechanism %q", e.Mechanism)
	}
	var model bool
	for _, f := range r.Stack {
		model = model || (f.Function == "Model.forward" && !f.Generated)
	}
	if !model {
		t.Errorf("the skipped root frame Model.forward (running its original code) is not on the stack: %+v", r.Stack)
	}
}

// While Dynamo traces, the probe records its stand-in ObservedKeyError
// where raised, with the user frames Dynamo was inlining (from its tracing
// context), and knows it again when it is reported as Unsupported.
func TestRealTorchCompileTraceTimeKeyError(t *testing.T) {
	b, reports := torchBoot(t, "KeyError:in_proj", "torchtrace.py")
	if b.code != 1 || !bytes.Contains(b.stderr, []byte("torch._dynamo.exc.Unsupported: Observed exception")) {
		t.Fatalf("exit %d\n%s", b.code, b.stderr)
	}
	recs := records(reports)
	if len(recs) != 1 {
		t.Fatalf("%d records, want the stand-in once: %+v", len(recs), recs)
	}
	r := recs[0]
	e := Explain(r)
	if r.Type != "ObservedKeyError" || r.SeenAt != "raise" || e.Shape != ShapeTrace || r.DynamoUserStackFrom != "TracingContext.extract_stack" {
		t.Errorf("record %s at %s, shape %s, user stack from %q", r.Type, r.SeenAt, e.Shape, r.DynamoUserStackFrom)
	}
	if r.ReportedAs == nil || r.ReportedAs.Type != "Unsupported" {
		t.Errorf("reported as %+v", r.ReportedAs)
	}
	us := r.DynamoUserStack
	if len(us) != 2 || us[0].Function != "f" || us[1].Function != "lookup" || us[1].Line == nil || *us[1].Line != 6 {
		t.Errorf("user stack %+v", us)
	}
	if filepath.Base(e.File) != "torchtrace.py" || e.Line != 6 {
		t.Errorf("evidence at %s:%d, want the inlined raiser", e.File, e.Line)
	}
}

// A real torch.compile boot that succeeds, probed for every KeyError:
// the KeyErrors torch (and numpy) raise and catch while Dynamo traces are
// followed to their handler inside the library and left out of the
// findings.
func TestRealTorchCompileLibraryKeyErrorsNotEvidence(t *testing.T) {
	b, reports := torchBoot(t, "KeyError", "torchcaught.py")
	if b.code != 0 || !bytes.Equal(b.stdout, []byte("[2.0, 2.0]\n")) {
		t.Fatalf("exit %d\n%s%s", b.code, b.stdout, b.stderr)
	}
	path := 0
	for _, r := range records(reports) {
		if r.Message == "'__path__'" && r.Phase == "trace" {
			path++
			if !r.CaughtInLibrary() || r.HandledIn == nil || r.HandledIn.Function != "ConfigModule.__getattr__" {
				t.Errorf("'__path__': followed %v reached %+v handled in %+v", r.Followed, r.Reached, r.HandledIn)
			}
		}
	}
	if path == 0 {
		t.Fatalf("no trace-time '__path__' KeyError recorded (did torch change?): %+v", records(reports))
	}
	if n := CaughtInLibrary(reports); n < path {
		t.Errorf("CaughtInLibrary %d, want at least the %d '__path__' raises", n, path)
	}
	for _, f := range Findings(reports) {
		if f.Rule == RuleTrace {
			t.Errorf("a trace-time finding for a raise torch or numpy caught: %s", f.Root)
		}
	}
}
