package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRegistryNotSilent: a graph-break registry that is not valid JSON,
// whether --torch-dir names its torch or the log's frames lie in it, is an
// input that says so with its path; a --torch-dir without a registry is
// said too; the error is still diagnosed (the rest does not need it). A
// registry no error needed (no graph break to explain) is not mentioned.
func TestRegistryNotSilent(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "site-packages", "torch")
	if err := os.MkdirAll(filepath.Join(bad, "_dynamo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "_dynamo", "graph_break_registry.json"), []byte(`{"GB9001": [{"Gb_type": "x",}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	onlyID := "torch._dynamo.exc.Unsupported: something new\n\n For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb9001.html\n"
	framed := "Traceback (most recent call last):\n  File \"" + filepath.Join(bad, "_dynamo", "exc.py") + "\", line 819, in unimplemented\n    raise Unsupported(msg)\n" + onlyID
	empty := t.TempDir()
	for _, c := range []struct {
		name, log, torchDir, path, why string
	}{
		{"--torch-dir, bad JSON", onlyID, bad, filepath.Join(bad, "_dynamo", "graph_break_registry.json"), "not valid JSON"},
		{"frames, bad JSON", framed, "", filepath.Join(bad, "_dynamo", "graph_break_registry.json"), "not valid JSON"},
		{"--torch-dir, none", onlyID, empty, filepath.Join(empty, "_dynamo", "graph_break_registry.json"), "no such file"},
	} {
		d := diagnoseText(t, c.log, Options{TorchDir: c.torchDir})
		var got *Input
		for i := range d.Inputs {
			if d.Inputs[i].Kind == KindRegistry {
				got = &d.Inputs[i]
			}
		}
		if got == nil || got.Path != c.path || !strings.HasPrefix(got.Error, c.why) {
			t.Errorf("%s: registry input %+v, want %s: %s…", c.name, got, c.path, c.why)
			continue
		}
		if c.why == "not valid JSON" && !strings.Contains(got.Error, "at byte ") {
			t.Errorf("%s: %q does not say where", c.name, got.Error)
		}
		if f := topError(d); f == nil || !strings.Contains(f.Root, "something new") {
			t.Errorf("%s: the error itself is not diagnosed: %+v", c.name, f)
		}
	}
	// The fixture torch's registry is read, and an error with no graph
	// break to explain looks to none: nothing to say.
	plain := "Traceback (most recent call last):\n  File \"" + filepath.Join(bad, "_dynamo", "exc.py") + "\", line 819, in unimplemented\n    raise KeyError(k)\nKeyError: 'down'\n"
	for _, c := range []struct{ log, torchDir string }{
		{onlyID, filepath.Join("testdata", "torch")},
		{plain, bad},
		{plain, ""},
		{plain, empty},
	} {
		d := diagnoseText(t, c.log, Options{TorchDir: c.torchDir})
		for _, in := range d.Inputs {
			if in.Kind == KindRegistry {
				t.Errorf("torch dir %q: a registry is noted that was not needed or is good: %+v", c.torchDir, in)
			}
		}
	}
}
