package enginelog

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	"github.com/bringup-tool/bringup/ingest"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/benchlog"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func parseBytes(t testing.TB, b []byte) ([]record.Record, Stats) {
	t.Helper()
	var recs []record.Record
	st, err := Parse(bytes.NewReader(b), "in.log", func(r record.Record) { recs = append(recs, r) })
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return recs, st
}

func parseFile(t testing.TB, path string) ([]record.Record, Stats) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseBytes(t, b)
}

// want is what a test asserts about one record; zero fields are not checked
// except Rank, which is always compared via its String.
type want struct {
	line, end int
	level     record.Level
	rank      string
	role      string
	pid       int
	emitter   string
	time      string // "01-02 15:04:05" (year-less), "" to skip
	labels    []string
	repeat    int
	text      string // exact text, or a prefix when it ends in "…"
}

func check(t *testing.T, recs []record.Record, i int, w want) {
	t.Helper()
	if i >= len(recs) {
		t.Fatalf("record %d missing (have %d)", i, len(recs))
	}
	r := recs[i]
	if r.Line != w.line || (w.end != 0 && r.EndLine != w.end) {
		t.Errorf("record %d: lines %d-%d, want %d-%d", i, r.Line, r.EndLine, w.line, w.end)
	}
	if r.Kind != record.KindLogLine {
		t.Errorf("record %d: kind %v", i, r.Kind)
	}
	if r.Level != w.level {
		t.Errorf("record %d: level %q, want %q", i, r.Level, w.level)
	}
	if r.Rank.String() != w.rank {
		t.Errorf("record %d: rank %q, want %q", i, r.Rank.String(), w.rank)
	}
	if w.role != "" && r.Rank.Role != w.role {
		t.Errorf("record %d: role %q, want %q", i, r.Rank.Role, w.role)
	}
	if w.pid != 0 && r.Rank.PID != w.pid {
		t.Errorf("record %d: pid %d, want %d", i, r.Rank.PID, w.pid)
	}
	if r.Emitter != w.emitter {
		t.Errorf("record %d: emitter %q, want %q", i, r.Emitter, w.emitter)
	}
	if w.time != "" && r.Time.Format("01-02 15:04:05") != w.time {
		t.Errorf("record %d: time %s, want %s", i, r.Time.Format("01-02 15:04:05"), w.time)
	}
	if w.labels != nil && !reflect.DeepEqual(r.Labels, w.labels) {
		t.Errorf("record %d: labels %q, want %q", i, r.Labels, w.labels)
	}
	if r.Repeat != w.repeat {
		t.Errorf("record %d: repeat %d, want %d", i, r.Repeat, w.repeat)
	}
	if p, ok := strings.CutSuffix(w.text, "…"); ok {
		if !strings.HasPrefix(r.Text, p) {
			t.Errorf("record %d: text %q, want prefix %q", i, r.Text, p)
		}
	} else if r.Text != w.text {
		t.Errorf("record %d: text %q, want %q", i, r.Text, w.text)
	}
}

// --- the real corpus -------------------------------------------------------

func TestCorpusVLLM30905NestedPrefix(t *testing.T) {
	recs, st := parseFile(t, testcorpus.File(t, "engine-logs", "vllm-issue-30905.log"))
	if st.Lines != 7 || st.Records != 1 || st.Recognized != 7 || st.Skipped != 0 {
		t.Fatalf("stats %+v", st)
	}
	check(t, recs, 0, want{line: 1, end: 7, level: record.LevelError, rank: "DP0 TP7", role: "Worker", pid: 26373,
		emitter: "multiproc_executor.py:815", time: "12-17 13:32:44",
		labels: []string{"(EngineCore_DP0 pid=26353)", "(Worker_TP7 pid=26373)"},
		text:   "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  File \"/usr/local/lib/python3.12/dist-packages/torch/_inductor/codegen/wrapper.py\", line 1615, in _generate\n…"})
	if !strings.Contains(recs[0].Text, "\ntorch._inductor.exc.InductorError: RuntimeError: Failed to run autotuning code block: name 'get_raw_stream' is not defined\nTraceback (most recent call last):") {
		t.Errorf("joined text lost lines: %q", recs[0].Text)
	}
	if recs[0].Rank.DP != 0 || recs[0].Rank.TP != 7 || recs[0].Rank.Global != -1 {
		t.Errorf("rank %+v", recs[0].Rank)
	}
}

func TestCorpusVLLM18851(t *testing.T) {
	recs, st := parseFile(t, testcorpus.File(t, "engine-logs", "vllm-issue-18851.log"))
	if st.Lines != 24 || st.Records != 2 || st.Recognized != 10 {
		t.Fatalf("stats %+v", st)
	}
	// The vLLM header with an empty message ends in "]" with no space
	// (line 9); it still continues the record.
	check(t, recs, 0, want{line: 1, end: 10, level: record.LevelError, rank: "rank1", role: "VllmWorker", pid: 191128,
		emitter: "multiproc_executor.py:522", time: "05-28 18:58:32",
		labels: []string{"(VllmWorker rank=1 pid=191128)"},
		text:   "    raise e.remove_dynamo_frames() from None  # see TORCHDYNAMO_VERBOSE=1\n…"})
	if !strings.Contains(recs[0].Text, "AssertionError: failed to get the hash of the compiled graph\n\nSet TORCHDYNAMO_VERBOSE=1") {
		t.Errorf("text %q", recs[0].Text)
	}
	if recs[0].Rank.Global != 1 {
		t.Errorf("rank=1 should be the global rank: %+v", recs[0].Rank)
	}
	// Line 11 is blank; 12-24 are the main process's raw traceback.
	check(t, recs, 1, want{line: 12, end: 24, rank: "",
		text: "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  File \"/mnt/fs/ml/validation.py\", line 43, in infer\n…"})
}

