package patchset

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// copyTree copies testdata/root into a fresh directory.
func copyTree(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "root")
	err := filepath.WalkDir(filepath.Join("testdata", "root"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join("testdata", "root"), p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestFixtures: each fixture patch (free-form header, two targets, no final
// newline, CRLF) applies to the fixture tree, reads as applied, and reverts
// byte-exact.
func TestFixtures(t *testing.T) {
	for name, targets := range map[string]int{"freeform.patch": 1, "multi-target.patch": 2, "no-newline.patch": 1, "crlf.patch": 1} {
		t.Run(name, func(t *testing.T) {
			root := copyTree(t)
			s, err := Load([]string{filepath.Join("testdata", name)})
			if err != nil || len(s.Invalid) > 0 {
				t.Fatalf("%v %v", err, s.Invalid)
			}
			p := s.Patches[0]
			if len(p.Targets) != targets || len(p.Warnings) > 0 {
				t.Fatalf("targets %d warnings %v", len(p.Targets), p.Warnings)
			}
			before := map[string][]byte{}
			for _, tg := range p.Targets {
				before[tg.Path], _ = os.ReadFile(filepath.Join(root, tg.Path))
				if !tg.Pinned() {
					t.Fatalf("%s not pinned", tg.Path)
				}
			}
			out, err := Apply(root, s, Options{})
			if err != nil || len(out.Refused) > 0 || len(out.Changed) != targets || !out.AllApplied() {
				t.Fatalf("apply: %v %v", err, out.Refused)
			}
			for _, tg := range p.Targets {
				b, _ := os.ReadFile(filepath.Join(root, tg.Path))
				if sha(b) != tg.PatchedSHA256 {
					t.Fatalf("%s: not the patched hash", tg.Path)
				}
			}
			if out, err := Revert(root, s, Options{}); err != nil || len(out.Refused) > 0 {
				t.Fatalf("revert: %v %v", err, out.Refused)
			}
			for path, want := range before {
				if b, _ := os.ReadFile(filepath.Join(root, path)); !bytes.Equal(b, want) {
					t.Fatalf("%s: revert is not byte-exact", path)
				}
			}
		})
	}
	p, _ := ParseFile(filepath.Join("testdata", "freeform.patch"))
	if p.Status != "wip" || p.Env[0].Name != "PKG_K" || p.Env[0].Value != "1" {
		t.Fatalf("free-form header: %q %+v", p.Status, p.Env)
	}
}
