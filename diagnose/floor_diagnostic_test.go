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
