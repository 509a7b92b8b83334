package patchset

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPinnedResultMismatchRefused: a patch whose diff applies but whose
// result is not the Patched-SHA256 it pins (the diff and the hashes
// disagree) is refused and nothing is written.
func TestPinnedResultMismatchRefused(t *testing.T) {
	tr := newTree(t)
	rel := "fakepkg/textwrap.py"
	tw := tr.orig[rel]
	edited := editReplace(t, tw, "                 width=70,", "                 width=80,")
	text, err := New(Header{Description: "pin mismatch"}, []FileChange{{Path: rel, Original: tw, Edited: edited}})
	if err != nil {
		t.Fatal(err)
	}
	// Pin a result the diff does not produce.
	other := sha(editReplace(t, tw, "                 width=70,", "                 width=90,"))
	text = bytes.Replace(text, []byte("# Patched-SHA256: "+sha(edited)), []byte("# Patched-SHA256: "+other), 1)
	if !bytes.Contains(text, []byte(other)) {
		t.Fatalf("the pin was not replaced:\n%s", text)
	}
	if err := os.WriteFile(filepath.Join(tr.patches, "pin.patch"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := Apply(tr.root, mustSeries(t, tr.patches), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if msg := strings.Join(out.Refused, "\n"); !strings.Contains(msg, "disagree") {
		t.Fatalf("refusal: %q (changed %v)", msg, out.Changed)
	}
	if !bytes.Equal(tr.read(t, rel), tw) || len(out.Changed) != 0 {
		t.Fatal("the target was written although its result does not match the pin")
	}
}
