package testbed

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/testsupport/pyenv"
)

// The parity tests read the same live, blocked processes with bringup
// (`bringup stacks --pid PID --json`, pyproc's reader) and with the real
// peers (`py-spy dump --pid PID --json`, `pystack remote PID`), and require
// the same threads and the same frames, innermost first: function, file and
// line. The normalisations, listed in docs/testbed.md, are the only
// differences allowed:
//
//   - py-spy prints the function as bringup does (co_qualname on 3.11+,
//     co_name on 3.10); pystack prints co_name on every version, so against
//     pystack bringup's qualified name is compared by its last component
//     ("Worker.Inner.spin" → "spin", "helper.<locals>.<lambda>" → "<lambda>").
//   - Native frames: neither py-spy (without --native) nor pystack (without
//     --native) prints any, and bringup reads none; a frame bringup marks
//     native would be a failure.
//   - py-spy and bringup give threading's thread names; pystack gives the
//     OS thread name (/proc/PID/task/TID/comm), so names are compared with
//     py-spy only. Threads are matched by Linux tid; py-spy's thread_id and
//     bringup's ident are both the pthread id.
//   - pystack prints outermost first; it is reversed.

// liveThread is one thread as a reader saw it.
type liveThread struct {
	TID    int
	Ident  uint64 // 0: the reader does not give it (pystack)
	Name   string // "": the reader gives no threading name (pystack)
	Frames []liveFrame
}

type liveFrame struct {
	Func, File string
	Line       int
}

func (f liveFrame) String() string { return fmt.Sprintf("%s (%s:%d)", f.Func, f.File, f.Line) }

// peerTool finds a peer on PATH, else in the testbed's venv (where
// scripts/testbed/run setup installs py-spy, tlparse and pystack), else
// skips with one line.
func peerTool(t *testing.T, name string) string {
	t.Helper()
	p := lookPeer(name)
	if p == "" {
		// .ci/run installs it with the venv: there its absence is a failure.
		testbedMissing(t, "%s is not on PATH (nor in the testbed venv): parity with it not checked", name)
	}
	return p
}

