// Package fatal recognises the lines of a log that say a process died
// without a Python traceback: native crashes, the kernel's OOM killer,
// CUDA/HIP errors, NCCL/RCCL/gloo errors and watchdog timeouts, and a
// launcher reporting a child's non-zero exit. It is the part of
// diagnose's floor that no rule has to know: each such line is fatal
// whether or not a rule explains it. Python exceptions are found by
// analyze/pytrace.
package fatal

import (
	"bytes"
	"regexp"
	"slices"
	"strings"

	"github.com/bringup-tool/bringup/internal/lazyre"
)

// Kind is what a fatal line reports.
type Kind string

const (
	NativeCrash Kind = "native-crash" // a signal, a segfault, an abort, a C++ exception
	OOMKill     Kind = "oom-kill"     // the kernel's or Ray's OOM killer
	// Killed: a process killed by SIGKILL ("Killed" from a shell, srun's
	// "tasks 0-1: Killed"), which does not say who sent it: the OOM killer,
	// a container limit, the scheduler or a person.
	Killed      Kind = "killed"
	DeviceError Kind = "device-error"     // CUDA / HIP / cuBLAS errors
	Collective  Kind = "collective-error" // NCCL / RCCL / gloo errors, watchdog and store timeouts
	ChildExit   Kind = "child-exit"       // a launcher saying a child exited non-zero or died
	BuildFailed Kind = "build-failed"     // a compiler or build command failed (a JIT build, Triton's launcher)
	// UsageError: a command line the program rejected before doing
	// anything (argparse's "prog: error: unrecognized arguments: …"); the
	// process exits with status 2.
	UsageError Kind = "usage-error"
	// LibraryLoad: the dynamic loader found no shared library a module
	// needs ("libascend_hal.so: cannot open shared object file"), printed
	// without the ImportError around it or before a wrapper's error.
	LibraryLoad Kind = "library-load"
	// ErrorLine: an error-level log line saying a component failed to
	// start or was killed ("[E] Failed to initialize executor", "ERROR …
	// Failed to load NCCL library"). Fatal only when nothing else is: an
	// engine logs such lines on the way to the exception that ends it.
	ErrorLine Kind = "error-line"
)

// Title is a finding title for a kind.
func (k Kind) Title() string {
	switch k {
	case NativeCrash:
		return "Native crash"
	case OOMKill:
		return "Process killed (out of memory)"
	case Killed:
		return "Process killed by a signal (SIGKILL)"
	case DeviceError:
		return "GPU runtime error"
	case Collective:
		return "Collective communication error"
	case ChildExit:
		return "A child process exited with an error"
	case BuildFailed:
		return "A build command failed"
	case ErrorLine:
		return "A component failed to start"
	case UsageError:
		return "The command line was rejected"
	case LibraryLoad:
		return "A shared library could not be loaded"
	}
	return "Fatal error"
}

// Consequence reports whether a line of this kind usually reports a
// failure told elsewhere (a launcher noticing its child died): such a
// line is the finding only when nothing else fatal was found.
func (k Kind) Consequence() bool { return k == ChildExit || k == ErrorLine }

type pattern struct {
	kind Kind
	lits []string       // one of them occurs in every line the regex matches
	re   *lazyre.Regexp // compiled when a line holds one of lits
}

// ownLines start the wordings that their writer prints as a line of its
// own (a runtime's abort report): text before one on a line is another
// write that a lost newline glued to it, and the hit's Text starts at it.
var ownLines = []string{"LLVM ERROR: "}

