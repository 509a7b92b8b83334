package pyproc

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// TestCaptureBusyChain captures testdata/busy.py on every CPython pyenv
// has: its main thread runs 30 nested Chain.descend calls down to spin,
// which calls tick and returns from it forever. Every capture must keep
// the whole chain from spin to <module> exactly as the process itself
// reports it (the moving part is only tick, inside spin), whether the
// read settled or not, and the blocked thread must come back whole under
// its threading name "helper".
func TestCaptureBusyChain(t *testing.T) {
	eachPython(t, func(t *testing.T, minor, py string) {
		script, _ := filepath.Abs(filepath.Join("testdata", "busy.py"))
		cmd, view := startTargetAt(t, py, script)
		var mainView, helperView record.Stack
		for _, th := range view.Threads {
			switch {
			case th.Main:
				mainView = th.Frames
			case th.Name == "helper":
				helperView = th.Frames
			}
		}
		want := fromFunc(mainView, "spin")
		if len(want) < 33 || len(helperView) == 0 {
			t.Fatalf("self view: main %d frames from spin, helper %d", len(want), len(helperView))
		}
		const captures = 50
		partial, tries, settledInTick := 0, 0, 0
		for i := 0; i < captures; i++ {
			p, err := Capture(cmd.Process.Pid)
			if err != nil {
				t.Fatalf("capture %d: %v", i, err)
			}
			var main, helper *Thread
			for j := range p.Threads {
				switch th := &p.Threads[j]; {
				case th.Main:
					main = th
				case th.Name == "helper":
					helper = th
				}
			}
			if main == nil || helper == nil {
				t.Fatalf("capture %d: main %v helper %v in %+v", i, main != nil, helper != nil, p.Threads)
			}
			if main.Name != "MainThread" {
				t.Errorf("capture %d: main thread named %q", i, main.Name)
			}
			if helper.Partial || !sameFrames(helper.Frames, helperView) {
				t.Fatalf("capture %d: helper partial %v\ngot:\n%swant:\n%s", i, helper.Partial, fmtStack(helper.Frames), fmtStack(helperView))
			}
			got := fromFunc(main.Frames, "spin")
			// spin's own line moves (the loop test, the call); the
			// frames under it stand still and must match exactly.
			if len(got) != len(want) || !strings.HasSuffix(got[0].File, "busy.py") || !sameFrames(got[1:], want[1:]) {
				t.Fatalf("capture %d (partial %v, %d tries): chain from spin lost or wrong\ngot:\n%swant:\n%s", i, main.Partial, main.Tries, fmtStack(main.Frames), fmtStack(want))
			}
			if main.Partial {
				partial++
			} else if n := len(main.Frames) - len(got); n > 1 || (n == 1 && !strings.HasSuffix(main.Frames[0].Func, "tick")) {
				t.Fatalf("capture %d: settled read has %d frame(s) above spin:\n%s", i, n, fmtStack(main.Frames))
			} else if n == 1 {
				settledInTick++
			}
			tries += main.Tries
		}
		t.Logf("CPython %s: %d captures of the busy main thread: %d partial, %d settled inside tick, %.1f tries per capture", minor, captures, partial, settledInTick, float64(tries)/captures)
		if partial > captures/5 {
			t.Errorf("%d of %d captures of a thread calling and returning in one loop did not settle", partial, captures)
		}
	})
}

// fromFunc is the part of a stack from the innermost frame named fn (a
// suffix match, for qualified names) to the root; nil when absent.
func fromFunc(st record.Stack, fn string) record.Stack {
	for i, f := range st {
		if f.Func == fn || strings.HasSuffix(f.Func, "."+fn) {
			return st[i:]
		}
	}
	return nil
}

func sameFrames(a, b record.Stack) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A program that never imports threading has no threading names: its
// main thread is still MainThread, not the executable's OS name.
func TestMainThreadWithoutThreading(t *testing.T) {
	eachPython(t, func(t *testing.T, minor, py string) {
		cmd := exec.Command(py, "-c", "import sys, time\nprint('threading' in sys.modules, flush=True)\ntime.sleep(60)")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		p, err := Capture(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Threads) != 1 || !p.Threads[0].Main || p.Threads[0].Name != "MainThread" {
			t.Errorf("threading imported: %s; threads %+v", strings.TrimSpace(line), p.Threads)
		}
	})
}
