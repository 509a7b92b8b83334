package diagnose

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRaisedInFromChain: where an error was raised, for evidence other
// than its own innermost frame: the "from user code:" section of the
// exception a frameless root caused (Dynamo's Observed exception), the
// call being compiled when the root was raised inside Dynamo itself, and
// the last frame shown of a traceback printed right after a frameless
// error and cut before its exception line.
func TestRaisedInFromChain(t *testing.T) {
	read := func(scenario string) string {
		b, err := os.ReadFile(filepath.Join("..", "testbed", "testdata", scenario, "stderr.txt"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cut := "ValueError: the shapes do not match\nTraceback (most recent call last):\n" +
		"  File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py\", line 3106, in _dummy_run\n" +
		"    outputs = self.model(\n"
	for _, c := range []struct{ name, log, want string }{
		{"observed exception", read("inlined_exception_fullgraph"),
			"user code scenarios/inlined_exception_fullgraph.py:19 forward"},
		{"raised in Dynamo", read("recompile_fail"),
			"torch/_dynamo/exc.py:819 unimplemented (compiling the call at scenarios/recompile_fail.py:23 <module>)"},
		{"traceback cut after it", cut,
			"a call at or below vllm/v1/worker/gpu_model_runner.py:3106 _dummy_run (its traceback, printed right after it, is cut there)"},
	} {
		d := diagnoseText(t, c.log, Options{})
		if f := topError(d); f == nil || f.RaisedIn != c.want {
			t.Errorf("%s: top error %+v, want raised in %q", c.name, f, c.want)
		}
	}
	// Nothing outside torch and the installed packages: no caller is named.
	vllm := "Traceback (most recent call last):\n" +
		"  File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py\", line 3106, in _dummy_run\n" +
		"    outputs = self.model(\n" +
		"  File \"/usr/local/lib/python3.12/dist-packages/torch/_dynamo/exc.py\", line 819, in unimplemented\n" +
		"    raise Unsupported(msg)\n" +
		"torch._dynamo.exc.Unsupported: something new\n"
	if f := topError(diagnoseText(t, vllm, Options{})); f == nil || f.RaisedIn != "torch/_dynamo/exc.py:819 unimplemented" {
		t.Errorf("all frames installed: top error %+v, want raised in torch/_dynamo/exc.py:819 unimplemented alone", f)
	}
}