func TestCorpusVLLM15598DamagedFirstLineAndRay(t *testing.T) {
	recs, st := parseFile(t, testcorpus.File(t, "engine-logs", "vllm-issue-15598.log"))
	if st.Lines != 4 || st.Records != 2 || st.Recognized != 4 {
		t.Fatalf("stats %+v", st)
	}
	// The first line lost its "(": still a prefix.
	check(t, recs, 0, want{line: 1, end: 1, level: record.LevelInfo, rank: "RayWorkerWrapper pid 1861983",
		role: "RayWorkerWrapper", pid: 1861983, emitter: "model_runner.py:1442", time: "03-27 10:29:03",
		labels: []string{"RayWorkerWrapper pid=1861983)"},
		text:   "Capturing cudagraphs for decoding. This may lead to unexpected consequences…"})
	check(t, recs, 1, want{line: 2, end: 4, level: record.LevelInfo, rank: "RayWorkerWrapper pid 1463574",
		pid: 1463574, emitter: "worker.py:267", time: "03-27 10:29:01", repeat: 30,
		labels: []string{"(RayWorkerWrapper pid=1463574, ip=192.168.10.60)"},
		text: "Memory profiling takes 4.26 seconds\n" +
			"the current vLLM instance can use total_gpu_memory (44.53GiB) x gpu_memory_utilization (0.98) = 43.64GiB\n" +
			"model weights take 20.64GiB; non_torch_memory takes 0.28GiB; PyTorch activation peak memory takes 1.52GiB; the rest of the memory reserved for KV Cache is 21.20GiB."})
}

func TestCorpusVLLM21858Unprefixed(t *testing.T) {
	recs, st := parseFile(t, testcorpus.File(t, "engine-logs", "vllm-issue-21858.log"))
	if st.Lines != 2 || st.Records != 1 || st.Recognized != 0 {
		t.Fatalf("stats %+v", st)
	}
	// The paste wrapped "corr\nupted": the two bare lines are one record.
	check(t, recs, 0, want{line: 1, end: 2, rank: "",
		text: "RuntimeError: vLLM failed to compile the model. The most likely reason for this is that a previous compilation failed, leading to a corr\nupted compilation artifact. We recommend trying to remove ~/.cache/vllm/torch_compile_cache and try again to see the real issue."})
}

func TestCorpusSGLang1117(t *testing.T) {
	recs, st := parseFile(t, testcorpus.File(t, "engine-logs", "sglang-issue-1117.log"))
	if st.Lines != 22 || st.Records != 1 {
		t.Fatalf("stats %+v", st)
	}
	check(t, recs, 0, want{line: 1, end: 22, rank: "",
		text: "/tmp/tmps1rkq3y3/main.c:5:10: fatal error: Python.h: No such file or directory\n    5 | #include <Python.h>\n…"})
	if !strings.Contains(recs[0].Text, "compilation terminated.\n\nException in run_tp_server:\nTraceback (most recent call last):\n") {
		t.Errorf("text %q", recs[0].Text)
	}
}

func TestCorpusPyTorch120774Glog(t *testing.T) {
	recs, st := parseFile(t, testcorpus.File(t, "engine-logs", "pytorch-issue-120774.log"))
	if st.Lines != 6 || st.Records != 1 || st.Recognized != 6 {
		t.Fatalf("stats %+v", st)
	}
	r := recs[0]
	check(t, recs, 0, want{line: 1, end: 6, level: record.LevelInfo, rank: "rank0",
		emitter: "torch/_inductor/graph.py:789", time: "02-27 20:02:12",
		labels: []string{"[rank0]:", "[0/0]"},
		text: "Creating implicit fallback for:\n  target: fb.bucketize.default\n  args[0]: TensorBox(\n    ReinterpretView(\n      StorageBox(\n" +
			"        ComputedBuffer(name='buf950', layout=FixedLayout('cuda', torch.float32, size=[6, 3072, 1], stride=[3072, 1, 1]), data=Pointwise("})
	if r.Time.Nanosecond() != 576000000 {
		t.Errorf("sub-second part lost: %v", r.Time)
	}
	// 139718474198016 is a thread id, not a pid.
	if r.Rank.PID != 0 || r.Rank.Global != 0 {
		t.Errorf("rank %+v", r.Rank)
	}
}

// --- fixtures per prefix family --------------------------------------------

