package pyproc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// pythonFile matches an executable or shared object of CPython by name:
// python3, python3.12, python3.13t, libpython3.12.so.1.0.
var pythonFile = regexp.MustCompile(`^(lib)?python3(\.\d+)?[a-z]*(\.so.*)?$`)

// IsPythonFile reports whether a file's base name is CPython's executable
// or shared library.
func IsPythonFile(name string) bool { return pythonFile.MatchString(name) }

// MapsPython reports whether /proc/PID/maps text maps a CPython library.
func MapsPython(maps []byte) bool {
	for len(maps) > 0 {
		line := maps
		if i := bytes.IndexByte(maps, '\n'); i >= 0 {
			line, maps = maps[:i], maps[i+1:]
		} else {
			maps = nil
		}
		i := bytes.LastIndexByte(line, '/')
		if i < 0 || !bytes.Contains(line[i:], []byte("python3")) {
			continue
		}
		if pythonFile.Match(line[i+1:]) {
			return true
		}
	}
	return false
}

// LooksLikePython reports whether pid runs CPython, by its executable or
// a mapped libpython: cheap, no memory of the process is read. A process
// whose maps cannot be read is judged by its executable alone.
func LooksLikePython(pid int) bool {
	dir := fmt.Sprintf("/proc/%d", pid)
	if exe, err := os.Readlink(dir + "/exe"); err == nil && IsPythonFile(filepath.Base(strings.TrimSuffix(exe, " (deleted)"))) {
		return true
	}
	maps, err := os.ReadFile(dir + "/maps")
	return err == nil && MapsPython(maps)
}
