package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// noTemporaries fails when a temporary is left in dir.
func noTemporaries(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".bringup-") {
			t.Errorf("temporary %s left behind", e.Name())
		}
	}
}

// A file is written beside the path and renamed over it: a link at the
// path is replaced, its target untouched; Abort keeps the old content.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	for _, setup := range []string{"absent", "file", "link", "dangling link"} {
		p := filepath.Join(dir, "out-"+strings.ReplaceAll(setup, " ", "-"))
		switch setup {
		case "file":
			os.WriteFile(p, []byte("old"), 0o644)
		case "link":
			os.Symlink(victim, p)
		case "dangling link":
			os.Symlink(filepath.Join(dir, "nowhere"), p)
		}
		f, err := Create(p)
		if err != nil {
			t.Fatalf("%s: %v", setup, err)
		}
		f.WriteString("new")
		if setup == "file" && read(t, p) != "old" {
			t.Error("the old file changed before Commit")
		}
		if err := f.Commit(); err != nil {
			t.Fatalf("%s: %v", setup, err)
		}
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() || read(t, p) != "new" {
			t.Errorf("%s: %v %v", setup, fi.Mode(), err)
		}
		if f.Commit() != nil {
			t.Error("a second Commit failed")
		}
		f.Abort() // after Commit: nothing
		if read(t, p) != "new" {
			t.Errorf("%s: Abort after Commit changed the file", setup)
		}
	}
	if read(t, victim) != "precious" {
		t.Error("a link's target was written")
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); err == nil {
		t.Error("a dangling link's target was created")
	}

	p := filepath.Join(dir, "kept")
	os.WriteFile(p, []byte("old"), 0o644)
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("half a rep")
	f.Abort()
	if read(t, p) != "old" {
		t.Error("Abort did not keep the old content")
	}
	noTemporaries(t, dir)

	// A directory at the path is refused, a device written to as it is.
	if _, err := Create(dir); err == nil || !strings.Contains(err.Error(), "a directory") {
		t.Errorf("a directory: %v", err)
	}
	f, err = Create("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("gone")
	if err := f.Commit(); err != nil {
		t.Errorf("/dev/null: %v", err)
	}
	if fi, err := os.Lstat("/dev/null"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a device: %v %v", fi.Mode(), err)
	}
	// A FIFO too (a shell's >(…)); its reader gets the bytes.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	got := make(chan string)
	go func() { b, _ := os.ReadFile(fifo); got <- string(b) }()
	f, err = Create(fifo)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("through the pipe")
	f.Commit()
	if s := <-got; s != "through the pipe" {
		t.Errorf("FIFO reader got %q", s)
	}
	// A missing directory says the path, not the temporary's name.
	if _, err := Create(filepath.Join(dir, "no", "such")); err == nil || strings.Contains(err.Error(), ".bringup-") || !strings.Contains(err.Error(), filepath.Join(dir, "no", "such")) {
		t.Errorf("missing directory: %v", err)
	}
}

// A directory is built beside the path and replaces it whole: the old
// entries are gone, links in it were not followed, the link's target is
// intact; a link as the path itself is refused.
func TestCreateDir(t *testing.T) {
	root := t.TempDir()
	victim := filepath.Join(root, "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	victimDir := filepath.Join(root, "victim-dir")
	os.Mkdir(victimDir, 0o755)
	os.WriteFile(filepath.Join(victimDir, "keep"), []byte("keep"), 0o644)

	report := filepath.Join(root, "report")
	build := func() {
		t.Helper()
		d, err := CreateDir(report)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(d.Path(), root+string(filepath.Separator)) || filepath.Dir(d.Path()) != root {
			t.Fatalf("built at %s, not beside %s", d.Path(), report)
		}
		f, err := CreateNew(filepath.Join(d.Path(), "index.html"))
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("new")
		f.Close()
		if err := d.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	build() // absent
	if read(t, filepath.Join(report, "index.html")) != "new" {
		t.Fatal("first build")
	}
	fi, _ := os.Stat(report)
	if fi.Mode().Perm() != 0o755&^umask(t) {
		t.Errorf("report mode %v", fi.Mode().Perm())
	}
	// Plant links and a stale page in the old report.
	os.Remove(filepath.Join(report, "index.html"))
	os.Symlink(victim, filepath.Join(report, "index.html"))
	os.Symlink(victimDir, filepath.Join(report, "units"))
	os.WriteFile(filepath.Join(report, "stale.html"), []byte("old"), 0o644)
	build()
	if fi, err := os.Lstat(filepath.Join(report, "index.html")); err != nil || !fi.Mode().IsRegular() || read(t, filepath.Join(report, "index.html")) != "new" {
		t.Errorf("index: %v %v", fi.Mode(), err)
	}
	for _, gone := range []string{"stale.html", "units"} {
		if _, err := os.Lstat(filepath.Join(report, gone)); err == nil {
			t.Errorf("%s of the old report stayed", gone)
		}
	}
	if read(t, victim) != "precious" || read(t, filepath.Join(victimDir, "keep")) != "keep" {
		t.Error("a link's target was written or removed")
	}
	noTemporaries(t, root)

	// Abort leaves the old report as it was.
	d, err := CreateDir(report)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d.Path(), "index.html"), []byte("unfinished"), 0o644)
	d.Abort()
	if read(t, filepath.Join(report, "index.html")) != "new" {
		t.Error("Abort changed the report")
	}
	noTemporaries(t, root)

	link := filepath.Join(root, "link")
	os.Symlink(victimDir, link)
	if _, err := CreateDir(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a link as the directory: %v", err)
	}
	if _, err := CreateDir(victim); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file as the directory: %v", err)
	}
	if _, err := CreateDir("/"); err == nil {
		t.Error("/ accepted")
	}
	noTemporaries(t, root)
}

// umask is the process's umask (read by setting it back at once).
func umask(t *testing.T) os.FileMode {
	m := syscall.Umask(0o022)
	syscall.Umask(m)
	return os.FileMode(m)
}