func TestVLLMV1NestedColouredInterleaved(t *testing.T) {
	recs, st := parseFile(t, filepath.Join("testdata", "vllm-v1-tp2.log"))
	if st.Lines != 50 || st.Recognized != 50 || st.Skipped != 0 {
		t.Fatalf("stats %+v", st)
	}
	check(t, recs, 0, want{line: 1, level: record.LevelInfo, rank: "", emitter: "api_server.py:1234",
		time: "12-31 23:59:50", text: "vLLM API server version 0.11.2"})
	// ANSI colours around prefixes, time and file:line are gone.
	check(t, recs, 1, want{line: 1 + 1, level: record.LevelInfo, rank: "EngineCore DP0", role: "EngineCore", pid: 26353,
		emitter: "core.py:77", time: "12-31 23:59:51", labels: []string{"(EngineCore_DP0 pid=26353)"},
		text: "Initializing a V1 LLM engine (v0.11.2) with config: model='zai-org/GLM-4.5'…"})
	check(t, recs, 2, want{line: 3, level: record.LevelInfo, rank: "DP0 TP0", role: "Worker", pid: 26370,
		emitter: "gpu_model_runner.py:2600", time: "12-31 23:59:55",
		labels: []string{"(EngineCore_DP0 pid=26353)", "(Worker_TP0 pid=26370)"},
		text:   "Starting to load model zai-org/GLM-4.5..."})
	// Interleaved TP0/TP1 traceback lines alternate, so each is its own
	// record, with the right rank; pytrace reassembles them per rank.
	var tp0, tp1 int
	for _, r := range recs {
		if r.Emitter == "multiproc_executor.py:815" {
			switch r.Rank.TP {
			case 0:
				tp0++
			case 1:
				tp1++
			}
			if r.Rank.PID != 26370+r.Rank.TP {
				t.Errorf("line %d: pid %d for TP%d", r.Line, r.Rank.PID, r.Rank.TP)
			}
		}
	}
	if tp0 != 17 || tp1 != 17 {
		t.Errorf("interleaved records: TP0 %d, TP1 %d, want 17 each", tp0, tp1)
	}
	last := recs[len(recs)-1]
	if last.Rank.Role != "APIServer" || last.Rank.PID != 26000 || !strings.HasPrefix(last.Text, "RuntimeError: Engine core initialization failed.") {
		t.Errorf("last record %+v", last)
	}
	if st.Records != int64(len(recs)) {
		t.Errorf("Records %d, emitted %d", st.Records, len(recs))
	}
}

func TestVLLMV0OldHeaderCRLFTqdm(t *testing.T) {
	recs, st := parseFile(t, filepath.Join("testdata", "vllm-v0.log"))
	if st.Lines != 7 || st.Records != 6 {
		t.Fatalf("stats %+v", st)
	}
	// Old header without "[" before the file name; CRLF stripped.
	check(t, recs, 0, want{line: 1, level: record.LevelInfo, rank: "", emitter: "llm_engine.py:237", time: "12-20 20:25:46",
		text: "Initializing an LLM engine (v0.6.3) with config: model='meta-llama/Llama-3.1-8B'"})
	check(t, recs, 1, want{line: 2, end: 3, level: record.LevelInfo, rank: "VllmWorkerProcess pid 4242", role: "VllmWorkerProcess",
		pid: 4242, emitter: "worker.py:241", time: "12-20 20:25:50",
		text: "Memory profiling takes 4.26 seconds\nthe current vLLM instance can use total_gpu_memory (79.10GiB) x gpu_memory_utilization (0.90) = 71.19GiB"})
	check(t, recs, 3, want{line: 5, level: record.LevelWarning, rank: "rank1", role: "VllmWorker", pid: 191128,
		emitter: "custom_all_reduce.py:136", text: "Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs."})
	// tqdm's carriage-return redraws: the last state is kept.
	check(t, recs, 4, want{line: 6, rank: "", text: "Capturing CUDA graph shapes: 100%|##########| 35/35 [00:11<00:00, 3.1it/s]"})
	for _, r := range recs {
		if strings.ContainsRune(r.Text, '\r') {
			t.Errorf("line %d keeps a carriage return: %q", r.Line, r.Text)
		}
	}
}

func TestSGLangHeaderOnFirstLineOnly(t *testing.T) {
	recs, st := parseFile(t, filepath.Join("testdata", "sglang-tp2.log"))
	if st.Lines != 24 || st.Records != 8 {
		t.Fatalf("stats %+v", st)
	}
	check(t, recs, 0, want{line: 1, rank: "", time: "10-29 11:20:01", text: "server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V2', tp_size=2, enable_torch_compile=True)"})
	if recs[0].Time.Year() != 2025 {
		t.Errorf("SGLang prints the year: %v", recs[0].Time)
	}
	check(t, recs, 1, want{line: 2, rank: "TP0", time: "10-29 11:20:05", text: "Load weight begin. avail mem=78.50 GB"})
	check(t, recs, 2, want{line: 3, rank: "TP1", text: "Load weight begin. avail mem=78.50 GB"})
	// The traceback's unprefixed lines, blank lines included, join the record.
	check(t, recs, 6, want{line: 7, end: 23, rank: "DP0 TP1", time: "10-29 11:23:06",
		text: "Scheduler hit an exception: Traceback (most recent call last):\n  File \"/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py\", line 162, in capture\n…"})
	if !strings.Contains(recs[6].Text, "non-zero exit status 1.\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback") ||
		!strings.HasSuffix(recs[6].Text, "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)") {
		t.Errorf("text %q", recs[6].Text)
	}
	if recs[6].Rank.DP != 0 || recs[6].Rank.TP != 1 {
		t.Errorf("rank %+v", recs[6].Rank)
	}
	check(t, recs, 7, want{line: 24, rank: "", text: "Received sigquit from a child process. It usually means the child failed."})
}

