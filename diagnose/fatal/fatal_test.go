package fatal

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	fatal := map[string]Kind{
		"Segmentation fault (core dumped)": NativeCrash,
		"[rank0]: Caught signal 11 (Segmentation fault: address not mapped to object at address 0x8)": NativeCrash,
		"Aborted (core dumped)": NativeCrash,
		"terminate called after throwing an instance of 'c10::Error'":                     NativeCrash,
		"*** SIGSEGV (@0x0) received by PID 4242 (TID 0x7f) from PID 0; stack trace: ***": NativeCrash,
		"[12345.678] Out of memory: Killed process 4242 (python3) total-vm:1234kB":        OOMKill,
		"./serve.sh: line 3:  4242 Killed                  vllm serve /models/x":          Killed,
		"Killed":                                Killed,
		"srun: error: node7: tasks 0-1: Killed": Killed,
		"RuntimeError: CUDA error: an illegal memory access was encountered":                                                                 DeviceError,
		"CUDA Error: invalid argument at /workspace/csrc/cumem_allocator.cpp:57":                                                             DeviceError,
		"Cuda error /workspace/csrc/custom_all_reduce.cuh:143 'invalid resource handle'":                                                     DeviceError,
		"[FATAL ERROR]: HSA_NO_SCRATCH_RECLAIM=1 must be set to avoid performance":                                                           NativeCrash,
		"NCCL error : invalid argument":                                                                                                      Collective,
		"[torch_memory_saver.cpp] cudaError error: 1 (invalid argument)  file=csrc/core.cpp func=pause line=133":                             DeviceError,
		"!!!!!!! Segfault encountered !!!!!!!":                                                                                               NativeCrash,
		"[TM][FATAL] kernels/attention/decoding.cu(34): Check failed: kernel No decoding kernel found: decode_d256_f16_gs4":                  NativeCrash,
		"Assertion failed: /sgl-workspace/DeepEP/csrc/kernels/internode.cu:483, condition: ibgda_get_state()->num_rc_per_pe >= num_channels": NativeCrash,
		"[2026-05-21 16:07:41 DP6 TP6] Failed to update parameter online: start out of ra":                                                   ErrorLine,
		"HIP error: hipErrorNoBinaryForGpu: Unable to find code object for all current devices":                                              DeviceError,
		"fail to call hipModuleLaunchKernel(...) ---> [HIP error](invalid resource handle)":                                                  DeviceError,
		"torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1333":                                                       Collective,
		"[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4)":                                                          Collective,
		"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.2]:22183":                      Collective,
		"[PG 1 Rank 3] Exception (either an error or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582":             Collective,
		"[rank7]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 7] Timeout at NCCL work: 1, last enqueued NCCL work: 1":                            Collective,
		"[PG ID 0 PG GUID 0(default_pg) Rank 2] Heartbeat monitor timed out! Process will be terminated after dumping debug info.":           Collective,
		"  exitcode  : -9 (pid: 4242)":                                                                                     ChildExit,
		"Worker proc VllmWorker-0 died unexpectedly, shutting down executor.":                                              ChildExit,
		"Rank 0 scheduler is dead. Please check if there are relevant logs.":                                               ChildExit,
		"(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot":       ChildExit,
		"Engine Core Mgr: Received unexpected SHUTDOWN signal from DP rank 0 during initialization":                        ChildExit,
		"subprocess.CalledProcessError: Command '['/usr/bin/gcc', 'main.c']' returned non-zero exit status 1.":             BuildFailed,
		"libc++abi: terminating due to uncaught exception of type c10::Error: Only a single TORCH_LIBRARY":                 NativeCrash,
		"Loading checkpoint shards:   0%|          | 0/2 [00:00<?, ?it/s]Killed":                                           Killed,
		"TODO: graph recording observed an input tensor deallocate during graph recording that did not":                    DeviceError,
		"transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'":                                                  Collective,
		"/tmp/torchinductor_u/fr/cfr.cpp:6:21: error: 'zuf0' was not declared in this scope":                               BuildFailed,
		"(raylet) node_manager.cc:2211: 3 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed": OOMKill,
		"ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory. Ray killed this worker":   OOMKill,
		"Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html":  DeviceError,
		"/usr/bin/ld: cannot find -lcuda: No such file or directory":                                                       BuildFailed,
		"x86_64-linux-gnu-ld.bfd: cannot find -lpython3.11":                                                                BuildFailed,
		"collect2: error: ld returned 1 exit status":                                                                       BuildFailed,
		"[12345.1] Memory cgroup out of memory: Killed process 4242 (python3) total-vm:123kB":                              OOMKill,
		"Floating point exception (core dumped)":                                                                           NativeCrash,
		"slurmstepd: error: Detected 1 oom-kill event(s) in StepId=487912.batch cgroup.":                                   OOMKill,
		"      reason: OOMKilled":                                                                                         OOMKill,
		"      Reason:       OOMKilled":                                                                                   OOMKill,
		"CUDA Exception: Device Unknown Exception (30)":                                                                   DeviceError,
		".../src/host/mem/mem_heap.cpp:1519: non-zero status: 1 cuMemMap failed":                                          DeviceError,
		"Engine core initialization failed. See root cause above. Failed core proc(s): {}":                                ChildExit,
		"OMP: Error #15: Initializing libiomp5md.dll, but found libiomp5md.dll already initialized.":                      NativeCrash,
		"CHECK_EQ(input.size(0), residual.size(0)) failed. 8 vs 32":                                                       NativeCrash,
		"error: Failures have been detected while processing an MLIR pass pipeline":                                       BuildFailed,
		"Fatal glibc error: malloc.c:2601 (sysmalloc): assertion failed":                                                  NativeCrash,
		"ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).":    NativeCrash,
		"RuntimeError: DataLoader worker (pid 1234) is killed by signal: Killed.":                                         Killed,
		"RuntimeError: ACL stream synchronize failed, error code:507014":                                                  DeviceError,
		"LLVM ERROR: Failed to translate TritonGPU to LLVM IR.":                                                           NativeCrash,
		"/sgl/jit_kernel/csrc/elementwise/activation.cuh:95:52: error: type/value mismatch at argument 1":                 BuildFailed,
		"nvcc fatal   : Unsupported gpu architecture 'compute_86'":                                                        BuildFailed,
		"custom_kernels.cu:1892:41: error: '__builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8' needs target feature fp8-insts":   BuildFailed,
		"ptxas-blackwell fatal   : Value 'sm_110a' is not defined for option 'gpu-name'":                                  BuildFailed,
		"ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'":                                            BuildFailed,
		"vllm serve: error: argument --quantization/-q: invalid choice: 'ascend' (choose from 'aqlm', 'awq')":             UsageError,
		"vllm: error: unrecognized arguments: --task embedding":                                                           UsageError,
		"libascend_hal.so: cannot open shared object file: No such file or directory":                                     LibraryLoad,
		"Shard process was signaled to shutdown with signal 4 rank=0":                                                     NativeCrash,
		"[ERROR] [launch.py:320:sigkill_handler] ['/opt/conda/bin/python', '-u', 'train.py'] exits with return code = -9": ChildExit,
		"Failed to compile. cc_cmd: ['C:\\BuildTools\\cl.exe', 'main.c']":                                                 BuildFailed,
		"[TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/core/allocator.cc:49":                      DeviceError,
		"[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to connect to 192.0.0.1:1234":   Collective,
		"card-16:22789:28201 [0] graph/rings.cc:38 NCCL WARN Error : ring 0 does not loop back to start (14 != 0)":        Collective,
	}
	for line, want := range fatal {
		h, ok := Classify(line)
		if !ok || h.Kind != want || !strings.Contains(line, h.Match) {
			t.Errorf("%q: %+v %v, want %s", line, h, ok, want)
		}
		// The parser's gate finds the line: by a literal, or by Leads.
		found := Leads([]byte(strings.TrimSpace(line)))
		for _, l := range Literals() {
			found = found || strings.Contains(line, l)
		}
		if !found {
			t.Errorf("%q: neither a literal of Literals() nor Leads finds it", line)
		}
	}
	for _, line := range []string{
		"INFO 11-29 21:04:31 [core.py:91] exit code 0",
		"Process exited with exit code 0",
		"INFO: Killed 3 idle connections",
		"NCCL INFO Channel 00/02 : 0 1",
		"node1:42:42 [0] NCCL WARN NET/Plugin: Could not find: libnccl-net.so",
		"note: in a comment, error: is only a word",
		"INFO the CHECK of the config passed",
		"INFO don't panic: the retry loop handles it",
		"      reason: Completed",
		"notes.cu:12: warning: error: is only a word here",
		"the watchdog is enabled",
		"an error detected by watchdog code is logged here",
		"INFO timeout at NCCL work is set to 600s",
		"(raylet) 0 Workers (tasks / actors) killed due to memory pressure, 0 Workers crashed",
		"Search for cudaError in the docs",
		"ld: cannot find the answer in the FAQ",
		"INFO 11-29 21:05:14 [gpu_worker.py:298] Available KV cache memory: 52.31 GiB",
		"the page cache ran out of memory: Killing idle readers",
		"WARNING: the DataLoader worker (pid 1234) is killed by signal: Terminated.",
		"check for floating point exceptions with torch.autograd.detect_anomaly",
		"the parser prints usage: error: argument lists are described below",
		"ImportError: libcudart.so.12: cannot open shared object file: No such file or directory",
		"a.cuh:95:1: note: candidate: template<class T>",
		"/tmp/tmpb2y6rt0r/test.c:1:10: fatal error: libaio.h: No such file or directory",
		"Assertion failed, input should be a positive integer",
		"the Cuda error codes are listed at /docs/errors.md",
	} {
		if h, ok := Classify(line); ok {
			t.Errorf("%q is not fatal: %+v", line, h)
		}
	}
}

