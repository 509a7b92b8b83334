package pyproc

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/testsupport/pyenv"
)

// TestGeneratedLayoutsCurrent re-runs the generator against the CPython
// headers installed here and requires the committed layouts_gen.go to be
// exactly its output: the layouts are generated, never edited.
func TestGeneratedLayoutsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a C program per CPython version")
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s)", cc)
	}
	for _, m := range testedMinors {
		if pyenv.Python(m) == "" {
			t.Skipf("CPython %s not installed under pyenv: cannot regenerate every layout here", m)
		}
	}
	out := filepath.Join(t.TempDir(), "layouts_gen.go")
	cmd := exec.Command("go", "run", "./internal/genlayout", "-o", out, "-c", "internal/genlayout/csrc/layout.c")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("genlayout: %v\n%s", err, msg)
	}
	got, _ := os.ReadFile(out)
	want, _ := os.ReadFile("layouts_gen.go")
	if !bytes.Equal(got, want) {
		t.Fatal("layouts_gen.go differs from what go generate produces from the installed headers: run go generate ./pyproc")
	}
}

func TestLayoutsSane(t *testing.T) {
	for minor, l := range generatedLayouts {
		if minorLess(minor, "3.10") || l.Hex>>24 != 3 {
			t.Errorf("%s: unexpected version %s (%#x)", minor, l.Source, l.Hex)
		}
		if l.StateKindMask != 7 || l.ObType != 8 {
			t.Errorf("%s: str kind mask %d, ob_type at %d", minor, l.StateKindMask, l.ObType)
		}
		if (l.Debug != nil) != (l.FrameModel == 2) {
			t.Errorf("%s: frame model %d with debug offsets %v", minor, l.FrameModel, l.Debug != nil)
		}
	}
	if _, err := layoutFor("3.9"); err == nil {
		t.Error("3.9 has a layout")
	}
	if _, err := layoutFor("3.99"); err == nil {
		t.Error("3.99 has a layout")
	}
	if !minorLess("3.9", "3.10") || minorLess("3.10", "3.9") {
		t.Error("minorLess")
	}
	if hexVersion(0x030d00f0) != "3.13.0" || hexVersion(0x030e00a3) != "3.14.0a3" {
		t.Errorf("hexVersion: %s %s", hexVersion(0x030d00f0), hexVersion(0x030e00a3))
	}
}
