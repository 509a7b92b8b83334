package patchset

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sandbox is a root holding a small package, beside a directory that
// stands for everything outside the root, with a sentinel file in it. A
// symlink inside the root points at the outside.
//
//	dir/root/pkg/a.py, pkg/b.py       the tree a journal may name
//	dir/root/link -> ../outside       a symlinked directory inside the root
//	dir/outside/precious.txt          must never change
type sandbox struct {
	dir, root, outside, precious string
}

const (
	aPy      = "a = 1\n"
	aPyNew   = "a = 2\n"
	bPy      = "b = 1\n"
	precious = "precious\n"
	tmpA     = ".a.py.bringup-0123456789ab.tmp" // the form bringup gives pkg/a.py's staged copy
	tmpB     = ".b.py.bringup-ba9876543210.tmp"
)

func newSandbox(t testing.TB) *sandbox {
	t.Helper()
	dir := t.TempDir()
	s := &sandbox{dir: dir, root: filepath.Join(dir, "root"), outside: filepath.Join(dir, "outside")}
	s.precious = filepath.Join(s.outside, "precious.txt")
	for _, d := range []string{filepath.Join(s.root, "pkg"), s.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s.write(t, "root/pkg/a.py", aPy)
	s.write(t, "root/pkg/b.py", bPy)
	s.write(t, "outside/precious.txt", precious)
	if err := os.Symlink(filepath.Join("..", "outside"), filepath.Join(s.root, "link")); err != nil {
		t.Fatal(err)
	}
	return s
}

// write puts a file at a path relative to the sandbox.
func (s *sandbox) write(t testing.TB, rel, data string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.dir, rel), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (s *sandbox) journal(t testing.TB, text string) {
	t.Helper()
	s.write(t, "root/"+journalName, text)
}

// snapshot describes every entry of the sandbox, root and outside: type,
// link destination or content hash, and mode.
func (s *sandbox) snapshot(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.dir, p)
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "link " + l
		case st.IsDir():
			out[rel] = fmt.Sprintf("dir %v", st.Mode())
		case st.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %v %s", st.Mode(), sha(b))
		default:
			out[rel] = fmt.Sprintf("other %v", st.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffSnapshots(before, after map[string]string) []string {
	var d []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			d = append(d, "removed "+k)
		} else if w != v {
			d = append(d, fmt.Sprintf("changed %s: %s -> %s", k, v, w))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "added "+k)
		}
	}
	return d
}

func jsonQ(s string) string { b, _ := json.Marshal(s); return string(b) }

// journalText is a journal as bringup writes it, with the given entries
// (path, temp, from, to each).
func journalText(state string, entries ...[4]string) string {
	var es []string
	for _, e := range entries {
		es = append(es, fmt.Sprintf(`{"path":%s,"temp":%s,"from_sha256":%s,"to_sha256":%s}`, jsonQ(e[0]), jsonQ(e[1]), jsonQ(e[2]), jsonQ(e[3])))
	}
	return `{"schema":"bringup.patch-journal/v1","op":"apply","state":` + jsonQ(state) + `,"entries":[` + strings.Join(es, ",") + `]}`
}

func shaS(s string) string { return sha([]byte(s)) }

// hostileJournal is one journal bringup must refuse, and what it says why.
type hostileJournal struct {
	name  string
	setup func(t testing.TB, s *sandbox) // writes the journal and whatever it refers to
	why   string                         // in the message
}