func TestATOMAndAiter(t *testing.T) {
	recs, st := parseFile(t, filepath.Join("testdata", "atom.log"))
	if st.Records != 5 || st.Recognized != 5 {
		t.Fatalf("stats %+v", st)
	}
	check(t, recs, 0, want{line: 1, rank: "", emitter: "atom", time: "01-01 23:59:58", text: "Loading tokenizer from Qwen/Qwen3-0.6B..."})
	check(t, recs, 1, want{line: 2, rank: "", emitter: "aiter", text: "import [module_aiter_core] under /opt/aiter/jit"})
	if !recs[1].Time.IsZero() {
		t.Errorf("aiter prints no time: %v", recs[1].Time)
	}
	check(t, recs, 3, want{line: 4, rank: "", emitter: "atom", time: "01-01 00:00:41", text: "Compiling a graph for dynamic shape takes 40.20 s"})
}

func TestTorchrunAndGlog(t *testing.T) {
	recs, st := parseFile(t, filepath.Join("testdata", "torchrun.log"))
	if st.Lines != 10 || st.Records != 4 || st.Recognized != 10 {
		t.Fatalf("stats %+v", st)
	}
	check(t, recs, 0, want{line: 1, level: record.LevelWarning, rank: "rank0", pid: 165, emitter: "torch/_inductor/utils.py:1703",
		time: "03-18 06:57:13", labels: []string{"[default0]:"}, text: "Not enough SMs to use max_autotune_gemm mode"})
	// glog repeats the whole header (with the compile id) on each line.
	check(t, recs, 1, want{line: 2, end: 4, level: record.LevelWarning, rank: "rank1", pid: 166,
		emitter: "torch/_dynamo/convert_frame.py:1047", labels: []string{"[rank1]:", "[5/8]"},
		text: "torch._dynamo hit config.recompile_limit (8)\n   function: 'forward' (/root/main.py:100)\n   last reason: 5/7: ___check_type_id(self, 360762944)"})
	check(t, recs, 2, want{line: 5, end: 6, level: record.LevelDebug, rank: "rank1", pid: 166,
		emitter: "torch/_dynamo/symbolic_convert.py:556", labels: []string{"[rank1]:", "[0/0]", "[__graph_breaks]"},
		text: "Graph break in user code at /home/SigLIP-2/model.py:102\nGraph Break Reason: Data dependent operator"})
	// torchrun's "[default1]:" adds no space: the traceback keeps its indentation.
	check(t, recs, 3, want{line: 7, end: 10, rank: "rank1", labels: []string{"[default1]:"},
		text: "Traceback (most recent call last):\n  File \"/root/main.py\", line 10, in <module>\n    main()\nZeroDivisionError: division by zero"})
}

func TestRayANSIRepeatNested(t *testing.T) {
	recs, st := parseFile(t, filepath.Join("testdata", "ray.log"))
	if st.Records != 3 {
		t.Fatalf("stats %+v", st)
	}
	check(t, recs, 0, want{line: 1, level: record.LevelInfo, rank: "RayWorkerWrapper pid 1463574", pid: 1463574,
		emitter: "worker.py:267", repeat: 30, labels: []string{"(RayWorkerWrapper pid=1463574, ip=192.168.10.60)"},
		text: "Memory profiling takes 4.26 seconds"})
	check(t, recs, 2, want{line: 3, level: record.LevelError, rank: "rank0", role: "VllmWorker", pid: 3621,
		emitter: "multiproc_executor.py:522", labels: []string{"(_MapWorker pid=3177, ip=10.0.28.68)", "(VllmWorker rank=0 pid=3621)"},
		text: "WorkerProc hit an exception."})
}

func TestCollectors(t *testing.T) {
	recs, st := parseFile(t, filepath.Join("testdata", "collectors.log"))
	if st.Lines != 6 || st.Records != 5 {
		t.Fatalf("stats %+v", st)
	}
	check(t, recs, 0, want{line: 1, level: record.LevelInfo, rank: "", emitter: "api_server.py:1805",
		labels: []string{"vllm-ovis"}, text: "vLLM API server version 0.10.1"})
	// Line 2 is a blank line behind its compose prefix: no record.
	check(t, recs, 1, want{line: 3, rank: "TP3", labels: []string{"sglang-1"}, text: "Load weight begin. avail mem=70.00 GB"})
	check(t, recs, 2, want{line: 4, level: record.LevelInfo, rank: "EngineCore DP1", pid: 77, emitter: "core.py:100",
		labels: []string{"[pod/vllm-0/engine]", "(EngineCore_DP1 pid=77)"}, text: "Waiting for init message from front-end."})
	check(t, recs, 3, want{line: 5, level: record.LevelWarning, rank: "PP1 TP3", pid: 8800, emitter: "utils.py:10",
		labels: []string{"Aug 19 18:30:25 gpu-node-3 vllm[8727]:", "(Worker_PP1_TP3 pid=8800)"}, text: "slow"})
	check(t, recs, 4, want{line: 6, level: record.LevelInfo, rank: "APIServer pid 12", pid: 12, emitter: "launcher.py:28",
		labels: []string{"2026-04-19 12:10:56.886", "(APIServer pid=12)"}, text: "Available routes are:"})
}

