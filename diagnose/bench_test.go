package diagnose

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/rules"
)

// benchLog builds a TP=8 vLLM serving log of about size bytes, the same
// mix scripts/bench-diagnose generates: per-rank INFO and DEBUG lines, tqdm
// lines, a warning now and then, a traceback every few thousand lines.
func benchLog(size int) []byte {
	var b bytes.Buffer
	b.WriteString("torch==2.10.0+rocm7.0\nvllm==0.11.2+rocm700\n")
	for s := 1; b.Len() < size; s++ {
		ts := fmt.Sprintf("11-29 %02d:%02d:%02d", s/3600%24, s/60%60, s%60)
		for r := 0; r < 8; r++ {
			pre := fmt.Sprintf("(EngineCore_DP0 pid=4180) (Worker_TP%d pid=%d) ", r, 4190+r)
			fmt.Fprintf(&b, "%sINFO %s [gpu_model_runner.py:2653] Model loading took 38.41 GiB and 42.871234 seconds\n", pre, ts)
			fmt.Fprintf(&b, "%sDEBUG %s [compilation/backends.py:124] Directly load the %d-th graph for compile range (1, 8192) from inductor via handle (\"artifact_shape_None_subgraph_%d\", \"/root/.cache/vllm/torch_compile_cache/3f9c1e7a2b/rank_%d_0/backbone\")\n", pre, ts, s%67, s%67, r)
			fmt.Fprintf(&b, "%sINFO %s [metrics.py:455] Avg prompt throughput: 1532.4 tokens/s, Avg generation throughput: 412.9 tokens/s, Running: 64 reqs, Swapped: 0 reqs, Pending: 3 reqs, GPU KV cache usage: 41.2%%, CPU KV cache usage: 0.0%%.\n", pre, ts)
			fmt.Fprintf(&b, "%sCapturing CUDA graphs (mixed prefill-decode, PIECEWISE):  52%%|#####     | 35/67 [00:08<00:07,  4.12it/s]\n", pre)
		}
		if s%50 == 0 {
			fmt.Fprintf(&b, "(APIServer pid=4101) WARNING %s [protocol.py:93] The following fields were present in the request but ignored: {\"top_k\"}\n", ts)
		}
		if s%500 == 0 {
			pre := fmt.Sprintf("(EngineCore_DP0 pid=4180) (Worker_TP3 pid=4193) ERROR %s [multiproc_executor.py:815] ", ts)
			for _, l := range []string{"WorkerProc hit an exception.", "Traceback (most recent call last):",
				`  File "/usr/local/lib/python3.12/dist-packages/torch/_dynamo/eval_frame.py", line 795, in aot_compile`,
				"    raise RuntimeError(", "RuntimeError: Graph breaks are not supported with aot compile. Please use torch.compile(fullgraph=True)."} {
				b.WriteString(pre + l + "\n")
			}
		}
	}
	return b.Bytes()
}

// BenchmarkDiagnose is the whole pipeline on a 32 MiB multi-rank log read
// from a file (parse, tracebacks, timeline, versions, rules).
func BenchmarkDiagnose(b *testing.B) {
	data := benchLog(32 << 20)
	p := filepath.Join(b.TempDir(), "bench.log")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	set, err := rules.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		d, err := Run([]string{p}, Options{Rules: set})
		if err != nil || d.Findings[0].Rule != "aot-compile-graph-break" {
			b.Fatalf("%v %+v", err, d.Findings)
		}
	}
	// MB per CPU-second: what the pipeline costs, whatever else runs on the machine.
	cpu := (cpuTime() - c0).Seconds()
	b.ReportMetric(float64(len(data))*float64(b.N)/1e6/cpu, "MB/cpu-s")
}

func cpuTime() time.Duration {
	var r syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// BenchmarkDiagnoseFile runs the whole pipeline on the log named by
// BRINGUP_BENCH_LOG (e.g. one written by `OUT=… scripts/bench-diagnose`),
// for CPU profiles on a realistic size; skipped when unset.
func BenchmarkDiagnoseFile(b *testing.B) {
	p := os.Getenv("BRINGUP_BENCH_LOG")
	if p == "" {
		b.Skip("BRINGUP_BENCH_LOG not set")
	}
	fi, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	set, err := rules.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := Run([]string{p}, Options{Rules: set}); err != nil {
			b.Fatal(err)
		}
	}
	cpu := (cpuTime() - c0).Seconds()
	b.ReportMetric(float64(fi.Size())*float64(b.N)/1e6/cpu, "MB/cpu-s")
}

// BenchmarkSmallFiles: a directory of 500 one-line logs (per-input setup:
// parser blocks, record batches, goroutines).
func BenchmarkSmallFiles(b *testing.B) {
	dir := b.TempDir()
	for i := 0; i < 500; i++ {
		body := fmt.Sprintf("(Worker_TP%d pid=%d) INFO 05-28 18:58:32 [gpu_worker.py:298] Available KV cache memory: 18.36 GiB\n", i%8, 1000+i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.log", i)), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	set, err := rules.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Run([]string{dir}, Options{Rules: set}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/500, "µs/file")
}
