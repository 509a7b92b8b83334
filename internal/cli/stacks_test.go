package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/testsupport/pyenv"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func TestStacksCommand(t *testing.T) {
	dir := filepath.Join(testcorpus.Root(), "stacks", "testdata", "seed004-snap1")
	code, out, errs := runCLI("stacks", dir)
	if code != ExitFindings {
		t.Fatalf("exit %d, want 1 (error-level finding); stderr %s", code, errs)
	}
	if !strings.HasPrefix(out, "verdict: inductor-implicit-fallback-operator-str") || !strings.Contains(out, "#1 · ranks 0-7 (8/8)") {
		t.Errorf("output:\n%s", out)
	}
	// A fixed torch: no error finding, exit 0.
	if code, _, _ := runCLI("stacks", "--torch", "2.13.1", dir); code != ExitOK {
		t.Errorf("--torch 2.13.1: exit %d", code)
	}
	code, out, _ = runCLI("stacks", "--json", dir)
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["schema"] != "bringup.stacks/v1" || code != ExitFindings {
		t.Errorf("--json: exit %d err %v schema %v", code, err, doc["schema"])
	}
	if code, _, errs := runCLI("stacks", "--level", "fuzzy", dir); code != ExitUsage || !strings.Contains(errs, "leaf-K") {
		t.Errorf("bad level: exit %d stderr %q", code, errs)
	}
	if code, _, errs := runCLI("stacks", "--json", "--collapsed", dir); code != ExitUsage || !strings.Contains(errs, "choose one") {
		t.Errorf("two formats: exit %d stderr %q", code, errs)
	}
	if code, _, errs := runCLI("stacks", "--count", "2", "--interval", "-1s", "--pid", "1"); code != ExitUsage || !strings.Contains(errs, "--interval") {
		t.Errorf("negative interval: exit %d stderr %q", code, errs)
	}
	if code, _, errs := runCLI("stacks", "no/such/file"); code != ExitUsage || !strings.Contains(errs, "no/such/file") {
		t.Errorf("missing file: exit %d stderr %q", code, errs)
	}
}

func TestStacksInterleavedInputSaysHowToFix(t *testing.T) {
	p := testcorpus.File(t, "stackdumps", "sglang-issue-6763-faulthandler-interleaved.txt")
	code, _, errs := runCLI("stacks", p)
	if code != ExitUsage || !strings.Contains(errs, "interleaved") || !strings.Contains(errs, "faulthandler.enable(file=") {
		t.Errorf("exit %d stderr %q", code, errs)
	}
}

func TestStacksEveryCorpusFile(t *testing.T) {
	dir := testcorpus.Dir(t, "stackdumps")
	code, out, errs := runCLI("stacks", "--all", dir)
	// MANIFEST.md and the interleaved file contribute nothing; the rest is read.
	if code == ExitUsage || !strings.Contains(out, "bucket(s) at funcs level") {
		t.Fatalf("exit %d stderr %s\n%s", code, errs, out)
	}
	if !strings.Contains(out, "gloo-recv-wait") || !strings.Contains(out, "interleaved") {
		t.Errorf("corpus run misses the gloo finding or the interleave report:\n%s", out)
	}
}

// A directory of dumps with a Markdown note beside them (the corpus's
// MANIFEST.md quotes interleaved faulthandler lines): the note is not read
// as a dump; it was reported as "error MANIFEST.md:31: output of several
// processes is interleaved".
func TestStacksDirSkipsMarkdownNotes(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"MANIFEST.md", "transformers-pr-17308-torchdynamo-pyspy.txt"} {
		b, err := os.ReadFile(testcorpus.File(t, "stackdumps", name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	code, out, errs := runCLI("stacks", dir)
	if code != ExitOK || strings.Contains(out+errs, "MANIFEST.md") || !strings.Contains(out, "1 process(es)") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// Live pids that cannot be read: each one's reason is printed (only the
// first was), and an older CPython is not called "not a Python process"
// with the hint to give a Python pid.
func TestStacksLiveFailuresNamed(t *testing.T) {
	py39 := pyenv.Python("3.9")
	if py39 == "" {
		t.Skip("pyenv has no CPython 3.9 (the unsupported interpreter of this test)")
	}
	start := func(cmd *exec.Cmd) int {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd.Process.Pid
	}
	// The interpreter has to be up before it is read: it says so on
	// stdout (a fixed wait for its maps plus 300 ms was not always enough
	// under heavy load).
	py := exec.Command(py39, "-c", "import time; print('up', flush=True); time.sleep(60)")
	up, err := py.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	old := start(py)
	shell := start(exec.Command("sleep", "60"))
	said := make(chan string, 1)
	go func() {
		b := make([]byte, 3)
		n, _ := io.ReadFull(up, b)
		said <- string(b[:n])
	}()
	select {
	case s := <-said:
		if s != "up\n" {
			t.Fatalf("CPython 3.9 said %q, want up", s)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("CPython 3.9 did not start within 60s")
	}
	// Without py-spy on PATH: it would read the 3.9 process (the
	// fallback, tested in stacks/live); this is what is said when nothing
	// can read a pid.
	t.Setenv("PATH", t.TempDir())
	code, _, errs := runCLI("stacks", "--pid", fmt.Sprintf("%d,%d", old, shell))
	if code != ExitUsage || !strings.Contains(errs, fmt.Sprintf("pid %d: CPython 3.9 is older than 3.10", old)) ||
		!strings.Contains(errs, fmt.Sprintf("pid %d: not a Python process", shell)) || !strings.Contains(errs, "none of the 2 processes could be read") {
		t.Errorf("two pids: exit %d\n%s", code, errs)
	}
	code, _, errs = runCLI("stacks", "--pid", fmt.Sprint(old))
	if code != ExitUsage || !strings.Contains(errs, "CPython 3.9 is older than 3.10") || strings.Contains(errs, "give the pid of a Python process") {
		t.Errorf("CPython 3.9: exit %d\n%s", code, errs)
	}
	code, _, errs = runCLI("stacks", "--pid", fmt.Sprint(shell))
	if code != ExitUsage || !strings.Contains(errs, "give the pid of a Python process") {
		t.Errorf("sleep: exit %d\n%s", code, errs)
	}
}

// The progress line of a several-snapshot capture (drawn on a terminal).
func TestSnapshotProgressLine(t *testing.T) {
	var b strings.Builder
	p := snapshotProgress(&b, 2*time.Second)
	p(1, 3, 8)
	p(2, 3, 7)
	want := "\r\x1b[Kbringup: snapshot 1/3 of 8 process(es) (2s apart)…\r\x1b[Kbringup: snapshot 2/3 of 7 process(es) (2s apart)…"
	if b.String() != want {
		t.Errorf("progress %q\nwant     %q", b.String(), want)
	}
}