func TestProcessPrefixNames(t *testing.T) {
	cases := []struct {
		line         string
		role         string
		dp, pp, tp   int
		ep, glob     int
		pid          int
		body, labels string
	}{
		{"(Worker_TP0_EP0 pid=5) INFO 01-02 03:04:05 [a.py:1] x", "Worker", -1, -1, 0, 0, -1, 5, "x", "(Worker_TP0_EP0 pid=5)"},
		{"(Worker pid=6) INFO 01-02 03:04:05 [a.py:1] x", "Worker", -1, -1, -1, -1, -1, 6, "x", "(Worker pid=6)"},
		{"(EngineCore_0 pid=7) INFO 01-02 03:04:05 [a.py:1] x", "EngineCore", 0, -1, -1, -1, -1, 7, "x", "(EngineCore_0 pid=7)"},
		{"(VllmWorker TP3 pid=8) INFO 01-02 03:04:05 [a.py:1] x", "VllmWorker", -1, -1, 3, -1, -1, 8, "x", "(VllmWorker TP3 pid=8)"},
		{"(EngineCore pid=9) (Worker_DP1_PP0_TP3_EP3 pid=10) x", "Worker", 1, 0, 3, 3, -1, 10, "x", "(EngineCore pid=9)|(Worker_DP1_PP0_TP3_EP3 pid=10)"},
		{"[3]:hello", "", -1, -1, -1, -1, 3, 0, "hello", "[3]:"},
		{"(not a prefix) x", "", -1, -1, -1, -1, -1, 0, "(not a prefix) x", ""},
		{"(Worker pid=6)x", "", -1, -1, -1, -1, -1, 0, "(Worker pid=6)x", ""},
	}
	for _, c := range cases {
		recs, _ := parseBytes(t, []byte(c.line+"\n"))
		if len(recs) != 1 {
			t.Fatalf("%q: %d records", c.line, len(recs))
		}
		r := recs[0]
		got := record.Rank{Role: c.role, DP: c.dp, PP: c.pp, TP: c.tp, EP: c.ep, Global: c.glob, PID: c.pid}
		if r.Rank != got {
			t.Errorf("%q: rank %+v, want %+v", c.line, r.Rank, got)
		}
		if r.Text != c.body || strings.Join(r.Labels, "|") != c.labels {
			t.Errorf("%q: text %q labels %q", c.line, r.Text, r.Labels)
		}
	}
}

// --- bad input ---------------------------------------------------------------

func TestBadInputBinaryNonUTF8Truncated(t *testing.T) {
	in := "INFO 01-02 03:04:05 [a.py:1] first\n" +
		"\x00\x01\x02PNG\x00garbage\n" +
		"INFO 01-02 03:04:06 [a.py:2] caf\xe9 \xff\xfe\n" +
		"\x1b[31mERROR\x1b[0m 01-02 03:04:07 [a.py:3] trunc" // no final newline
	recs, st := parseBytes(t, []byte(in))
	if st.Lines != 4 || st.Records != 3 || st.Skipped != 1 || st.InvalidUTF8 != 1 || st.Bytes != int64(len(in)) {
		t.Fatalf("stats %+v", st)
	}
	if len(st.SkipSamples) != 1 || st.SkipSamples[0].Line != 2 || !strings.Contains(st.SkipSamples[0].Reason, "binary") {
		t.Errorf("skip samples %+v", st.SkipSamples)
	}
	if recs[1].Text != "caf\uFFFD \uFFFD" || !utf8.ValidString(recs[1].Text) {
		t.Errorf("non-UTF-8 text %q", recs[1].Text)
	}
	check(t, recs, 2, want{line: 4, level: record.LevelError, emitter: "a.py:3", text: "trunc"})
}

func TestNotALog(t *testing.T) {
	in := "{\"a\": 1,\n \"b\": [1, 2, 3]}\n" + strings.Repeat("lorem ipsum dolor\n", 10)
	recs, st := parseBytes(t, []byte(in))
	if st.Recognized != 0 || st.Lines != 12 || st.Records != 1 || recs[0].EndLine != 12 {
		t.Errorf("stats %+v, records %d", st, len(recs))
	}
	if Sniff("x.json", []byte(in)) > 10 {
		t.Errorf("sniff scored a JSON file %d", Sniff("x.json", []byte(in)))
	}
}

// hugeLine streams a prefix, n bytes of 'x' and a suffix, never holding
// the line in memory.
type hugeLine struct {
	pre, suf string
	n        int
	off      int
}

func (h *hugeLine) Read(p []byte) (int, error) {
	total := len(h.pre) + h.n + len(h.suf)
	if h.off >= total {
		return 0, io.EOF
	}
	k := 0
	for k < len(p) && h.off < total {
		switch {
		case h.off < len(h.pre):
			p[k] = h.pre[h.off]
		case h.off < len(h.pre)+h.n:
			p[k] = 'x'
		default:
			p[k] = h.suf[h.off-len(h.pre)-h.n]
		}
		k++
		h.off++
	}
	return k, nil
}

