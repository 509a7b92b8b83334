package diagnose

import (
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/diagnose/fatal"
)

// A log word's error ("error: …", MLIR's diagnostic) whose message runs on
// over a native crash (LLVM's abort, glued behind another line by a lost
// newline) is that crash's reason: the crash is the error, with the
// diagnostic as its evidence (pytorch issue 101137).
func TestDiagnosticBeforeNativeCrash(t *testing.T) {
	log := "error: failed to legalize operation 'tt.load' that was explicitly marked illegal\n" +
		"Pass execution failedLLVM ERROR: Failed to translate TritonGPU to LLVM IR.\n"
	f := topError(diagnoseText(t, log, Options{}))
	if f == nil || f.Rule != "native-crash" || f.Root != "LLVM ERROR: Failed to translate TritonGPU to LLVM IR." {
		t.Fatalf("want the LLVM abort as a native crash, got %+v", f)
	}
	found := false
	for _, e := range f.Evidence {
		found = found || strings.Contains(e.Text, "failed to legalize operation 'tt.load'")
	}
	if !found {
		t.Errorf("the diagnostic is not the crash's evidence: %+v", f.Evidence)
	}
}

// What must not change: a Python exception whose message quotes a crash
// report stays the error (it was caught and raised); a log word's error
// with no crash after it stays the error.
func TestDiagnosticStaysWithoutCrash(t *testing.T) {
	for name, c := range map[string]struct{ log, root string }{
		"python exception": {"RuntimeError: Triton compile failed:\nLLVM ERROR: Failed to translate TritonGPU to LLVM IR.\n", "RuntimeError"},
		"no crash":         {"error: failed to legalize operation 'tt.load' that was explicitly marked illegal\nPass execution failed\n", "error: failed to legalize"},
	} {
		f := topError(diagnoseText(t, c.log, Options{}))
		if f == nil || !strings.HasPrefix(f.Root, c.root) {
			t.Errorf("%s: want the error %q, got %+v", name, c.root, f)
		}
	}
}

func TestLogWord(t *testing.T) {
	for w, want := range map[string]bool{
		"error": true, "ERROR": true, "FATAL": true, "Error": true,
		"RuntimeError": false, "torch.Error": false, "": false, "ValueError": false, "eRror": false,
	} {
		if got := logWord(w); got != want {
			t.Errorf("logWord(%q) = %v, want %v", w, got, want)
		}
	}
}

// LLVM writes its abort report as a line of its own: the crash line starts
// there even when a lost newline glued another write before it.
func TestLLVMErrorOwnLine(t *testing.T) {
	h, ok := fatal.Classify("Pass execution failedLLVM ERROR: Failed to translate TritonGPU to LLVM IR.")
	if !ok || h.Kind != fatal.NativeCrash || h.Text != "LLVM ERROR: Failed to translate TritonGPU to LLVM IR." {
		t.Errorf("got %+v %v", h, ok)
	}
	// Other crash lines keep their whole line.
	h, ok = fatal.Classify("Fatal Python error: Segmentation fault")
	if !ok || h.Text != "Fatal Python error: Segmentation fault" {
		t.Errorf("got %+v %v", h, ok)
	}
}

// A faulthandler report of an abort a few lines after a GPU runtime error
// (ROCm's HSA_STATUS_ERROR_EXCEPTION, aiter issue 3515) is that error's
// abort: the GPU error is the finding, the report its evidence. Alone, or
// far after it, the report stays the error.
func TestAbortAfterDeviceError(t *testing.T) {
	hsa := ":0:rocdevice.cpp ... HSA_STATUS_ERROR_EXCEPTION:\n" +
		"  An HSAIL operation resulted in a hardware exception. code: 0x1016\n"
	abort := "Fatal Python error: Aborted\n\nThread 0x00007f5e (most recent call first):\n  File \"/x/aiter/ops/custom_all_reduce.py\", line 98 in all_reduce\n"
	for name, c := range map[string]struct{ log, rule string }{
		"after the GPU error": {hsa + abort, "device-runtime-error"},
		"alone":               {abort, "native-crash"},
		"far after":           {hsa + strings.Repeat("INFO 01-02 03:04:05 [x.py:1] step\n", 12) + abort, "native-crash"},
	} {
		f := topError(diagnoseText(t, c.log, Options{}))
		if f == nil || f.Rule != c.rule {
			t.Errorf("%s: want %s first, got %+v", name, c.rule, f)
		}
	}
}

