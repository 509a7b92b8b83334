// Package atomicfile writes a file or a directory that bringup creates at
// a path the user gave (-o FILE, --perfetto FILE, --html DIR) so that
// nothing already there is written through: the new content is built
// under a fresh name in the same directory, created exclusively and
// without following symbolic links, and renamed over the path once
// complete. A symbolic link planted at the path, or inside an old report,
// is replaced or removed, never followed; a reader sees the old content or
// the new, never half of it; a failed write leaves the old content as it
// was and no temporary behind. A device or a pipe at the path (/dev/null,
// /dev/stdout) is written to as it is: there is no file to replace.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/bringup-tool/bringup/input"
)

// CreateNew creates a file that must not exist yet, without following a
// symbolic link in its place (O_EXCL|O_NOFOLLOW): for the files of a
// directory being built by CreateDir.
func CreateNew(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o666)
}

// tempName is path's directory and a dot name made of path's base name
// and a random suffix, so a listing shows whose temporary it is.
func tempName(path string) string {
	var b [6]byte
	rand.Read(b[:])
	dir, base := filepath.Split(path)
	return filepath.Join(dir, "."+base+".bringup-"+hex.EncodeToString(b[:]))
}

// File is a file being written in place of a path; Commit puts it there.
type File struct {
	*os.File
	path, tmp string // tmp "": written straight to path (a device, a pipe)
	done      bool
}

// Create starts writing path. An absent path, a regular file or a
// symbolic link at path (never followed: the link itself is replaced) gets
// a new file renamed over it by Commit. A character device, a FIFO or a
// socket at path, through links or not (/dev/null, /dev/stdout, a shell's
// >(…)), is written straight to: there is no file to clobber. A directory
// or a block device is refused with what it is.
func Create(path string) (*File, error) {
	if fi, err := os.Stat(path); err == nil && fi.Mode()&(fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket) != 0 {
		// No O_CREATE, no O_TRUNC: opening changes nothing, and what was
		// opened is checked again (a file put there since is not written).
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		if fi, err := f.Stat(); err != nil || fi.Mode()&(fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket) == 0 {
			f.Close()
			return nil, fmt.Errorf("%s changed while it was opened: not written", path)
		}
		return &File{File: f, path: path}, nil
	}
	if err := replaceable(path); err != nil {
		return nil, err
	}
	for range 100 {
		tmp := tempName(path)
		f, err := CreateNew(tmp)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "create", Path: path, Err: cause(err)}
		}
		return &File{File: f, path: path, tmp: tmp}, nil
	}
	return nil, fmt.Errorf("%s: no free temporary name beside it", path)
}

// cause is an OS error without the temporary's name in it.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// replaceable says why path may not be replaced by a new regular file.
func replaceable(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0:
		return nil
	}
	return fmt.Errorf("%s is %s: bringup writes a new file there only in place of a file", path, input.What(fi.Mode()))
}

// Commit closes the file and renames it over the path.
func (f *File) Commit() error {
	if f.done {
		return nil
	}
	f.done = true
	err := f.File.Close()
	if f.tmp == "" {
		return err
	}
	if err == nil {
		err = os.Rename(f.tmp, f.path)
	}
	if err != nil {
		os.Remove(f.tmp)
		return &fs.PathError{Op: "write", Path: f.path, Err: cause(err)}
	}
	return nil
}

// Abort drops what was written; the path keeps what it had. After Commit
// it does nothing.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	if f.tmp != "" {
		os.Remove(f.tmp)
	}
}

// Dir is a directory being built in place of a path; Commit puts it there.
type Dir struct {
	path, tmp string
	done      bool
}

// CreateDir starts building a directory for path, which may be absent or
// a directory (it is replaced whole by Commit: the caller decides whether
// what is there may go). A symbolic link, a file or anything else at path
// is refused. The new directory is made beside path.
func CreateDir(path string) (*Dir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if filepath.Dir(abs) == abs {
		return nil, fmt.Errorf("%s is a file system root: give a directory below it", path)
	}
	fi, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := filepath.EvalSymlinks(abs)
		return nil, fmt.Errorf("%s is a symbolic link (to %s): give the directory itself", path, target)
	case !fi.IsDir():
		return nil, fmt.Errorf("%s is %s, not a directory", path, input.What(fi.Mode()))
	}
	for range 100 {
		tmp := tempName(abs)
		err := os.Mkdir(tmp, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cannot create a directory beside %s: %w", path, cause(err))
		}
		return &Dir{path: abs, tmp: tmp}, nil
	}
	return nil, fmt.Errorf("%s: no free temporary name beside it", path)
}

// Path is where to build the directory's content.
func (d *Dir) Path() string { return d.tmp }

// Commit puts the built directory at the path: renamed into place when
// nothing is there, else exchanged with what is there in one step
// (renameat2 RENAME_EXCHANGE) and the old directory removed, links in it
// unlinked, not followed. Where the file system cannot exchange, the old
// directory is renamed aside first.
func (d *Dir) Commit() error {
	if d.done {
		return nil
	}
	d.done = true
	err := os.Rename(d.tmp, d.path)
	if err == nil {
		return nil
	}
	if _, lerr := os.Lstat(d.path); lerr != nil {
		os.RemoveAll(d.tmp)
		return err
	}
	err = unix.Renameat2(unix.AT_FDCWD, d.tmp, unix.AT_FDCWD, d.path, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		old := tempName(d.path)
		if err = os.Rename(d.path, old); err == nil {
			if err = os.Rename(d.tmp, d.path); err != nil {
				os.Rename(old, d.path)
			} else {
				d.tmp = old
			}
		}
	}
	// d.tmp now holds the old directory on success, the new one on failure:
	// either way it goes.
	os.RemoveAll(d.tmp)
	return err
}

// Abort removes what was built; the path keeps what it had. After Commit
// it does nothing.
func (d *Dir) Abort() {
	if d.done {
		return
	}
	d.done = true
	os.RemoveAll(d.tmp)
}
