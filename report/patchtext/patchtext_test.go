package patchtext

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/patchset"
	"github.com/bringup-tool/bringup/report"
)

// The text of a series with a drifted target: the verdict first, every
// statement of the explanation on its own line (it was one line of 300+
// characters), the warnings of the series and of each patch, and no table
// row ending in spaces (rows with an empty ACTION did).
func TestWriteText(t *testing.T) {
	r := &patchset.Report{
		Warnings: []string{"fakepkg-1.0.dist-info/RECORD:3: a row without a hash"},
		Patches: []patchset.PatchReport{{
			Path: "patches/0001-wrap.patch", Name: "0001-wrap.patch", Status: "active", Active: true, State: "drifted",
			Warnings: []string{"no Patched-SHA256 for textwrap.py"},
			Targets: []patchset.TargetReport{{
				Path: "fakepkg/textwrap.py", State: patchset.StateDrifted, Verified: true,
				ActualSHA256: "aa", BaseSHA256: "bb", PatchedSHA256: "cc",
				Detail: "the patch was written for fakepkg==1.0, the root has fakepkg 2.0.1; try 'bringup patch rebase'",
			}},
		}},
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, r, report.Style{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.HasPrefix(out, r.Verdict()+"\n") || !strings.HasPrefix(out, "NOT consistent: 1 patch — 1 drifted") {
		t.Errorf("verdict first:\n%s", out)
	}
	for _, want := range []string{
		"\n    the patch was written for fakepkg==1.0, the root has fakepkg 2.0.1\n",
		"\n    try 'bringup patch rebase'\n",
		"\nwarning: fakepkg-1.0.dist-info/RECORD:3: a row without a hash\n",
		"\nwarning: patches/0001-wrap.patch: no Patched-SHA256 for textwrap.py\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", strings.TrimSpace(want), out)
		}
	}
	for i, l := range strings.Split(out, "\n") {
		if strings.HasSuffix(l, " ") {
			t.Errorf("line %d ends in spaces: %q", i+1, l)
		}
	}
}