// patterns is the table of fatal lines, one row per wording.
//
// Every row's literals are at least 12 bytes but for a few words that
// are fatal on their own ("Killed", "Aborted"): the parser's literal scan
// takes long literals in one strided pass, each short one costs a pass.
var patterns = []pattern{
	{NativeCrash, []string{"Caught signal"}, lazyre.New(`Caught signal \d+`)},
	{NativeCrash, []string{"Segmentation fault"}, lazyre.New(`Segmentation fault`)},
	{NativeCrash, []string{"(core dumped)"}, lazyre.New(`\(core dumped\)`)},
	{NativeCrash, []string{"Aborted"}, lazyre.New(`^Aborted\b|\d+ Aborted\s|: Aborted$|^Aborted$`)}, // found by Leads when it starts the line
	{NativeCrash, []string{" received by PID"}, lazyre.New(`\*\*\* SIG[A-Z]+ .*received by PID`)},
	{NativeCrash, []string{"terminate called"}, lazyre.New(`terminate called (after throwing an instance of|without an active exception|recursively)`)},
	{NativeCrash, []string{"terminating due to uncaught exception"}, lazyre.New(`terminating due to uncaught exception of type \S`)}, // libc++abi
	// LLVM's report_fatal_error, which aborts the process (Triton's and
	// ROCm's compilers are LLVM): LLVM writes it to stderr as a line of
	// its own, so what stands before it on a line is another write.
	{NativeCrash, []string{"LLVM ERROR: "}, lazyre.New(`LLVM ERROR: \S`)},
	// glibc's assert(): "prog: file:line: func: Assertion `expr' failed.",
	// then abort (LLVM/MLIR assertions in Triton's compiler, a C++ extension).
	{NativeCrash, []string{": Assertion `"}, lazyre.New("[^ ]: Assertion `.*' failed")},
	{NativeCrash, []string{"Floating point exception"}, lazyre.New(`Floating point exception`)},
	// torch's own SIGSEGV handler (its C++ stack follows).
	{NativeCrash, []string{"Segfault encountered"}, lazyre.New(`Segfault encountered`)},
	// The LLVM OpenMP runtime refusing a second copy of itself in the
	// process ("OMP: Error #15: Initializing libiomp5md.dll, but found
	// libiomp5md.dll already initialized."), then it aborts.
	// A Rust program's panic (TGI's router and launcher: "thread 'main'
	// panicked at 'Unable to warmup model: …'", newer Rust "thread 'main'
	// panicked at src/main.rs:148:10:") and Go's ("panic: runtime error: …",
	// found by Leads at the line's start).
	{NativeCrash, []string{"' panicked at "}, lazyre.New(`thread '[^']*' panicked at `)},
	{NativeCrash, []string{"panic: "}, lazyre.New(`^panic: \S`)},
	{NativeCrash, []string{"OMP: Error #"}, lazyre.New(`OMP: Error #\d+: \S`)},
	// A glog/abseil CHECK that failed ("CHECK_EQ(a, b) failed. 8 vs 32"),
	// which aborts the process; found by Leads at the line's start.
	{NativeCrash, []string{"CHECK"}, lazyre.New(`^CHECK(?:_(?:EQ|NE|LT|LE|GT|GE))?\(.*\) failed\b`)},
	// glog's own wording of the same abort ("F0101 … file.cc:12] Check
	// failed: x == y", TurboMind's "[TM][FATAL] decoding.cu(34): Check
	// failed: kernel …").
	{NativeCrash, []string{"Check failed: "}, lazyre.New(`Check failed: \S`)},
	// A CUDA library's host or device assertion that prints where and what
	// before it traps or aborts (DeepEP's "Assertion failed: internode.cu:483,
	// condition: …"); pydantic's "Assertion failed, …" is a validator's error.
	{NativeCrash, []string{"Assertion failed: "}, lazyre.New(`Assertion failed: [^\s,]+:\d+`)},
	// TensorRT-LLM's TLLM_CHECK ("[TensorRT-LLM][ERROR] Assertion failed:
	// FP8 FMHA cannot be enabled …"), also as the what() of a terminate
	// report whose first line was cut.
	{NativeCrash, []string{"][ERROR] Assertion failed: "}, lazyre.New(`\]\[ERROR\] Assertion failed: \S`)},
	// glibc 2.37+'s own consistency checks ("Fatal glibc error: malloc.c:2601
	// (sysmalloc): assertion failed"), then abort.
	{NativeCrash, []string{"Fatal glibc error"}, lazyre.New(`Fatal glibc error: \S`)},
	// RCCL's (and other ROCm libraries') abort at init: "[FATAL ERROR]:
	// HSA_NO_SCRATCH_RECLAIM=1 must be set …", then the process exits.
	{NativeCrash, []string{"[FATAL ERROR]: "}, lazyre.New(`^\[FATAL ERROR\]: \S`)},
	// PyTorch's DataLoader reporting a worker that died of a signal
	// ("ERROR: Unexpected segmentation fault encountered in worker.", "…
	// bus error …", often too little shared memory).
	{NativeCrash, []string{"encountered in worker"}, lazyre.New(`Unexpected (?:segmentation fault|bus error|floating-point exception) encountered in worker`)},
	{NativeCrash, []string{"Illegal instruction"}, lazyre.New(`Illegal instruction`)},
	{NativeCrash, []string{"double free or corruption", "free(): invalid", "malloc(): corrupted", "malloc(): memory corruption", "malloc(): unaligned"},
		lazyre.New(`double free or corruption|free\(\): invalid|malloc\(\): (corrupted|memory corruption|unaligned)`)},
	// The kernel's OOM killer, globally or for a cgroup's limit (a
	// container's: "Memory cgroup out of memory: Killed process 4242").
	{OOMKill, []string{"Out of memory: Kill", "out of memory: Kill"}, lazyre.New(`[Oo]ut of memory: Kill(ed)? process`)},
	{OOMKill, []string{"invoked oom-killer", "oom_kill_process", "oom-kill:constraint"}, lazyre.New(`invoked oom-killer|oom-kill:constraint|oom_kill_process`)},
	// The same kill as a job scheduler or an orchestrator tells it: Slurm's
	// step ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=…
	// cgroup"), Kubernetes' container status ("reason: OOMKilled", "Reason:
	// OOMKilled" in kubectl describe).
	{OOMKill, []string{"oom-kill event", "reason: OOMKilled", "Reason: OOMKilled", "Reason:       OOMKilled"},
		lazyre.New(`Detected \d+ oom-kill event|[Rr]eason:\s+OOMKilled\b`)},
	// Ray's memory monitor killing a worker or an actor when the node's host
	// memory crosses its threshold (the raylet's summary, the actor's error).
	{OOMKill, []string{"memory pressure (OOM)", "Ray killed this worker"},
		lazyre.New(`killed due to memory pressure \(OOM\)|Ray killed this worker`)},
	// The DataLoader's word that a worker was killed ("DataLoader worker
	// (pid 1234) is killed by signal: Killed."): a SIGKILL, sender unnamed.
	{Killed, []string{"is killed by signal: Killed"}, lazyre.New(`is killed by signal: Killed`)},
	{Killed, []string{"Killed"}, lazyre.New(`^Killed$|^Killed\s|\d+ Killed\s|: Killed$|(?:it|s)/(?:s|it)\]Killed$`)}, // also after a progress bar
	// CUDA graph trees' own checks of a recording against its replay.
	{DeviceError, []string{"during graph recording"}, lazyre.New(`graph recording observed an input tensor deallocate during graph recording`)},
	// (vLLM's cumem allocator prints its own "CUDA Error: <text> at file:line".)
	{DeviceError, []string{"CUDA error: ", "CUDA Error: "}, lazyre.New(`CUDA [Ee]rror: \S`)},
	// vLLM's and SGLang's CUDACHECK in their C++ kernels prints "Cuda error
	// file:line 'text'" and exits ("Cuda error
	// /workspace/csrc/custom_all_reduce.cuh:143 'invalid resource handle'").
	{DeviceError, []string{"Cuda error /", "Failed: Cuda error"}, lazyre.New(`Cuda error \S+:\d+ '`)},
	// torch's HIP build says "HIP error: …" where the CUDA one says "CUDA
	// error: …" (found by Leads when it starts the line).
	{DeviceError, []string{" HIP error: ", "HIP error: "}, lazyre.New(`(?:^|\s)HIP error: \S`)},
	// ROCm's runtime reporting a GPU page fault, then aborting: "Memory
	// access fault by GPU node-6 (Agent handle: 0x…) on address 0x….
	// Reason: Unknown." (the AMD counterpart of an illegal memory access).
	{DeviceError, []string{"Memory access fault by GPU"}, lazyre.New(`Memory access fault by GPU node-\d+`)},
	// rocBLAS failing at its first call (hipBLASLt's "error" lines are
	// fallbacks it recovers from) ("rocBLAS error:
	// Cannot read …/TensileLibrary.dat: Illegal seek for GPU arch : gfx900").
	{DeviceError, []string{"rocBLAS error: "}, lazyre.New(`^rocBLAS error: \S`)},
	// The CUDA runtime's error name, on the line torch prints under
	// "CUDA error: <text>" (a paste may start there).
	{DeviceError, []string{"Search for `cudaError"}, lazyre.New("Search for `cudaError[A-Za-z]+'")},
	{DeviceError, []string{"CUDA driver error"}, lazyre.New(`CUDA driver error`)},
	// A GPU exception as CUDA's core dump and debugger report it ("CUDA
	// Exception: Warp Illegal Address", "CUDA Exception: Device Unknown
	// Exception (30)"), with the kernel's name and grid on the next line.
	{DeviceError, []string{"CUDA Exception: "}, lazyre.New(`CUDA Exception: \S`)},
	// NVSHMEM's checks of its CUDA calls ("mem_heap.cpp:1519: non-zero
	// status: 1 cuMemMap failed"), then it aborts the process.
	{DeviceError, []string{": non-zero status: "}, lazyre.New(`\.cpp:\d+: non-zero status: \d+ \S+ failed`)},
	// ROCm's HSA runtime reporting a GPU fault or a failed call
	// (":0:rocdevice.cpp … HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation
	// resulted in a hardware exception"), then the process aborts.
	// Ascend's runtime (torch_npu/CANN) reporting an asynchronous device
	// error at the next stream sync, as CUDA's "CUDA error:" is.
	{DeviceError, []string{"ACL stream synchronize failed"}, lazyre.New(`ACL stream synchronize failed`)},
	{DeviceError, []string{"HSA_STATUS_ERROR_"}, lazyre.New(`HSA_STATUS_ERROR_[A-Z_]+`)},
	{DeviceError, []string{"hipErrorNoBinary", "hipErrorIllegal", "hipErrorOutOfMemory", "hipErrorInvalid", "hipErrorLaunch", "hipErrorNotInit", "hipErrorStreamCapture", "---> [HIP error]", "fail to call hip"},
		lazyre.New(`hipError[A-Z][A-Za-z]+|\[HIP error\]|fail to call hip\w+`)},
	{DeviceError, []string{"No compatible code objects", "no kernel image is available", "invalid device function"},
		lazyre.New(`No compatible code objects found|no kernel image is available for execution|invalid device function`)},
	{DeviceError, []string{"CUBLAS_STATUS_", "HIPBLAS_STATUS_"}, lazyre.New(`(CU|HIP)BLAS_STATUS_(NOT_INITIALIZED|ALLOC_FAILED|INVALID_VALUE|ARCH_MISMATCH|MAPPING_ERROR|EXECUTION_FAILED|INTERNAL_ERROR|NOT_SUPPORTED)`)},
	{DeviceError, []string{"illegal memory access"}, lazyre.New(`illegal memory access was encountered`)},
	{DeviceError, []string{"device-side assert"}, lazyre.New(`device-side assert(ion)? triggered`)},
	{DeviceError, []string{"CUDA out of memory", "HIP out of memory", "GPU out of memory"}, lazyre.New(`(CUDA|HIP|GPU) out of memory`)},
	// A C++ runtime's own check of a CUDA call (LMDeploy's TurboMind:
	// "[TM][ERROR] CUDA runtime error: out of memory …/allocator.cc:49").
	{DeviceError, []string{"CUDA runtime error: "}, lazyre.New(`CUDA runtime error: \S`)},
	// A C++ extension's own check of a CUDA call with the error's number
	// (torch_memory_saver: "[torch_memory_saver.cpp] cudaError error: 1
	// (invalid argument)").
	{DeviceError, []string{"cudaError error: "}, lazyre.New(`cudaError error: \d+`)},
	{Collective, []string{"NCCL error in", "RCCL error in", "NCCL error: ", "RCCL error: ", "NCCL error : "}, lazyre.New(`[NR]CCL error(?: in| ?:)`)},
	{Collective, []string{"ncclInternalError", "ncclUnhandledCudaError", "ncclSystemError", "ncclInvalidUsage", "ncclRemoteError", "ncclInvalidArgument"},
		lazyre.New(`nccl(InternalError|UnhandledCudaError|SystemError|InvalidUsage|RemoteError|InvalidArgument)`)},
	{Collective, []string{"atchdog caught", "atchdog got stuck", "atchdog thread terminated"}, lazyre.New(`(?i)watchdog (caught collective operation timeout|caught|got stuck|thread terminated)`)},
	// ProcessGroupNCCL's watchdog reporting the work it found failed or
	// timed out, before it takes the process down ("[PG 1 Rank 3] Exception
	// (either an error or timeout) detected by watchdog at work: 1580, …",
	// "[PG 0 Rank 7] Timeout at NCCL work: 1, …"), and its heartbeat
	// monitor finding the watchdog itself stuck.
	{Collective, []string{"detected by watchdog", "Timeout at NCCL work: ", "Heartbeat monitor timed out"},
		lazyre.New(`\(either an error or timeout\) detected by watchdog|Timeout at NCCL work: \d|Heartbeat monitor timed out`)},
	{Collective, []string{"connectFullMesh", "enforce fail at", "Connection closed by peer", "Connection reset by peer"},
		lazyre.New(`(?i)connectFullMesh failed|enforce fail at .*gloo|gloo.*Connection (closed|reset) by peer`)},
	// NCCL's own WARN lines for failures ("transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'").
	// And its topology check failing ("graph/rings.cc:38 NCCL WARN Error :
	// ring 0 does not loop back to start").
	{Collective, []string{"NCCL WARN Cuda failure", "RCCL WARN Cuda failure", "NCCL WARN Call to", "RCCL WARN Call to", "NCCL WARN Error :", "RCCL WARN Error :"},
		lazyre.New(`[NR]CCL WARN (?:Cuda failure|Call to \S+ failed|Error :)`)},
	// gloo's transport giving up on a peer: "[…/gloo/transport/tcp/unbound_buffer.cc:133]
	// Timed out waiting 1800000ms for send operation to complete".
	{Collective, []string{"ms for send operation", "ms for recv operation"}, lazyre.New(`Timed out waiting \d+ms for (?:send|recv) operation`)},
	// NVSHMEM's error report (DeepEP's transport): "…/topo.cpp:526:
	// non-zero status: -3 allgather of ipc handles failed", and its
	// calls made after its initialisation failed.
	{Collective, []string{": non-zero status: ", "NVSHMEM API called before NVSHMEM initialization"},
		lazyre.New(`\.(?:c|cc|cpp|cu|h):\d+: non-zero status: -?\d+|NVSHMEM API called before NVSHMEM initialization`)},
	// nccl-tests' (and rccl-tests') check of a call: "Test NCCL failure
	// common.cu:1291 'unhandled cuda error …'".
	{Collective, []string{"Test NCCL failure ", "Test CUDA failure "}, lazyre.New(`Test (?:NCCL|CUDA) failure \S+:\d+ '`)},
	{Collective, []string{"Socket Timeout", "DistStoreError", "client socket has timed out"},
		lazyre.New(`Socket Timeout|DistStoreError|\[c10d\] The client socket has timed out after \d+`)},
	{BuildFailed, []string{"returned non-zero exit status"}, lazyre.New(`Command '\[?.*' returned non-zero exit status [1-9]`)},
	// MLIR's pass manager (Triton's compiler) giving up on a kernel.
	{BuildFailed, []string{"Failures have been detected while processing an MLIR pass pipeline"},
		lazyre.New(`Failures have been detected while processing an MLIR pass pipeline`)},
	// The linker under a compiler driver (Triton's launcher build, a JIT
	// extension): a library it cannot find, or its own exit.
	{BuildFailed, []string{": cannot find -l", "ld returned 1 exit status"},
		lazyre.New(`\bld(?:\.\w+)?: cannot find -l\S+|collect2: error: ld returned [1-9]\d* exit status`)},
	{BuildFailed, []string{"ninja: build stopped", "failed with exit code", "Error building extension"}, lazyre.New(`ninja: build stopped|error: command '.*' failed with exit code [1-9]|Error building extension`)},
	// The C or CUDA compiler's error on a source file that is part of the
	// boot: code Inductor generated, a CUDA source, a source an installed
	// package ships or a JIT builds (its jit/ or torch_extensions/ tree: the
	// kernels; the build then ends in "Error building
	// extension" or a Python exception, when the paste shows them). Not a
	// probe's test program (DeepSpeed's "/tmp/tmpab12/test.c:1:10: fatal
	// error: libaio.h: No such file", printed by a healthy start). And
	// nvcc's own refusal ("nvcc fatal   : Unsupported gpu architecture").
	{BuildFailed, []string{": error: ", ": fatal error: ", "torchinductor_"},
		lazyre.New(`(?:torchinductor_\S*\.(?:c|cc|cpp|h|hpp)|\S\.cuh?|(?:-packages|/jit|/torch_extensions)/\S*\.(?:c|cc|cpp|cxx|h|hpp|inc))(?::\d+){1,2}: (?:fatal )?error: \S`)},
	// And ptxas's, under its own name or a variant's (Triton ships
	// "ptxas-blackwell" beside "ptxas": "ptxas-blackwell fatal   : Value
	// 'sm_110a' is not defined for option 'gpu-name'").
	{BuildFailed, []string{"nvcc fatal", "ptxas"}, lazyre.New(`\b(?:nvcc|ptxas(?:-\w+)?) fatal\s*:?\s+\S`)},
	// Triton's launcher build on Windows (triton-windows) failing to run
	// its compiler: "Failed to compile. cc_cmd: ['…cl.exe', …]".
	{BuildFailed, []string{"Failed to compile. cc_cmd"}, lazyre.New(`Failed to compile\. cc_cmd: `)},
	// argparse rejecting the command line ("vllm serve: error: argument
	// --quantization/-q: invalid choice: …", "vllm: error: unrecognized
	// arguments: --task embedding"), at the start of its line.
	// (A wrapper that printed the parser's message alone: "error: unrecognized arguments: …".)
	{UsageError, []string{": error: ", "error: "}, lazyre.New(`^(?:[\w./-]+(?: [\w-]+)?: )?error: (?:argument |unrecognized arguments|the following arguments are required|ambiguous option|one of the arguments|invalid choice)`)},
	{LibraryLoad, []string{"cannot open shared object file"}, lazyre.New(`^\S+\.so(?:\.\d+)*: cannot open shared object file`)},
	// A c10::Error report with its native stack, logged without a Python
	// traceback (torch_npu's op plugin, a watchdog): the line before it
	// is the error's message (c10Report).
	// SGLang reporting that a trainer's online weight update failed (the
	// engine's weights are then partly updated): "Failed to update
	// parameter online: <why>".
	{ErrorLine, []string{"Failed to update parameter online: "}, lazyre.New(`Failed to update parameter online: \S`)},
	{ErrorLine, []string{"Exception raised from "}, lazyre.New(`^Exception raised from \S+ at \S+ \(most recent call first\):$`)},
	{ChildExit, []string{"exitcode  : ", "stopped exitcode=", "failed (exitcode:"}, lazyre.New(`exitcode\s*[:=]\s*-?[1-9]\d*`)},
	{ChildExit, []string{"with exit code", "exited with code", "with exit status"}, lazyre.New(`(exit(ed)?|terminated|failed) with (exit )?(code|status)[: ]+-?[1-9]\d*`)},
	// DeepSpeed's launcher: "[ERROR] [launch.py:320:sigkill_handler] […] exits with return code = -9".
	{ChildExit, []string{"exits with return code = "}, lazyre.New(`exits with return code = -?[1-9]\d*`)},
	{ChildExit, []string{"unexpectedly"}, lazyre.New(`(died|terminated|exited|dead) unexpectedly`)},
	{ChildExit, []string{"scheduler is dead", "detokenizer is dead", "Received sigquit"}, lazyre.New(`(scheduler|detokenizer) is dead|Received sigquit from a child process`)},
	// vLLM's message that its engine core processes failed to start, as a
	// wrapper or a paste shows it without the RuntimeError before it.
	{ChildExit, []string{"Engine core initialization failed"}, lazyre.New(`Engine core initialization failed\b`)},
	// Kubernetes restarting a container that keeps exiting (kubectl get
	// pods' STATUS, kubectl describe's "Reason: CrashLoopBackOff").
	{ChildExit, []string{"CrashLoopBackOff"}, lazyre.New(`\bCrashLoopBackOff\b`)},
	// A supervisor telling that a worker it depends on went away: Ray's
	// raylet ("(raylet) A worker died or was killed while executing a task
	// by an unexpected system error"), an engine-core manager told to shut
	// down while it was still starting ("Received unexpected SHUTDOWN signal
	// from DP rank 0 during initialization", ATOM).
	{ChildExit, []string{"worker died or was killed", "unexpected SHUTDOWN signal"},
		lazyre.New(`[Ww]orker died or was killed while executing|[Rr]eceived unexpected SHUTDOWN signal`)},
	{ChildExit, []string{"received by PID", "terminated with signal"}, lazyre.New(`Signal \d+ \(SIG[A-Z]+\) received by PID \d+|terminated with signal`)},
	// TGI's shard manager: its Python shard died of a signal (4, SIGILL: a
	// kernel built for a CPU or GPU this one is not).
	{NativeCrash, []string{"signaled to shutdown with signal"}, lazyre.New(`Shard process was signaled to shutdown with signal \d+`)},
}

