package stacks_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/stacks"
	"github.com/bringup-tool/bringup/stacks/live"
	"github.com/bringup-tool/bringup/testsupport/pyenv"
)

// Live tests: real CPython processes of every version pyenv provides,
// captured with the same code bringup stacks --pid/--tree runs.

var liveMinors = []string{"3.10", "3.11", "3.12", "3.13"}

func eachPython(t *testing.T, fn func(t *testing.T, py string)) {
	for _, m := range liveMinors {
		t.Run(m, func(t *testing.T) {
			py := pyenv.Python(m)
			if py == "" {
				t.Skipf("CPython %s is not installed under pyenv", m)
			}
			fn(t, py)
		})
	}
}

// startReady runs a script and waits for it to print "ready".
func startReady(t *testing.T, py, script string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(py, append([]string{script}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The whole tree: spawn.py's workers and resource tracker too.
		if pids, err := live.Tree([]int{cmd.Process.Pid}); err == nil {
			for _, p := range pids[1:] {
				if pr, err := os.FindProcess(p); err == nil {
					pr.Kill()
				}
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("%s exited before it was ready", script)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s was not ready within 60s", script)
	}
	return cmd
}

// busy.py's main thread spins in one loop at the end of a deep chain:
// three snapshots say busy in spin and keep the whole chain, and its
// other thread is named as threading named it.
func TestLiveBusyLoop(t *testing.T) {
	eachPython(t, func(t *testing.T, py string) {
		script, _ := filepath.Abs(filepath.Join("..", "pyproc", "testdata", "busy.py"))
		view := filepath.Join(t.TempDir(), "view.json")
		cmd := exec.Command(py, script, view)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(view); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("busy.py did not start")
			}
		}
		res, err := live.CaptureLive([]int{cmd.Process.Pid}, 3, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		a := stacks.Analyze(res.Processes, stacks.Options{Level: stacks.DefaultLevel})
		// Three snapshots that all land in tick (spin's callee) cannot tell
		// the loop from its callee: either is where the thread is busy.
		inLoop := func(fn string) bool { return strings.HasSuffix(fn, "spin") || strings.HasSuffix(fn, "tick") }
		if len(a.Progress) != 1 || a.Progress[0].Verdict != "busy" || a.Progress[0].Where == nil || !inLoop(a.Progress[0].Where.Func) {
			t.Fatalf("progress %+v", a.Progress)
		}
		if a.Where.Motion != "busy" || a.Where.BusyIn == nil || !strings.Contains(a.Where.Text, "busy in ") || !(strings.Contains(a.Where.Text, "spin (") || strings.Contains(a.Where.Text, "tick (")) {
			t.Errorf("where %q", a.Where.Text)
		}
		names := map[string]bool{}
		for _, p := range res.Processes {
			for _, th := range p.Threads {
				names[th.Name] = true
				if th.Main {
					n := 0
					for _, f := range th.Frames {
						if strings.HasSuffix(f.Func, "descend") {
							n++
						}
					}
					if n != 31 {
						t.Errorf("snapshot %d: %d descend frames, want 31 (partial %v)", p.Snapshot, n, th.Partial)
					}
				}
			}
		}
		if !names["helper"] || !names["MainThread"] {
			t.Errorf("thread names %v", names)
		}
	})
}

// A spawn-started program (two workers, multiprocessing's resource
// tracker) captured as a tree: the tracker is a helper, not an outlier,
// and the parent is the launcher.
func TestLiveSpawnTree(t *testing.T) {
	eachPython(t, func(t *testing.T, py string) {
		script, _ := filepath.Abs(filepath.Join("testdata", "live", "spawn.py"))
		cmd := startReady(t, py, script)
		res, err := live.CaptureTree([]int{cmd.Process.Pid}, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		a := stacks.Analyze(res.Processes, stacks.Options{Level: stacks.DefaultLevel})
		var tracker int
		for _, p := range a.Current {
			if p.Role == stacks.RoleResourceTracker {
				tracker = p.PID
			}
		}
		if tracker == 0 {
			for _, p := range a.Current {
				t.Logf("pid %d role %q name %q", p.PID, p.Role, p.Name)
			}
			t.Fatal("no resource tracker recognised")
		}
		if len(a.Outliers) != 0 {
			t.Errorf("outliers %+v", a.Outliers)
		}
		w := a.Where
		if w.Workers != 2 || w.Together != 2 || len(w.Launchers) != 1 || w.Launchers[0].PID != cmd.Process.Pid || len(w.Helpers) != 1 ||
			w.Frame == nil || !strings.HasSuffix(w.Frame.File, "spawn.py") || !strings.HasSuffix(w.Frame.Func, "lower") {
			t.Errorf("where %+v", w)
		}
		if !strings.HasPrefix(w.Text, "2/2 workers in ") {
			t.Errorf("text %q", w.Text)
		}
	})
}

// rec.py parks 21 Node.__str__ deep: the bucket keeps the leaf and the
// recursion's line.
func TestLiveRecursionLeaf(t *testing.T) {
	eachPython(t, func(t *testing.T, py string) {
		script, _ := filepath.Abs(filepath.Join("testdata", "live", "rec.py"))
		cmd := startReady(t, py, script)
		res, err := live.CaptureLive([]int{cmd.Process.Pid}, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		a := stacks.Analyze(res.Processes, stacks.Options{Level: stacks.DefaultLevel})
		b := a.Buckets[0]
		var leaf []string
		for _, f := range b.Leaf {
			leaf = append(leaf, f.Func)
		}
		if len(leaf) == 0 || !strings.HasSuffix(leaf[len(leaf)-1], "leaf") {
			t.Errorf("leaf frames %v", leaf)
		}
		rec := b.Frames[0]
		if !strings.HasSuffix(rec.Func, "__str__") || rec.Repeat != 21 || rec.Line == 0 || rec.LineVaries || b.Frames[len(b.Frames)-1].Func != "<module>" {
			t.Errorf("frames %+v", b.Frames)
		}
		if a.Where.Frame == nil || !strings.HasSuffix(a.Where.Frame.Func, "leaf") {
			t.Errorf("where %+v", a.Where)
		}
	})
}

// recline.py parks its Node.__str__ → f recursion in f at another line
// than the one f recurses at: at every level the innermost repetition
// stays frames with their own lines (f at the PARK line) and the folded
// block keeps its lines (f at the RECURSE line), instead of one block
// "↻ ×31 f rec.py:*" that hides where the recursion ended.
func TestLiveRecursionLeafLine(t *testing.T) {
	script, _ := filepath.Abs(filepath.Join("testdata", "live", "recline.py"))
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	lineOf := func(mark string) int {
		for i, l := range strings.Split(string(src), "\n") {
			if strings.HasSuffix(l, "# "+mark) {
				return i + 1
			}
		}
		t.Fatalf("no %s line in %s", mark, script)
		return 0
	}
	park, recurse := lineOf("PARK"), lineOf("RECURSE")
	eachPython(t, func(t *testing.T, py string) {
		cmd := startReady(t, py, script)
		res, err := live.CaptureLive([]int{cmd.Process.Pid}, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, level := range []string{"exact", "lines", "funcs"} {
			l, err := stacks.ParseLevel(level)
			if err != nil {
				t.Fatal(err)
			}
			a := stacks.Analyze(res.Processes, stacks.Options{Level: l})
			b := a.Buckets[0]
			frames := append(append([]stacks.Frame{}, b.Leaf...), b.Frames...)
			leaf, block := -1, -1
			for i, fr := range frames {
				switch {
				case leaf < 0 && fr.Period == 0 && fr.Func == "f" && fr.Line == park:
					leaf = i
				case block < 0 && fr.Period > 0:
					block = i
					if fr.LineVaries || fr.Line == 0 || fr.Repeat < 29 {
						t.Errorf("%s: the recursion block %+v: want its lines kept, about 30 repetitions", level, fr)
					}
				}
			}
			if leaf < 0 || block < 0 || leaf > block {
				t.Fatalf("%s: want f at line %d (the park) before the recursion block; frames %+v", level, park, frames)
			}
			for _, fr := range frames[block : block+frames[block].Period] {
				if fr.Func == "f" && fr.Line != recurse {
					t.Errorf("%s: f in the block at line %d, want %d (where it recurses)", level, fr.Line, recurse)
				}
			}
		}
	})
}
