package stackdump

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/input"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// FuzzParse: no input makes the reader panic, and every frame it returns
// has a function name.
func FuzzParse(f *testing.F) {
	dir := filepath.Join(testcorpus.Root(), "..", "shared", "corpus", "stackdumps")
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				f.Add(b)
			}
		}
	}
	seeds, _ := filepath.Glob(filepath.Join(testcorpus.Root(), "stacks", "testdata", "seed004-*", "worker_TP0.txt"))
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "faulthandler-two-threads.txt")); err == nil {
		f.Add(b)
		f.Add(damaged(b))
	}
	f.Add([]byte("Thread 0x00007f58c25be6c0 [n] (most recent call first):\n  File \"a.py\", line 1 in f\n  ...\n"))
	f.Add([]byte("[\n{\"pid\": 1, \"frames\": [{\"name\": \"f\"}]}\n]\n"))
	f.Add([]byte("Traceback for thread 1 (p) [] (most recent call last):\n    (C) File \"x\", line 1, in s (l)\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Binary input is refused whole; the line reader must still
		// survive whatever bytes it is given.
		if _, err := Parse(bytes.NewReader(data), "fuzz"); err != nil && !errors.Is(err, input.ErrNotText) {
			t.Fatal(err)
		}
		res, err := parseLines(bufio.NewReader(bytes.NewReader(data)), "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range res.Processes {
			for _, th := range p.Threads {
				for _, fr := range th.Frames {
					if fr.Func == "" && fr.File == "" {
						t.Fatalf("empty frame in %+v", th)
					}
				}
			}
		}
	})
}