func hostileJournals() []hostileJournal {
	return []hostileJournal{
		{"issue: staging, temp outside the root", func(t testing.TB, s *sandbox) {
			// The reproduction: recovery used to delete ../../outside/precious.txt.
			s.journal(t, journalText("staging", [4]string{"pkg/a.py", "../../outside/precious.txt", "x", "y"}))
		}, "temp"},
		{"issue: committed, replaces a file outside the root", func(t testing.TB, s *sandbox) {
			s.write(t, "root/evil.txt", "evil\n")
			s.journal(t, journalText("committed", [4]string{"../outside/precious.txt", "../root/evil.txt", shaS(precious), shaS("evil\n")}))
		}, "path"},
		{"committed, through a symlinked directory", func(t testing.TB, s *sandbox) {
			s.write(t, "outside/.precious.txt.bringup-0123456789ab.tmp", "evil\n")
			s.journal(t, journalText("committed", [4]string{"link/precious.txt", ".precious.txt.bringup-0123456789ab.tmp", shaS(precious), shaS("evil\n")}))
		}, "symlink"},
		{"staging, through a symlinked directory", func(t testing.TB, s *sandbox) {
			s.write(t, "outside/.precious.txt.bringup-0123456789ab.tmp", "mine\n")
			s.journal(t, journalText("staging", [4]string{"link/precious.txt", ".precious.txt.bringup-0123456789ab.tmp", shaS(precious), shaS("x")}))
		}, "symlink"},
		{"absolute path", func(t testing.TB, s *sandbox) {
			s.journal(t, journalText("staging", [4]string{s.precious, tmpA, shaS(precious), shaS("x")}))
		}, "path"},
		{"absolute temp", func(t testing.TB, s *sandbox) {
			s.journal(t, journalText("staging", [4]string{"pkg/a.py", s.precious, shaS(aPy), shaS("x")}))
		}, "temp"},
		{"staging, temp is another file of the package", func(t testing.TB, s *sandbox) {
			// Inside the root, but not a name bringup stages: rollback used to delete pkg/b.py.
			s.journal(t, journalText("staging", [4]string{"pkg/a.py", "b.py", shaS(aPy), shaS("x")}))
		}, "temp"},
		{"temp of another target", func(t testing.TB, s *sandbox) {
			s.write(t, "root/pkg/"+tmpB, aPyNew)
			s.journal(t, journalText("committed", [4]string{"pkg/a.py", tmpB, shaS(aPy), shaS(aPyNew)}))
		}, "temp"},
		{"temp in another directory", func(t testing.TB, s *sandbox) {
			os.MkdirAll(filepath.Join(s.root, "pkg", "sub"), 0o755)
			s.write(t, "root/pkg/sub/"+tmpA, aPyNew)
			s.journal(t, journalText("committed", [4]string{"pkg/a.py", "sub/" + tmpA, shaS(aPy), shaS(aPyNew)}))
		}, "temp"},
		{"committed, temp is a symlink to outside", func(t testing.TB, s *sandbox) {
			// Its content is what the journal says, read through the link:
			// finishing used to rename the link over pkg/a.py.
			os.Symlink(filepath.Join("..", "..", "outside", "precious.txt"), filepath.Join(s.root, "pkg", tmpA))
			s.journal(t, journalText("committed", [4]string{"pkg/a.py", tmpA, shaS(aPy), shaS(precious)}))
		}, "symlink"},
		{"staging, temp is a symlink", func(t testing.TB, s *sandbox) {
			os.Symlink(filepath.Join("..", "..", "outside", "precious.txt"), filepath.Join(s.root, "pkg", tmpA))
			s.journal(t, journalText("staging", [4]string{"pkg/a.py", tmpA, shaS(aPy), shaS("x")}))
		}, "symlink"},
		{"committed, target is a symlink", func(t testing.TB, s *sandbox) {
			os.Symlink(filepath.Join("..", "..", "outside", "precious.txt"), filepath.Join(s.root, "pkg", "c.py"))
			s.write(t, "root/pkg/.c.py.bringup-0123456789ab.tmp", "evil\n")
			s.journal(t, journalText("committed", [4]string{"pkg/c.py", ".c.py.bringup-0123456789ab.tmp", shaS(precious), shaS("evil\n")}))
		}, "symlink"},
		{"committed, second entry does not match: the first is not acted on either", func(t testing.TB, s *sandbox) {
			s.write(t, "root/pkg/"+tmpA, aPyNew)
			s.write(t, "root/pkg/"+tmpB, "not what the journal says\n")
			s.journal(t, journalText("committed",
				[4]string{"pkg/a.py", tmpA, shaS(aPy), shaS(aPyNew)},
				[4]string{"pkg/b.py", tmpB, shaS(bPy), shaS("b = 2\n")}))
		}, "sha256"},
		{"committed, the target is neither side", func(t testing.TB, s *sandbox) {
			s.write(t, "root/pkg/"+tmpA, aPyNew)
			s.journal(t, journalText("committed", [4]string{"pkg/a.py", tmpA, shaS("something else"), shaS(aPyNew)}))
		}, "sha256"},
		{"staging, the target is not what the journal says", func(t testing.TB, s *sandbox) {
			s.write(t, "root/pkg/"+tmpA, "half")
			s.journal(t, journalText("staging", [4]string{"pkg/a.py", tmpA, shaS("something else"), shaS(aPyNew)}))
		}, "sha256"},
		{"unknown state", func(t testing.TB, s *sandbox) {
			s.write(t, "root/pkg/"+tmpA, aPyNew)
			s.journal(t, journalText("finishing", [4]string{"pkg/a.py", tmpA, shaS(aPy), shaS(aPyNew)}))
		}, "state"},
		{"unknown op", func(t testing.TB, s *sandbox) {
			s.write(t, "root/pkg/"+tmpA, aPyNew)
			s.journal(t, strings.Replace(journalText("staging", [4]string{"pkg/a.py", tmpA, shaS(aPy), shaS(aPyNew)}), `"apply"`, `"rm -rf"`, 1))
		}, "op"},
		{"unknown schema", func(t testing.TB, s *sandbox) {
			s.write(t, "root/pkg/"+tmpA, aPyNew)
			s.journal(t, strings.Replace(journalText("staging", [4]string{"pkg/a.py", tmpA, shaS(aPy), shaS(aPyNew)}), "/v1", "/v9", 1))
		}, "schema"},
		{"no entries", func(t testing.TB, s *sandbox) {
			s.journal(t, journalText("staging"))
		}, "entries"},
		{"the same path twice", func(t testing.TB, s *sandbox) {
			s.write(t, "root/pkg/"+tmpA, aPyNew)
			e := [4]string{"pkg/a.py", tmpA, shaS(aPy), shaS(aPyNew)}
			s.journal(t, journalText("committed", e, e))
		}, "twice"},
		{"dot-dot inside the path", func(t testing.TB, s *sandbox) {
			s.journal(t, journalText("staging", [4]string{"pkg/../pkg/a.py", tmpA, shaS(aPy), shaS("x")}))
		}, "path"},
		{"backslash and NUL", func(t testing.TB, s *sandbox) {
			s.journal(t, journalText("staging", [4]string{"pkg\\..\\..\\outside\\precious.txt\x00", tmpA, shaS(aPy), shaS("x")}))
		}, "path"},
		{"escape sequences in the path", func(t testing.TB, s *sandbox) {
			name := "\x1b]0;PWNED\x07\x1b[2J.py"
			s.write(t, "root/pkg/"+name, aPy)
			s.write(t, "root/pkg/."+name+".bringup-0123456789ab.tmp", aPyNew)
			s.journal(t, journalText("committed", [4]string{"pkg/" + name, "." + name + ".bringup-0123456789ab.tmp", shaS(aPy), shaS(aPyNew)}))
		}, "path"},
		{"the target is a directory", func(t testing.TB, s *sandbox) {
			s.write(t, "root/.pkg.bringup-0123456789ab.tmp", "x")
			s.journal(t, journalText("committed", [4]string{"pkg", ".pkg.bringup-0123456789ab.tmp", shaS(""), shaS("x")}))
		}, "regular file"},
		{"not JSON", func(t testing.TB, s *sandbox) {
			s.journal(t, `{"schema":"bringup.patch-journal/v1","entries":[`)
		}, "JSON"},
		{"the journal is a symlink", func(t testing.TB, s *sandbox) {
			s.write(t, "root/pkg/"+tmpA, "half")
			s.write(t, "outside/journal.json", journalText("staging", [4]string{"pkg/a.py", tmpA, shaS(aPy), shaS(aPyNew)}))
			os.Symlink(filepath.Join("..", "outside", "journal.json"), filepath.Join(s.root, journalName))
		}, "symlink"},
		{"the journal is a directory", func(t testing.TB, s *sandbox) {
			os.Mkdir(filepath.Join(s.root, journalName), 0o755)
		}, "regular file"},
		{"the journal is larger than any bringup writes", func(t testing.TB, s *sandbox) {
			f, err := os.Create(filepath.Join(s.root, journalName))
			if err != nil {
				t.Fatal(err)
			}
			f.Truncate(maxJournal + 1) // sparse: no disk used
			f.Close()
		}, "larger"},
	}
}

