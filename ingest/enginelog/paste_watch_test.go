package enginelog

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestPasteWatch: a paste that starts after the head is repaired from its
// first line on, whether it comes within the first pasteFullScan bytes
// (every line looked at) or deep in a large input (sampled), and the
// healthy lines before it are passed on untouched.
func TestPasteWatch(t *testing.T) {
	var paste strings.Builder
	paste.WriteString("> Traceback (most recent call last):\n")
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&paste, "> \t  File \"/opt/vllm/vllm/v1/worker/gpu_worker.py\", line %d, in load_model\n>     self.model_runner.load_model()\n", 200+i)
	}
	paste.WriteString("> RuntimeError: shape mismatch for lm_head.weight\n")
	want := strings.NewReplacer("> ", "").Replace(paste.String())
	for _, healthyMB := range []int{0, 1, 6} {
		var healthy strings.Builder
		for i := 0; healthy.Len() < healthyMB<<20 || i < 450; i++ {
			fmt.Fprintf(&healthy, "INFO 12-02 04:%02d:%02d [loader.py:%d] Loading safetensors shard %d\n", i/60%60, i%60, 100+i%900, i)
		}
		in := healthy.String() + paste.String()
		fix := DetectPaste([]byte(in)[:min(len(in), 64<<10)])
		for name, r := range map[string]io.Reader{"whole": strings.NewReader(in), "one byte": iotest.OneByteReader(strings.NewReader(in)), "half": iotest.HalfReader(strings.NewReader(in))} {
			if name == "one byte" && healthyMB > 1 {
				continue // a byte at a time, the sampling sees other lines: slow and not the point
			}
			out, err := io.ReadAll(Depaste(r, fix))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(out, []byte(healthy.String())) || string(out[healthy.Len():]) != want {
				t.Errorf("%d MiB before, read %s: the paste not repaired: %q", healthyMB, name, tail(out, 300))
			}
		}
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
