package patchset

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func addSeeds(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("..", "..", "shared", "seeds", "000_9ec8939dfa491181.txt")); err == nil {
		f.Add(b)
	}
	ms, _ := filepath.Glob(filepath.Join("testdata", "*.patch"))
	for _, m := range ms {
		if b, err := os.ReadFile(m); err == nil {
			f.Add(b)
		}
	}
}

// FuzzParse: any bytes either parse or fail with a located *Error; never a
// panic, and every parsed target stays inside the root.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.patch", data)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("unlocated error %v", err)
			}
			return
		}
		for _, tg := range p.Targets {
			if checkRel(tg.Path) != nil || tg.Diff == nil {
				t.Fatalf("bad target %+v", tg)
			}
		}
		// Re-pinning rewrites only hash lines: the result must parse again.
		pins := map[string][2]string{}
		for _, tg := range p.Targets {
			pins[tg.Path] = [2]string{sha([]byte("a")), sha([]byte("b"))}
		}
		if _, err := Parse("again", rewrite(p, pins, nil)); err != nil {
			t.Fatalf("rewritten patch does not parse: %v", err)
		}
	})
}

func FuzzParseRecord(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "pip-23.0.1.RECORD")); err == nil {
		f.Add(b) // a slice of a real wheel's RECORD
	}
	f.Add([]byte("vllm/x.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,3\nvllm/__pycache__/x.pyc,,\n"))
	f.Add([]byte("a,\"b\nc\",1\n\"unterminated"))
	f.Add([]byte("ok.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,3\nbad.py,sha256=tooshort,1\nq.py,\"x\"y,1\nlast.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, bad := ParseRecord(data)
		for _, h := range rows {
			if !hexRe.MatchString(h) {
				t.Fatalf("bad hash %q", h)
			}
		}
		// Malformed rows are named by line, in order, within the input.
		lines := bytes.Count(data, []byte{'\n'}) + 1
		for i, l := range bad {
			if l < 1 || l > lines || (i > 0 && l <= bad[i-1]) {
				t.Fatalf("bad row lines %v (input has %d lines)", bad, lines)
			}
		}
	})
}

func FuzzParseSeriesFile(f *testing.F) {
	f.Add([]byte("# c\n01.patch -p1\n02.patch\n../x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		names, _ := ParseSeriesFile(data)
		for _, n := range names {
			if checkRel(n) != nil {
				t.Fatalf("series name %q escapes the directory", n)
			}
		}
	})
}

