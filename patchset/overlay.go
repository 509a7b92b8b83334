package patchset

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// OverlayFile is one patched file written outside the image.
type OverlayFile struct {
	Path      string `json:"path"`      // relative to the root
	Host      string `json:"host"`      // the patched copy
	Container string `json:"container"` // where it replaces the original in the container
	SHA256    string `json:"sha256"`
}

// OverlayResult says what Overlay wrote and how to use it.
type OverlayResult struct {
	Schema     string        `json:"schema"`
	Out        string        `json:"out"`
	Files      []OverlayFile `json:"files"`
	PythonPath string        `json:"pythonpath"` // a directory to put first on PYTHONPATH
	Docker     []string      `json:"docker"`     // -v arguments (podman takes the same)
	Apptainer  []string      `json:"apptainer"`  // --bind arguments
	Refused    []string      `json:"refused,omitempty"`
	Notes      []string      `json:"notes,omitempty"`
}

// Overlay writes the patched version of every target of the active
// patches into out, leaving root untouched, in two shapes:
//
//   - out/files/<target>: one file per target, to bind-mount over the
//     original (containerRoot is the root's path inside the container);
//   - out/pythonpath/<package>/…: a mirror of each touched top-level
//     package, symlinks to the originals except for the patched files, so
//     PYTHONPATH=out/pythonpath shadows the installed package as a whole
//     (a partial package directory would not: Python takes the first
//     regular package on the path, with all its modules).
func Overlay(root string, s *Series, out, containerRoot string) (*OverlayResult, error) {
	o, _, err := plan(root, s, Options{DryRun: true}, false)
	if err != nil {
		return nil, err
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if containerRoot == "" {
		containerRoot = absRoot
	}
	res := &OverlayResult{Schema: "bringup.patch-overlay/v1", Out: absOut, Refused: o.Refused, Files: []OverlayFile{}}
	if len(o.Refused) > 0 {
		return res, nil
	}
	var rels []string
	for rel := range o.final {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	files := filepath.Join(absOut, "files")
	pyDir := filepath.Join(absOut, "pythonpath")
	tops := map[string]bool{}
	for _, rel := range rels {
		data := o.final[rel]
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		host := filepath.Join(files, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
			return nil, err
		}
		if err := writeFileAtomic(host, data, st.Mode(), -1, -1); err != nil {
			return nil, err
		}
		ctr := path.Join(containerRoot, rel)
		res.Files = append(res.Files, OverlayFile{Path: rel, Host: host, Container: ctr, SHA256: sha(data)})
		res.Docker = append(res.Docker, fmt.Sprintf("-v %s:%s:ro", host, ctr))
		res.Apptainer = append(res.Apptainer, fmt.Sprintf("--bind %s:%s:ro", host, ctr))
		top, _, _ := strings.Cut(rel, "/")
		tops[top] = true
		for _, pyc := range stalePyc(filepath.Join(root, filepath.FromSlash(rel))) {
			if pycUnchecked(pyc) {
				res.Notes = append(res.Notes, fmt.Sprintf("%s has unchecked-hash bytecode %s, which Python never revalidates: over a bind mount it keeps serving the OLD code; delete it in the image or mount an empty directory over its __pycache__", rel, filepath.Base(pyc)))
			}
		}
	}
	for top := range tops {
		if err := mirror(absRoot, top, pyDir, o.final); err != nil {
			return nil, err
		}
	}
	res.PythonPath = pyDir
	return res, nil
}

// mirror recreates root/top under dst: directories as directories, files as
// symlinks to the originals, patched files as copies; __pycache__ skipped.
func mirror(root, top, dst string, patched map[string][]byte) error {
	src := filepath.Join(root, top)
	if err := os.RemoveAll(filepath.Join(dst, top)); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		if data, ok := patched[filepath.ToSlash(rel)]; ok {
			st, err := os.Stat(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, st.Mode().Perm())
		}
		return os.Symlink(p, target)
	})
}

// stalePyc lists the __pycache__ entries of a .py file.
func stalePyc(py string) []string {
	if !strings.HasSuffix(py, ".py") {
		return nil
	}
	stem := strings.TrimSuffix(filepath.Base(py), ".py")
	ms, _ := filepath.Glob(filepath.Join(filepath.Dir(py), "__pycache__", globEscape(stem)+".*.pyc"))
	return ms
}

// pycUnchecked reports whether a .pyc is PEP 552 hash-based without source
// checking (flags word == 0b01): such a file is used whatever the source.
// Timestamp pycs are revalidated against the source's mtime and size.
func pycUnchecked(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var hdr [8]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return false
	}
	flags := uint32(hdr[4]) | uint32(hdr[5])<<8 | uint32(hdr[6])<<16 | uint32(hdr[7])<<24
	return flags == 1
}
