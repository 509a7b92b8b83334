//go:build unix

package beneath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is an open directory below which paths are resolved.
type Dir struct {
	f    *os.File
	root string // what Open was given, for messages
	rel  string // this directory relative to root; "." for root itself
}

// Open opens the directory path (following symlinks in path itself: it
// is the caller's choice) as the root below which nothing is followed.
func Open(path string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{f: os.NewFile(uintptr(fd), path), root: path, rel: "."}, nil
}

// Close closes the directory.
func (d *Dir) Close() error { return d.f.Close() }

// Rel is the directory relative to the root ("." for the root).
func (d *Dir) Rel() string { return d.rel }

// Root is the path Open was given.
func (d *Dir) Root() string { return d.root }

func (d *Dir) fd() int { return int(d.f.Fd()) }

// open resolves rel below d without following any symlink.
func (d *Dir) open(rel string, flags int, mode uint32) (int, error) {
	if err := Check(rel); err != nil {
		return -1, err
	}
	fd, err := openBeneath(d.fd(), rel, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err == nil {
		return fd, nil
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV) {
		if le := d.findLink(rel); le != nil {
			return -1, le
		}
	}
	if errors.Is(err, unix.EXDEV) {
		err = ErrNotBeneath
	}
	return -1, &fs.PathError{Op: "open", Path: d.show(rel), Err: err}
}

// show is rel as a path under the root, for messages.
func (d *Dir) show(rel string) string {
	return strings.TrimSuffix(d.root, "/") + "/" + join(d.rel, rel)
}

// findLink names the first component of rel below d that is a symlink, or
// returns nil. It only explains a failure; it decides nothing.
func (d *Dir) findLink(rel string) *LinkError {
	comps := strings.Split(rel, "/")
	cur, owned := d.fd(), false
	defer func() {
		if owned {
			unix.Close(cur)
		}
	}()
	for i, c := range comps {
		var st unix.Stat_t
		if err := unix.Fstatat(cur, c, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			le := &LinkError{Root: d.root, Path: join(d.rel, rel), Link: join(d.rel, strings.Join(comps[:i+1], "/"))}
			buf := make([]byte, 4096)
			if n, err := unix.Readlinkat(cur, c, buf); err == nil {
				le.Dest = string(buf[:n])
			}
			return le
		}
		if i == len(comps)-1 || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return nil
		}
		next, err := unix.Openat(cur, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil
		}
		if owned {
			unix.Close(cur)
		}
		cur, owned = next, true
	}
	return nil
}

