package watch

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// runDir is a run directory opened once. Every file bringup writes in it
// is made relative to that descriptor and never through a symlink someone
// placed there: new files are created exclusively (O_EXCL|O_NOFOLLOW),
// and files that are rewritten (run.json, stack captures) are replaced
// atomically, a temp file renamed over the name, which replaces a symlink
// rather than writing where it points. The directory's own path is
// followed as the user gave it.
type runDir struct {
	path    string // absolute
	fd      int
	reserve bool // reserveName is held
}

// reserveName is a small file held in the run directory while the boot
// runs and removed when it ends (or when run.json cannot otherwise be
// written): on a full disk the last run.json still finds room.
const reserveName = ".bringup-reserve"

// reserveSize is what the reserve holds; a run.json larger than this on
// a full disk goes to the store only.
const reserveSize = 64 << 10

// tempSuffix ends the name of every temp file bringup makes in a run
// directory (".run.json.<random>.tmp"), so what a killed bringup left can
// be recognised and removed.
const tempSuffix = ".tmp"

// openRunDir opens path as a run directory. With exclusive it must not
// exist yet (a fresh directory named by bringup); otherwise it is
// created when absent.
func openRunDir(path string, exclusive bool) (*runDir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if exclusive {
		err = os.Mkdir(abs, 0o755)
	} else {
		err = os.MkdirAll(abs, 0o755)
	}
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: abs, Err: err}
	}
	return &runDir{path: abs, fd: fd}, nil
}

func (d *runDir) join(name string) string { return filepath.Join(d.path, name) }

// create makes a new file; a file, directory or symlink of that name
// already there is an error and is left alone.
func (d *runDir) create(name string) (*os.File, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: d.join(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.join(name)), nil
}

// writeFile replaces name with data atomically. On a full disk it gives
// up the reserve and tries once more. A failed write leaves no temp file.
func (d *runDir) writeFile(name string, data []byte, sync bool) error {
	err := writeAt(d.fd, d.path, name, data, sync)
	if isNoSpace(err) && d.dropReserve() {
		err = writeAt(d.fd, d.path, name, data, sync)
	}
	return err
}

// writeFileIn replaces name in dir with data atomically, without
// following a symlink inside dir.
func writeFileIn(dir, name string, data []byte) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	return writeAt(fd, dir, name, data, false)
}

func writeAt(dirfd int, dir, name string, data []byte, sync bool) error {
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return fmt.Errorf("%q is not a file name", name)
	}
	tmp := "." + name + "." + randomHex(4) + tempSuffix
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return &os.PathError{Op: "create", Path: filepath.Join(dir, tmp), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir, tmp))
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if rerr := unix.Renameat(dirfd, tmp, dirfd, name); rerr != nil {
			err = &os.LinkError{Op: "rename", Old: filepath.Join(dir, tmp), New: filepath.Join(dir, name), Err: rerr}
		}
	}
	if err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
	}
	return err
}

// makeReserve puts the reserve file in place (best effort: a directory
// that cannot hold it runs without).
func (d *runDir) makeReserve() {
	fd, err := unix.Openat(d.fd, reserveName, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return
	}
	err = unix.Fallocate(fd, 0, 0, reserveSize)
	if err != nil && !isNoSpace(err) {
		// No fallocate here: write the bytes.
		_, err = unix.Write(fd, make([]byte, reserveSize))
	}
	unix.Close(fd)
	if err != nil {
		unix.Unlinkat(d.fd, reserveName, 0)
		return
	}
	d.reserve = true
}

// dropReserve removes the reserve; it reports whether there was one.
func (d *runDir) dropReserve() bool {
	if !d.reserve {
		return false
	}
	d.reserve = false
	return unix.Unlinkat(d.fd, reserveName, 0) == nil
}

func (d *runDir) close() {
	d.dropReserve()
	unix.Close(d.fd)
}

// cleanLeftovers removes what a killed bringup leaves in a run directory:
// the reserve and temp files of its own naming (never anything else).
func cleanLeftovers(dir string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n := e.Name()
		if n == reserveName || strings.HasPrefix(n, ".") && strings.HasSuffix(n, tempSuffix) && isOurTemp(n) {
			unix.Unlinkat(fd, n, 0)
		}
	}
}

// isOurTemp matches ".NAME.<8 hex>.tmp".
func isOurTemp(n string) bool {
	base := strings.TrimSuffix(n, tempSuffix)
	i := strings.LastIndexByte(base, '.')
	if i <= 1 || len(base)-i-1 != 8 {
		return false
	}
	_, err := hex.DecodeString(base[i+1:])
	return err == nil
}

func isNoSpace(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