// errorLines are the rows that count only on a line logged at error level
// or above (ScanLogged): the same words in an INFO line or a user's print
// are no failure ("failed to load the cached kernel, compiling").
var errorLines = []pattern{
	{ErrorLine, []string{"ailed to initiali", "ailed to start", "ailed to launch", "ailed to spawn", "ailed to create", "ailed to allocate", "ailed to load", "ailed to register memory"},
		lazyre.New(`\b[Ff]ailed to (?:initiali[sz]e|start|launch|spawn|create|allocate|load|register memory)\b`)},
	// TensorRT's error report (its builder, runtime and trtexec):
	// "Error[9]: IBuilder::buildSerializedNetwork: Error Code 9: API Usage
	// Error (…)".
	{ErrorLine, []string{": Error Code "}, lazyre.New(`Error\[\d+\]: .*?: Error Code \d+: \S`)},
	{ErrorLine, []string{"could not be created", "could not be started", "could not be initiali"},
		lazyre.New(`\bcould not be (?:created|started|initiali[sz]ed)\b`)},
	{ErrorLine, []string{"killed due to", "was killed by", "were killed by", "has been killed", "have been killed"},
		lazyre.New(`\b(?:(?:was|were) killed (?:by|due to)|(?:has|have) been killed)\b`)},
}