func TestFiftyMegabyteLine(t *testing.T) {
	src := &hugeLine{pre: "INFO 01-02 03:04:05 [a.py:1] before\nWARNING 01-02 03:04:06 [a.py:2] ", n: 50 << 20,
		suf: "\nERROR 01-02 03:04:07 [a.py:3] after\n"}
	var recs []record.Record
	st, err := Parse(src, "big.log", func(r record.Record) { recs = append(recs, r) })
	if err != nil {
		t.Fatal(err)
	}
	if st.Lines != 3 || st.Records != 3 || st.Cut != 1 || st.Skipped != 1 {
		t.Fatalf("stats %+v", st)
	}
	if st.SkipSamples[0].Line != 2 || !strings.Contains(st.SkipSamples[0].Reason, fmt.Sprint(len("WARNING 01-02 03:04:06 [a.py:2] ")+50<<20)) {
		t.Errorf("skip %+v", st.SkipSamples[0])
	}
	if recs[1].Level != record.LevelWarning || len(recs[1].Text) != MaxLine-len("WARNING 01-02 03:04:06 [a.py:2] ") {
		t.Errorf("cut record: level %q, %d bytes", recs[1].Level, len(recs[1].Text))
	}
	check(t, recs, 2, want{line: 3, level: record.LevelError, emitter: "a.py:3", text: "after"})
	if st.Bytes != int64(len(src.pre)+src.n+len(src.suf)) {
		t.Errorf("bytes %d", st.Bytes)
	}
}

// A line a bit longer than MaxLine that still fits in a block is cut by the
// line splitter rather than the reader.
func TestLongLineWithinBlock(t *testing.T) {
	in := "a\n" + strings.Repeat("y", MaxLine+10) + "\nb\n"
	recs, st := parseBytes(t, []byte(in))
	if st.Cut != 1 || st.Lines != 3 || st.SkipSamples[0].Line != 2 {
		t.Fatalf("stats %+v", st)
	}
	// The bare lines run together as one unprefixed record.
	if len(recs) != 1 || len(recs[0].Text) != 2+MaxLine+2 {
		t.Errorf("records %d, text %d bytes", len(recs), len(recs[0].Text))
	}
}

// Records that straddle block boundaries come out whole and in order.
func TestBlockBoundaries(t *testing.T) {
	var b strings.Builder
	n := 0
	for b.Len() < 3*blockSize+12345 {
		n++
		sec := n % 60
		for k := 0; k < 3; k++ {
			fmt.Fprintf(&b, "(Worker_TP%d pid=%d) ERROR 01-02 03:04:%02d [m.py:%d] record %d part %d of 3\n", n%4, 100+n%4, sec, n, n, k)
		}
	}
	recs, st := parseBytes(t, []byte(b.String()))
	if st.Records != int64(n) || st.Lines != int64(3*n) || len(recs) != n {
		t.Fatalf("stats %+v, %d records, want %d", st, len(recs), n)
	}
	for i, r := range recs {
		want := fmt.Sprintf("record %d part 0 of 3\nrecord %d part 1 of 3\nrecord %d part 2 of 3", i+1, i+1, i+1)
		if r.Text != want || r.Line != 3*i+1 || r.EndLine != 3*i+3 || r.Rank.TP != (i+1)%4 {
			t.Fatalf("record %d: lines %d-%d TP%d %q", i, r.Line, r.EndLine, r.Rank.TP, r.Text)
		}
	}
}

type errReader struct{ r io.Reader }

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		return n, fmt.Errorf("disk on fire")
	}
	return n, err
}

func TestReadErrorKeepsWhatWasRead(t *testing.T) {
	var recs []record.Record
	st, err := Parse(&errReader{strings.NewReader("INFO 01-02 03:04:05 [a.py:1] one\n")}, "x.log", func(r record.Record) { recs = append(recs, r) })
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err %v", err)
	}
	if len(recs) != 1 || recs[0].Text != "one" || st.Records != 1 {
		t.Errorf("records %+v", recs)
	}
}

