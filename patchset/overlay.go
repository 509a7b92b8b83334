package patchset

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/patchset/beneath"
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
	// --out is the user's; below it, nothing is followed: a symlink left
	// there (files/, pythonpath/, a package directory) is refused or
	// replaced, never written through.
	if err := os.MkdirAll(absOut, 0o755); err != nil {
		return nil, err
	}
	od, err := beneath.Open(absOut)
	if err != nil {
		return nil, err
	}
	defer od.Close()
	rd, err := beneath.Open(root)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	tops := map[string]bool{}
	for _, rel := range rels {
		data := o.final[rel]
		fd, err := od.MkdirAll(path.Join("files", path.Dir(rel)), 0o755)
		if err != nil {
			return nil, outErr(absOut, err)
		}
		err = writeAtomic(fd, path.Base(rel), data, o.modes[rel], -1, -1)
		fd.Close()
		if err != nil {
			return nil, err
		}
		host := filepath.Join(absOut, "files", filepath.FromSlash(rel))
		ctr := path.Join(containerRoot, rel)
		res.Files = append(res.Files, OverlayFile{Path: rel, Host: host, Container: ctr, SHA256: sha(data)})
		res.Docker = append(res.Docker, fmt.Sprintf("-v %s:%s:ro", host, ctr))
		res.Apptainer = append(res.Apptainer, fmt.Sprintf("--bind %s:%s:ro", host, ctr))
		top, _, _ := strings.Cut(rel, "/")
		tops[top] = true
		for _, pyc := range uncheckedPyc(rd, rel) {
			res.Notes = append(res.Notes, fmt.Sprintf("%s has unchecked-hash bytecode %s, which Python never revalidates: over a bind mount it keeps serving the OLD code; delete it in the image or mount an empty directory over its __pycache__", rel, pyc))
		}
	}
	for _, top := range sortedTops(tops) {
		if err := mirror(absRoot, top, od, o); err != nil {
			return nil, outErr(absOut, err)
		}
	}
	res.PythonPath = filepath.Join(absOut, "pythonpath")
	return res, nil
}

// outErr names --out in an error below it; a symlink there is the user's
// to remove.
func outErr(out string, err error) error {
	if errors.Is(err, beneath.ErrSymlink) {
		return fmt.Errorf("--out %s: %s; bringup never writes through a symlink below --out: remove the link, or choose another --out", out, linkReason(err))
	}
	return fmt.Errorf("--out %s: %w", out, err)
}

func sortedTops(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// mirror recreates root/top under out/pythonpath: directories as
// directories, files as symlinks to the originals, patched files as
// copies; __pycache__ skipped. The old mirror is removed first (links in
// it removed, not followed).
func mirror(root, top string, out *beneath.Dir, o *Outcome) error {
	py, err := out.MkdirAll("pythonpath", 0o755)
	if err != nil {
		return err
	}
	defer py.Close()
	if err := py.RemoveAll(top); err != nil {
		return err
	}
	var cur *beneath.Dir // the directory of the last entry: entries of one directory come together
	defer func() {
		if cur != nil {
			cur.Close()
		}
	}()
	return filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		rel := filepath.ToSlash(r)
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			sub, err := py.MkdirAll(rel, 0o755)
			if err == nil {
				sub.Close()
			}
			return err
		}
		if cur == nil || cur.Rel() != "pythonpath/"+path.Dir(rel) {
			if cur != nil {
				cur.Close()
			}
			if cur, err = py.OpenDir(path.Dir(rel)); err != nil {
				return err
			}
		}
		if data, ok := o.final[rel]; ok {
			return writeAtomic(cur, path.Base(rel), data, o.modes[rel], -1, -1)
		}
		return cur.Symlink(p, path.Base(rel))
	})
}

// uncheckedPyc lists the unchecked-hash bytecode files of the target rel,
// read below the root without following a symlink.
func uncheckedPyc(rd *beneath.Dir, rel string) []string {
	d, err := rd.OpenDir(path.Dir(rel))
	if err != nil {
		return nil
	}
	defer d.Close()
	pc, names, err := pycacheOf(d, path.Base(rel))
	if err != nil || pc == nil {
		return nil
	}
	defer pc.Close()
	var out []string
	for _, n := range names {
		if data, _, err := pc.ReadFile(n, 64<<20); err == nil && pycUnchecked(data) {
			out = append(out, n)
		}
	}
	return out
}

// pycUnchecked reports whether a .pyc is PEP 552 hash-based without source
// checking (flags word == 0b01): such a file is used whatever the source.
// Timestamp pycs are revalidated against the source's mtime and size.
func pycUnchecked(data []byte) bool {
	if len(data) < 8 {
		return false
	}
	flags := uint32(data[4]) | uint32(data[5])<<8 | uint32(data[6])<<16 | uint32(data[7])<<24
	return flags == 1
}