// TestHostileJournalsNotActedOn: a journal that fails validation is never
// acted on: recovery returns an error naming the journal, what is wrong
// and the fix, and not one file of the sandbox changes (the journal
// included). Status reports it, without acting either.
func TestHostileJournalsNotActedOn(t *testing.T) {
	for _, h := range hostileJournals() {
		t.Run(h.name, func(t *testing.T) {
			s := newSandbox(t)
			h.setup(t, s)
			before := s.snapshot(t)
			msg, err := Recover(s.root)
			if d := diffSnapshots(before, s.snapshot(t)); len(d) > 0 {
				t.Errorf("recovery acted on a hostile journal: %v (said %q, %v)", d, msg, err)
			}
			if b, _ := os.ReadFile(s.precious); string(b) != precious {
				t.Fatalf("the file outside the root changed: %q", b)
			}
			if err == nil {
				t.Fatalf("recovery accepted it: %q", msg)
			}
			jp := filepath.Join(s.root, journalName)
			for _, want := range []string{jp, h.why, "nothing was changed", "remove it"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message lacks %q:\n%v", want, err)
				}
			}
			if strings.ContainsRune(err.Error(), 0x1b) {
				t.Errorf("raw escape sequence in the message: %q", err)
			}
			var je *JournalError
			if !errors.As(err, &je) || je.Path != jp {
				t.Errorf("not a *JournalError for %s: %#v", jp, err)
			}
			// Status reads it, reports it and acts on nothing.
			r, err := Status(s.root, &Series{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Consistent() || !strings.Contains(strings.Join(r.Problems(), "\n"), jp) {
				t.Errorf("status: %v", r.Problems())
			}
			if d := diffSnapshots(before, s.snapshot(t)); len(d) > 0 {
				t.Errorf("status acted: %v", d)
			}
		})
	}
}

// TestJournalFIFONeverBlocks: a FIFO named like the journal is refused
// without waiting for a writer.
func TestJournalFIFONeverBlocks(t *testing.T) {
	s := newSandbox(t)
	fifo := filepath.Join(s.root, journalName)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Recover(s.root); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "regular file") {
			t.Fatalf("got %v", err)
		}
	case <-time.After(30 * time.Second):
		// Unblock the reader so the test binary can go on.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("recovery blocked on a FIFO")
	}
}

