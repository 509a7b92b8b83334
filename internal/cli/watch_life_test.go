package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/store"
)

// These tests run bringup as its own process (this test binary, re-run as
// the CLI by TestBringupProcess) so it can die of SIGPIPE or be SIGKILLed
// as a user's bringup would, with the real stdout a pipe.

const helperArgs = "BRINGUP_CLI_TEST_ARGS"

// TestBringupProcess is not a test: it is the bringup process the
// lifecycle tests start, run with the arguments in $BRINGUP_CLI_TEST_ARGS.
func TestBringupProcess(t *testing.T) {
	args := os.Getenv(helperArgs)
	if args == "" {
		t.Skip("the bringup process of the watch lifecycle tests, started by them")
	}
	os.Exit(Main(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
}

// bringupCmd is bringup with args as a process of its own; its stderr goes
// to a file (the guardian it starts holds stderr open after it dies).
func bringupCmd(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBringupProcess$")
	cmd.Env = append(os.Environ(), helperArgs+"="+strings.Join(args, "\x1f"))
	errPath := filepath.Join(t.TempDir(), "stderr")
	f, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cmd.Stderr = f
	return cmd, errPath
}

func fileText(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// processAlive reports whether pid is a live process (not a zombie).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// waitGone waits up to d for every pid to end; it returns those left.
func waitPidsGone(pids []int, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		var left []int
		for _, p := range pids {
			if processAlive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func killPids(pids []int) {
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGKILL)
	}
}

// reap collects those of pids that were re-parented to this test process
// (a subreaper once an in-process watch ran) and have ended.
func reapPids(pids []int) {
	for _, p := range pids {
		var ws syscall.WaitStatus
		syscall.Wait4(p, &ws, syscall.WNOHANG, nil)
	}
}

func showRun(t *testing.T, db, ref string) *store.Run {
	t.Helper()
	code, out, stderr := runCLI("runs", "show", ref, "--store", db, "--json")
	if code != ExitOK {
		t.Fatalf("runs show %s: exit %d: %s", ref, code, stderr)
	}
	var r store.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("runs show --json: %v\n%s", err, out)
	}
	return &r
}

// `bringup watch … | head -3`: bringup used to die of SIGPIPE, leaving the
// boot running under pid 1, the log at 3 lines and the run "running"
// forever. Now only the terminal copy stops.
func TestWatchStdoutClosed(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	pidFile := filepath.Join(t.TempDir(), "pid")
	const n = 20000
	script := fmt.Sprintf("echo $$ > %s; grep SigIgn /proc/self/status; i=0; while [ $i -lt %d ]; do echo line $i; i=$((i+1)); done; sleep 1; echo last", pidFile, n)
	cmd, errPath := bringupCmd(t, "watch", "--store", db, "--grace", "1s", "--", "sh", "-c", script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(out)
	var head []string
	for len(head) < 3 {
		l, err := br.ReadString('\n')
		if err != nil {
			break
		}
		head = append(head, l)
	}
	out.Close() // head -3 exits
	err = cmd.Wait()
	stderr := fileText(errPath)
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("bringup died of %v\n%s", ws.Signal(), stderr)
	}
	if err != nil {
		t.Errorf("bringup: %v\n%s", err, stderr)
	}
	// The boot did not inherit an ignored SIGPIPE from bringup.
	if len(head) < 1 || !strings.HasPrefix(head[0], "SigIgn:") {
		t.Fatalf("head: %q", head)
	}
	if mask, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(head[0], "SigIgn:")), 16, 64); err != nil || mask&(1<<(syscall.SIGPIPE-1)) != 0 {
		t.Errorf("the boot started with SIGPIPE ignored: %q", head[0])
	}
	if strings.Count(stderr, "the terminal copy of the boot's stdout stopped (broken pipe") != 1 {
		t.Errorf("not told once that stdout closed:\n%s", stderr)
	}
	r := showRun(t, db, "last")
	if r.Outcome != store.OutcomeExited || r.Lines != n+2 {
		t.Errorf("run: outcome %s, %d lines; want exited with %d", r.Outcome, r.Lines, n+2)
	}
	if b, _ := os.ReadFile(filepath.Join(r.Dir, "output.log")); !strings.HasSuffix(string(b), fmt.Sprintf("line %d\nlast\n", n-1)) {
		t.Errorf("output.log is not complete (%d bytes)", len(b))
	}
	if pid, _ := strconv.Atoi(strings.TrimSpace(fileText(pidFile))); pid == 0 || processAlive(pid) {
		t.Errorf("the boot's process %d is still running", pid)
		killPids([]int{pid})
	}
}