// Literals returns literals of which one occurs in every line Scan can
// report but those Leads tells (for a caller's literal prefilter). The
// caller must not modify the slice.
func Literals() []string { return literals }

// Leads reports whether a line's body is one that a literal scan cannot
// find cheaply, by its start: a fatal word too short for the scan
// ("Aborted"), nvcc's "nvcc fatal" and ptxas's "ptxas[-variant] fatal", a compiler's diagnostic on an absolute
// path ("/…/activation.cuh:95:52: error: …", the only such lines it reads
// further), argparse's "prog[ sub]: error: " (its first colon, within
// the first bytes).
func Leads(body []byte) bool {
	// (A paste's quoting or indent before it: "> /tmp/…cpp:6:21: error: …".)
	for k := 0; k < 4 && len(body) > 0 && (body[0] == '>' || body[0] == ' ' || body[0] == '\t'); k++ {
		body = body[1:]
	}
	if len(body) < 7 {
		return false
	}
	switch c := body[0]; {
	case c == 'A':
		return string(body[:7]) == "Aborted"
	case c == 'C':
		return bytes.HasPrefix(body, []byte("CHECK")) && bytes.Contains(body, []byte(") failed"))
	case c == 'H':
		return bytes.HasPrefix(body, []byte("HIP error: "))
	case c == '/':
		return bytes.Contains(body, []byte(": error: ")) || bytes.Contains(body, []byte(": fatal error: "))
	case c >= 'a' && c <= 'z':
		if bytes.HasPrefix(body, []byte("nvcc fatal")) {
			return true
		}
		if bytes.HasPrefix(body, []byte("panic: ")) {
			return true
		}
		if bytes.HasPrefix(body, []byte("ptxas")) {
			return bytes.Contains(body[:min(len(body), 40)], []byte(" fatal"))
		}
		if bytes.HasPrefix(body, []byte("error: ")) {
			return true
		}
		k := bytes.IndexByte(body[:min(len(body), 48)], ':')
		return k > 0 && (bytes.HasPrefix(body[k:], []byte(": error: ")) || lineColError(body[k:]))
	}
	return false
}

