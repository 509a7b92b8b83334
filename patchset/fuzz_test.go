package patchset

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
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
