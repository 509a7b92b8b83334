// Package pyenv finds the pyenv installation whose CPython builds the
// layout generator reads and the capture tests run.
package pyenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Root is $PYENV_ROOT, else what `pyenv root` prints, else ~/.pyenv.
func Root() string {
	if r := os.Getenv("PYENV_ROOT"); r != "" {
		return r
	}
	if out, err := exec.Command("pyenv", "root").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".pyenv")
}
