package patchset

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/patchset/udiff"
)

func BenchmarkParseSeed(b *testing.B) {
	data, err := os.ReadFile(seedPath(b))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse("seed", data); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTree builds a root with n copies of a real stdlib module and one
// patch per copy (two edits each).
func benchTree(b *testing.B, n int) (root, dir string) {
	src := stdlib(b, "argparse.py")
	root, dir = filepath.Join(b.TempDir(), "root"), filepath.Join(b.TempDir(), "patches")
	os.MkdirAll(filepath.Join(root, "pkg"), 0o755)
	os.MkdirAll(dir, 0o755)
	var series []string
	for i := range n {
		rel := fmt.Sprintf("pkg/m%03d.py", i)
		os.WriteFile(filepath.Join(root, rel), src, 0o644)
		l := udiff.SplitLines(src)
		l[100] = "# patched 1\n"
		l[len(l)-100] = "# patched 2\n"
		text, err := New(Header{Description: "bench"}, []FileChange{{Path: rel, Original: src, Edited: []byte(strings.Join(l, ""))}})
		if err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("%03d.patch", i)
		os.WriteFile(filepath.Join(dir, name), text, 0o644)
		series = append(series, name)
	}
	os.WriteFile(filepath.Join(dir, "series"), []byte(strings.Join(series, "\n")+"\n"), 0o644)
	return root, dir
}

// BenchmarkSeriesStatus: 50 patches, one 2.6k-line file each.
func BenchmarkSeriesStatus(b *testing.B) {
	root, dir := benchTree(b, 50)
	for b.Loop() {
		r, err := SeriesStatus(root, dir)
		if err != nil || !r.Consistent() {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyRevert50: apply then revert 50 patches, with fsyncs.
func BenchmarkApplyRevert50(b *testing.B) {
	root, dir := benchTree(b, 50)
	s, _ := LoadSeries(dir)
	for b.Loop() {
		if out, err := Apply(root, s, Options{}); err != nil || len(out.Changed) != 50 {
			b.Fatal(err)
		}
		if out, err := Revert(root, s, Options{}); err != nil || len(out.Changed) != 50 {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiffArgparse: diff a 2.6k-line real module against an edit
// with 20 scattered changes.
func BenchmarkDiffArgparse(b *testing.B) {
	src := stdlib(b, "argparse.py")
	l := udiff.SplitLines(src)
	for i := 0; i < len(l); i += len(l) / 20 {
		l[i] = "# edited\n"
	}
	edited := []byte(strings.Join(l, ""))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if udiff.Diff("argparse.py", src, edited) == nil {
			b.Fatal("no diff")
		}
	}
}
