package enginelog

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLinePeeler(t *testing.T) {
	var lp LinePeeler
	cases := []struct {
		in, body, stream, logger, rank string
		tagged                         bool
	}{
		{"(EngineCore_DP0 pid=1) (Worker_TP7 pid=2) INFO 12-17 13:32:44 [gpu_worker.py:1] hello\r", "hello",
			"(EngineCore_DP0 pid=1) (Worker_TP7 pid=2) ", "vllm", "DP0 TP7", true},
		{"[2025-10-29 11:25:58 TP6] Pyspy dump for PID 5", "Pyspy dump for PID 5", "", "sglang", "TP6", true},
		{"I0227 20:02:12.576000 139 torch/x.py:789] [0/0] msg", "msg", "", "glog", "", false},
		{"[pod/vllm-0/engine] [default3]:Thread 1", "Thread 1", "[pod/vllm-0/engine]|[default3]:", "", "rank3", true},
		{"2026-04-19 12:10:56.886 | (Worker pid=9) x", "x", "|(Worker pid=9) ", "", "", true},
		{"Aug 19 18:30:22 host unit[42]: Thread 0x1 (most recent call first):", "Thread 0x1 (most recent call first):", "host unit[42]:|", "", "", true},
		{"\x1b[32mINFO\x1b[0m 12-17 13:32:44 [a.py:1] coloured", "coloured", "", "vllm", "", false},
		{"[2026-02-24T20:21:58Z] (EngineCore_DP0 pid=6940) ValueError: x", "ValueError: x", "|(EngineCore_DP0 pid=6940) ", "", "DP0", true},
		{"2024-05-01T10:00:00.1234567Z Traceback (most recent call last):", "Traceback (most recent call last):", "|", "", "", false},
		{"2024-02-08T08:40:56.161651438Z   File \"/x.py\", line 598, in f", "  File \"/x.py\", line 598, in f", "|", "", "", false},
		{"2024-05-01T10:00:00+02:00 [rank3]:boom", "boom", "|[rank3]:", "", "rank3", true},
		// Rust's tracing (TGI's launcher): the logger's own header, not a collector's stamp.
		{"2023-09-26T21:48:00.969072Z ERROR text_generation_launcher: x", "x", "", "tracing", "", false},
		{"2023-07-24T02:39:20.781260Z  INFO shard-manager: text_generation_launcher: y", "text_generation_launcher: y", "", "tracing", "", false},
		{"0000-steps/0 [default6]:[rank6]: RuntimeError: x", "RuntimeError: x", "0000-steps/0|[default6]:[rank6]: ", "", "rank6", true},
		{"3: [rank3]:boom", "boom", "3:|[rank3]:", "", "rank3", true},
		{"gpu-node-01: (Worker_TP1 pid=7) boom", "boom", "gpu-node-01:|(Worker_TP1 pid=7) ", "", "TP1", true},
		{"RuntimeError: [Rank 0] Watchdog caught collective operation timeout", "RuntimeError: [Rank 0] Watchdog caught collective operation timeout", "", "", "", false},
		{"Traceback (most recent call last):", "Traceback (most recent call last):", "", "", "", false},
		{"[TensorRT-LLM][ERROR] tensorrt_llm::common::TllmException: x", "tensorrt_llm::common::TllmException: x", "", "tensorrt-llm", "", false},
		{"[TensorRT-LLM][RANK 1][INFO] Loaded engine size: 15448 MiB", "Loaded engine size: 15448 MiB", "", "tensorrt-llm", "rank1", true},
		{"    forward (vllm/model.py:10)", "    forward (vllm/model.py:10)", "", "", "", false},
	}
	for _, c := range cases {
		p := lp.Peel(c.in)
		if p.Body != c.body || p.Stream != c.stream || p.Logger != c.logger || p.Rank.Key() != c.rank || p.Tagged != c.tagged {
			t.Errorf("%q:\n got %q %q %q %q %v\nwant %q %q %q %q %v", c.in, p.Body, p.Stream, p.Logger, p.Rank.Key(), p.Tagged,
				c.body, c.stream, c.logger, c.rank, c.tagged)
		}
	}
}

// A peeler's caches never change its answers: a warm one and a fresh one
// peel any line the same, and the body is part of the line.
func FuzzLinePeeler(f *testing.F) {
	for _, p := range seedFiles() {
		b, err := os.ReadFile(p)
		if err != nil || filepath.Base(p) == "MANIFEST.md" {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for n := 0; sc.Scan() && n < 40; n++ {
			f.Add(sc.Text())
		}
	}
	f.Fuzz(func(t *testing.T, line string) {
		line, _, _ = strings.Cut(line, "\n")
		// Warm the caches with the line's own prefix runs, cut at each
		// group's end: the lines most likely to share a cache key.
		var warm, fresh LinePeeler
		for i := 0; i < len(line) && i < 256; i++ {
			if line[i] == ')' || line[i] == ':' || line[i] == ' ' {
				warm.Peel(line[:i+1])
				warm.Peel(line[:i+1] + " x")
			}
		}
		a, b := warm.Peel(line), fresh.Peel(line)
		if a != b {
			t.Fatalf("%q: warm %+v, fresh %+v", line, a, b)
		}
		if !strings.ContainsRune(line, 0x1b) && !strings.Contains(line, a.Body) {
			t.Fatalf("%q: body %q is not part of the line", line, a.Body)
		}
	})
}