func TestSniff(t *testing.T) {
	cases := map[string]int{
		"INFO 12-17 13:32:44 [core.py:1] hello\n":                                                      80,
		"[2025-10-29 11:25:58 TP6] Load weight begin.\n":                                               80,
		"[rank0]:W0318 06:57:13.573000 165 torch/_inductor/utils.py:1703] Not enough SMs\n":            60,
		"W0318 06:57:13.573000 165 torch/_inductor/utils.py:1703] Not enough SMs\n":                    60,
		"V0515 21:32:02.058000 49093 torch/_dynamo/convert_frame.py:1] {\"dynamo_start\": {}}\n\t{}\n": 20,
		"Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n":                   50,
		"hello world\n":    10,
		"\x00\x01binary\n": 0,
	}
	for in, want := range cases {
		if got := Sniff("x", []byte(in)); got != want {
			t.Errorf("Sniff(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestTimesCarryNoYearForVLLM(t *testing.T) {
	recs, _ := parseBytes(t, []byte("INFO 02-29 23:59:59 [a.py:1] leap\n"))
	if got := recs[0].Time; got.Year() != 0 || got.Month() != time.February || got.Day() != 29 {
		t.Errorf("time %v", got)
	}
}

func TestSniffLeavesStackDumpsAndTraces(t *testing.T) {
	for _, c := range []struct {
		sub, name string
		max       int
	}{
		{"stackdumps", "sglang-issue-12076-pyspy-compose-prefixed.txt", 30},
		{"stackdumps", "sglang-issue-17941-native-pyspy-part1.txt", 30},
		{"tlparse-inputs", "simple.log", 20},
		{"engine-logs", "vllm-issue-30905.log", 100},
	} {
		p := testcorpus.File(t, c.sub, c.name)
		head, err := ingest.Head(p)
		if err != nil {
			t.Fatal(err)
		}
		got := Sniff(p, head)
		if got > c.max || got == 0 {
			t.Errorf("Sniff(%s) = %d, want 1..%d", c.name, got, c.max)
		}
	}
	if got := Sniff("x.log", []byte("INFO 12-17 13:32:44 [core.py:1] hello\n")); got == 0 {
		t.Errorf("Sniff = %d", got)
	}
}

// An input's first block starts at firstBlock bytes and grows when the
// input fills it: a line longer than firstBlock (but under MaxLine) at the
// start is not cut, and inputs of about firstBlock bytes, read in odd
// chunks, lose no line.
func TestSmallFirstBlockGrows(t *testing.T) {
	long := strings.Repeat("z", firstBlock+5000)
	recs, st := parseBytes(t, []byte("(Worker_TP1 pid=7) INFO 01-02 03:04:05 [m.py:1] "+long+"\nb\n"))
	if st.Cut != 0 || len(recs) != 2 || recs[0].Text != long || recs[1].Text != "b" {
		t.Fatalf("stats %+v, %d records", st, len(recs))
	}
	for _, size := range []int{firstBlock - 1, firstBlock, firstBlock + 1, 2*firstBlock + 3} {
		var b strings.Builder
		n := 0
		for b.Len() < size {
			n++
			fmt.Fprintf(&b, "(Worker_TP%d pid=9) ERROR 01-02 03:04:05 [m.py:1] record %d\n", n%2, n)
		}
		in := b.String()[:size] // the last line may be cut short, without '\n'
		want := strings.Count(in, "\n")
		if !strings.HasSuffix(in, "\n") {
			want++
		}
		var got []record.Record
		st, err := Parse(iotest.HalfReader(strings.NewReader(in)), "x", func(r record.Record) { got = append(got, r) })
		if err != nil || st.Lines != int64(want) || len(got) != want || st.Bytes != int64(size) {
			t.Fatalf("size %d: err %v, stats %+v, %d records, want %d", size, err, st, len(got), want)
		}
		if last := got[len(got)-1]; last.Line != want {
			t.Errorf("size %d: last record on line %d, want %d", size, last.Line, want)
		}
	}
}

// TestBlocksNotBorrowedPastTheirTurn: with every block's memory
// overwritten once the joiner hands it back, Parse gives the same records
// (records continuing across block boundaries copy what they borrowed).
func TestBlocksNotBorrowedPastTheirTurn(t *testing.T) {
	var buf bytes.Buffer
	if err := benchlog.Write(&buf, 6<<20, 8); err != nil {
		t.Fatal(err)
	}
	in := buf.Bytes()
	want, _ := parseBytes(t, in)
	PoisonReleased = true
	defer func() { PoisonReleased = false }()
	got, _ := parseBytes(t, in)
	if len(got) != len(want) {
		t.Fatalf("%d records with poisoned blocks, %d without", len(got), len(want))
	}
	multi := 0
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("record %d differs:\npoisoned %+v\nplain    %+v", i, got[i], want[i])
		}
		if want[i].EndLine > want[i].Line {
			multi++
		}
	}
	if multi == 0 {
		t.Fatal("no multi-line record: the test shows nothing")
	}
}

// TestBatchesHeldByReaders: records read from batches on other goroutines,
// after emit has returned, with every batch's texts poisoned once its last
// reader releases it (and every block once stitched), are the records
// Parse gives.
func TestBatchesHeldByReaders(t *testing.T) {
	var buf bytes.Buffer
	if err := benchlog.Write(&buf, 6<<20, 8); err != nil {
		t.Fatal(err)
	}
	inputs := [][]byte{buf.Bytes()}
	for _, p := range seedFiles() {
		if b, err := os.ReadFile(p); err == nil && filepath.Base(p) != "MANIFEST.md" {
			inputs = append(inputs, b)
		}
	}
	PoisonReleased = true
	defer func() { PoisonReleased = false }()
	for n, in := range inputs {
		want, _ := parseBytes(t, in)
		// Two readers, each with its own copy of every record, as
		// diagnose's consumers do; the second is slow.
		got := [2][]record.Record{}
		chans := [2]chan *Batch{make(chan *Batch, 64), make(chan *Batch, 64)}
		var wg sync.WaitGroup
		for k := range chans {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b := range chans[k] {
					if k == 1 {
						time.Sleep(100 * time.Microsecond)
					}
					for i := 0; i < b.Len(); i++ {
						rec, _, text := b.At(i)
						r := *rec
						r.Text = string(text)
						got[k] = append(got[k], r)
					}
					b.Release()
				}
			}()
		}
		_, err := ParseBatches(bytes.NewReader(in), "in.log", Options{}, func(b *Batch) {
			for _, c := range chans {
				b.Hold()
				c <- b
			}
		})
		for _, c := range chans {
			close(c)
		}
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		for k := range got {
			if !reflect.DeepEqual(got[k], want) {
				t.Fatalf("input %d, reader %d: %d records from held batches, %d from Parse, or they differ", n, k, len(got[k]), len(want))
			}
		}
	}
}

