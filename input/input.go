// Package input says whether a path is something bringup may read as an
// input, and opens it: a regular file (or a symbolic link to one). A FIFO
// blocks its reader until a writer comes, a character device such as
// /dev/zero never ends, and opening some devices has effects of its own,
// so these are refused with why, before they are opened; walks of a
// directory pass over them. Standard input is read up to a cap, and what
// lies past it is reported, not read.
package input

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"unicode/utf8"
)

// ErrNotRegular is the cause of every refusal of a path that is not a
// regular file (errors.Is finds it).
var ErrNotRegular = errors.New("not a regular file")

// notRegular is ErrNotRegular with what the path is instead.
type notRegular struct{ what string }

func (e *notRegular) Error() string {
	return e.what + ", not a regular file"
}

func (e *notRegular) Unwrap() error { return ErrNotRegular }

// What names a file mode that is not a regular file ("" for a regular one).
func What(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return ""
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}

// Check says why path cannot be read as an input file, without opening it:
// nil for a regular file (a symlink is followed: the user named it), the
// stat error, or a *fs.PathError wrapping ErrNotRegular with what it is.
func Check(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return checkMode(path, fi.Mode())
}

func checkMode(path string, m fs.FileMode) error {
	if w := What(m); w != "" {
		return &fs.PathError{Op: "open", Path: path, Err: &notRegular{w}}
	}
	return nil
}

// Open opens path for reading if it is a regular file, else says why not
// (as Check). The check runs before the open, so a FIFO or a device is
// never opened; the open itself does not wait (O_NONBLOCK) and the opened
// file is checked again, so a FIFO put in the file's place in between is
// refused too instead of blocking.
func Open(path string) (*os.File, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := checkMode(path, fi.Mode()); err != nil {
		f.Close()
		return nil, err
	}
	// O_NONBLOCK means nothing to a regular file's reads.
	return f, nil
}

// Walkable says whether an entry met walking a directory is a file to
// read: a regular file, or a symbolic link to one. FIFOs, devices,
// sockets and links to anything else are passed over.
func Walkable(path string, d fs.DirEntry) bool {
	if d.Type().IsRegular() {
		return true
	}
	if d.Type()&fs.ModeSymlink == 0 {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// StdinCap is how much of standard input bringup reads: a dump or a log
// piped in is far smaller, and a stream that never ends (/dev/zero, yes)
// must not keep bringup reading forever. A larger input is read from a
// file, which has no cap.
const StdinCap = 256 << 20

// Capped reads at most N bytes of R and notes whether more was there.
type Capped struct {
	R io.Reader
	N int64
	n int64
	// truncated: at least one byte past N exists (and was not read on).
	truncated bool
}

// Cap reads r up to n bytes.
func Cap(r io.Reader, n int64) *Capped { return &Capped{R: r, N: n} }

func (c *Capped) Read(p []byte) (int, error) {
	if c.n >= c.N {
		if !c.truncated {
			// One byte tells whether the input went on.
			var b [1]byte
			if k, _ := io.ReadFull(c.R, b[:]); k > 0 {
				c.truncated = true
			}
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.N-c.n {
		p = p[:c.N-c.n]
	}
	k, err := c.R.Read(p)
	c.n += int64(k)
	return k, err
}

// Truncated says the input went on past the cap (known once Read returned
// io.EOF).
func (c *Capped) Truncated() bool { return c.truncated }

// TruncatedNote is the sentence for an input cut at the cap.
func (c *Capped) TruncatedNote(name string) string {
	return fmt.Sprintf("%s: only the first %d MiB were read (bringup's cap for standard input); save the input to a file and name the file to read it all", name, c.N>>20)
}

// ErrNotText is what a NotTextError is (errors.Is).
var ErrNotText = errors.New("not text")

// NotTextError is a reader's refusal of an input that NotText names: not
// read on, as opposed to one that failed to read.
type NotTextError struct {
	Path string
	What string // NotText's word for it
	Want string // what the reader reads: "a stack dump"
}

func (e *NotTextError) Error() string { return e.Path + ": " + e.What + ", not " + e.Want }

func (e *NotTextError) Is(target error) bool { return target == ErrNotText }

// NotText names the content of head when it is not text a log or dump
// reader can use: "UTF-16 text …" (a byte-order mark, or every other byte
// NUL), "binary data" (NULs or control characters make up a tenth of it),
// or "" for text. Escape sequences, tabs, CR and form feeds are text.
func NotText(head []byte) string {
	if len(head) >= 2 && (head[0] == 0xff && head[1] == 0xfe || head[0] == 0xfe && head[1] == 0xff) {
		return "UTF-16 text (convert it: iconv -f UTF-16 -t UTF-8)"
	}
	if len(head) == 0 {
		return ""
	}
	var nul, ctl, oddNul, evenNul int
	for i, c := range head {
		switch {
		case c == 0:
			nul++
			if i%2 == 1 {
				oddNul++
			} else {
				evenNul++
			}
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != 0x1b && c != '\b':
			ctl++
		}
	}
	half := len(head) / 2
	if half >= 2 && (oddNul*10 >= half*9 && evenNul*10 < half || evenNul*10 >= half*9 && oddNul*10 < half) {
		return "UTF-16 text (convert it: iconv -f UTF-16 -t UTF-8)"
	}
	if (nul+ctl)*10 >= len(head) {
		return "binary data"
	}
	// Mostly invalid UTF-8 is binary too (a compressed or encrypted file
	// that happens to have few NULs).
	bad := 0
	for b := head; len(b) > 0; {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 && !(len(b) < utf8.UTFMax && !utf8.FullRune(b)) {
			bad++
		}
		b = b[size:]
	}
	if bad*4 >= len(head) {
		return "binary data"
	}
	return ""
}
