package live

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/pyproc"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/stacks"
	"github.com/bringup-tool/bringup/testsupport/pyenv"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// interpreters are the CPythons to run the target under: python3 on PATH
// plus whatever pyenv provides among the versions pyproc reads.
func interpreters(t *testing.T) []string {
	var out []string
	if p, err := exec.LookPath("python3"); err == nil {
		out = append(out, p)
	}
	for _, v := range []string{"3.10", "3.12", "3.13"} {
		if p := pyenv.Python(v); p != "" {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Skip("no CPython on this machine")
	}
	return out
}

// skipIfDenied skips when this machine forbids reading another process's
// memory (ptrace scope, no CAP_SYS_PTRACE); any other capture error is a
// failure, so a capture broken for every process cannot pass as a skip.
func skipIfDenied(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, pyproc.ErrPermission) {
		t.Skipf("live capture not permitted here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// startHang runs testdata/hang.py and waits until its main thread is
// blocked at the bottom of the recursion.
func startHang(t *testing.T, python string, depth int, title string) int {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(python, filepath.Join("testdata", "hang.py"), ready, fmt.Sprint(depth), title)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(ready); err == nil {
			return cmd.Process.Pid
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s hang.py never got ready", python)
	return 0
}

// Real processes, real capture: two "ranks" of the operator_str hang at
// different depths share one bucket, the recursion is collapsed to
// ExternKernel.__str__ ×k with qualified names, the finding is named, and
// two snapshots of a blocked process say "stuck".
func TestCaptureLiveOperatorStrHang(t *testing.T) {
	set, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, py := range interpreters(t) {
		t.Run(filepath.Base(py), func(t *testing.T) {
			p0 := startHang(t, py, 9, "VLLM::Worker_TP0")
			p1 := startHang(t, py, 14, "VLLM::Worker_TP1")
			res, err := CaptureLive([]int{p0, p1}, 2, 100*time.Millisecond)
			skipIfDenied(t, err)
			if len(res.Processes) != 4 || len(res.Failures) != 0 {
				t.Fatalf("captured %d snapshots, failures %v", len(res.Processes), res.Failures)
			}
			for _, p := range res.Processes {
				if p.Source != record.SourceLive || p.Python == "" || (p.Rank != "TP0" && p.Rank != "TP1") {
					t.Errorf("process %d: source %q python %q rank %q", p.PID, p.Source, p.Python, p.Rank)
				}
			}
			a := stacks.Analyze(res.Processes, stacks.Options{Level: stacks.DefaultLevel, Conclude: stacks.Conclude(set, nil)})
			b := a.Buckets[0]
			if b.RankSet != "ranks 0-1 (2/2)" || !b.Primary {
				t.Fatalf("bucket #1 %q primary %v", b.RankSet, b.Primary)
			}
			var rec *stacks.Frame
			for i := range b.Frames {
				if b.Frames[i].Period > 0 {
					rec = &b.Frames[i]
					break
				}
			}
			// co_name before 3.11; co_qualname after, and from 3.12 the
			// list comprehension is inlined, so all levels are __str__
			// frames and the qualified names form the cycle.
			wantFunc := "__str__"
			switch v := res.Processes[0].Python; {
			case strings.HasPrefix(v, "3.11."):
				wantFunc = "ExternKernel.__str__"
			case v >= "3.12":
				wantFunc = "ExternKernel.__str__ → MutableBox.__str__ ×2"
			}
			if rec == nil || rec.Func != wantFunc || !strings.HasSuffix(rec.File, "torch/_inductor/ir.py") {
				t.Fatalf("no ExternKernel.__str__ recursion block in %+v", b.Frames)
			}
			// depth 9 and 14: the block repeats 9 and 14 times (its first
			// occurrence holds the blocked leaf, so ±1 by where it begins).
			if rec.Repeat < 8 || rec.RepeatMax < 13 || rec.RepeatMax == rec.Repeat {
				t.Errorf("repeat %d–%d, want about 9–14", rec.Repeat, rec.RepeatMax)
			}
			var names []string
			for _, f := range b.Frames {
				names = append(names, f.Func)
			}
			joined := strings.Join(names, " ")
			if !strings.Contains(joined, "operator_str") || !strings.Contains(joined, "call_function") {
				t.Errorf("frames under the recursion: %s", joined)
			}
			found := false
			for _, f := range a.Findings {
				if f.Rule == "inductor-implicit-fallback-operator-str" && len(f.Ranks) == 2 {
					found = true
				}
			}
			if !found {
				t.Errorf("hang not named: %+v", a.Findings)
			}
			if len(a.Progress) != 2 || a.Progress[0].Verdict != "stuck" || a.Progress[1].Verdict != "stuck" {
				t.Errorf("progress %+v", a.Progress)
			}
		})
	}
}

func TestCaptureTreeSkipsNonPython(t *testing.T) {
	py := interpreters(t)[0]
	pid := startHang(t, py, 3, "VLLM::Worker_TP0")
	res, err := CaptureTree([]int{os.Getpid()}, 1, 0)
	skipIfDenied(t, err)
	// The Go test binary is not Python and is left out quietly; the child is kept.
	if len(res.Processes) != 1 || res.Processes[0].PID != pid {
		t.Errorf("tree capture: %d processes, failures %v", len(res.Processes), res.Failures)
	}
}

func TestNotPythonIsAnError(t *testing.T) {
	if _, err := CaptureLive([]int{os.Getpid()}, 1, 0); err == nil {
		t.Error("capturing the Go test binary succeeded")
	}
}

// The error CaptureLive returns when no pid could be read keeps its cause.
func TestFailureUnwraps(t *testing.T) {
	var err error = Failure{PID: 7, Err: fmt.Errorf("%w (py-spy is not on PATH for a fallback)", pyproc.ErrPermission)}
	if !errors.Is(err, pyproc.ErrPermission) || !strings.HasPrefix(err.Error(), "pid 7: ") {
		t.Errorf("%v: cause lost", err)
	}
}

// PySpy against a real py-spy, when one is on PATH (pip install py-spy;
// CI installs it): the recursion of a live hang is read through it.
// Without py-spy it skips, and TestPySpyReadsRecordedDump is what runs.
func TestPySpyFallbackReal(t *testing.T) {
	path, err := exec.LookPath("py-spy")
	if err != nil {
		t.Skip("py-spy is not on PATH: the fallback is not run against a real py-spy (install it with pip to run this test)")
	}
	py := interpreters(t)[0]
	pid := startHang(t, py, 12, "VLLM::Worker_TP0")
	p, err := PySpy(path, pid)
	if err != nil {
		if strings.Contains(err.Error(), "ermission") {
			t.Skipf("py-spy may not read this process here: %v", err)
		}
		t.Fatal(err)
	}
	if p.PID != pid || p.Source != record.SourceLive {
		t.Fatalf("process %d source %q, want %d live", p.PID, p.Source, pid)
	}
	var main *record.Thread
	for i := range p.Threads {
		if p.Threads[i].Name == "MainThread" {
			main = &p.Threads[i]
		}
	}
	if main == nil {
		t.Fatalf("no MainThread among %d threads", len(p.Threads))
	}
	strs := 0
	for _, f := range main.Frames {
		// py-spy names a method by its qualified name where the
		// interpreter has one (co_qualname, 3.11+): ExternKernel.__str__.
		if (f.Func == "__str__" || strings.HasSuffix(f.Func, ".__str__")) && strings.HasSuffix(f.File, "torch/_inductor/ir.py") {
			strs++
		}
	}
	if strs < 12 {
		t.Errorf("main thread has %d __str__ frames of torch/_inductor/ir.py, want the 12+ of the recursion:\n%v", strs, main.Frames)
	}
}

// What PySpy does around py-spy itself — run `py-spy dump --nonblocking
// --pid N` (the argv is what the stand-in records), read
// its text with the dump reader, keep the process with that pid, report a
// failure with py-spy's own message, give up after PySpyTimeout — run on
// a stand-in executable that replays a real py-spy dump from the corpus
// (transformers PR 17308) and py-spy's real permission error. py-spy's
// output format itself is covered by ingest/stackdump's corpus tests.
func TestPySpyReadsRecordedDump(t *testing.T) {
	dump := testcorpus.File(t, "stackdumps", "transformers-pr-17308-torchdynamo-pyspy.txt")
	dir := t.TempDir()
	args := filepath.Join(dir, "args")
	write := func(body string) string {
		p := filepath.Join(dir, "py-spy")
		os.Remove(p)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho \"$@\" > "+args+"\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The recording starts with the shell prompt line that names the pid;
	// py-spy prints what follows it.
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(b), "\n")
	if first != "$ py-spy dump --pid 530235" {
		t.Fatalf("recording starts %q", first)
	}
	out := filepath.Join(dir, "out.txt")
	os.WriteFile(out, []byte(rest), 0o644)
	p, err := PySpy(write("cat "+out+"\n"), 530235)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := os.ReadFile(args); strings.TrimSpace(string(a)) != "dump --nonblocking --pid 530235" {
		t.Errorf("py-spy ran with %q, want dump --nonblocking --pid 530235 (without --nonblocking py-spy pauses the target)", a)
	}
	if p.PID != 530235 || p.Source != record.SourceLive || len(p.Threads) == 0 {
		t.Fatalf("process %d source %q, %d threads", p.PID, p.Source, len(p.Threads))
	}
	if p.CapturedBy != "py-spy dump --nonblocking --pid 530235" {
		t.Errorf("captured by %q: the report must say the stacks came from py-spy --nonblocking", p.CapturedBy)
	}
	if f := p.Threads[0].Frames; len(f) < 3 || f[0].Func != "backward" || f[0].File != "torch/autograd/__init__.py" || f[0].Line != 173 {
		t.Errorf("first thread frames %v", f)
	}

	// py-spy's message when it may not read the process, as it prints it.
	_, err = PySpy(write("echo 'Error: Permission Denied (os error 13)' >&2\nexit 1\n"), 4242)
	if err == nil || !strings.Contains(err.Error(), "py-spy dump --nonblocking --pid 4242: Error: Permission Denied (os error 13)") {
		t.Errorf("failure: %v", err)
	}
	// Nothing printed is an error, not an empty process.
	if _, err = PySpy(write("exit 0\n"), 4242); err == nil {
		t.Error("an empty py-spy output gave a process")
	}
	// A py-spy that hangs is given up after PySpyTimeout.
	old := PySpyTimeout
	PySpyTimeout = 300 * time.Millisecond
	defer func() { PySpyTimeout = old }()
	start := time.Now()
	_, err = PySpy(write("exec sleep 30\n"), 4242)
	if err == nil || !strings.Contains(err.Error(), "py-spy dump --nonblocking --pid 4242 did not finish within 300ms") || time.Since(start) > 10*time.Second {
		t.Errorf("hanging py-spy: %v after %s", err, time.Since(start))
	}
}

// A live capture records the parent pid (the outlier analysis uses it to
// tell a launcher from its workers).
func TestCaptureRecordsParent(t *testing.T) {
	py := interpreters(t)[0]
	pid := startHang(t, py, 3, "VLLM::Worker_TP0")
	p, err := One(pid)
	skipIfDenied(t, err)
	if p.PPID != os.Getpid() {
		t.Errorf("ppid %d, want %d (this test, which started it)", p.PPID, os.Getpid())
	}
}

// Capture reports each snapshot round as it starts (the CLI draws it on a
// terminal: several snapshots take (count-1) × interval).
func TestCaptureProgress(t *testing.T) {
	py := interpreters(t)[0]
	pid := startHang(t, py, 3, "VLLM::Worker_TP0")
	var rounds []string
	res, err := Capture([]int{pid}, Options{Count: 3, Interval: 10 * time.Millisecond, Progress: func(round, count, procs int) {
		rounds = append(rounds, fmt.Sprintf("%d/%d:%d", round, count, procs))
	}})
	skipIfDenied(t, err)
	if len(res.Processes) != 3 || strings.Join(rounds, " ") != "1/3:1 2/3:1 3/3:1" {
		t.Errorf("%d snapshots, progress %v", len(res.Processes), rounds)
	}
}

// On CPython 3.10 the main thread is named MainThread like on 3.11+ (pyproc
// gives OS names there, and a bucket of one script under 3.10-3.13 read
// "MainThread,python").
func TestMainThreadNamedOn310(t *testing.T) {
	py := pyenv.Python("3.10")
	if py == "" {
		t.Skip("pyenv has no CPython 3.10")
	}
	pid := startHang(t, py, 3, "VLLM::Worker_TP0")
	p, err := One(pid)
	skipIfDenied(t, err)
	for _, th := range p.Threads {
		if th.Main != (th.Name == "MainThread") {
			t.Errorf("thread %d main %v name %q", th.TID, th.Main, th.Name)
		}
	}
}

// pauseWatch polls every thread of pid for a tracer or a stop (TracerPid
// set, state t or T in /proc/PID/task/TID/status) until stop is closed,
// and says whether it saw one: py-spy without --nonblocking attaches to
// every thread and stops it for the length of the dump.
func pauseWatch(pid int, stop <-chan struct{}) <-chan bool {
	seen := make(chan bool, 1)
	go func() {
		paused := false
		for {
			select {
			case <-stop:
				seen <- paused
				return
			default:
			}
			tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
			for _, st := range tasks {
				b, err := os.ReadFile(st)
				if err != nil {
					continue
				}
				for _, line := range strings.Split(string(b), "\n") {
					f := strings.Fields(line)
					if len(f) >= 2 && (f[0] == "TracerPid:" && f[1] != "0" || f[0] == "State:" && (f[1] == "t" || f[1] == "T")) {
						paused = true
					}
				}
			}
		}
	}()
	return seen
}

// The fallback for real: a CPython bringup's reader has no layout for
// (3.9 and older, from pyenv) is read through a real py-spy on PATH, which
// must not pause it. The same watch is shown to catch the pause of a
// plain `py-spy dump` on the same target, so its silence for the
// fallback means something.
func TestPySpyFallbackDoesNotPauseTarget(t *testing.T) {
	pyspy, err := exec.LookPath("py-spy")
	if err != nil {
		t.Skip("py-spy is not on PATH (pip install py-spy): the fallback is not run for real here; TestPySpyReadsRecordedDump checks its argv with a stand-in")
	}
	var python string
	for _, v := range []string{"3.9", "3.8", "3.7"} {
		if python = pyenv.Python(v); python != "" {
			break
		}
	}
	if python == "" {
		t.Skip("no CPython older than 3.10 in pyenv: nothing that pyproc cannot read, so no fallback to run")
	}
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(python, filepath.Join("testdata", "parked.py"), ready)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("parked.py never got ready")
		}
	}
	if _, err := pyproc.Capture(pid); !errors.Is(err, pyproc.ErrUnsupported) {
		t.Fatalf("pyproc on %s: %v, want ErrUnsupported (the fallback is for what pyproc cannot read)", python, err)
	}

	stop := make(chan struct{})
	seen := pauseWatch(pid, stop)
	p, err := One(pid)
	close(stop)
	if err != nil {
		if strings.Contains(err.Error(), "ermission") {
			t.Skipf("py-spy may not read this process here: %v", err)
		}
		t.Fatal(err)
	}
	if <-seen {
		t.Error("the target was traced or stopped during the py-spy fallback: py-spy ran without --nonblocking")
	}
	if p.CapturedBy != PySpyCommand(pid) || !strings.Contains(p.CapturedBy, "--nonblocking") || p.Source != record.SourceLive || p.PID != pid {
		t.Errorf("captured by %q, source %q, pid %d: the report must name py-spy dump --nonblocking", p.CapturedBy, p.Source, p.PID)
	}
	parked, main := 0, false
	for _, th := range p.Threads {
		for _, f := range th.Frames {
			switch f.Func {
			case "parked_thread":
				parked++
			case "main_loop":
				main = true
			}
		}
	}
	if parked != 16 || !main {
		t.Errorf("%d thread(s) in parked_thread (want 16), main_loop found: %v", parked, main)
	}

	// The control: a plain dump (py-spy's default) pauses the target, and
	// the watch sees it. A few tries: the pause lasts milliseconds.
	caught := false
	for try := 0; try < 5 && !caught; try++ {
		stop := make(chan struct{})
		seen := pauseWatch(pid, stop)
		out, err := exec.Command(pyspy, "dump", "--pid", fmt.Sprint(pid)).CombinedOutput()
		close(stop)
		if err != nil {
			t.Fatalf("py-spy dump --pid %d: %v\n%s", pid, err, out)
		}
		caught = <-seen
	}
	if !caught {
		t.Error("the watch never saw a plain py-spy dump pause the target: it cannot tell a pausing fallback either")
	}
}

// torchrun's workers run one script with RANK in their environment: a
// tree capture names each by the rank its /proc/PID/environ holds, and
// the children they fork (which inherit RANK) get none of their own.
func TestTreeRanksFromEnviron(t *testing.T) {
	py := interpreters(t)[0]
	dir := t.TempDir()
	cmd := exec.Command(py, filepath.Join("testdata", "ranked.py"), dir)
	cmd.Stderr = os.Stderr
	// The launcher must not have a RANK of its own.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RANK=") && !strings.HasPrefix(kv, "WORLD_SIZE=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range descendantsOf(cmd.Process.Pid) {
			syscall.Kill(p, syscall.SIGKILL)
		}
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, _ := os.ReadDir(dir)
		if len(m) == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ranked.py: %d of 5 processes parked", len(m))
		}
		time.Sleep(50 * time.Millisecond)
	}
	role := map[int]string{}
	m, _ := os.ReadDir(dir)
	for _, e := range m {
		r, pid, _ := strings.Cut(e.Name(), "-")
		n, _ := strconv.Atoi(pid)
		role[n] = r
	}
	res, err := CaptureTree([]int{cmd.Process.Pid}, 1, 0)
	skipIfDenied(t, err)
	if len(res.Processes) != 5 {
		t.Fatalf("%d processes captured, want 5 (launcher, 2 workers, 2 children): %v", len(res.Processes), res.Failures)
	}
	var workerRanks []string
	for _, p := range res.Processes {
		switch role[p.PID] {
		case "worker":
			workerRanks = append(workerRanks, p.Rank)
		case "launcher", "child":
			if p.Rank != "" {
				t.Errorf("%s pid %d: rank %q, want none", role[p.PID], p.PID, p.Rank)
			}
		default:
			t.Errorf("pid %d: not one of the target's processes", p.PID)
		}
	}
	sort.Strings(workerRanks)
	if strings.Join(workerRanks, ",") != "rank0,rank1" {
		t.Errorf("worker ranks %v, want rank0, rank1", workerRanks)
	}
}

