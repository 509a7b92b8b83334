// Package beneath reads and changes files below a directory without ever
// following a symbolic link or leaving it.
//
// A Dir is an open directory. Every path given to it is relative to it,
// slash-separated and clean ("pkg/mod.py"; never "", "/x", "..", "a//b"),
// and is resolved component by component from the directory's descriptor:
// with openat2(2) and RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where the kernel
// has it, else by an openat(2) walk with O_NOFOLLOW|O_DIRECTORY that does
// the same. A symlink anywhere on the way, the last component included,
// is an error (*LinkError, errors.Is ErrSymlink), never followed.
// Renames, removals and creations name a single component of an open Dir
// (renameat, unlinkat, openat), so swapping a directory on the path for a
// symlink after the Dir was opened cannot redirect them.
//
// The directory a Dir is first opened at (Open) is the caller's choice and
// may itself be reached through symlinks; only what lies below it is
// guarded.
package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrSymlink is what a *LinkError is: a symlink below the directory.
var ErrSymlink = errors.New("a symlink below the root")

// ErrNotBeneath is a path that is not a clean relative path below the
// directory (absolute, "..", empty components, NUL).
var ErrNotBeneath = errors.New("not a clean relative path below the root")

// ErrNotRegular is a FIFO, device, socket or directory where a regular
// file is read.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is a file larger than the caller's limit.
var ErrTooLarge = errors.New("larger than expected")

// LinkError says which component of a path is a symlink.
type LinkError struct {
	Root string // the directory Open was given
	Path string // the path asked for, relative to Root
	Link string // the component that is a symlink, relative to Root
	Dest string // where it points ("" when it could not be read)
}

func (e *LinkError) Error() string {
	if e.Link == e.Path {
		return e.Reason()
	}
	return e.Path + ": " + e.Reason()
}

// Reason is the message without the path asked for: "pkg is a symlink
// (to ../elsewhere)".
func (e *LinkError) Reason() string {
	if e.Dest == "" {
		return printable(e.Link) + " is a symlink"
	}
	return fmt.Sprintf("%s is a symlink (to %s)", printable(e.Link), printable(e.Dest))
}

// printable is s, or s quoted when it holds a control character or
// invalid UTF-8: file names and link destinations are anyone's, and must
// not reach a terminal as escape sequences.
func printable(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) {
		return strconv.Quote(s)
	}
	return s
}

// Is makes errors.Is(err, ErrSymlink) true.
func (e *LinkError) Is(target error) bool { return target == ErrSymlink }

// Check reports whether rel is a path a Dir accepts: relative, clean, no
// "." or ".." component, no NUL. "." alone names the directory itself.
func Check(rel string) error {
	if rel == "." {
		return nil
	}
	if rel == "" || strings.HasPrefix(rel, "/") || strings.ContainsRune(rel, 0) || path.Clean(rel) != rel {
		return &fs.PathError{Op: "resolve", Path: rel, Err: ErrNotBeneath}
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "." || c == ".." {
			return &fs.PathError{Op: "resolve", Path: rel, Err: ErrNotBeneath}
		}
	}
	return nil
}

// checkName is Check for a single component.
func checkName(name string) error {
	if err := Check(name); err != nil {
		return err
	}
	if name == "." || strings.Contains(name, "/") {
		return &fs.PathError{Op: "resolve", Path: name, Err: fmt.Errorf("%w: one file name expected", ErrNotBeneath)}
	}
	return nil
}

// join names rel inside the directory d stands for, relative to the root.
func join(dir, rel string) string {
	if dir == "." {
		return rel
	}
	return dir + "/" + rel
}
