package pyenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPythonPicksTheNewestInstalled(t *testing.T) {
	root := t.TempDir()
	t.Setenv("PYENV_ROOT", root)
	for _, v := range []string{"3.12.1", "3.12.9", "3.13.0"} {
		bin := filepath.Join(root, "versions", v, "bin")
		os.MkdirAll(bin, 0o755)
		if v != "3.13.0" {
			os.WriteFile(filepath.Join(bin, "python3.12"), nil, 0o755)
		}
	}
	if Root() != root {
		t.Errorf("Root %q, want $PYENV_ROOT %q", Root(), root)
	}
	if got, want := Python("3.12"), filepath.Join(root, "versions", "3.12.9", "bin", "python3.12"); got != want {
		t.Errorf("Python(3.12) = %q, want %q", got, want)
	}
	if got := Python("3.13"); got != "" {
		t.Errorf("Python(3.13) = %q, want none (no binary)", got)
	}
}
