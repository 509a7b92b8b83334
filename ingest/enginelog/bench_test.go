package enginelog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// genLog writes about size bytes of a long TP=8 vLLM V1 log the way a
// real one reads: nested process prefixes, interleaved workers, the API
// server's periodic stats, multi-line messages with the header repeated,
// tqdm bars, a compile marker every 53 lines and a traceback every 997.
func genLog(w io.Writer, size int64) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var n int64
	put := func(s string) {
		k, _ := bw.WriteString(s)
		n += int64(k)
	}
	sec := 0
	ts := func() string {
		return fmt.Sprintf("%02d-%02d %02d:%02d:%02d", 1+sec/86400%12, 1+sec/3600%28, sec/3600%24, sec/60%60, sec%60)
	}
	for i := 0; n < size; i++ {
		if i%50 == 0 {
			sec++
		}
		tp := i % 8
		pre := "(EngineCore_DP0 pid=26353) (Worker_TP" + strconv.Itoa(tp) + " pid=" + strconv.Itoa(26370+tp) + ") "
		switch {
		case i%997 == 0:
			for _, l := range []string{"WorkerProc hit an exception.", "Traceback (most recent call last):",
				`  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 810, in worker_busy_loop`,
				"    output = func(*args, **kwargs)",
				"             ^^^^^^^^^^^^^^^^^^^^^",
				`  File "/usr/local/lib/python3.12/dist-packages/torch/_inductor/codegen/wrapper.py", line 1695, in generate_and_run_autotune_block`,
				`    raise RuntimeError(f"Failed to run autotuning code block: {e}") from e`,
				"torch._inductor.exc.InductorError: RuntimeError: Failed to run autotuning code block: name 'get_raw_stream' is not defined"} {
				put(pre + "ERROR " + ts() + " [multiproc_executor.py:815] " + l + "\n")
			}
		case i%101 == 0:
			put(pre + "Capturing CUDA graphs (decode, FULL):  49%|████▉     | 17/35 [00:05<00:05, 3.1it/s]\n")
		case i%13 == 0:
			put(pre + "INFO " + ts() + " [worker.py:267] Memory profiling takes 4.26 seconds\n")
			put(pre + "INFO " + ts() + " [worker.py:267] the current vLLM instance can use total_gpu_memory (44.53GiB) x gpu_memory_utilization (0.98) = 43.64GiB\n")
		case i%7 == 0:
			put(pre + "WARNING " + ts() + " [custom_all_reduce.py:136] Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs.\n")
		case i%53 == 0:
			put(pre + "INFO " + ts() + " [backends.py:559] Dynamo bytecode transform time: " + strconv.Itoa(i%97) + ".31 s\n")
		case i%3 == 0:
			put("(APIServer pid=26000) INFO " + ts() + " [loggers.py:123] Engine 000: Avg prompt throughput: " + strconv.Itoa(i%997) +
				".4 tokens/s, Avg generation throughput: 1234.5 tokens/s, Running: 8 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.3%, Prefix cache hit rate: 45.6%\n")
		default:
			put(pre + "DEBUG " + ts() + " [shm_broadcast.py:456] No available shared memory broadcast block found in 60 second; rank " + strconv.Itoa(tp) + " waits for reader " + strconv.Itoa(i%8) + "\n")
		}
	}
	return bw.Flush()
}

func benchInput(b *testing.B) []byte {
	var buf bytes.Buffer
	if err := genLog(&buf, 64<<20); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkParse: the parser alone, on 64 MiB in memory.
func BenchmarkParse(b *testing.B) {
	in := benchInput(b)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var n int64
		if _, err := Parse(bytes.NewReader(in), "bench.log", func(r record.Record) { n++ }); err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			b.Fatal("no records")
		}
	}
}

// BenchmarkParseFile parses the file named by BRINGUP_BENCH_LOG (made by
// TestGenerateBenchLog), for throughput and peak-RSS runs on large inputs.
func BenchmarkParseFile(b *testing.B) {
	path := os.Getenv("BRINGUP_BENCH_LOG")
	if path == "" {
		b.Skip("set BRINGUP_BENCH_LOG to a log file")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	for i := 0; i < b.N; i++ {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		st, err := Parse(f, path, func(record.Record) {})
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Records), "records")
	}
}

// TestGenerateBenchLog writes the benchmark input when asked:
// BRINGUP_GEN_LOG=/tmp/big.log BRINGUP_GEN_MB=1100 go test -run TestGenerateBenchLog ./ingest/enginelog
func TestGenerateBenchLog(t *testing.T) {
	path := os.Getenv("BRINGUP_GEN_LOG")
	if path == "" {
		t.Skip("set BRINGUP_GEN_LOG (and BRINGUP_GEN_MB) to write a benchmark log")
	}
	mb, _ := strconv.Atoi(os.Getenv("BRINGUP_GEN_MB"))
	if mb <= 0 {
		mb = 1100
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := genLog(f, int64(mb)<<20); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// The generated log parses as intended: every line recognised, tracebacks
// and multi-line messages joined per worker.
func TestGeneratedLogShape(t *testing.T) {
	var buf bytes.Buffer
	if err := genLog(&buf, 1<<20); err != nil {
		t.Fatal(err)
	}
	recs, st := parseBytes(t, buf.Bytes())
	if st.Recognized != st.Lines || st.Skipped != 0 {
		t.Fatalf("stats %+v", st)
	}
	joined := 0
	for _, r := range recs {
		if r.EndLine > r.Line {
			joined++
		}
		if r.Rank.Role == "Worker" && r.Rank.PID != 26370+r.Rank.TP {
			t.Fatalf("line %d: rank %+v", r.Line, r.Rank)
		}
	}
	if joined == 0 || int64(len(recs)) >= st.Lines {
		t.Errorf("%d records from %d lines, %d joined", len(recs), st.Lines, joined)
	}
}
