package input

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// kinds builds one of each kind of path in a temporary directory.
func kinds(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	os.WriteFile(p("file"), []byte("text\n"), 0o644)
	os.Symlink(p("file"), p("link-to-file"))
	if err := syscall.Mkfifo(p("fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	os.Symlink(p("fifo"), p("link-to-fifo"))
	os.Mkdir(p("dir"), 0o755)
	os.Symlink(p("dir"), p("link-to-dir"))
	l, err := net.Listen("unix", p("sock"))
	if err != nil {
		t.Skipf("unix socket: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return map[string]string{
		"file": p("file"), "link-to-file": p("link-to-file"), "fifo": p("fifo"), "link-to-fifo": p("link-to-fifo"),
		"dir": p("dir"), "link-to-dir": p("link-to-dir"), "sock": p("sock"), "zero": "/dev/zero", "null": "/dev/null",
	}
}

// Only regular files (through links too) are opened; everything else is
// refused with what it is, and Open never blocks (a FIFO with no writer
// would block a plain open forever).
func TestOpenRefusesWhatIsNotAFile(t *testing.T) {
	k := kinds(t)
	want := map[string]string{
		"file": "", "link-to-file": "",
		"fifo": "a named pipe (FIFO), not a regular file", "link-to-fifo": "a named pipe (FIFO), not a regular file",
		"dir": "a directory, not a regular file", "link-to-dir": "a directory, not a regular file",
		"sock": "a socket, not a regular file",
		"zero": "a character device, not a regular file", "null": "a character device, not a regular file",
	}
	for name, path := range k {
		done := make(chan error, 1)
		go func() {
			f, err := Open(path)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			t.Fatalf("Open(%s) blocked", name)
		}
		if want[name] == "" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			if Check(path) != nil {
				t.Errorf("Check(%s): %v", name, Check(path))
			}
			continue
		}
		if !errors.Is(err, ErrNotRegular) || err.Error() != "open "+path+": "+want[name] {
			t.Errorf("%s: %v, want open %s: %s", name, err, path, want[name])
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != path {
			t.Errorf("%s: %v is not a PathError on the path", name, err)
		}
		if cerr := Check(path); cerr == nil || cerr.Error() != err.Error() {
			t.Errorf("Check(%s) = %v, Open said %v", name, cerr, err)
		}
	}
	if _, err := Open(filepath.Join(t.TempDir(), "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent: %v", err)
	}
}

// A walk keeps regular files and links to them, nothing else.
func TestWalkable(t *testing.T) {
	k := kinds(t)
	dir := filepath.Dir(k["file"])
	got := map[string]bool{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir && Walkable(p, d) {
			got[filepath.Base(p)] = true
		}
		return nil
	})
	if len(got) != 2 || !got["file"] || !got["link-to-file"] {
		t.Errorf("walkable: %v, want file and link-to-file", got)
	}
}

// Cap reads N bytes and knows whether there was more.
func TestCap(t *testing.T) {
	for _, c := range []struct {
		in        string
		n         int64
		want      string
		truncated bool
	}{
		{"hello", 10, "hello", false},
		{"hello", 5, "hello", false},
		{"hello world", 5, "hello", true},
		{"", 5, "", false},
	} {
		cr := Cap(strings.NewReader(c.in), c.n)
		b, err := io.ReadAll(cr)
		if err != nil || string(b) != c.want || cr.Truncated() != c.truncated {
			t.Errorf("Cap(%q, %d): %q, %v, truncated %v", c.in, c.n, b, err, cr.Truncated())
		}
	}
	// An endless input ends at the cap.
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip(err)
	}
	defer zero.Close()
	cr := Cap(zero, 3<<20)
	n, err := io.Copy(io.Discard, cr)
	if n != 3<<20 || err != nil || !cr.Truncated() || !strings.Contains(cr.TruncatedNote("standard input"), "only the first 3 MiB were read") {
		t.Errorf("/dev/zero: %d bytes, %v, truncated %v: %s", n, err, cr.Truncated(), cr.TruncatedNote("standard input"))
	}
}

func utf16LE(s string) []byte {
	var b []byte
	for _, c := range []byte(s) {
		b = append(b, c, 0)
	}
	return b
}

func TestNotText(t *testing.T) {
	log := "INFO 05-05 12:00:01 [engine.py:1] \x1b[32mready\x1b[0m\tdone\r\n"
	bin, _ := os.ReadFile("/proc/self/exe")
	if len(bin) > 1<<16 {
		bin = bin[:1<<16]
	}
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, ""},
		{"log with colour", []byte(strings.Repeat(log, 100)), ""},
		{"utf-8", []byte(strings.Repeat("Graph break: 日本語 ▶ é\n", 100)), ""},
		{"a few NULs", append([]byte(strings.Repeat(log, 100)), 0, 0, 0), ""},
		{"utf-16le", utf16LE(strings.Repeat(log, 10)), "UTF-16 text (convert it: iconv -f UTF-16 -t UTF-8)"},
		{"utf-16be", append([]byte{0}, utf16LE(strings.Repeat(log, 10))...), "UTF-16 text (convert it: iconv -f UTF-16 -t UTF-8)"},
		{"utf-16 bom", append([]byte{0xff, 0xfe}, utf16LE("x")...), "UTF-16 text (convert it: iconv -f UTF-16 -t UTF-8)"},
		{"zeros", make([]byte, 4096), "binary data"},
		{"an executable", bin, "binary data"},
		{"latin-1 bytes", bytes.Repeat([]byte{0xe9, 0xe8, 0xff, 0xfd}, 100), "binary data"},
	} {
		if got := NotText(c.in); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	err := error(&NotTextError{Path: "-", What: "binary data", Want: "a stack dump"})
	if !errors.Is(err, ErrNotText) || err.Error() != "-: binary data, not a stack dump" {
		t.Errorf("NotTextError: %v", err)
	}
}