// TestValidJournalsStillRecovered: the journals bringup itself leaves
// after a crash are still rolled back or forward.
func TestValidJournalsStillRecovered(t *testing.T) {
	t.Run("staging", func(t *testing.T) {
		s := newSandbox(t)
		s.write(t, "root/pkg/"+tmpA, "half writ") // a copy cut short by the crash
		s.journal(t, journalText("staging",
			[4]string{"pkg/a.py", tmpA, shaS(aPy), shaS(aPyNew)},
			[4]string{"pkg/b.py", tmpB, shaS(bPy), shaS("b = 2\n")})) // not staged yet
		msg, err := Recover(s.root)
		if err != nil || !strings.Contains(msg, "rolled back") {
			t.Fatalf("%q %v", msg, err)
		}
		for _, gone := range []string{"pkg/" + tmpA, journalName} {
			if _, err := os.Lstat(filepath.Join(s.root, gone)); !os.IsNotExist(err) {
				t.Errorf("%s left: %v", gone, err)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(s.root, "pkg", "a.py")); string(b) != aPy {
			t.Errorf("rollback changed a.py: %q", b)
		}
	})
	t.Run("committed, half renamed", func(t *testing.T) {
		s := newSandbox(t)
		s.write(t, "root/pkg/a.py", aPyNew) // renamed before the crash
		s.write(t, "root/pkg/"+tmpB, "b = 2\n")
		os.MkdirAll(filepath.Join(s.root, "pkg", "__pycache__"), 0o755)
		s.write(t, "root/pkg/__pycache__/b.cpython-312.pyc", "stale")
		s.journal(t, journalText("committed",
			[4]string{"pkg/a.py", tmpA, shaS(aPy), shaS(aPyNew)},
			[4]string{"pkg/b.py", tmpB, shaS(bPy), shaS("b = 2\n")}))
		msg, err := Recover(s.root)
		if err != nil || !strings.Contains(msg, "completed an interrupted apply") {
			t.Fatalf("%q %v", msg, err)
		}
		if b, _ := os.ReadFile(filepath.Join(s.root, "pkg", "b.py")); string(b) != "b = 2\n" {
			t.Errorf("b.py %q", b)
		}
		for _, gone := range []string{"pkg/" + tmpB, journalName, "pkg/__pycache__/b.cpython-312.pyc"} {
			if _, err := os.Lstat(filepath.Join(s.root, gone)); !os.IsNotExist(err) {
				t.Errorf("%s left: %v", gone, err)
			}
		}
	})
}

// TestApplyThroughSymlinkedDirectoryRefused: a target reached through a
// symlinked directory inside the root is refused with the file, the
// reason and the fix; nothing outside the root changes.
func TestApplyThroughSymlinkedDirectoryRefused(t *testing.T) {
	s := newSandbox(t)
	s.write(t, "outside/m.py", aPy)
	text, err := New(Header{Description: "through a link"}, []FileChange{{Path: "link/m.py", Original: []byte(aPy), Edited: []byte(aPyNew)}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse("link.patch", text)
	if err != nil {
		t.Fatal(err)
	}
	before := s.snapshot(t)
	out, err := Apply(s.root, &Series{Patches: []*Patch{p}}, Options{})
	if d := diffSnapshots(before, s.snapshot(t)); len(d) > 0 {
		t.Fatalf("apply changed %v", d)
	}
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(out.Refused, "\n")
	for _, want := range []string{"link/m.py", "link is a symlink", "--root"} {
		if !strings.Contains(got, want) {
			t.Errorf("refusal lacks %q: %q", want, got)
		}
	}
	if len(out.Changed) != 0 || out.OK {
		t.Errorf("changed %v ok %v", out.Changed, out.OK)
	}
}

// TestSymlinkedPycacheNotFollowed: removing stale bytecode never deletes
// through a __pycache__ that is a symlink out of the root; apply refuses
// instead, since the stale bytecode could not be removed.
func TestSymlinkedPycacheNotFollowed(t *testing.T) {
	s := newSandbox(t)
	os.MkdirAll(filepath.Join(s.outside, "cache"), 0o755)
	s.write(t, "outside/cache/a.cpython-312.pyc", "not bringup's to delete")
	os.Symlink(filepath.Join("..", "..", "outside", "cache"), filepath.Join(s.root, "pkg", "__pycache__"))
	text, err := New(Header{}, []FileChange{{Path: "pkg/a.py", Original: []byte(aPy), Edited: []byte(aPyNew)}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := Parse("a.patch", text)
	before := s.snapshot(t)
	out, err := Apply(s.root, &Series{Patches: []*Patch{p}}, Options{})
	if d := diffSnapshots(before, s.snapshot(t)); len(d) > 0 {
		t.Fatalf("apply changed %v", d)
	}
	if err != nil || !strings.Contains(strings.Join(out.Refused, "\n"), "pkg/__pycache__ is a symlink") {
		t.Fatalf("%v %q", err, out.Refused)
	}
}

// TestStatusNeverReadsThroughSymlinks: status does not hash a file
// reached through a symlinked directory; it says why.
func TestStatusNeverReadsThroughSymlinks(t *testing.T) {
	s := newSandbox(t)
	s.write(t, "outside/m.py", aPy)
	text, _ := New(Header{}, []FileChange{{Path: "link/m.py", Original: []byte(aPy), Edited: []byte(aPyNew)}})
	p, _ := Parse("link.patch", text)
	r, err := Status(s.root, &Series{Patches: []*Patch{p}})
	if err != nil {
		t.Fatal(err)
	}
	tg := r.Patches[0].Targets[0]
	if tg.ActualSHA256 != "" || !strings.Contains(tg.Detail, "link is a symlink") || r.Consistent() {
		t.Fatalf("%+v", tg)
	}
}

// TestOverlayNeverWritesThroughSymlinks: a symlink already in --out
// (files/ pointing elsewhere) is refused, never written through; a
// package mirror that is a symlink is replaced, its destination untouched.
func TestOverlayNeverWritesThroughSymlinks(t *testing.T) {
	s := newSandbox(t)
	text, _ := New(Header{}, []FileChange{{Path: "pkg/a.py", Original: []byte(aPy), Edited: []byte(aPyNew)}})
	p, _ := Parse("a.patch", text)
	series := &Series{Patches: []*Patch{p}}
	out := filepath.Join(s.dir, "out")
	os.MkdirAll(filepath.Join(out, "pythonpath"), 0o755)
	os.Symlink(s.outside, filepath.Join(out, "files"))
	before := s.snapshot(t)
	_, err := Overlay(s.root, series, out, "")
	if err == nil || !strings.Contains(err.Error(), "files is a symlink") || !strings.Contains(err.Error(), "remove the link") {
		t.Fatalf("got %v", err)
	}
	for _, d := range diffSnapshots(before, s.snapshot(t)) {
		if !strings.HasPrefix(d, "added out/") {
			t.Fatalf("overlay changed %s", d)
		}
	}
	if _, err := os.Lstat(filepath.Join(s.outside, "pkg")); !os.IsNotExist(err) {
		t.Fatalf("overlay wrote through out/files: %v", err)
	}
	// A mirror left as a symlink is removed as a link and rebuilt.
	os.Remove(filepath.Join(out, "files"))
	os.Symlink(s.outside, filepath.Join(out, "pythonpath", "pkg"))
	res, err := Overlay(s.root, series, out, "")
	if err != nil || len(res.Files) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "pythonpath", "pkg", "a.py")); string(b) != aPyNew {
		t.Fatalf("mirror a.py %q", b)
	}
	if st, err := os.Lstat(filepath.Join(out, "pythonpath", "pkg")); err != nil || !st.IsDir() {
		t.Fatalf("mirror pkg: %v %v", st, err)
	}
	if ents, _ := os.ReadDir(s.outside); len(ents) != 1 {
		t.Fatalf("outside now holds %v", ents)
	}
}

// TestRecordFIFONeverBlocks: a *.dist-info/RECORD that is a FIFO is
// skipped, not waited on, when status looks up what a wheel shipped.
func TestRecordFIFONeverBlocks(t *testing.T) {
	s := newSandbox(t)
	os.MkdirAll(filepath.Join(s.root, "pkg-1.0.dist-info"), 0o755)
	fifo := filepath.Join(s.root, "pkg-1.0.dist-info", "RECORD")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	text, _ := New(Header{}, []FileChange{{Path: "pkg/gone.py", Original: []byte(aPy), Edited: []byte(aPyNew)}})
	p, _ := Parse("gone.patch", text)
	done := make(chan error, 1)
	go func() {
		r, err := Status(s.root, &Series{Patches: []*Patch{p}})
		if err == nil && r.Patches[0].Targets[0].State != StateMissing {
			err = fmt.Errorf("state %s", r.Patches[0].Targets[0].State)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("status blocked on a FIFO RECORD")
	}
}
