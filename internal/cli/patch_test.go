package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPatchCommands drives the whole cycle through the CLI: new, status,
// apply, status, drift, revert — checking exit codes and the JSON contract.
func TestPatchCommands(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "site-packages")
	patches := filepath.Join(dir, "patches")
	os.MkdirAll(filepath.Join(root, "pkg"), 0o755)
	os.MkdirAll(patches, 0o755)
	orig := "import os\n\n\ndef compile_model(fn):\n    return torch.compile(fn, fullgraph=True)\n"
	edited := "import os\n\n_FULLGRAPH = os.environ.get(\"PKG_FULLGRAPH\", \"1\") == \"1\"\n\n\ndef compile_model(fn):\n    return torch.compile(fn, fullgraph=_FULLGRAPH)\n"
	target := filepath.Join(root, "pkg", "wrapper.py")
	os.WriteFile(target, []byte(orig), 0o644)
	ed := filepath.Join(dir, "wrapper.py.edited")
	os.WriteFile(ed, []byte(edited), 0o644)
	pf := filepath.Join(patches, "01-fullgraph.patch")

	code, out, errs := runCLI("patch", "new", "--root", root, "--target", "pkg/wrapper.py", "--env", "PKG_FULLGRAPH=1  (0 disables fullgraph)", "-o", pf, ed)
	if code != 0 || !strings.Contains(out, "pkg/wrapper.py") {
		t.Fatalf("new: %d %s %s", code, out, errs)
	}
	// The pins, shortened on the summary line.
	if !regexp.MustCompile(`pkg/wrapper\.py  base [0-9a-f]{8}…[0-9a-f]{4}  patched [0-9a-f]{8}…[0-9a-f]{4}  \(the file under --root is base\)`).MatchString(out) {
		t.Errorf("new summary: %s", out)
	}
	code, out, _ = runCLI("patch", "status", "--root", root, "--json", patches)
	var rep struct {
		Schema  string `json:"schema"`
		Patches []struct {
			Path    string `json:"path"`
			Status  string `json:"status"`
			Targets []struct {
				Path          string `json:"path"`
				State         string `json:"state"`
				BaseSHA256    string `json:"base_sha256"`
				PatchedSHA256 string `json:"patched_sha256"`
				ActualSHA256  string `json:"actual_sha256"`
			} `json:"targets"`
		} `json:"patches"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("status json: %d %v\n%s", code, err, out)
	}
	if rep.Schema != "bringup.patches/v1" || len(rep.Patches) != 1 || rep.Patches[0].Status != "active" ||
		rep.Patches[0].Targets[0].State != "base" || rep.Patches[0].Targets[0].ActualSHA256 != rep.Patches[0].Targets[0].BaseSHA256 ||
		len(rep.Patches[0].Targets[0].PatchedSHA256) != 64 {
		t.Fatalf("status: %+v", rep)
	}
	if code, out, errs = runCLI("patch", "apply", "--root", root, patches); code != 0 || !strings.Contains(out, "applied") {
		t.Fatalf("apply: %d %s %s", code, out, errs)
	}
	if b, _ := os.ReadFile(target); string(b) != edited {
		t.Fatalf("apply wrote %q", b)
	}
	if code, out, _ = runCLI("patch", "status", "--root", root, patches); code != 0 || !strings.Contains(out, "PKG_FULLGRAPH=1") {
		t.Fatalf("status after apply: %d %s", code, out)
	}
	// Drift: exit 1 for status and apply, and the file stays as it is.
	os.WriteFile(target, []byte(orig+"# upstream\n"), 0o644)
	if code, out, _ = runCLI("patch", "status", "--root", root, patches); code != 1 || !strings.Contains(out, "drifted") {
		t.Fatalf("drifted status: %d %s", code, out)
	}
	if code, out, _ = runCLI("patch", "apply", "--root", root, patches); code != 1 || !strings.Contains(out, "apply refused; nothing was changed") {
		t.Fatalf("drifted apply: %d %s", code, out)
	}
	os.WriteFile(target, []byte(edited), 0o644)
	if code, _, errs = runCLI("patch", "revert", "--root", root, patches); code != 0 {
		t.Fatalf("revert: %d %s", code, errs)
	}
	if b, _ := os.ReadFile(target); string(b) != orig {
		t.Fatalf("revert left %q", b)
	}
	// The overlay holds the patched file; the root is left as it is.
	ov := filepath.Join(dir, "overlay")
	if code, out, errs = runCLI("patch", "overlay", "--root", root, "--out", ov, patches); code != 0 || !strings.Contains(out, "overlay: 1 patched file in ") {
		t.Fatalf("overlay: %d %s %s", code, out, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(ov, "pythonpath", "pkg", "wrapper.py")); string(b) != edited {
		t.Errorf("overlay file %q", b)
	}
	if b, _ := os.ReadFile(target); string(b) != orig {
		t.Errorf("overlay changed the root: %q", b)
	}
	// Could not run: exit 2 with a reason.
	if code, _, errs = runCLI("patch", "status", patches); code != 2 || !strings.Contains(errs, "--root is required") {
		t.Fatalf("no root: %d %s", code, errs)
	}
	if code, _, errs = runCLI("patch", "status", "--root", filepath.Join(dir, "nope"), patches); code != 2 || !strings.Contains(errs, "not a directory") {
		t.Fatalf("missing root: %d %s", code, errs)
	}
	if code, _, errs = runCLI("patch", "apply", "--root", root, filepath.Join(dir, "none.patch")); code != 2 {
		t.Fatalf("missing patch: %d %s", code, errs)
	}
	// Said once, not "patch X: stat X: …".
	if want := "bringup: patch or series " + filepath.Join(dir, "none.patch") + ": no such file or directory (check the path)\n"; errs != want {
		t.Errorf("missing patch: stderr %q, want %q", errs, want)
	}
}

// patch new names the package from the wheel's RECORD; when that RECORD
// has malformed rows, it says which file and lines instead of using the
// rest silently.
func TestPatchNewWarnsOfDamagedRecord(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "site-packages")
	os.MkdirAll(filepath.Join(root, "pkg"), 0o755)
	os.MkdirAll(filepath.Join(root, "pkg-1.2.dist-info"), 0o755)
	os.WriteFile(filepath.Join(root, "pkg", "wrapper.py"), []byte("x = 1\n"), 0o644)
	os.WriteFile(filepath.Join(root, "pkg-1.2.dist-info", "RECORD"),
		[]byte("pkg/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\npkg/wrapper.py,sha256=truncat\n"), 0o644)
	ed := filepath.Join(dir, "wrapper.py.edited")
	os.WriteFile(ed, []byte("x = 2\n"), 0o644)
	code, out, errs := runCLI("patch", "new", "--root", root, "--target", "pkg/wrapper.py", ed)
	if code != 0 || !strings.Contains(out, "+x = 2") {
		t.Fatalf("new: %d %s %s", code, out, errs)
	}
	want := "bringup: warning: pkg-1.2.dist-info/RECORD: malformed row at line 2 skipped; it names pkg/wrapper.py"
	if !strings.Contains(errs, want) {
		t.Errorf("stderr %q, want %q", errs, want)
	}
	if strings.Contains(out, "Package:") {
		t.Errorf("a Package: line from a RECORD row that does not parse:\n%s", out)
	}
}

// issue 11: a journal written into --root by someone else made a
// root-run 'patch status' delete or replace a file outside the root. Now
// status reports it and acts on nothing (exit 1); apply and revert, which
// need the recovery, exit 2 with the journal's path and the fix.
func TestPatchHostileJournal(t *testing.T) {
	for _, c := range []struct{ name, journal, why string }{
		{"staging, temp outside the root",
			`{"schema":"bringup.patch-journal/v1","op":"apply","state":"staging","entries":[{"path":"pkg/a.py","temp":"../../v/precious.txt","from_sha256":"x","to_sha256":"y"}]}`,
			`temp "../../v/precious.txt" is not the staged copy bringup writes for pkg/a.py`},
		{"committed, path outside the root (the issue: it replaced v/precious.txt with r/evil)",
			`{"schema":"bringup.patch-journal/v1","op":"apply","state":"committed","entries":[{"path":"../v/precious.txt","temp":"../r/evil","from_sha256":"e2c3c1d9b7a2c7ba1b2c8e4d40a4e11fd4dc1a8d7c3f58a9d2a0ef2f5eb1f6f1","to_sha256":"886b67480dbe73b406ad83a1dd6d9596f93089d90c220ccfc91944c95f1c68c4"}]}`,
			`path "../v/precious.txt" is not a clean relative path inside the root`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			r, v, series := filepath.Join(dir, "r"), filepath.Join(dir, "v"), filepath.Join(dir, "SERIES")
			for _, d := range []string{filepath.Join(r, "pkg"), v, series} {
				os.MkdirAll(d, 0o755)
			}
			os.WriteFile(filepath.Join(v, "precious.txt"), []byte("precious\n"), 0o644)
			os.WriteFile(filepath.Join(r, "pkg", "a.py"), []byte("a = 1\n"), 0o644)
			os.WriteFile(filepath.Join(r, "evil"), []byte("evil\n"), 0o644)
			jp := filepath.Join(r, ".bringup-patch-journal.json")
			os.WriteFile(jp, []byte(c.journal), 0o644)
			intact := func(after string) {
				t.Helper()
				if b, err := os.ReadFile(filepath.Join(v, "precious.txt")); err != nil || string(b) != "precious\n" {
					t.Fatalf("after %s the file outside the root is %q (%v)", after, b, err)
				}
				if b, err := os.ReadFile(jp); err != nil || string(b) != c.journal {
					t.Fatalf("after %s the journal was acted on: %v", after, err)
				}
			}
			code, out, errs := runCLI("patch", "status", "--root", r, series)
			intact("status")
			if code != 1 || !strings.Contains(out, jp+": bringup will not act on this journal: entry 1: "+c.why) ||
				!strings.Contains(out, "nothing was changed") || !strings.Contains(out, "then remove it (rm ") || strings.Contains(out, "completed an interrupted") {
				t.Fatalf("status: %d\n%s\n%s", code, out, errs)
			}
			for _, verb := range []string{"apply", "revert"} {
				code, out, errs = runCLI("patch", verb, "--root", r, series)
				intact(verb)
				if code != 2 || !strings.Contains(errs, jp+": bringup will not act on this journal") || !strings.Contains(errs, "then remove it (rm ") {
					t.Fatalf("%s: %d\n%s\n%s", verb, code, out, errs)
				}
			}
		})
	}
}

// issue 11: a directory inside --root that is a symlink to outside was
// followed, and apply patched the file outside with exit 0.
func TestPatchApplyThroughSymlinkedDirectory(t *testing.T) {
	dir := t.TempDir()
	r, outside, patches := filepath.Join(dir, "r"), filepath.Join(dir, "outside"), filepath.Join(dir, "p")
	for _, d := range []string{r, outside, patches} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(outside, "a.py"), []byte("a = 1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "ed"), []byte("a = 2\n"), 0o644)
	if err := os.Symlink("../outside", filepath.Join(r, "pkg")); err != nil {
		t.Fatal(err)
	}
	// patch new reads the original below the root, so it is given here.
	pf := filepath.Join(patches, "01.patch")
	if code, out, errs := runCLI("patch", "new", "--root", r, "--target", "pkg/a.py", "-o", pf, filepath.Join(outside, "a.py"), filepath.Join(dir, "ed")); code != 0 {
		t.Fatalf("new: %d %s %s", code, out, errs)
	}
	code, out, errs := runCLI("patch", "apply", "--root", r, patches)
	if b, _ := os.ReadFile(filepath.Join(outside, "a.py")); string(b) != "a = 1\n" {
		t.Fatalf("apply changed the file outside the root: %q", b)
	}
	want := "01.patch: pkg/a.py: pkg is a symlink (to ../outside); bringup never follows a symlink below --root"
	if code != 1 || !strings.Contains(out, "apply refused; nothing was changed") || !strings.Contains(out, want) || !strings.Contains(out, "point --root at the real tree") {
		t.Fatalf("apply: %d\n%s\n%s", code, out, errs)
	}
	// patch new with the target alone reads it below the root: refused too.
	code, _, errs = runCLI("patch", "new", "--root", r, "--target", "pkg/a.py", filepath.Join(dir, "ed"))
	if code != 2 || !strings.Contains(errs, "pkg is a symlink") {
		t.Fatalf("new through the link: %d %s", code, errs)
	}
}
