package watch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckPatches(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("testdata", "patches"))
	for _, tc := range []struct {
		content string
		ok      bool
		state   string
	}{
		{"x = 1\ny = 2\n", true, "not-applied"},
		{"x = 1\ny = 20\n", true, "applied"},
		{"x = 1\ny = 3\n", false, "drifted"},
	} {
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "pkg"), 0o755)
		if err := os.WriteFile(filepath.Join(root, "pkg", "mod.py"), []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		ps, problems, err := CheckPatches(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		if ps.OK != tc.ok || (len(problems) == 0) != tc.ok {
			t.Errorf("%q: ok=%v problems=%v, want ok=%v", tc.content, ps.OK, problems, tc.ok)
		}
		if !strings.Contains(ps.Summary, tc.state) || ps.Dir != dir || ps.State == "" {
			t.Errorf("%q: recorded %+v, want state %s", tc.content, ps, tc.state)
		}
	}
	if _, _, err := CheckPatches(t.TempDir(), filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Error("a missing series dir gave no error")
	}
}