// TestScanWhat: a terminate line carries the what() printed under it.
func TestScanWhat(t *testing.T) {
	hs := Scan("terminate called after throwing an instance of 'gloo::IoException'\n  what():  [pair.cc:724] connect [127.0.1.1]:3210: Connection refused\nAborted (core dumped)")
	if len(hs) != 2 || !strings.HasSuffix(hs[0].Text, "what(): [pair.cc:724] connect [127.0.1.1]:3210: Connection refused") || hs[1].Line != 2 {
		t.Errorf("%+v", hs)
	}
	if hs := Scan("terminate called recursively"); len(hs) != 1 || hs[0].Text != "terminate called recursively" {
		t.Errorf("%+v", hs)
	}
}

// TestQuietOnHealthyExample: no line of the healthy example boot is fatal.
func TestQuietOnHealthyExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "healthy", "vllm-serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	if hs := Scan(string(data)); len(hs) > 0 {
		t.Errorf("healthy boot: %+v", hs)
	}
}

func FuzzClassify(f *testing.F) {
	m, _ := filepath.Glob(filepath.Join("..", "..", "corpus", "field", "*.log"))
	for _, p := range m {
		if b, err := os.ReadFile(p); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				f.Add(l)
			}
		}
	}
	f.Fuzz(func(t *testing.T, line string) {
		for _, h := range Scan(line) {
			if h.Match == "" || !strings.Contains(h.Text, h.Match) || !strings.Contains(line, h.Text) {
				t.Fatalf("%+v of %q", h, line)
			}
		}
	})
}

