//go:build !unix

package beneath

import (
	"errors"
	"io/fs"
	"os"
)

// errUnsupported: without openat there is no way to resolve a path below
// a directory without a race, so nothing is opened at all.
var errUnsupported = errors.New("opening files below a directory without following symlinks needs openat(2), which this system lacks")

// Dir is an open directory below which paths are resolved.
type Dir struct{ root, rel string }

// Open fails on this system: see errUnsupported.
func Open(path string) (*Dir, error) {
	return nil, &fs.PathError{Op: "open", Path: path, Err: errUnsupported}
}

func (d *Dir) Close() error                                 { return nil }
func (d *Dir) Rel() string                                  { return d.rel }
func (d *Dir) Root() string                                 { return d.root }
func (d *Dir) OpenDir(string) (*Dir, error)                 { return nil, errUnsupported }
func (d *Dir) Create(string, fs.FileMode) (*os.File, error) { return nil, errUnsupported }
func (d *Dir) Rename(string, string) error                  { return errUnsupported }
func (d *Dir) Remove(string) error                          { return errUnsupported }
func (d *Dir) Names() ([]string, error)                     { return nil, errUnsupported }
func (d *Dir) Sync() error                                  { return errUnsupported }
func (d *Dir) OpenFile(string, int, fs.FileMode) (*os.File, error) {
	return nil, errUnsupported
}
func (d *Dir) ReadFile(string, int64) ([]byte, fs.FileInfo, error) {
	return nil, nil, errUnsupported
}
func (d *Dir) MkdirAll(string, fs.FileMode) (*Dir, error) { return nil, errUnsupported }
func (d *Dir) Symlink(string, string) error               { return errUnsupported }
func (d *Dir) RemoveAll(string) error                     { return errUnsupported }
