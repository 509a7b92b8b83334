package stacks

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/testsupport/pyenv"
)

// TestStdlibNames: stdlib_gen.go is the union of sys.stdlib_module_names
// of CPython 3.10–3.13; every installed one must be in it.
func TestStdlibNames(t *testing.T) {
	checked := 0
	for _, m := range []string{"3.10", "3.11", "3.12", "3.13"} {
		py := pyenv.Python(m)
		if py == "" {
			continue
		}
		out, err := exec.Command(py, "-c", "import sys; print('\\n'.join(sorted(sys.stdlib_module_names)))").Output()
		if err != nil {
			t.Fatalf("%s: %v", py, err)
		}
		for _, n := range strings.Fields(string(out)) {
			if !stdlibNames[n] {
				t.Errorf("CPython %s: %q missing from stdlib_gen.go", m, n)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Skip("no CPython 3.10-3.13 under pyenv")
	}
	for file, want := range map[string]bool{
		"threading.py": true, "concurrent/futures/_base.py": true, "multiprocessing/connection.py": true,
		"torch/_inductor/ir.py": false, "/srv/app/threading.py": false, "<string>": false, "src/model.py": false,
	} {
		if IsStdlib(file) != want {
			t.Errorf("IsStdlib(%q) = %v", file, !want)
		}
	}
}
