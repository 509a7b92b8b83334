package pyproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/pyenv"
)

// TestCaptureMatchesSelfView captures real CPython processes of every
// version pyenv provides and requires every thread and every frame
// (function, file, line) to equal what the process reported about itself.
func TestCaptureMatchesSelfView(t *testing.T) {
	eachPython(t, func(t *testing.T, minor, py string) { checkSelfView(t, py, minor) })
}

// TestCaptureSystemPython does the same for a distribution's own python3
// (on Debian a statically linked, PIE executable of a different patch
// release than pyenv's), when there is one.
func TestCaptureSystemPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if _, serr := os.Stat(p); serr == nil {
			py, err = p, nil
			break
		}
	}
	if err != nil {
		t.Skip("no system python3")
	}
	out, err := exec.Command(py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])").Output()
	if err != nil {
		t.Skipf("%s: %v", py, err)
	}
	minor := strings.TrimSpace(string(out))
	if _, ok := generatedLayouts[minor]; !ok {
		t.Skipf("system python3 is %s, which pyproc has no layout for", minor)
	}
	checkSelfView(t, py, minor)
}

// checkSelfView captures target.py under py and compares with its own view.
func checkSelfView(t *testing.T, py, minor string) {
	t.Helper()
	cmd, view := startTarget(t, py)
	p, err := Capture(cmd.Process.Pid)
	if err != nil {
		t.Fatalf("Capture: %v", err)
	}
	if p.PID != view.PID || p.Python != view.Version {
		t.Errorf("process = pid %d Python %q, want pid %d Python %q", p.PID, p.Python, view.PID, view.Version)
	}
	if !strings.Contains(p.Exe, "python") || len(p.Cmdline) != 3 {
		t.Errorf("exe %q cmdline %q", p.Exe, p.Cmdline)
	}
	got := map[uint64]Thread{}
	for _, th := range p.Threads {
		got[th.Ident] = th
		if len(th.Frames) > 0 {
			t.Logf("%s tid %d %q main=%v: %d frames, innermost %v", p.Python, th.TID, th.Name, th.Main, len(th.Frames), th.Frames[0])
		}
	}
	if len(p.Threads) != len(view.Threads) {
		t.Errorf("captured %d threads, the process sees %d", len(p.Threads), len(view.Threads))
	}
	if len(p.Threads) > 0 && !p.Threads[0].Main {
		t.Errorf("first thread is not the main thread: %+v", p.Threads[0])
	}
	for _, want := range view.Threads {
		th, ok := got[want.Ident]
		if !ok {
			t.Errorf("thread %q (ident %#x) not captured", want.Name, want.Ident)
			continue
		}
		if th.TID != want.NativeID {
			t.Errorf("thread %q: TID %d, want %d", want.Name, th.TID, want.NativeID)
		}
		if th.Main != want.Main {
			t.Errorf("thread %q: Main %v, want %v", want.Name, th.Main, want.Main)
		}
		// threading names are read on every version (3.10 included).
		if th.Name != want.Name {
			t.Errorf("thread ident %#x: name %q, want %q", want.Ident, th.Name, want.Name)
		}
		if th.Name == "" {
			t.Errorf("thread %q: no name", want.Name)
		}
		if th.Partial {
			t.Errorf("thread %q: partial capture of a blocked thread", want.Name)
		}
		if len(th.Frames) != len(want.Frames) {
			t.Errorf("thread %q: %d frames, want %d\ngot:  %v\nwant: %v", want.Name, len(th.Frames), len(want.Frames), th.Frames, want.Frames)
			continue
		}
		for i := range want.Frames {
			if th.Frames[i] != want.Frames[i] {
				t.Errorf("thread %q frame %d: got %v, want %v", want.Name, i, th.Frames[i], want.Frames[i])
			}
		}
	}
	// The qualified names prove the right code-object field is read.
	wantQual := "Tower.climb"
	if minor == "3.10" {
		wantQual = "climb"
	}
	if !hasFunc(p, wantQual) {
		t.Errorf("no frame named %q", wantQual)
	}
}