func TestRankFromEnviron(t *testing.T) {
	for _, c := range []struct {
		env  string
		rank int
		ok   bool
	}{
		{"PATH=/bin\x00RANK=3\x00LOCAL_RANK=3\x00WORLD_SIZE=8\x00", 3, true},
		{"RANK=0\x00", 0, false},                 // no world size: not a distributed job
		{"RANK=0\x00WORLD_SIZE=1\x00", 0, false}, // a world of one
		{"RANK=9\x00WORLD_SIZE=8\x00", 0, false}, // out of range
		{"RANK=x\x00WORLD_SIZE=8\x00", 0, false}, // not a number
		{"OMPI_COMM_WORLD_RANK=5\x00OMPI_COMM_WORLD_SIZE=16", 5, true},
		// SLURM_PROCID is the task id (the agent's under srun torchrun), not a rank.
		{"SLURM_PROCID=2\x00SLURM_NTASKS=4\x00", 0, false},
		{"", 0, false},
	} {
		r, ok := RankFromEnviron([]byte(c.env))
		if r != c.rank || ok != c.ok {
			t.Errorf("%q: %d %v, want %d %v", c.env, r, ok, c.rank, c.ok)
		}
	}
}

// descendantsOf lists the pids below pid (pyproc's walk of /proc).
func descendantsOf(pid int) []int {
	all, _ := pyproc.Descendants(pid)
	var out []int
	for _, p := range all {
		if p != pid {
			out = append(out, p)
		}
	}
	return out
}

// FuzzRankFromEnviron: any environ block reads without a panic, and a
// rank read is one of the world it names.
func FuzzRankFromEnviron(f *testing.F) {
	f.Add([]byte("PATH=/usr/bin\x00HOME=/home/user\x00RANK=0\x00WORLD_SIZE=8\x00"))
	f.Add([]byte("RANK=1\x00LOCAL_RANK=1\x00WORLD_SIZE=2\x00"))
	f.Add([]byte("SLURM_PROCID=3\x00SLURM_NTASKS=4"))
	f.Add([]byte("RANK=-1\x00WORLD_SIZE=99999999999999999999\x00"))
	f.Fuzz(func(t *testing.T, env []byte) {
		r, ok := RankFromEnviron(env)
		if ok && r < 0 {
			t.Fatalf("rank %d", r)
		}
	})
}