// glibc's assert() report and ROCm's HSA errors are fatal lines.
func TestAssertAndHSALines(t *testing.T) {
	for line, want := range map[string]fatal.Kind{
		"python: /root/.triton/llvm/include/llvm/Support/Casting.h:566: decltype(auto) llvm::cast(const From&): Assertion `isa<To>(Val) && \"cast<Ty>() argument of incompatible type!\"' failed.": fatal.NativeCrash,
		":0:rocdevice.cpp            :3020: 2541 us: Callback: Queue 0x7f aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION":                                                        fatal.DeviceError,
	} {
		if h, ok := fatal.Classify(line); !ok || h.Kind != want {
			t.Errorf("%q: %+v %v, want %s", line, h, ok, want)
		}
	}
	for _, line := range []string{
		"AssertionError: Assertion failed",
		"    assert x, 'Assertion `a` failed'",
		"HSA_STATUS_SUCCESS",
	} {
		if h, ok := fatal.Classify(line); ok {
			t.Errorf("%q: fatal %+v, want none", line, h)
		}
	}
}

// A c10::Error report logged without a Python traceback is fatal, named by
// its message (the line before "Exception raised from …"); when a Python
// traceback carries it, the traceback's exception is the error.
func TestC10ReportIsFatal(t *testing.T) {
	report := "[rank1]:[E428 03:37:31.268946165 compiler_depend.ts:422] setup failed!\n" +
		"Exception raised from OperationSetup at build/op_plugin/compiler_depend.ts:131 (most recent call first):\n" +
		"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0xb8 (0xffff9a9ec908 in libc10.so)\n"
	f := topError(diagnoseText(t, report, Options{}))
	if f == nil || !strings.Contains(f.Root, "setup failed!") || len(f.Ranks) != 1 || f.Ranks[0] != "rank1" {
		t.Fatalf("want the c10 error on rank1, got %+v", f)
	}
	raised := "Traceback (most recent call last):\n  File \"/x/op.py\", line 3, in f\n    g()\n" +
		"RuntimeError: setup failed!\nException raised from OperationSetup at build/op_plugin/compiler_depend.ts:131 (most recent call first):\n" +
		"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0xb8 (0xffff9a9ec908 in libc10.so)\n"
	f = topError(diagnoseText(t, raised, Options{}))
	if f == nil || !strings.HasPrefix(f.Root, "RuntimeError: setup failed!") {
		t.Errorf("want the RuntimeError, got %+v", f)
	}
}

// An exception no rule explains whose message is a fatal line of a kind
// (a CUDA or Ascend runtime error, a gloo connection closed by its peer)
// gets that kind's catch-all and remedies (batch E: lmdeploy issue 3354,
// pytorch issue 78514); an exception a rule knows keeps its rule, and one
// whose message is no fatal line stays unrecognised.
func TestExceptionOfAFatalKind(t *testing.T) {
	tb := "Traceback (most recent call last):\n  File \"/x/y.py\", line 3, in f\n    g()\n"
	for msg, rule := range map[string]string{
		"RuntimeError: CUDA error: an illegal memory access was encountered":                                            "device-runtime-error",
		"RuntimeError: ACL stream synchronize failed, error code:507048":                                                "device-runtime-error",
		"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.2]:30872": "collective-error",
		"RuntimeError: CUDA error: no kernel image is available for execution on the device":                            "kernel-lib-wrong-arch",
		"ValueError: bad shape": "unrecognised-exception",
	} {
		f := topError(diagnoseText(t, tb+msg+"\n", Options{}))
		if f == nil || f.Rule != rule {
			t.Errorf("%q: got %+v, want %s", msg, f, rule)
		}
		if f != nil && f.Rule != "kernel-lib-wrong-arch" && f.RaisedIn == "" {
			t.Errorf("%q: the exception's frame is lost: %+v", msg, f)
		}
	}
}
