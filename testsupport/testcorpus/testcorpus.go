// Package testcorpus finds the shared corpus of real artifacts
// (../shared/corpus beside the repository) for tests, and skips a test
// with a clear message when it is absent.
package testcorpus

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Root is the repository root, found from this file's location.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Shared returns ../shared beside the repository, or skips t when it is
// not there.
func Shared(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(Root(), "..", "shared")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("../shared is absent beside the repository (%v): corpus tests need it", err)
	}
	return dir
}

// Dir returns ../shared/corpus/<sub>, or skips t when it is not there.
func Dir(t testing.TB, sub string) string {
	t.Helper()
	dir := filepath.Join(Shared(t), "corpus", sub)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("corpus folder %s is absent: %v", sub, err)
	}
	return dir
}

// File returns ../shared/corpus/<sub>/<name>, or skips t when absent.
func File(t testing.TB, sub, name string) string {
	t.Helper()
	p := filepath.Join(Dir(t, sub), name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("corpus file %s/%s is absent: %v", sub, name, err)
	}
	return p
}

// TraceBlock is every top-level TORCH_TRACE log of the corpus
// (tlparse-inputs/*.log, *.txt) concatenated, the block the trace bench
// scripts repeat; t is skipped when the corpus is absent.
func TraceBlock(t testing.TB) []byte {
	t.Helper()
	root := Dir(t, "tlparse-inputs")
	var data []byte
	for _, pat := range []string{"*.log", "*.txt"} {
		ms, _ := filepath.Glob(filepath.Join(root, pat))
		for _, m := range ms {
			d, err := os.ReadFile(m)
			if err != nil {
				t.Fatal(err)
			}
			data = append(data, d...)
		}
	}
	return data
}

// GzipCopy writes src gzipped to dst (a corpus file as it is often
// collected: trace.log.gz).
func GzipCopy(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
