// Package pyenv finds the pyenv installation whose CPython builds the
// layout generator reads and the process-reading tests run under.
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

// Python is the newest installed interpreter of a minor version ("3.12"),
// or "" when pyenv has none.
func Python(minor string) string {
	dirs, _ := filepath.Glob(filepath.Join(Root(), "versions", minor+".*"))
	for i := len(dirs) - 1; i >= 0; i-- {
		p := filepath.Join(dirs[i], "bin", "python"+minor)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}