func hasFunc(p *Process, fn string) bool {
	for _, th := range p.Threads {
		for _, f := range th.Frames {
			if f.Func == fn {
				return true
			}
		}
	}
	return false
}

func TestCaptureErrors(t *testing.T) {
	// A pid that does not exist.
	if _, err := Capture(1 << 30); !errors.Is(err, ErrNoProcess) {
		t.Errorf("missing pid: %v, want ErrNoProcess", err)
	}
	if _, err := Capture(-3); !errors.Is(err, ErrNoProcess) {
		t.Errorf("negative pid: %v, want ErrNoProcess", err)
	}
	// A live process that is not Python.
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	_, err := Capture(cmd.Process.Pid)
	if !errors.Is(err, ErrNotPython) || errors.Is(err, ErrUnsupported) {
		t.Errorf("sleep: %v, want ErrNotPython (and not ErrUnsupported)", err)
	}
	// A CPython older than any generated layout says so.
	for _, old := range []string{"3.9", "3.8"} {
		py := pyenv.Python(old)
		if py == "" {
			continue
		}
		cmd := exec.Command(py, "-c", "import time; print(1, flush=True); time.sleep(30)")
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		out.Read(make([]byte, 2)) // started and initialised
		_, err := Capture(cmd.Process.Pid)
		cmd.Process.Kill()
		cmd.Wait()
		if !errors.Is(err, ErrUnsupported) || !errors.Is(err, ErrNotPython) || !strings.Contains(err.Error(), "older than 3.10") {
			t.Errorf("CPython %s: %v, want ErrUnsupported (also ErrNotPython) saying it is older than 3.10", old, err)
		}
		t.Logf("CPython %s: %v", old, err)
	}
	// A kernel thread has no memory at all; it is not Python, and not gone.
	if comm, _ := os.ReadFile("/proc/2/comm"); strings.TrimSpace(string(comm)) == "kthreadd" {
		_, err := Capture(2)
		if !errors.Is(err, ErrNotPython) || errors.Is(err, ErrNoProcess) || errors.Is(err, ErrUnsupported) {
			t.Errorf("kthreadd: %v, want ErrNotPython only", err)
		}
	}
	// This test binary itself is Go, not Python.
	if _, err := Capture(os.Getpid()); !errors.Is(err, ErrNotPython) {
		t.Errorf("self: %v, want ErrNotPython", err)
	}
}