// TestWork: the timeout and the watchdog's reports name the same work.
func TestWork(t *testing.T) {
	for line, want := range map[string]string{
		"[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE": "1580",
		"[PG 1 Rank 3] Exception (either an error or timeout) detected by watchdog at work: 1580, last": "1580",
		"[PG 0 (default_pg) Rank 1] Timeout at NCCL work: 6463, last enqueued NCCL work: 6463":          "6463",
		"[PG 0 Rank 1] Heartbeat monitor timed out! Process will be terminated":                         "",
		"NCCL work queue is empty": "",
	} {
		if got := Work(line); got != want {
			t.Errorf("%q: %q, want %q", line, got, want)
		}
	}
}

// A compiler's own error line: its diagnostic from the file's name on, the
// installed package whose CUDA source it is on, and that it is the
// compiler's (not the build command's exit, which only reports it).
func TestCompilerLine(t *testing.T) {
	h, ok := Classify("/opt/conda/lib/python3.12/site-packages/sgl_kernel/csrc/act.cuh:95:52: error: type/value mismatch")
	if !ok || !h.Compiler() || h.Diagnostic() != "act.cuh:95:52: error: type/value mismatch" || h.ShippedCUDA() != "sgl-kernel" {
		t.Errorf("cuh line: %+v compiler %v diagnostic %q package %q", h, h.Compiler(), h.Diagnostic(), h.ShippedCUDA())
	}
	h, ok = Classify("/x/site-packages/deepspeed/ops/csrc/includes/gemm_test.h:6:10: fatal error: cuda_profiler_api.h: No such file or directory")
	if !ok || h.Diagnostic() != "gemm_test.h:6:10: fatal error: cuda_profiler_api.h: No such file or directory" || h.ShippedCUDA() != "" {
		t.Errorf("header line: diagnostic %q package %q", h.Diagnostic(), h.ShippedCUDA())
	}
	h, ok = Classify("subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.")
	if !ok || h.Compiler() || h.Diagnostic() != "" {
		t.Errorf("build command's exit: %+v compiler %v diagnostic %q", h, h.Compiler(), h.Diagnostic())
	}
}

// TestRowsCompile: the rows' expressions compile on first use in a run;
// here every one is compiled, so a bad one fails the test, not a run.
func TestRowsCompile(t *testing.T) {
	for _, p := range append(slices.Clip(patterns), errorLines...) {
		if err := p.re.Compile(); err != nil {
			t.Errorf("%s row %q: %v", p.kind, p.lits, err)
		}
	}
}