// fuzzSandbox is newSandbox with the files hostile journals reach for: a
// staged copy of a.py as bringup names it, a "staged copy" of b.py that is
// a symlink out, a target that is a symlink out, and a staged-looking file
// outside the root.
func fuzzSandbox(t testing.TB) *sandbox {
	s := newSandbox(t)
	s.write(t, "root/pkg/"+tmpA, aPyNew)
	s.write(t, "root/evil.txt", "evil\n")
	s.write(t, "outside/.precious.txt.bringup-0123456789ab.tmp", "evil\n")
	os.MkdirAll(filepath.Join(s.root, "pkg", "__pycache__"), 0o755)
	s.write(t, "root/pkg/__pycache__/a.cpython-312.pyc", "stale")
	for link, dest := range map[string]string{
		"root/pkg/" + tmpB: "../../outside/precious.txt",
		"root/pkg/c.py":    "../../outside/precious.txt",
	} {
		if err := os.Symlink(dest, filepath.Join(s.dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// FuzzJournal: whatever the journal says, recovery and status never panic
// and never touch anything outside the root (a sentinel directory beside
// it); a journal recovery refuses changes nothing at all, and one it
// accepts changes only the journal and the targets, staged copies and
// bytecode it names.
func FuzzJournal(f *testing.F) {
	e := func(p, tmp, from, to string) [4]string { return [4]string{p, tmp, from, to} }
	for _, seed := range []string{
		// What bringup writes: roll back, roll forward.
		journalText("staging", e("pkg/a.py", tmpA, shaS(aPy), shaS(aPyNew))),
		journalText("committed", e("pkg/a.py", tmpA, shaS(aPy), shaS(aPyNew))),
		journalText("committed", e("pkg/a.py", tmpA, shaS(aPy), shaS(aPyNew)), e("pkg/b.py", tmpB, shaS(bPy), shaS(precious))),
		// The issue's, and its relatives.
		journalText("staging", e("pkg/a.py", "../../outside/precious.txt", "x", "y")),
		journalText("committed", e("../outside/precious.txt", "../root/evil.txt", shaS(precious), shaS("evil\n"))),
		journalText("committed", e("link/precious.txt", ".precious.txt.bringup-0123456789ab.tmp", shaS(precious), shaS("evil\n"))),
		journalText("staging", e("link/precious.txt", ".precious.txt.bringup-0123456789ab.tmp", shaS(precious), shaS("evil\n"))),
		journalText("committed", e("pkg/b.py", tmpB, shaS(bPy), shaS(precious))),
		journalText("committed", e("pkg/c.py", ".c.py.bringup-0123456789ab.tmp", shaS(precious), shaS("evil\n"))),
		journalText("staging", e("pkg/a.py", "b.py", shaS(aPy), shaS(aPyNew))),
		journalText("staging", e("/etc/passwd", tmpA, shaS(aPy), shaS(aPyNew))),
		journalText("committed", e("pkg/a.py", tmpA, shaS(aPy), shaS(aPyNew)), e("pkg/a.py", tmpA, shaS(aPy), shaS(aPyNew))),
		`{"schema":"bringup.patch-journal/v1","op":"apply","state":"staging","entries":[]}`,
		`{"schema":"bringup.patch-journal/v1","op":"apply","state":"committed","entries":[{"path":"pkg/a.py","path":"../outside/precious.txt"}]}`,
		`[]`, `null`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := fuzzSandbox(t)
		os.WriteFile(filepath.Join(s.root, journalName), data, 0o644)
		before := s.snapshot(t)
		msg, err := Recover(s.root)
		after := s.snapshot(t)
		changed := diffSnapshots(before, after)
		for _, d := range changed {
			if !strings.Contains(d, " root/") {
				t.Fatalf("recovery changed something outside the root: %s (said %q, %v)", d, msg, err)
			}
		}
		if err != nil && len(changed) > 0 {
			t.Fatalf("recovery refused the journal (%v) but changed %v", err, changed)
		}
		if err == nil && len(changed) > 0 {
			var j journal
			if json.Unmarshal(data, &j) != nil {
				t.Fatalf("recovery acted on a journal that is not JSON: %v", changed)
			}
			named := map[string]bool{"root/" + journalName: true}
			for _, e := range j.Entries {
				named["root/"+e.Path] = true
				named["root/"+path.Join(path.Dir(e.Path), e.Temp)] = true
				named["root/"+path.Join(path.Dir(e.Path), "__pycache__", strings.TrimSuffix(path.Base(e.Path), ".py")+".cpython-312.pyc")] = true
			}
			for _, d := range changed {
				p := strings.Fields(d)[1]
				if !named[strings.TrimSuffix(p, ":")] {
					t.Fatalf("recovery changed %s, which the journal does not name", d)
				}
			}
		}
		// Status reads the journal again (now gone, or refused) and acts on nothing.
		if _, err := Status(s.root, &Series{}); err != nil {
			t.Fatal(err)
		}
		if d := diffSnapshots(after, s.snapshot(t)); len(d) > 0 {
			t.Fatalf("status changed %v", d)
		}
		if b, _ := os.ReadFile(s.precious); string(b) != precious {
			t.Fatalf("the sentinel outside the root is %q", b)
		}
	})
}

// TestFuzzSandboxAccepts: FuzzJournal's sandbox takes bringup's own
// journals, so the fuzzer explores the accepting side too.
func TestFuzzSandboxAccepts(t *testing.T) {
	for state, want := range map[string]string{"staging": aPy, "committed": aPyNew} {
		s := fuzzSandbox(t)
		s.journal(t, journalText(state, [4]string{"pkg/a.py", tmpA, shaS(aPy), shaS(aPyNew)}))
		if _, err := Recover(s.root); err != nil {
			t.Fatalf("%s: %v", state, err)
		}
		if b, _ := os.ReadFile(filepath.Join(s.root, "pkg", "a.py")); string(b) != want {
			t.Fatalf("%s: a.py %q", state, b)
		}
	}
}