// lineColError: b starts ":LINE[:COL]: [fatal ]error: ", a compiler's
// diagnostic after its file's name ("custom_kernels.cu:1892:41: error:").
func lineColError(b []byte) bool {
	for n := 0; n < 2; n++ {
		if len(b) < 2 || b[0] != ':' || !isDigit(b[1]) {
			break
		}
		b = b[1:]
		for len(b) > 0 && isDigit(b[0]) {
			b = b[1:]
		}
	}
	return bytes.HasPrefix(b, []byte(": error: ")) || bytes.HasPrefix(b, []byte(": fatal error: "))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// leadLits are the rows' literals that Leads stands for in the scan.
var leadLits = map[string]bool{"Aborted": true, "CHECK": true, "panic: ": true, "HIP error: ": true, ": error: ": true, "error: ": true, ": fatal error: ": true, "nvcc fatal": true, "ptxas": true}

var literals = func() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range append(slices.Clip(patterns), errorLines...) {
		for _, l := range p.lits {
			if leadLits[l] {
				continue // Leads
			}
			if !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
	}
	return out
}()

// workRe reads the collective a ProcessGroupNCCL watchdog line is about:
// its work's sequence number, as the timeout names it ("WorkNCCL(SeqNum=1580,")
// and as the watchdog's later reports do ("detected by watchdog at work:
// 1580", "Timeout at NCCL work: 1580").
var workRe = regexp.MustCompile(`WorkNCCL\(SeqNum=(\d+)|detected by watchdog at work: (\d+)|Timeout at NCCL work: (\d+)`)

// Work is the sequence number of the collective a watchdog line of a
// process group is about, "" when the line names none. The ranks of one
// process group number their collectives alike, so lines that name the
// same number in one log are about the same collective.
func Work(line string) string {
	if !strings.Contains(line, "ork") {
		return ""
	}
	m := workRe.FindStringSubmatch(line)
	for _, g := range m[min(len(m), 1):] {
		if g != "" {
			return g
		}
	}
	return ""
}

// Hit is one fatal line of a text.
type Hit struct {
	Kind  Kind
	Line  int    // 0-based line within the text
	Match string // what matched ("CUDA error: an illegal memory access …" is in Text)
	Text  string // the whole line, trimmed
}

// Compiler reports whether h is a compiler's or linker's own error (a
// diagnostic on a source, nvcc's refusal, a library the linker cannot
// find) rather than a build command's exit.
func (h Hit) Compiler() bool {
	m := h.Match
	return h.Kind == BuildFailed && (strings.Contains(m, "error: ") || strings.Contains(m, "nvcc fatal") || strings.Contains(m, "cannot find -l"))
}

// Diagnostic is h's compiler diagnostic from its source file's name on
// ("gemm_test.h:6:10: fatal error: cuda_profiler_api.h: No such file …"),
// "" when h is none: the path before it would crowd the compiler's words
// out of a verdict.
func (h Hit) Diagnostic() string {
	if h.Kind != BuildFailed {
		return ""
	}
	if loc := diagnosticRe.FindStringIndex(h.Text); loc != nil {
		return h.Text[loc[0]:]
	}
	return ""
}

// ShippedCUDA is the installed package (as pip names it) whose CUDA source
// h's diagnostic is on ("…/site-packages/sglang/jit_kernel/…/activation.cuh:95:52:
// error:", its JIT kernels), "" when none.
func (h Hit) ShippedCUDA() string {
	if h.Kind != BuildFailed {
		return ""
	}
	if m := shippedCUDARe.FindStringSubmatch(h.Text); m != nil {
		return strings.ReplaceAll(m[1], "_", "-")
	}
	return ""
}

var (
	diagnosticRe  = regexp.MustCompile(`[^\s/]+\.(?:c|cc|cpp|cxx|cu|cuh|h|hpp|inc)(?::\d+){1,2}: (?:fatal )?error: \S`)
	shippedCUDARe = regexp.MustCompile(`-packages/(\w+)/\S*\.cuh?:\d+:\d+: (?:fatal )?error: `)
)

// Scan returns the fatal lines of text (lines separated by '\n').
func Scan(text string) []Hit { return scan(text, false) }

// ScanLogged is Scan for the text of a record logged at error level or
// above: its lines that say a component failed to start or was killed
// are fatal too (ErrorLine).
func ScanLogged(text string) []Hit { return scan(text, true) }

// Critical is what a record logged at critical level holds when Scan
// finds nothing in it: its first line, which its logger says is fatal
// (vLLM's "Got fatal signal from worker processes, shutting down").
// An ErrorLine, so that an error printed before it is the root.
func Critical(text string) []Hit {
	for n := 0; text != ""; n++ {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		if t := strings.TrimSpace(line); t != "" {
			return []Hit{{Kind: ErrorLine, Line: n, Match: t, Text: t}}
		}
	}
	return nil
}

func scan(text string, logged bool) []Hit {
	var out []Hit
	prev := ""
	for n := 0; text != ""; n++ {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		before := prev
		prev = line
		h, ok := Classify(line)
		if !ok && logged {
			h, ok = classify(errorLines, line)
		}
		if ok {
			h.Line = n
			if h.Kind == NativeCrash && strings.HasPrefix(h.Match, "terminat") {
				h.Text = withWhat(h.Text, rest)
			}
			if strings.HasPrefix(h.Match, "Exception raised from ") {
				h.Text = c10Report(before, h.Text)
			}
			out = append(out, h)
		}
	}
	return out
}

// Classify reports whether one line is fatal, and how.
func Classify(line string) (Hit, bool) { return classify(patterns, line) }

func classify(patterns []pattern, line string) (Hit, bool) {
	t := strings.TrimSpace(line)
	if t == "" {
		return Hit{}, false
	}
	for i := range patterns {
		p := &patterns[i]
		found := false
		for _, l := range p.lits {
			if strings.Contains(t, l) {
				found = true
				break
			}
		}
		if !found {
			continue
		}
		if loc := p.re.FindStringIndex(t); loc != nil {
			h := Hit{Kind: p.kind, Match: t[loc[0]:loc[1]], Text: t}
			for _, w := range ownLines {
				if strings.HasPrefix(h.Match, w) {
					h.Text = t[loc[0]:]
				}
			}
			return h, true
		}
	}
	return Hit{}, false
}

// c10Report is a c10::Error's "Exception raised from …" line with the
// error's message, the line before it ("[E428 03:37:31.268 x.ts:422]
// setup failed!"): the message is what failed, the line says where.
func c10Report(before, text string) string {
	if m := strings.TrimSpace(before); m != "" {
		return m + " — " + text
	}
	return text
}

// withWhat is a C++ terminate line with the exception's what() that the
// runtime prints on the next line ("  what():  [pair.cc:724] connect
// [127.0.1.1]:3210: Connection refused"): that is the error, the
// terminate line only says it was not caught.
func withWhat(text, rest string) string {
	next, _, _ := strings.Cut(rest, "\n")
	w, ok := strings.CutPrefix(strings.TrimSpace(next), "what():")
	if w = strings.TrimSpace(w); !ok || w == "" {
		return text
	}
	return text + " — what(): " + w
}