// stitched parses in as blocks cut before the lines starting at the
// given offsets, each peeled and joined on its own, then stitched, as
// ParseBatches does whatever the read sizes were; with a literal scan, so
// the records' masks are compared too.
func stitched(in []byte, cuts []int) ([]joined, Stats) {
	var got []joined
	s := newStitcher("in.log", Options{Scan: fuzzScan}, func(b *Batch) {
		got = appendJoined(got, b)
	})
	p := peeler{scan: fuzzScan}
	j := &joiner{source: "in.log", labels: map[string][]string{}}
	line, start := int64(1), 0
	for k := 0; k <= len(cuts); k++ {
		end := len(in)
		if k < len(cuts) {
			end = cuts[k]
		}
		if end <= start {
			continue
		}
		b := &block{data: in[start:end], first: line}
		line += int64(bytes.Count(b.data, []byte{'\n'}))
		if b.data[len(b.data)-1] != '\n' {
			line++
		}
		p.joinBlock(b, j)
		s.stitch(b)
		for _, o := range b.outs {
			o.blk = nil // the test's blocks are not pooled
		}
		start = end
	}
	s.finish()
	return got, s.st
}

// joined is a record with its text set and its literal mask.
type joined struct {
	Rec  record.Record
	Mask uint64
}

func appendJoined(out []joined, b *Batch) []joined {
	for i := 0; i < b.Len(); i++ {
		rec, mask, text := b.At(i)
		r := *rec
		r.Text = string(text)
		out = append(out, joined{r, mask})
	}
	return out
}

// serial parses in with one joiner over every line in order.
func serial(in []byte) ([]joined, Stats) {
	p := peeler{scan: fuzzScan}
	j := &joiner{source: "in.log", labels: map[string][]string{}, cur: &Batch{}}
	b := &block{data: in}
	p.peelBlock(b, 0)
	for k := range b.lines {
		j.add(&b.lines[k])
	}
	j.flush()
	j.st.Records = int64(j.cur.Len())
	j.st.InvalidUTF8 = j.cur.invalidFrom()
	return appendJoined(nil, j.cur), j.st
}

// lineStarts are the offsets of in's lines but the first.
func lineStarts(in []byte) []int {
	var out []int
	for i, c := range in {
		if c == '\n' && i+1 < len(in) {
			out = append(out, i+1)
		}
	}
	return out
}

func checkStitched(t *testing.T, in []byte, cuts []int) {
	t.Helper()
	want, wst := serial(in)
	got, gst := stitched(in, cuts)
	if !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("cuts %v: record %d differs:\nstitched %+v\nserial   %+v", cuts, i, got[i], want[i])
			}
		}
		t.Fatalf("cuts %v: %d records stitched, %d serial", cuts, len(got), len(want))
	}
	gst.Bytes = wst.Bytes
	if !reflect.DeepEqual(gst, wst) {
		t.Fatalf("cuts %v: stats %+v stitched, %+v serial", cuts, gst, wst)
	}
}

// TestStitchEveryCut: every corpus log, cut into blocks at every line
// boundary in turn (and at all of them), gives the records and stats of
// one joiner reading it whole.
func TestStitchEveryCut(t *testing.T) {
	inputs := [][]byte{}
	for _, p := range seedFiles() {
		if b, err := os.ReadFile(p); err == nil && filepath.Base(p) != "MANIFEST.md" {
			inputs = append(inputs, b)
		}
	}
	if len(inputs) == 0 {
		t.Skip("no corpus")
	}
	// A generated log whose blocks fill several batches, so a cut can
	// leave a batch's records out.
	var gen bytes.Buffer
	if err := benchlog.Write(&gen, 200<<10, 8); err != nil {
		t.Fatal(err)
	}
	inputs = append(inputs, gen.Bytes())
	for _, in := range inputs {
		if len(in) > 256<<10 {
			in = in[:256<<10]
		}
		starts := lineStarts(in)
		checkStitched(t, in, starts)
		step := max(1, len(starts)/100) // a hundred single cuts per file
		for k := 0; k < len(starts); k += step {
			checkStitched(t, in, starts[k:k+1])
		}
	}
}

// FuzzStitch: any input, cut into blocks at line boundaries the fuzzer
// picks, stitches to what one joiner reading it whole gives.
func FuzzStitch(f *testing.F) {
	for _, p := range seedFiles() {
		if b, err := os.ReadFile(p); err == nil && filepath.Base(p) != "MANIFEST.md" {
			f.Add(b[:min(len(b), 4096)], []byte{3, 1, 4, 1, 5})
		}
	}
	f.Add([]byte("a\n\nb\n  \nTraceback (most recent call last):\n  File \"x\", line 1\n\x00\n"), []byte{1, 1, 1})
	f.Fuzz(func(t *testing.T, in []byte, picks []byte) {
		starts := lineStarts(in)
		var cuts []int
		k := 0
		for _, c := range picks {
			k += int(c)
			if k >= len(starts) {
				break
			}
			cuts = append(cuts, starts[k])
			k++
		}
		checkStitched(t, in, cuts)
	})
}