func TestDescendants(t *testing.T) {
	// sh -> sleep: the shell's child must be listed after it.
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sh: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// The forked child is "sh" until it has exec'd sleep: wait for that.
	var pids []int
	comm := ""
	// (a deadline, not a count of tries: under heavy load the shell may
	// take seconds to fork and exec).
	for deadline := time.Now().Add(30 * time.Second); comm != "sleep" && time.Now().Before(deadline); {
		var err error
		if pids, err = Descendants(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if len(pids) >= 2 {
			c, _ := os.ReadFile("/proc/" + itoa(pids[1]) + "/comm")
			comm = strings.TrimSpace(string(c))
		}
		sleepMs(10)
	}
	if len(pids) != 2 || pids[0] != cmd.Process.Pid {
		t.Fatalf("Descendants = %v, want [%d child]", pids, cmd.Process.Pid)
	}
	if comm != "sleep" {
		t.Errorf("child %d is %q, want sleep", pids[1], comm)
	}
	if _, err := Descendants(1 << 30); !errors.Is(err, ErrNoProcess) {
		t.Errorf("missing pid: %v", err)
	}
}

// TestCaptureExitingProcess kills targets at varying moments while they are
// being captured: every failure must say the process is gone.
func TestCaptureExitingProcess(t *testing.T) {
	py := anyPython(t)
	for round := 0; round < 3; round++ {
		cmd, _ := startTarget(t, py)
		pid := cmd.Process.Pid
		go func() {
			sleepMs(round * 3)
			cmd.Process.Kill()
		}()
		ok := 0
		for i := 0; ; i++ {
			_, err := Capture(pid)
			if err == nil {
				ok++
				continue
			}
			if !errors.Is(err, ErrNoProcess) {
				t.Fatalf("round %d, after %d captures: %v, want ErrNoProcess", round, ok, err)
			}
			break
		}
		cmd.Wait()
	}
}

// TestCaptureRunningThread captures targets whose "spinner" thread never
// stops running Python (its stack grows and shrinks all the time) many
// times. Every capture must succeed; the blocked threads of the same process
// must never be affected; and the spinner's stacks must have a shape it can
// really have — bootstrap → spinner_loop → only _climb_spin frames, or
// Tower.__init__ right under spinner_loop — (a partial one: its confirmed
// outer part). A thread that is never stopped cannot be read atomically:
// a read whose two passes agree can still, rarely, combine moments (the
// same frames reused in the same rhythm), so misread spinner stacks are
// counted and must stay rare (≤ 5%), not absent.
func TestCaptureRunningThread(t *testing.T) {
	eachPython(t, func(t *testing.T, minor, py string) {
		script, _ := filepath.Abs(filepath.Join("testdata", "target.py"))
		cmd, view := startTargetAt(t, py, script, "--spin")
		known := map[uint64]bool{}
		for _, th := range view.Threads {
			known[th.Ident] = true
		}
		const captures = 100
		depths := map[int]bool{}
		partial, misread := 0, 0
		var example string
		for i := 0; i < captures; i++ {
			p, err := Capture(cmd.Process.Pid)
			if err != nil {
				t.Fatalf("capture %d: %v", i, err)
			}
			if len(p.Threads) != len(view.Threads)+1 {
				t.Fatalf("capture %d: %d threads, want %d", i, len(p.Threads), len(view.Threads)+1)
			}
			for _, th := range p.Threads {
				if known[th.Ident] {
					if th.Partial || len(th.Frames) < 12 {
						t.Fatalf("capture %d: blocked thread %q read as partial or short (%d frames)", i, th.Name, len(th.Frames))
					}
					continue
				}
				if msg := spinnerShape(th.Frames, th.Partial); msg != "" {
					misread++
					if example == "" {
						example = fmt.Sprintf("partial %v: %s\n%s", th.Partial, msg, fmtStack(th.Frames))
					}
					continue
				}
				if th.Partial {
					partial++
				} else {
					depths[len(th.Frames)] = true
				}
			}
		}
		t.Logf("%d captures: %d distinct whole depths, %d partial, %d misread", captures, len(depths), partial, misread)
		if misread > captures/20 {
			t.Errorf("%d of %d spinner reads misread; first:\n%s", misread, captures, example)
		} else if example != "" {
			t.Logf("a misread (within tolerance):\n%s", example)
		}
		// Several depths read whole, or reads that never settled, show the
		// spinner was moving; otherwise the test proved nothing.
		if len(depths) < 2 && partial == 0 {
			t.Errorf("spinner seen at %d distinct depths and never partial: was it running?", len(depths))
		}
	})
}

var spinnerFuncs = map[string]bool{"_bootstrap": true, "_bootstrap_inner": true, "run": true, "spinner_loop": true, "_climb_spin": true, "__init__": true}

// spinnerShape says what is wrong with a stack of the spinner thread, or "":
// bootstrap → spinner_loop, then only _climb_spin frames, or Tower.__init__
// right under spinner_loop. A partial stack may stop anywhere from the root.
func spinnerShape(frames record.Stack, partial bool) string {
	outer := []string{"_bootstrap", "_bootstrap_inner", "run", "spinner_loop"}
	n := len(frames)
	for j, want := range outer {
		if j >= n {
			if partial {
				return ""
			}
			return "too short"
		}
		if f := frames[n-1-j]; !strings.HasSuffix(f.Func, want) {
			return fmt.Sprintf("frame %d from the root is %v, want %s", j, f, want)
		}
	}
	inner := frames[:n-len(outer)]
	if len(inner) == 1 && strings.HasSuffix(inner[0].Func, "__init__") {
		return "" // constructing the Tower
	}
	for _, f := range inner {
		if f.Func != "_climb_spin" || !strings.HasSuffix(f.File, "target.py") || f.Line <= 0 {
			return fmt.Sprintf("frame %v among its recursion", f)
		}
	}
	return ""
}

func fmtStack(s record.Stack) string {
	var b strings.Builder
	for _, f := range s {
		b.WriteString("  " + f.String() + "\n")
	}
	return b.String()
}

// TestCaptureConcurrent captures several targets from many goroutines at
// once (as bringup stacks --tree does): the shared caches must hold, and
// every result must equal a sequential capture of the same (blocked) target.
func TestCaptureConcurrent(t *testing.T) {
	var pids []int
	for _, m := range testedMinors {
		if py := pyenv.Python(m); py != "" {
			cmd, _ := startTarget(t, py)
			pids = append(pids, cmd.Process.Pid)
		}
	}
	if len(pids) == 0 {
		t.Skip("no CPython under pyenv")
	}
	want := map[int]*Process{}
	for _, pid := range pids {
		p, err := Capture(pid)
		if err != nil {
			t.Fatal(err)
		}
		want[pid] = p
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, pid := range pids {
				p, err := Capture(pid)
				if err != nil {
					errs <- err
					return
				}
				if !reflect.DeepEqual(p, want[pid]) {
					errs <- fmt.Errorf("pid %d: concurrent capture differs from the sequential one", pid)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestWrongLayoutRefused reads each live target with every other version's
// layout: the run-time checks must refuse it (an error, never stacks made of
// misread memory).
func TestWrongLayoutRefused(t *testing.T) {
	tried := 0
	for _, minor := range testedMinors {
		py := pyenv.Python(minor)
		if py == "" {
			continue
		}
		cmd, _ := startTarget(t, py)
		pid := cmd.Process.Pid
		mapsData, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
		if err != nil {
			t.Fatal(err)
		}
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		right, _, err := locate(pid, parseMaps(mapsData), exe, ProcessMemory{PID: pid})
		if err != nil {
			t.Fatal(err)
		}
		for other := range generatedLayouts {
			if other == minor {
				continue
			}
			lay, _ := layoutFor(other)
			if lay.Debug != nil {
				raw := make([]byte, lay.Debug.Size)
				if err := (ProcessMemory{PID: pid}).Read(right.runtime, raw); err != nil {
					t.Fatal(err)
				}
				if err := lay.applyDebugOffsets(raw, 0); err == nil {
					t.Errorf("CPython %s accepted as %s by its _Py_DebugOffsets check", minor, other)
				}
				tried++
				continue
			}
			wrong := newTarget(ProcessMemory{PID: pid}, lay, right.runtime, right.codeType, right.strType)
			threads, err := wrong.walk()
			tried++
			if err == nil {
				n := 0
				for _, th := range threads {
					n += len(th.frames)
				}
				t.Errorf("CPython %s read with the %s layout gave %d threads, %d frames instead of an error", minor, other, len(threads), n)
			}
		}
	}
	if tried == 0 {
		t.Skip("no CPython under pyenv")
	}
}

func TestThreadsFrom(t *testing.T) {
	names := func(tid int) string { return fmt.Sprintf("comm-%d", tid) }
	// Newest first as CPython links them; tids known.
	got := threadsFrom(10, []rawThread{{ident: 3, native: 12}, {ident: 2, native: 11, name: "w"}, {ident: 1, native: 10}}, names)
	// Without a threading name the main thread is MainThread (as threading
	// calls it, not the executable's OS name), others keep the OS name.
	if len(got) != 3 || got[0].Ident != 1 || !got[0].Main || got[1].Main || got[1].Name != "w" || got[0].Name != "MainThread" || got[2].Name != "comm-12" {
		t.Errorf("with tids: %+v", got)
	}
	// No tids: the oldest thread is main.
	got = threadsFrom(10, []rawThread{{ident: 3}, {ident: 1}}, names)
	if !got[0].Main || got[1].Main || got[0].Name != "MainThread" || got[1].Name != "" {
		t.Errorf("without tids: %+v", got)
	}
	// No tids, but threading names: MainThread wins.
	got = threadsFrom(10, []rawThread{{ident: 3, name: "MainThread"}, {ident: 1, name: "Dummy-1"}}, names)
	if got[0].Main || !got[1].Main {
		t.Errorf("named: %+v", got)
	}
}
