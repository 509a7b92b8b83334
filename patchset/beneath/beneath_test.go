//go:build linux

package beneath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// tree builds
//
//	dir/root/pkg/a.py
//	dir/root/pkg/sub/y.py
//	dir/root/pkg/inner -> sub                 (stays inside the root)
//	dir/root/pkg/fl.py -> ../../outside/x.py  (a symlinked final file)
//	dir/root/link -> ../outside               (a symlinked directory)
//	dir/root/fifo                             (a FIFO)
//	dir/outside/x.py
func tree(t *testing.T) (root, outside string) {
	t.Helper()
	dir := t.TempDir()
	root, outside = filepath.Join(dir, "root"), filepath.Join(dir, "outside")
	for _, d := range []string{filepath.Join(root, "pkg", "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, data := range map[string]string{"root/pkg/a.py": "a\n", "root/pkg/sub/y.py": "y\n", "outside/x.py": "outside\n"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, dest := range map[string]string{"root/pkg/inner": "sub", "root/pkg/fl.py": "../../outside/x.py", "root/link": "../outside"} {
		if err := os.Symlink(dest, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

// modes runs f with openat2 and with the openat walk.
func modes(t *testing.T, f func(t *testing.T)) {
	defer noOpenat2.Store(false)
	for _, walk := range []bool{false, true} {
		name := "openat2"
		if walk {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			noOpenat2.Store(walk)
			f(t)
			if !walk && noOpenat2.Load() {
				t.Log("this kernel has no usable openat2: both runs used the walk")
			}
		})
	}
}

func open(t *testing.T, root string) *Dir {
	t.Helper()
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestRead(t *testing.T) {
	modes(t, func(t *testing.T) {
		root, _ := tree(t)
		d := open(t, root)
		data, info, err := d.ReadFile("pkg/a.py", -1)
		if err != nil || string(data) != "a\n" || !info.Mode().IsRegular() {
			t.Fatalf("%q %v %v", data, info, err)
		}
		sub, err := d.OpenDir("pkg")
		if err != nil || sub.Rel() != "pkg" {
			t.Fatal(err)
		}
		defer sub.Close()
		if data, _, err := sub.ReadFile("sub/y.py", 10); err != nil || string(data) != "y\n" {
			t.Fatalf("%q %v", data, err)
		}
		names, err := sub.Names()
		sort.Strings(names)
		if err != nil || strings.Join(names, " ") != "a.py fl.py inner sub" {
			t.Fatalf("%v %v", names, err)
		}
	})
}

func TestSymlinksRefused(t *testing.T) {
	modes(t, func(t *testing.T) {
		root, _ := tree(t)
		d := open(t, root)
		for _, c := range []struct{ rel, link, dest string }{
			{"link/x.py", "link", "../outside"},              // a symlinked directory pointing outside
			{"link", "link", "../outside"},                   // the directory itself
			{"pkg/fl.py", "pkg/fl.py", "../../outside/x.py"}, // a symlinked final file
			{"pkg/inner/y.py", "pkg/inner", "sub"},           // even one that stays inside
		} {
			_, _, err := d.ReadFile(c.rel, -1)
			var le *LinkError
			if !errors.As(err, &le) || !errors.Is(err, ErrSymlink) || le.Link != c.link || le.Dest != c.dest || le.Path != c.rel {
				t.Errorf("ReadFile(%s): %#v", c.rel, err)
			}
			if _, err := d.OpenDir(c.rel); !errors.Is(err, ErrSymlink) {
				t.Errorf("OpenDir(%s): %v", c.rel, err)
			}
		}
		if _, err := d.OpenDir("link"); err == nil || err.Error() != "link is a symlink (to ../outside)" {
			t.Errorf("message: %v", err)
		}
		_, _, err := d.ReadFile("link/x.py", -1)
		if err == nil || err.Error() != "link/x.py: link is a symlink (to ../outside)" {
			t.Errorf("message: %v", err)
		}
	})
}

func TestNotBeneathRefused(t *testing.T) {
	modes(t, func(t *testing.T) {
		root, _ := tree(t)
		d := open(t, root)
		for _, rel := range []string{"..", "../outside/x.py", "pkg/../../outside/x.py", "pkg/../pkg/a.py", "./pkg/a.py",
			"/etc/passwd", root + "/pkg/a.py", "", "pkg//a.py", "pkg/a.py/", "pkg/a.py\x00"} {
			if _, _, err := d.ReadFile(rel, -1); !errors.Is(err, ErrNotBeneath) {
				t.Errorf("ReadFile(%q): %v", rel, err)
			}
			if _, err := d.OpenFile(rel, os.O_WRONLY|os.O_CREATE, 0o644); !errors.Is(err, ErrNotBeneath) {
				t.Errorf("OpenFile(%q): %v", rel, err)
			}
		}
		for _, name := range []string{"..", "pkg/a.py", ".", "../x"} {
			if err := d.Remove(name); !errors.Is(err, ErrNotBeneath) {
				t.Errorf("Remove(%q): %v", name, err)
			}
			if err := d.Rename("pkg", name); !errors.Is(err, ErrNotBeneath) {
				t.Errorf("Rename(pkg, %q): %v", name, err)
			}
			if _, err := d.Create(name, 0o644); !errors.Is(err, ErrNotBeneath) {
				t.Errorf("Create(%q): %v", name, err)
			}
		}
	})
}

func TestWritesNeverLeaveTheRoot(t *testing.T) {
	modes(t, func(t *testing.T) {
		root, outside := tree(t)
		d := open(t, root)
		if f, err := d.OpenFile("link/new.txt", os.O_WRONLY|os.O_CREATE, 0o644); !errors.Is(err, ErrSymlink) {
			f.Close()
			t.Errorf("create through a symlinked directory: %v", err)
		}
		if f, err := d.OpenFile("pkg/fl.py", os.O_WRONLY|os.O_TRUNC, 0); !errors.Is(err, ErrSymlink) {
			f.Close()
			t.Errorf("truncate through a symlinked file: %v", err)
		}
		if _, err := d.MkdirAll("link/made/here", 0o755); !errors.Is(err, ErrSymlink) {
			t.Errorf("MkdirAll through a symlink: %v", err)
		}
		pkg, err := d.OpenDir("pkg")
		if err != nil {
			t.Fatal(err)
		}
		defer pkg.Close()
		// fl.py is removed as a link; its destination stays.
		if err := pkg.Remove("fl.py"); err != nil {
			t.Fatal(err)
		}
		ents, _ := os.ReadDir(outside)
		if len(ents) != 1 || ents[0].Name() != "x.py" {
			t.Fatalf("outside holds %v", ents)
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "x.py")); string(b) != "outside\n" {
			t.Fatalf("x.py %q", b)
		}
	})
}

// TestSwappedComponent: once a directory is open, swapping its path for a
// symlink to outside redirects none of the creates, renames and removals
// done through it.
func TestSwappedComponent(t *testing.T) {
	modes(t, func(t *testing.T) {
		root, outside := tree(t)
		d := open(t, root)
		pkg, err := d.OpenDir("pkg")
		if err != nil {
			t.Fatal(err)
		}
		defer pkg.Close()
		os.WriteFile(filepath.Join(outside, "a.py"), []byte("outside a\n"), 0o644)
		if err := os.Rename(filepath.Join(root, "pkg"), filepath.Join(root, "pkg.real")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../outside", filepath.Join(root, "pkg")); err != nil {
			t.Fatal(err)
		}
		f, err := pkg.Create(".a.py.tmp", 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("new a\n")
		f.Close()
		if err := pkg.Rename(".a.py.tmp", "a.py"); err != nil {
			t.Fatal(err)
		}
		if err := pkg.Remove("sub/y.py"); !errors.Is(err, ErrNotBeneath) {
			t.Fatalf("Remove of a path: %v", err)
		}
		if err := pkg.Sync(); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "pkg.real", "a.py")); string(b) != "new a\n" {
			t.Errorf("the rename did not land in the directory that was opened: %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "a.py")); string(b) != "outside a\n" {
			t.Errorf("the rename went outside: %q", b)
		}
		// Opening by path again sees the symlink.
		if _, err := d.OpenDir("pkg"); !errors.Is(err, ErrSymlink) {
			t.Errorf("reopen: %v", err)
		}
	})
}

func TestReadFileRefusesFIFOAndLarge(t *testing.T) {
	modes(t, func(t *testing.T) {
		root, _ := tree(t)
		d := open(t, root)
		// Returns at once: opened non-blocking, then refused as not regular.
		if _, _, err := d.ReadFile("fifo", -1); !errors.Is(err, ErrNotRegular) {
			t.Errorf("fifo: %v", err)
		}
		if _, _, err := d.ReadFile("pkg", -1); !errors.Is(err, ErrNotRegular) {
			t.Errorf("directory: %v", err)
		}
		if _, _, err := d.ReadFile("pkg/a.py", 1); !errors.Is(err, ErrTooLarge) {
			t.Errorf("large: %v", err)
		}
		if _, _, err := d.ReadFile("pkg/none.py", -1); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("missing: %v", err)
		}
	})
}

func TestMkdirAll(t *testing.T) {
	modes(t, func(t *testing.T) {
		root, _ := tree(t)
		d := open(t, root)
		m, err := d.MkdirAll("pkg/new/deeper", 0o755)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if m.Rel() != "pkg/new/deeper" {
			t.Errorf("rel %q", m.Rel())
		}
		if st, err := os.Lstat(filepath.Join(root, "pkg", "new", "deeper")); err != nil || !st.IsDir() {
			t.Fatal(err)
		}
		again, err := d.MkdirAll("pkg/new/deeper", 0o755)
		if err != nil {
			t.Fatal(err)
		}
		again.Close()
		if _, err := d.MkdirAll("pkg/inner/x", 0o755); !errors.Is(err, ErrSymlink) {
			t.Errorf("through pkg/inner: %v", err)
		}
	})
}

// A link's name and destination are anyone's: control characters in them
// are quoted, never printed raw.
func TestLinkErrorQuotesControlCharacters(t *testing.T) {
	root, _ := tree(t)
	if err := os.Symlink("\x1b]0;PWNED\x07\x1b[2J", filepath.Join(root, "esc")); err != nil {
		t.Fatal(err)
	}
	d := open(t, root)
	_, _, err := d.ReadFile("esc", -1)
	if err == nil || strings.ContainsRune(err.Error(), 0x1b) || !strings.Contains(err.Error(), `esc is a symlink (to "\x1b]0;PWNED\a\x1b[2J")`) {
		t.Fatalf("%q", err)
	}
}