func lookPeer(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	venv := os.Getenv("BRINGUP_TESTBED_VENV")
	if venv == "" {
		home, _ := os.UserHomeDir()
		venv = filepath.Join(home, ".cache", "bringup", "testbed", "venv")
	}
	if p := filepath.Join(venv, "bin", name); isExecutable(p) {
		return p
	}
	return ""
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// readBringup is `bringup stacks --pid PID --json`: the live process's
// threads (its one snapshot).
func readBringup(t *testing.T, pid int) ([]liveThread, error) {
	t.Helper()
	r := bringup(t, "", "stacks", "--pid", itoa(pid), "--json")
	if r.code == 2 {
		return nil, fmt.Errorf("bringup stacks --pid %d: exit 2: %s", pid, strings.TrimSpace(r.stderr))
	}
	var doc struct {
		Processes []struct {
			PID      int    `json:"pid"`
			Source   string `json:"source"`
			Captured string `json:"captured_by"`
			Threads  []struct {
				TID    int    `json:"tid"`
				Ident  string `json:"ident"`
				Name   string `json:"name"`
				Frames []struct {
					Func   string `json:"func"`
					File   string `json:"file"`
					Line   int    `json:"line"`
					Native bool   `json:"native"`
				} `json:"frames"`
			} `json:"threads"`
		} `json:"processes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		return nil, fmt.Errorf("bringup stacks --pid %d --json: %v", pid, err)
	}
	if len(doc.Processes) != 1 || doc.Processes[0].PID != pid {
		return nil, fmt.Errorf("bringup stacks --pid %d: %d processes", pid, len(doc.Processes))
	}
	p := doc.Processes[0]
	if p.Source != "live" || p.Captured != "" {
		// A fallback to py-spy would make the comparison py-spy against itself.
		return nil, fmt.Errorf("bringup stacks --pid %d: source %q, captured by %q: not bringup's own reader", pid, p.Source, p.Captured)
	}
	var out []liveThread
	for _, th := range p.Threads {
		lt := liveThread{TID: th.TID, Name: th.Name}
		if th.Ident != "" {
			id, err := strconv.ParseUint(strings.TrimPrefix(th.Ident, "0x"), 16, 64)
			if err != nil {
				return nil, fmt.Errorf("thread %d: ident %q: %v", th.TID, th.Ident, err)
			}
			lt.Ident = id
		}
		for _, f := range th.Frames {
			if f.Native {
				return nil, fmt.Errorf("thread %d: bringup gave a native frame %s", th.TID, f.Func)
			}
			lt.Frames = append(lt.Frames, liveFrame{f.Func, f.File, f.Line})
		}
		out = append(out, lt)
	}
	return out, nil
}

// readPySpy is `py-spy dump --pid PID --json`.
func readPySpy(t *testing.T, pyspy string, pid int) ([]liveThread, error) {
	t.Helper()
	cmd := exec.Command(pyspy, "dump", "--pid", itoa(pid), "--json")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("py-spy dump --pid %d --json: %v: %s", pid, err, firstLines(errb.String(), 3))
	}
	var threads []struct {
		ThreadID   uint64 `json:"thread_id"`
		ThreadName string `json:"thread_name"`
		OSThreadID int    `json:"os_thread_id"`
		Frames     []struct {
			Name     string `json:"name"`
			Filename string `json:"filename"`
			Line     int    `json:"line"`
		} `json:"frames"`
	}
	if err := json.Unmarshal(out.Bytes(), &threads); err != nil {
		return nil, fmt.Errorf("py-spy dump --pid %d --json: %v", pid, err)
	}
	var res []liveThread
	for _, th := range threads {
		lt := liveThread{TID: th.OSThreadID, Ident: th.ThreadID, Name: th.ThreadName}
		for _, f := range th.Frames {
			lt.Frames = append(lt.Frames, liveFrame{f.Name, f.Filename, f.Line})
		}
		res = append(res, lt)
	}
	return res, nil
}

var (
	pystackThread = regexp.MustCompile(`^Traceback for thread (\d+) \((.*)\) \[.*\] \(most recent call last\):$`)
	pystackFrame  = regexp.MustCompile(`^\s+\(Python\) File "(.*)", line (\d+), in (.+)$`)
)

// readPyStack is `pystack remote PID` (text: it has no JSON), each thread
// turned innermost first.
func readPyStack(t *testing.T, pystack string, pid int) ([]liveThread, error) {
	t.Helper()
	cmd := exec.Command(pystack, "remote", itoa(pid))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("pystack remote %d: %v: %s%s", pid, err, firstLines(out.String(), 3), firstLines(errb.String(), 3))
	}
	var res []liveThread
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		line := sc.Text()
		if m := pystackThread.FindStringSubmatch(line); m != nil {
			tid, _ := strconv.Atoi(m[1])
			res = append(res, liveThread{TID: tid})
			continue
		}
		if m := pystackFrame.FindStringSubmatch(line); m != nil && len(res) > 0 {
			n, _ := strconv.Atoi(m[2])
			th := &res[len(res)-1]
			th.Frames = append(th.Frames, liveFrame{m[3], m[1], n})
		}
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("pystack remote %d: no thread in its output: %s", pid, firstLines(out.String(), 5))
	}
	for i := range res {
		f := res[i].Frames
		for a, b := 0, len(f)-1; a < b; a, b = a+1, b-1 {
			f[a], f[b] = f[b], f[a]
		}
	}
	return res, nil
}

// lastComponent is a qualified name's last dotted part, as co_name gives it
// ("helper.<locals>.<lambda>" → "<lambda>").
func lastComponent(fn string) string {
	if i := strings.LastIndexByte(fn, '.'); i >= 0 {
		return fn[i+1:]
	}
	return fn
}

// compareThreads lists every difference between bringup's threads and a
// peer's. coName: the peer prints co_name (bringup's name is compared by its
// last component). withNames/withIdent: the peer gives threading names /
// pthread ids.
func compareThreads(ours, theirs []liveThread, coName, withNames, withIdent bool) []string {
	var diffs []string
	byTID := map[int]liveThread{}
	for _, th := range theirs {
		byTID[th.TID] = th
	}
	seen := map[int]bool{}
	for _, o := range ours {
		p, ok := byTID[o.TID]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("thread %d (%s): bringup only", o.TID, o.Name))
			continue
		}
		seen[o.TID] = true
		if withNames && o.Name != p.Name {
			diffs = append(diffs, fmt.Sprintf("thread %d: name %q, peer %q", o.TID, o.Name, p.Name))
		}
		if withIdent && o.Ident != p.Ident {
			diffs = append(diffs, fmt.Sprintf("thread %d: ident %#x, peer %#x", o.TID, o.Ident, p.Ident))
		}
		if len(o.Frames) != len(p.Frames) {
			diffs = append(diffs, fmt.Sprintf("thread %d (%s): %d frames, peer %d:\n  bringup %v\n  peer    %v", o.TID, o.Name, len(o.Frames), len(p.Frames), o.Frames, p.Frames))
			continue
		}
		for i := range o.Frames {
			a, b := o.Frames[i], p.Frames[i]
			fn := a.Func
			if coName {
				fn = lastComponent(fn)
			}
			if fn != b.Func || a.File != b.File || a.Line != b.Line {
				diffs = append(diffs, fmt.Sprintf("thread %d (%s) frame %d: bringup %v, peer %v", o.TID, o.Name, i, a, b))
			}
		}
	}
	for _, p := range theirs {
		if !seen[p.TID] {
			diffs = append(diffs, fmt.Sprintf("thread %d (%s): peer only, %d frames", p.TID, p.Name, len(p.Frames)))
		}
	}
	sort.Strings(diffs)
	return diffs
}

// peer is one live reader bringup is compared with.
type peer struct {
	name                         string
	read                         func(t *testing.T, pid int) ([]liveThread, error)
	coName, withNames, withIdent bool
}

func pySpyPeer(t *testing.T) peer { return pySpyAt(peerTool(t, "py-spy")) }

func pySpyAt(bin string) peer {
	return peer{name: "py-spy", read: func(t *testing.T, pid int) ([]liveThread, error) { return readPySpy(t, bin, pid) },
		withNames: true, withIdent: true}
}

// pyStackPeer: agree skips where pystack cannot attach (it needs ptrace).
func pyStackPeer(t *testing.T) peer { return pyStackAt(peerTool(t, "pystack")) }

func pyStackAt(bin string) peer {
	return peer{name: "pystack", read: func(t *testing.T, pid int) ([]liveThread, error) { return readPyStack(t, bin, pid) },
		coName: true}
}

// agree reads pid with bringup and the peer, up to tries times, until the
// two agree; it fails with the last differences. Each try reads bringup
// before and after the peer and takes whichever of the two agrees: a thread
// that is between two sleeps at one of the reads moves its leaf line.
func agree(t *testing.T, pr peer, pid, tries int) []liveThread {
	t.Helper()
	var last []string
	for i := 0; i < tries; i++ {
		before, err := readBringup(t, pid)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := pr.read(t, pid)
		if err != nil {
			if pr.name == "pystack" && (strings.Contains(err.Error(), "ptrace") || strings.Contains(err.Error(), "Operation not permitted")) {
				t.Skipf("pystack cannot attach here (ptrace refused): %v", err)
			}
			t.Fatal(err)
		}
		after, err := readBringup(t, pid)
		if err != nil {
			t.Fatal(err)
		}
		last = compareThreads(before, theirs, pr.coName, pr.withNames, pr.withIdent)
		if len(last) == 0 {
			logRetry(t, pr, pid, i, "")
			return before
		}
		if d := compareThreads(after, theirs, pr.coName, pr.withNames, pr.withIdent); len(d) == 0 {
			logRetry(t, pr, pid, i, " (the read after the peer's)")
			return after
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("pid %d: bringup and %s disagree after %d tries:\n%s", pid, pr.name, tries, strings.Join(last, "\n"))
	return nil
}

// logRetry says when an agreement took more than the first read: the
// differences are then a moving thread's, worth seeing in -v.
func logRetry(t *testing.T, pr peer, pid, try int, which string) {
	t.Helper()
	if try > 0 || which != "" {
		t.Logf("pid %d: bringup and %s agreed on try %d%s", pid, pr.name, try+1, which)
	}
}

// startTarget runs pyproc's live-capture target (a deep blocked class-method
// recursion on the main thread, two named workers through nested classes,
// recursion and a lambda, an asyncio thread blocked inside coroutines) and
// waits until it has written its own view, when every thread is blocked.
func startTarget(t *testing.T, python string) int {
	t.Helper()
	view := filepath.Join(t.TempDir(), "view.json")
	cmd := exec.Command(python, filepath.Join("..", "pyproc", "testdata", "target.py"), view)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(view); err == nil {
			// The reporter thread exits after writing; wait for its task to go.
			for time.Now().Before(deadline) {
				tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid))
				if len(tasks) == 4 {
					return cmd.Process.Pid
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s target.py never reported its view", python)
	return 0
}

func testParityCPython(t *testing.T, pr peer) {
	for _, v := range []string{"3.10", "3.11", "3.12", "3.13"} {
		py := pyenv.Python(v)
		t.Run(v, func(t *testing.T) {
			if py == "" {
				t.Skipf("no CPython %s from pyenv", v)
			}
			pid := startTarget(t, py)
			threads := agree(t, pr, pid, 3)
			var names []string
			deepest := 0
			for _, th := range threads {
				names = append(names, th.Name)
				deepest = max(deepest, len(th.Frames))
			}
			sort.Strings(names)
			if strings.Join(names, " ") != "MainThread asyncio-loop worker-1 worker-2" || deepest < 10 {
				t.Errorf("compared threads %v (deepest %d frames), want MainThread, asyncio-loop, worker-1, worker-2 in deep chains", names, deepest)
			}
		})
	}
}

// TestPySpyParityCPython: on CPython 3.10–3.13 targets blocked in deep
// chains, bringup and py-spy give the same threads (tid, pthread id,
// threading name) and the same frames.
func TestPySpyParityCPython(t *testing.T) { testParityCPython(t, pySpyPeer(t)) }

// TestPyStackParityCPython: the same against pystack (co_name, no names).
func TestPyStackParityCPython(t *testing.T) { testParityCPython(t, pyStackPeer(t)) }

// TestLiveParityStuckRank: the testbed's stuck_rank, held with rank 1
// sleeping inside Dynamo's fake-tensor tracing and rank 0 in a gloo
// all_reduce; torchrun and both ranks (torch 2.15 on the venv's CPython)
// read alike by bringup, py-spy and pystack.
func TestLiveParityStuckRank(t *testing.T) {
	liveVenv(t)
	var peers []peer
	if p := lookPeer("py-spy"); p != "" {
		peers = append(peers, pySpyAt(p))
	}
	if p := lookPeer("pystack"); p != "" {
		peers = append(peers, pyStackAt(p))
	}
	if len(peers) == 0 {
		t.Skip("neither py-spy nor pystack is on PATH (nor in the testbed venv)")
	}
	cmd := startStuckRank(t)
	pids := []int{cmd.Process.Pid}
	for _, p := range descendants(cmd.Process.Pid) {
		if c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); bytes.Contains(c, []byte("stuck_rank.py")) {
			pids = append(pids, p)
		}
	}
	sort.Ints(pids[1:])
	if len(pids) != 3 {
		t.Fatalf("processes %v, want torchrun and two ranks", pids)
	}
	for _, pr := range peers {
		t.Run(pr.name, func(t *testing.T) {
			var fake, allReduce int
			for _, pid := range pids {
				for _, th := range agree(t, pr, pid, 5) {
					// Depth of the compared stack that holds each rank's state.
					for _, f := range th.Frames {
						switch {
						case f.Func == "_" && strings.HasSuffix(f.File, "stuck_rank.py"):
							fake = max(fake, len(th.Frames))
						case strings.HasSuffix(f.Func, "all_reduce") && strings.HasSuffix(f.File, "distributed_c10d.py"):
							allReduce = max(allReduce, len(th.Frames))
						}
					}
				}
			}
			t.Logf("%s: rank 1's register_fake stack %d frames, rank 0's all_reduce stack %d frames, alike", pr.name, fake, allReduce)
			if fake < 30 || allReduce < 3 {
				t.Errorf("compared stacks: register_fake under Dynamo %d frames, all_reduce %d: want the ranks' states among them", fake, allReduce)
			}
		})
	}
}

// TestCompareThreads: the comparison itself sees every kind of difference
// (so a parity test cannot pass by comparing nothing).
func TestCompareThreads(t *testing.T) {
	base := func() []liveThread {
		return []liveThread{{TID: 10, Ident: 0xa, Name: "MainThread", Frames: []liveFrame{
			{"Condition.wait", "/x/threading.py", 355}, {"helper.<locals>.<lambda>", "/t/target.py", 61}, {"<module>", "/t/target.py", 162}}}}
	}
	if d := compareThreads(base(), base(), false, true, true); len(d) != 0 {
		t.Fatalf("identical threads differ: %v", d)
	}
	coName := base()
	coName[0].Frames[0].Func, coName[0].Frames[1].Func = "wait", "<lambda>"
	coName[0].Name, coName[0].Ident = "python3.12", 0
	if d := compareThreads(base(), coName, true, false, false); len(d) != 0 {
		t.Errorf("co_name peer without names: %v", d)
	}
	if d := compareThreads(base(), coName, false, true, true); len(d) != 4 {
		t.Errorf("co_name peer compared as qualified: %d differences, want 4: %v", len(d), d)
	}
	for name, change := range map[string]func(th *liveThread){
		"line":  func(th *liveThread) { th.Frames[1].Line++ },
		"file":  func(th *liveThread) { th.Frames[2].File = "/t/other.py" },
		"func":  func(th *liveThread) { th.Frames[0].Func = "Event.wait" },
		"depth": func(th *liveThread) { th.Frames = th.Frames[1:] },
		"tid":   func(th *liveThread) { th.TID = 11 },
		"name":  func(th *liveThread) { th.Name = "worker-1" },
		"ident": func(th *liveThread) { th.Ident = 0xb },
	} {
		other := base()
		change(&other[0])
		if d := compareThreads(base(), other, false, true, true); len(d) == 0 {
			t.Errorf("a changed %s is not seen", name)
		}
	}
	if d := compareThreads(base(), append(base(), liveThread{TID: 12}), false, true, true); len(d) != 1 {
		t.Errorf("an extra peer thread: %v", d)
	}
}

// TestReadPyStackText: pystack's text, turned innermost first, (Python)
// frames only.
func TestReadPyStackText(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "pystack")
	text := `Traceback for thread 42 (python3.12) [] (most recent call last):
    (Python) File "/t/target.py", line 162, in <module>
        main()
    (C) File "???", line 0, in _PyEval_EvalFrameDefault (libpython3.12.so)
    (Python) File "/x/threading.py", line 355, in wait
        waiter.acquire()

Traceback for thread 43 (worker-1) [Has the GIL] (most recent call last):
    (Python) File "/t/target.py", line 52, in spin
`
	if err := os.WriteFile(filepath.Join(dir, "out.txt"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat "+filepath.Join(dir, "out.txt")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := readPyStack(t, script, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []liveThread{
		{TID: 42, Frames: []liveFrame{{"wait", "/x/threading.py", 355}, {"<module>", "/t/target.py", 162}}},
		{TID: 43, Frames: []liveFrame{{"spin", "/t/target.py", 52}}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

// startStuckRank runs `scripts/testbed/run stuck_rank --exec` in its own
// process group and waits until both ranks have written their markers (rank
// 1 sleeping in register_fake under Dynamo, rank 0 in all_reduce); the whole
// tree is stopped when the test ends.
func startStuckRank(t *testing.T) *exec.Cmd {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(runner, "stuck_rank", "-o", out, "--exec")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(filepath.Join(filepath.Dir(out), "output.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	err = cmd.Start()
	logf.Close() // the child holds its own copy
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopTree(cmd) })
	deadline := time.Now().Add(5 * time.Minute)
	for {
		m, _ := os.ReadDir(filepath.Join(out, "markers"))
		if len(m) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("stuck_rank: the ranks did not reach their states in 5 min:\n%s", firstLines(string(log), 40))
		}
		time.Sleep(500 * time.Millisecond)
	}
	return cmd
}
