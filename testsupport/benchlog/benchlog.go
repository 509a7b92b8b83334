// Package benchlog writes the synthetic engine log that bringup's
// benchmarks and bench scripts measure with: a TP-rank vLLM V1 serving log
// that reads like a real one. One generator, so that every figure in
// docs/performance is taken on the same kind of input.
package benchlog

import (
	"bufio"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// Header is the first bytes of every generated log: the version lines a
// pip freeze in the boot script prints.
const Header = "torch==2.10.0+rocm7.0\nvllm==0.11.2+rocm700\n"

// WorkerPID is the pid the generated log gives the worker of TP rank tp.
func WorkerPID(tp int) int { return 4190 + tp }

// Write writes about size bytes (at least the first second of serving)
// of a vLLM log with tp workers under one engine core: per rank and
// second, INFO and DEBUG lines with nested process prefixes and a tqdm
// line; every 50 s an API server WARNING; every 500 s a multi-line
// traceback from rank 3 with the header repeated on each line (the
// aot-compile graph-break failure, so diagnose has something to find).
func Write(w io.Writer, size int64, tp int) error { return WriteVaried(w, size, tp, false) }

// WriteVaried is Write; with vary the numbers of the metrics and tqdm
// lines differ from line to line (a fixed seed, so the log is the same on
// every run), as in a real serving log: each rank then prints its own
// bodies, and caches keyed on repeated text see fewer hits.
func WriteVaried(w io.Writer, size int64, tp int, vary bool) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	rng := rand.New(rand.NewPCG(7, 11))
	var num []byte
	// fixed formats a number in [lo, lo+span) with d decimals.
	fixed := func(lo, span float64, d int) string {
		num = strconv.AppendFloat(num[:0], lo+rng.Float64()*span, 'f', d, 64)
		return string(num)
	}
	var n int64
	put := func(parts ...string) {
		for _, p := range parts {
			k, _ := bw.WriteString(p)
			n += int64(k)
		}
		bw.WriteByte('\n')
		n++
	}
	bw.WriteString(Header)
	n += int64(len(Header))
	var tsb []byte
	for s := 1; n < size; s++ {
		tsb = append(tsb[:0], "11-29 "...)
		tsb = two(two(two(tsb, s/3600%24), s/60%60, ':'), s%60, ':')
		ts := string(tsb)
		for r := 0; r < tp; r++ {
			pre := "(EngineCore_DP0 pid=4180) (Worker_TP" + strconv.Itoa(r) + " pid=" + strconv.Itoa(WorkerPID(r)) + ") "
			put(pre, "INFO ", ts, " [gpu_model_runner.py:2653] Model loading took 38.41 GiB and 42.871234 seconds")
			g := strconv.Itoa(s % 67)
			put(pre, "DEBUG ", ts, " [compilation/backends.py:124] Directly load the ", g, "-th graph for compile range (1, 8192) from inductor via handle (\"artifact_shape_None_subgraph_", g,
				"\", \"/root/.cache/vllm/torch_compile_cache/3f9c1e7a2b/rank_", strconv.Itoa(r), "_0/backbone\")")
			if !vary {
				put(pre, "INFO ", ts, " [metrics.py:455] Avg prompt throughput: 1532.4 tokens/s, Avg generation throughput: 412.9 tokens/s, Running: 64 reqs, Swapped: 0 reqs, Pending: 3 reqs, GPU KV cache usage: 41.2%, CPU KV cache usage: 0.0%.")
				put(pre, "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  52%|#####     | 35/67 [00:08<00:07,  4.12it/s]")
				continue
			}
			put(pre, "INFO ", ts, " [metrics.py:455] Avg prompt throughput: ", fixed(1000, 900, 1), " tokens/s, Avg generation throughput: ", fixed(300, 200, 1),
				" tokens/s, Running: ", strconv.Itoa(rng.IntN(128)), " reqs, Swapped: 0 reqs, Pending: ", strconv.Itoa(rng.IntN(8)), " reqs, GPU KV cache usage: ", fixed(0, 99, 1), "%, CPU KV cache usage: 0.0%.")
			put(pre, "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  52%|#####     | 35/67 [00:08<00:07,  ", fixed(1, 8, 2), "it/s]")
		}
		if s%50 == 0 {
			put("(APIServer pid=4101) WARNING ", ts, " [protocol.py:93] The following fields were present in the request but ignored: {\"top_k\"}")
		}
		if s%500 == 0 {
			pre := "(EngineCore_DP0 pid=4180) (Worker_TP3 pid=" + strconv.Itoa(WorkerPID(3)) + ") ERROR " + ts + " [multiproc_executor.py:815] "
			for _, l := range traceback {
				put(pre, l)
			}
		}
	}
	return bw.Flush()
}

var traceback = [...]string{
	"WorkerProc hit an exception.",
	"Traceback (most recent call last):",
	`  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 810, in worker_busy_loop`,
	"    output = func(*args, **kwargs)",
	`  File "/usr/local/lib/python3.12/dist-packages/torch/_dynamo/eval_frame.py", line 795, in aot_compile`,
	"    raise RuntimeError(",
	"RuntimeError: Graph breaks are not supported with aot compile. Please use torch.compile(fullgraph=True).",
}

// two appends sep (when non-zero) and v as two digits.
func two(b []byte, v int, sep ...byte) []byte {
	b = append(b, sep...)
	return append(b, byte('0'+v/10%10), byte('0'+v%10))
}

// FileFromEnv is the log a file benchmark reads: BRINGUP_BENCH_LOG (write
// one with genlog or scripts/bench-diagnose). It skips the benchmark when
// the variable is unset and sets its bytes per operation to the file's size.
func FileFromEnv(b *testing.B) string {
	b.Helper()
	path := os.Getenv("BRINGUP_BENCH_LOG")
	if path == "" {
		b.Skip("set BRINGUP_BENCH_LOG to a log file (go run ./testsupport/benchlog/genlog -o FILE)")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	return path
}