// walk is the openat2 equivalent for kernels without it: one openat per
// component, each directory with O_NOFOLLOW|O_DIRECTORY, the last with
// O_NOFOLLOW (flags carries it).
func walk(dirfd int, rel string, flags int, mode uint32) (int, error) {
	comps := strings.Split(rel, "/")
	cur, owned := dirfd, false
	for _, c := range comps[:len(comps)-1] {
		next, err := unix.Openat(cur, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if owned {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur, owned = next, true
	}
	fd, err := unix.Openat(cur, comps[len(comps)-1], flags, mode)
	if owned {
		unix.Close(cur)
	}
	return fd, err
}

// OpenDir opens the directory rel below d.
func (d *Dir) OpenDir(rel string) (*Dir, error) {
	fd, err := d.open(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	return &Dir{f: os.NewFile(uintptr(fd), d.show(rel)), root: d.root, rel: join(d.rel, rel)}, nil
}

// OpenFile opens rel below d with os.OpenFile's flags; the last component
// is never followed either (O_NOFOLLOW is always added).
func (d *Dir) OpenFile(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	fd, err := d.open(rel, flag, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), d.show(rel)), nil
}

// ReadFile reads the regular file rel below d, with its mode and owner
// (the FileInfo of the open file). A FIFO or device is refused without
// blocking on it; a file larger than max bytes (max >= 0) is refused
// without reading it.
func (d *Dir) ReadFile(rel string, max int64) ([]byte, fs.FileInfo, error) {
	fd, err := d.open(rel, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, nil, &fs.PathError{Op: "stat", Path: d.show(rel), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, nil, &fs.PathError{Op: "read", Path: d.show(rel), Err: ErrNotRegular}
	}
	if max >= 0 && st.Size > max {
		unix.Close(fd)
		return nil, nil, &fs.PathError{Op: "read", Path: d.show(rel), Err: fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, st.Size, max)}
	}
	// A regular file: back to blocking reads.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, nil, err
	}
	f := os.NewFile(uintptr(fd), d.show(rel))
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	r := io.Reader(f)
	if max >= 0 {
		r = io.LimitReader(f, max+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, err
	}
	if max >= 0 && int64(len(data)) > max {
		return nil, nil, &fs.PathError{Op: "read", Path: d.show(rel), Err: fmt.Errorf("%w: it grew past %d bytes while read", ErrTooLarge, max)}
	}
	return data, info, nil
}

// Create makes a new file name in d, failing if anything (a symlink
// included) already has that name.
func (d *Dir) Create(name string, perm fs.FileMode) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	return d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}

// Rename renames oldname to newname, both in d (renameat).
func (d *Dir) Rename(oldname, newname string) error {
	if err := checkName(oldname); err != nil {
		return err
	}
	if err := checkName(newname); err != nil {
		return err
	}
	if err := unix.Renameat(d.fd(), oldname, d.fd(), newname); err != nil {
		return &os.LinkError{Op: "rename", Old: d.show(oldname), New: d.show(newname), Err: err}
	}
	return nil
}

// Remove unlinks name in d (a symlink is removed, not followed).
func (d *Dir) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd(), name, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: d.show(name), Err: err}
	}
	return nil
}

// MkdirAll makes the directories of rel below d that do not exist and
// opens the last; an existing component that is a symlink is an error.
func (d *Dir) MkdirAll(rel string, perm fs.FileMode) (*Dir, error) {
	if err := Check(rel); err != nil {
		return nil, err
	}
	cur := d
	comps := strings.Split(rel, "/")
	if rel == "." {
		comps = nil
	}
	for i, c := range comps {
		err := unix.Mkdirat(cur.fd(), c, uint32(perm.Perm()))
		if err != nil && !errors.Is(err, unix.EEXIST) {
			if cur != d {
				cur.Close()
			}
			return nil, &fs.PathError{Op: "mkdir", Path: cur.show(c), Err: err}
		}
		next, err := cur.OpenDir(c)
		if cur != d {
			cur.Close()
		}
		if err != nil {
			return nil, err
		}
		next.rel = join(d.rel, strings.Join(comps[:i+1], "/"))
		cur = next
	}
	if cur == d {
		return d.OpenDir(".")
	}
	return cur, nil
}

// Names lists the entries of d.
func (d *Dir) Names() ([]string, error) {
	f, err := d.OpenFile(".", os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// Sync fsyncs the directory (so renames and removals in it are durable).
func (d *Dir) Sync() error {
	if err := d.f.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("fsync %s: %w", d.show("."), err)
	}
	return nil
}

// Symlink makes name in d a symlink to dest (dest is not resolved).
func (d *Dir) Symlink(dest, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Symlinkat(dest, d.fd(), name); err != nil {
		return &os.LinkError{Op: "symlink", Old: dest, New: d.show(name), Err: err}
	}
	return nil
}

// RemoveAll removes name in d and, when it is a directory, everything in
// it; a symlink is removed, never followed. A missing name is no error.
func (d *Dir) RemoveAll(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	err := unix.Unlinkat(d.fd(), name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return &fs.PathError{Op: "remove", Path: d.show(name), Err: err}
	}
	sub, err := d.OpenDir(name)
	if err != nil {
		return err
	}
	names, err := sub.Names()
	for _, n := range names {
		if err == nil {
			err = sub.RemoveAll(n)
		}
	}
	sub.Close()
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd(), name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: d.show(name), Err: err}
	}
	return nil
}
