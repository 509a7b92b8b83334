package enginelog

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func depaste(t testing.TB, in string) (string, PasteFix) {
	fix := DetectPaste([]byte(in))
	out, err := io.ReadAll(Depaste(strings.NewReader(in), fix))
	if err != nil {
		t.Fatal(err)
	}
	return string(out), fix
}

func TestDepaste(t *testing.T) {
	const line = "(EngineCore_DP0 pid=1) ERROR 11-29 21:05:14 [core.py:700] RuntimeError: x"
	cases := []struct{ name, in, want string }{
		{"quoted", "> " + line + "\n> " + line + "\n", line + "\n" + line + "\n"},
		{"indented", "    " + line + "\n    " + line + "\n", line + "\n" + line + "\n"},
		{"indent before prefix", line + "\n   " + line + "\n", line + "\n" + line + "\n"},
		{"colour without ESC", "[0;36m(EngineCore_DP0 pid=1) [0mERROR 11-29 21:05:14 [core.py:700] RuntimeError: x\n",
			"(EngineCore_DP0 pid=1) ERROR 11-29 21:05:14 [core.py:700] RuntimeError: x\n"},
		{"ESC rendered by syslog", "#033[2m#033[36m(VllmWorker rank=1 pid=9)#033[0m ERROR 11-29 21:05:14 [core.py:700] RuntimeError: x\n",
			"(VllmWorker rank=1 pid=9) ERROR 11-29 21:05:14 [core.py:700] RuntimeError: x\n"},
		{"ESC in caret notation", "^[[0;36m(EngineCore_DP0 pid=1)^[[0m ERROR 11-29 21:05:14 [core.py:700] RuntimeError: x\n",
			"(EngineCore_DP0 pid=1) ERROR 11-29 21:05:14 [core.py:700] RuntimeError: x\n"},
		{"CI prefix", "[test 1] " + line + "\n[test 1] " + line + "\n[test 1] " + line + "\n", line + "\n" + line + "\n" + line + "\n"},
		{"kubectl prefix is the peeler's", "[pod/vllm-0/engine] " + line + "\n[pod/vllm-0/engine] " + line + "\n[pod/vllm-0/engine] " + line + "\n",
			"[pod/vllm-0/engine] " + line + "\n[pod/vllm-0/engine] " + line + "\n[pod/vllm-0/engine] " + line + "\n"},
		{"compose prefix is the peeler's", "vllm-1  | " + line + "\nvllm-1  | " + line + "\n", "vllm-1  | " + line + "\nvllm-1  | " + line + "\n"},
	}
	for _, c := range cases {
		got, fix := depaste(t, c.in)
		if got != c.want {
			t.Errorf("%s: %+v\n got %q\nwant %q", c.name, fix, got, c.want)
		}
	}
	// An engine's own log is read as it is: no repair is detected.
	for _, p := range []string{"vllm-v1-tp2.log", "sglang-tp2.log", "torchrun.log", "ray.log", "collectors.log"} {
		data, err := os.ReadFile(filepath.Join("testdata", p))
		if err != nil {
			t.Fatal(err)
		}
		if fix := DetectPaste(data); fix.Any() {
			t.Errorf("%s: an engine log taken for a paste: %+v", p, fix)
		}
	}
}

// pasteStartsAnywhere: some line of data starts as a paste's does (where
// pasteWatch judges the lines from it).
func pasteStartsAnywhere(data []byte) bool {
	for _, l := range bytes.Split(data, []byte{'\n'}) {
		if len(l) > 0 && pasteStartByte[l[0]] && pasteStart(l) {
			return true
		}
	}
	return false
}

// FuzzDepaste: the repair keeps every line (the line numbers of evidence
// stay right), leaves an input that needs none byte for byte, and gives
// the same however the input's reads are cut.
func FuzzDepaste(f *testing.F) {
	m, _ := filepath.Glob(filepath.Join("..", "..", "corpus", "field", "*.log"))
	m2, _ := filepath.Glob(filepath.Join("testdata", "*.log"))
	for _, p := range append(m, m2...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("> [0;36m(X pid=1)[0m\n>  (Y pid=2) a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fix := DetectPaste(data)
		out, err := io.ReadAll(Depaste(bytes.NewReader(data), fix))
		if err != nil {
			t.Fatal(err)
		}
		if !fix.Any() && !pasteStartsAnywhere(data) && !bytes.Equal(out, data) {
			t.Fatal("changed an input that needs no repair")
		}
		// Read a byte at a time, the watch for a later paste sees the
		// same lines and repairs them the same.
		one, err := io.ReadAll(Depaste(iotest.OneByteReader(bytes.NewReader(data)), fix))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(one, out) {
			t.Fatalf("read a byte at a time: %q, at once: %q", one, out)
		}
		if bytes.Count(out, []byte{'\n'}) != bytes.Count(data, []byte{'\n'}) {
			t.Fatalf("lines %d -> %d", bytes.Count(data, []byte{'\n'}), bytes.Count(out, []byte{'\n'}))
		}
	})
}