// stubbornBoot starts bringup watching watch/testdata/stubborn.py (a main
// process and child that ignore SIGTERM, and a setsid daemon) and waits
// until bringup has recorded all three; it returns bringup, the boot's
// pids and the run as recorded so far.
func stubbornBoot(t *testing.T, db string) (*exec.Cmd, string, []int, *store.Run) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH")
	}
	pidFile := filepath.Join(t.TempDir(), "pids")
	cmd, errPath := bringupCmd(t, "watch", "--store", db, "--grace", "1s", "--", py, watchScript("stubborn.py"), pidFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var pids []int
		for _, f := range strings.Fields(fileText(pidFile)) {
			if p, err := strconv.Atoi(f); err == nil {
				pids = append(pids, p)
			}
		}
		if len(pids) == 3 {
			// bringup knows every one of them (the daemon left the group).
			code, out, _ := runCLI("runs", "show", "last", "--store", db, "--json")
			var r store.Run
			if code == ExitOK && json.Unmarshal([]byte(out), &r) == nil && r.Watcher != nil && knowsAll(r.Procs, pids) {
				t.Cleanup(func() { killPids(pids); reapPids(pids) })
				return cmd, errPath, pids, &r
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the boot did not start within 60 s; bringup said:\n%s", fileText(errPath))
	return nil, "", nil, nil
}

func knowsAll(procs []store.BootProc, pids []int) bool {
	have := map[int]bool{}
	for _, p := range procs {
		have[p.PID] = true
	}
	for _, p := range pids {
		if !have[p] {
			return false
		}
	}
	return true
}

// kill -9 of bringup: its guardian stops the whole boot (the daemon that
// left the process group included) and marks the run lost. Before, the boot
// lived on under pid 1 and `runs list` showed the run's duration growing.
func TestWatchKilled(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	cmd, errPath, pids, _ := stubbornBoot(t, db)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if left := waitPidsGone(pids, 30*time.Second); len(left) > 0 {
		t.Errorf("processes of the boot still running 30 s after bringup was killed: %v\n%s", left, fileText(errPath))
	}
	var r *store.Run
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if r = showRun(t, db, "last"); r.Outcome != store.OutcomeRunning {
			break
		}
	}
	if r.Outcome != store.OutcomeLost || r.Ended.IsZero() || !strings.Contains(r.Reason, "ended without recording an outcome") || !strings.Contains(r.Reason, "guardian") {
		t.Errorf("run after bringup was killed: outcome %s, ended %v, reason %q", r.Outcome, r.Ended, r.Reason)
	}
	const said = "bringup watch guardian: stopped 3 process(es) of the boot; run #1 is marked lost"
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !strings.Contains(fileText(errPath), said); {
		time.Sleep(100 * time.Millisecond)
	}
	if stderr := fileText(errPath); !strings.Contains(stderr, said) {
		t.Errorf("the guardian did not say what it did:\n%s", stderr)
	}
	// Its duration stays put.
	_, before, _ := runCLI("runs", "list", "--store", db)
	time.Sleep(1100 * time.Millisecond)
	if _, after, _ := runCLI("runs", "list", "--store", db); after != before {
		t.Errorf("runs list changed:\n%s\n%s", before, after)
	}
}

// Both bringup and its guardian killed: the next bringup that opens the
// store marks the run lost, names the processes the boot left running, and
// stops them only when asked (--stop-lost).
func TestWatchLostAndStopLost(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	cmd, _, pids, r := stubbornBoot(t, db)
	if r.Watcher.Guardian <= 0 {
		t.Fatalf("no guardian recorded: %+v", r.Watcher)
	}
	syscall.Kill(r.Watcher.Guardian, syscall.SIGKILL)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	time.Sleep(500 * time.Millisecond)
	// The main process and its child ignore the parent-death SIGTERM, and
	// the daemon left the group: all three are left.
	if left := waitPidsGone(pids, 0); len(left) != 3 {
		t.Fatalf("left running: %v of %v", left, pids)
	}
	code, _, stderr := runCLI("runs", "list", "--store", db)
	if code != ExitOK || !strings.Contains(stderr, "run #1 was still marked running, but its watch is gone: marked lost") ||
		!strings.Contains(stderr, "run #1 (lost) left 3 process(es) running: ") || !strings.Contains(stderr, "--stop-lost") {
		t.Errorf("runs list: exit %d\n%s", code, stderr)
	}
	for _, p := range pids {
		if !strings.Contains(stderr, fmt.Sprintf("pid %d (", p)) {
			t.Errorf("pid %d not named:\n%s", p, stderr)
		}
	}
	if left := waitPidsGone(pids, 0); len(left) != 3 {
		t.Errorf("runs list without --stop-lost stopped something: left %v", left)
	}
	got := showRun(t, db, "1")
	if got.Outcome != store.OutcomeLost || len(got.Survivors) != 3 {
		t.Errorf("lost run: outcome %s survivors %+v", got.Outcome, got.Survivors)
	}
	code, _, stderr = runCLI("runs", "list", "--store", db, "--stop-lost", "--grace", "1s")
	if code != ExitOK || !strings.Contains(stderr, "run #1: stopped 3 process(es) its boot left running") {
		t.Errorf("runs list --stop-lost: exit %d\n%s", code, stderr)
	}
	if left := waitPidsGone(pids, 10*time.Second); len(left) > 0 {
		t.Errorf("still running after --stop-lost: %v", left)
	}
	code, out, stderr := runCLI("runs", "show", "1", "--store", db)
	if code != ExitOK || !strings.HasPrefix(out, "LOST run #1") || strings.Count(out, "stopped by bringup") != 3 || stderr != "" {
		t.Errorf("runs show after --stop-lost: exit %d\n%s\nstderr: %s", code, out, stderr)
	}
}

// Run ids restart per store, and two stores in one directory (or a store
// moved aside, as the corrupt-store message advises, and a new one) used to
// write the same <dir>/runs/1. Each run now has a directory of its own.
func TestWatchTwoStoresOneDirectory(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	run := func(db, word string) *store.Run {
		t.Helper()
		if code, _, stderr := runCLI("watch", "--store", db, "--", "sh", "-c", "echo "+word); code != ExitOK {
			t.Fatalf("watch: exit %d\n%s", code, stderr)
		}
		return showRun(t, db, "last")
	}
	first := run(a, "first")
	second := run(b, "second")
	if err := os.Rename(a, a+".aside"); err != nil {
		t.Fatal(err)
	}
	third := run(a, "third")
	if first.ID != 1 || second.ID != 1 || third.ID != 1 {
		t.Fatalf("ids %d %d %d", first.ID, second.ID, third.ID)
	}
	for _, c := range []struct {
		r    *store.Run
		word string
	}{{first, "first"}, {second, "second"}, {third, "third"}} {
		if got := fileText(filepath.Join(c.r.Dir, "output.log")); got != c.word+"\n" {
			t.Errorf("%s run's output.log in %s holds %q", c.word, c.r.Dir, got)
		}
		var onDisk store.Run
		if json.Unmarshal([]byte(fileText(filepath.Join(c.r.Dir, "run.json"))), &onDisk) != nil || onDisk.Command[2] != "echo "+c.word {
			t.Errorf("%s run's run.json: %+v", c.word, onDisk)
		}
	}
	if first.Dir == second.Dir || first.Dir == third.Dir || second.Dir == third.Dir {
		t.Errorf("run directories shared: %s %s %s", first.Dir, second.Dir, third.Dir)
	}
}

// A relative --store records absolute paths: the run directory and log
// are right from any directory.
func TestWatchRelativeStore(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	if code, _, stderr := runCLI("watch", "--store", "state/runs.db", "--", "sh", "-c", "echo hi"); code != ExitOK {
		t.Fatalf("watch: exit %d\n%s", code, stderr)
	}
	t.Chdir(t.TempDir())
	r := showRun(t, filepath.Join(work, "state", "runs.db"), "last")
	if !filepath.IsAbs(r.Dir) || len(r.Logs) != 1 || !filepath.IsAbs(r.Logs[0]) {
		t.Fatalf("recorded dir %q logs %q", r.Dir, r.Logs)
	}
	if got := fileText(r.Logs[0]); got != "hi\n" {
		t.Errorf("log from another directory: %q", got)
	}
	if !strings.HasPrefix(r.Dir, filepath.Join(work, "state", "runs")+string(filepath.Separator)) {
		t.Errorf("run directory %s is not next to the store", r.Dir)
	}
}

// The boot's main process has a parent-death signal of its own, for when
// the guardian is gone too: with both killed, a main process that does
// not ignore SIGTERM ends with bringup (and not before: the signal is tied
// to a thread that lives as long as the watch).
func TestWatchParentDeathSignal(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd, errPath := bringupCmd(t, "watch", "--store", db, "--", "sh", "-c", "echo $$ > "+pidFile+"; exec sleep 300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var pid int
	var r *store.Run
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && (pid == 0 || r == nil || r.Watcher == nil || r.Watcher.Guardian <= 0); time.Sleep(100 * time.Millisecond) {
		pid, _ = strconv.Atoi(strings.TrimSpace(fileText(pidFile)))
		if code, out, _ := runCLI("runs", "show", "last", "--store", db, "--json"); code == ExitOK {
			r = &store.Run{}
			json.Unmarshal([]byte(out), r)
		}
	}
	if pid == 0 || r == nil || r.Watcher == nil || r.Watcher.Guardian <= 0 {
		t.Fatalf("the boot did not start: pid %d, run %+v\n%s", pid, r, fileText(errPath))
	}
	t.Cleanup(func() { killPids([]int{pid}); reapPids([]int{pid}) })
	syscall.Kill(r.Watcher.Guardian, syscall.SIGKILL)
	time.Sleep(300 * time.Millisecond)
	if !processAlive(pid) {
		t.Fatal("the boot ended while bringup was alive")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if left := waitPidsGone([]int{pid}, 10*time.Second); len(left) > 0 {
		t.Errorf("the boot's main process %d outlived bringup by 10 s", pid)
	}
}
