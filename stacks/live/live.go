// Package live captures the Python stacks of running processes for
// bringup stacks and bringup watch: pyproc reads CPython memory directly
// (the target is never stopped); when pyproc cannot (no ptrace permission,
// an interpreter it has no layout for) and py-spy is on PATH, py-spy dump
// --nonblocking is run (py-spy reads the memory without pausing the target
// either) and its output read with the stackdump reader; the process's
// CapturedBy names that command, so reports say where its stacks came from.
package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bringup-tool/bringup/ingest/stackdump"
	"github.com/bringup-tool/bringup/pyproc"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/stacks"
)

// Result is what a capture got: processes (every snapshot, numbered) and,
// per pid that could not be read, why.
type Result struct {
	Processes []*record.Process
	Failures  []Failure
}

// Failure is a pid that could not be captured.
type Failure struct {
	PID int
	Err error
}

func (f Failure) Error() string {
	msg := f.Err.Error()
	if strings.Contains(msg, fmt.Sprintf("pid %d", f.PID)) {
		return msg
	}
	return fmt.Sprintf("pid %d: %s", f.PID, msg)
}

// Unwrap lets callers test the cause (pyproc.ErrPermission, ErrNotPython)
// of the error CaptureLive returns when no pid could be read.
func (f Failure) Unwrap() error { return f.Err }

// PySpyTimeout bounds one py-spy dump.
var PySpyTimeout = 30 * time.Second

// Tree expands pids to themselves and all their descendants (for --tree).
func Tree(pids []int) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, pid := range pids {
		all, err := pyproc.Descendants(pid)
		if err != nil {
			return nil, err
		}
		for _, p := range all {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// CaptureLive takes count snapshots (at least one) of every pid, interval
// apart, all pids of a round in parallel. Pids that are not Python
// processes are left out quietly when quietNonPython is set (a --tree
// walk meets shells and compile workers' parents); otherwise they are
// failures.
func CaptureLive(pids []int, count int, interval time.Duration) (*Result, error) {
	return capture(pids, count, interval, false, nil)
}

// Options are a capture's settings for Capture.
type Options struct {
	Count    int           // snapshots, at least one
	Interval time.Duration // between snapshots
	// Tree: the pids are roots; their Python descendants are captured too
	// and non-Python processes left out quietly (CaptureTree).
	Tree bool
	// Progress, when set, is called as each snapshot round starts (round
	// from 1 to count) with the number of processes still captured.
	Progress func(round, count, procs int)
}

// Capture is CaptureLive, or CaptureTree with o.Tree, with progress.
func Capture(pids []int, o Options) (*Result, error) {
	if o.Tree {
		all, err := Tree(pids)
		if err != nil {
			return nil, err
		}
		return capture(all, o.Count, o.Interval, true, o.Progress)
	}
	return capture(pids, o.Count, o.Interval, false, o.Progress)
}

// CaptureTree is CaptureLive over pids and their descendants, keeping only
// the Python processes among them.
func CaptureTree(roots []int, count int, interval time.Duration) (*Result, error) {
	pids, err := Tree(roots)
	if err != nil {
		return nil, err
	}
	return capture(pids, count, interval, true, nil)
}

func capture(pids []int, count int, interval time.Duration, quietNonPython bool, progress func(round, count, procs int)) (*Result, error) {
	if len(pids) == 0 {
		return nil, errors.New("no pid to capture")
	}
	if count < 1 {
		count = 1
	}
	res := &Result{}
	failed := map[int]bool{}
	for round := 0; round < count; round++ {
		if round > 0 && interval > 0 {
			time.Sleep(interval)
		}
		if progress != nil {
			progress(round+1, count, len(pids)-len(failed))
		}
		procs := make([]*record.Process, len(pids))
		errs := make([]error, len(pids))
		var wg sync.WaitGroup
		for i, pid := range pids {
			if failed[pid] {
				continue
			}
			wg.Add(1)
			go func(i, pid int) {
				defer wg.Done()
				procs[i], errs[i] = One(pid)
			}(i, pid)
		}
		wg.Wait()
		for i, pid := range pids {
			if failed[pid] {
				continue
			}
			if errs[i] != nil {
				failed[pid] = true
				if quietNonPython && errors.Is(errs[i], pyproc.ErrNotPython) && !errors.Is(errs[i], pyproc.ErrUnsupported) {
					continue
				}
				if quietNonPython && errors.Is(errs[i], pyproc.ErrNoProcess) {
					continue
				}
				res.Failures = append(res.Failures, Failure{PID: pid, Err: errs[i]})
				continue
			}
			procs[i].Snapshot = round
			res.Processes = append(res.Processes, procs[i])
		}
	}
	if len(res.Processes) == 0 {
		if len(res.Failures) > 0 {
			return res, res.Failures[0]
		}
		return res, errors.New("none of the processes is a Python process")
	}
	return res, nil
}

// One captures one process once: pyproc first, py-spy when pyproc cannot
// read it and py-spy is installed.
func One(pid int) (*record.Process, error) {
	pp, err := pyproc.Capture(pid)
	if err == nil {
		return fromPyproc(pp), nil
	}
	if errors.Is(err, pyproc.ErrPermission) || errors.Is(err, pyproc.ErrUnsupported) {
		if path, lerr := exec.LookPath("py-spy"); lerr == nil {
			p, serr := PySpy(path, pid)
			if serr == nil {
				return p, nil
			}
			return nil, fmt.Errorf("%w; py-spy fallback failed too: %v", err, serr)
		}
		return nil, fmt.Errorf("%w (py-spy is not on PATH for a fallback)", err)
	}
	return nil, err
}

// pySpyArgs are py-spy's arguments for a dump of pid. --nonblocking: py-spy
// otherwise pauses the target while it reads it, and bringup promises
// never to stop a process it looks at; the price is that the stack of a
// thread that keeps running may be read half old, half new, which a
// second snapshot (--count 2) tells.
func pySpyArgs(pid int) []string {
	return []string{"dump", "--nonblocking", "--pid", strconv.Itoa(pid)}
}

// PySpyCommand is the py-spy command line run for pid, as reports name it.
func PySpyCommand(pid int) string { return "py-spy " + strings.Join(pySpyArgs(pid), " ") }

// PySpy runs `py-spy dump --nonblocking --pid N` and reads its output.
func PySpy(pyspy string, pid int) (*record.Process, error) {
	ctx, cancel := context.WithTimeout(context.Background(), PySpyTimeout)
	defer cancel()
	name := PySpyCommand(pid)
	cmd := exec.CommandContext(ctx, pyspy, pySpyArgs(pid)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s did not finish within %s", name, PySpyTimeout)
		}
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("%s: %s", name, clip(msg, 300))
	}
	res, err := stackdump.Parse(&out, name)
	if err != nil {
		return nil, err
	}
	for _, p := range res.Processes {
		if p.PID == pid || p.PID == 0 {
			p.PID = pid
			p.PPID = ppidOf(pid)
			p.Source = record.SourceLive
			p.CapturedBy = name
			return p, nil
		}
	}
	return nil, fmt.Errorf("%s printed no stack", name)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func fromPyproc(pp *pyproc.Process) *record.Process {
	name := strings.Join(pp.Cmdline, " ")
	p := &record.Process{
		PID: pp.PID, Python: pp.Python, Name: name, Source: record.SourceLive,
		Path: fmt.Sprintf("pid %d", pp.PID), RankInfo: stackdump.RankFromTitle(name),
	}
	p.Rank = p.RankInfo.Key()
	p.PPID = ppidOf(pp.PID)
	for i, t := range pp.Threads {
		th := record.Thread{TID: uint64(t.TID), Name: t.Name, Main: t.Main, Frames: t.Frames, Partial: t.Partial, Line: i + 1}
		if t.Ident != 0 {
			th.Ident = "0x" + strconv.FormatUint(t.Ident, 16)
		}
		th.State = osState(pp.PID, t.TID)
		p.Threads = append(p.Threads, th)
	}
	if p.RankInfo == (record.Rank{}) {
		p.RankInfo = record.NoRank
	}
	if p.Rank == "" {
		rankFromEnv(p)
	}
	return p
}

// rankFromEnv names a live process's rank from the variables launchers
// give every worker (torchrun, torch.distributed.launch, Slurm/MPI
// wrappers export RANK, LOCAL_RANK and WORLD_SIZE) when its title and
// command line do not say it: torchrun's workers all run the same script.
// A process of another user's (an unreadable environ) keeps no rank.
func rankFromEnv(p *record.Process) {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID))
	if err != nil {
		return
	}
	r, ok := RankFromEnviron(env)
	if !ok {
		return
	}
	// The worker is the outermost process with the rank: its own children
	// (a resource tracker, compile workers, a forked data loader) inherit
	// RANK and are not ranks of their own.
	if p.PPID > 0 {
		if penv, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PPID)); err == nil {
			if pr, ok := RankFromEnviron(penv); ok && pr == r {
				return
			}
		}
	}
	p.RankInfo.Global = r
	p.Rank = p.RankInfo.Key()
}

// RankFromEnviron reads the global rank from a NUL-separated environment
// (/proc/PID/environ): RANK, else the rank an MPI launcher exports under
// another name (OMPI_COMM_WORLD_RANK, PMI_RANK), when WORLD_SIZE (or the
// launcher's size) says there are several. A lone RANK=0 without a world
// size says nothing about a distributed job. SLURM_PROCID is not a rank
// here: under `srun torchrun` it is the agent's task id; cluster/node
// weighs it against the other processes of the step.
func RankFromEnviron(env []byte) (int, bool) {
	vars := map[string]string{}
	for _, kv := range bytes.Split(env, []byte{0}) {
		k, v, ok := bytes.Cut(kv, []byte{'='})
		if !ok {
			continue
		}
		switch string(k) {
		case "RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE":
			vars[string(k)] = string(v)
		}
	}
	for _, pair := range [][2]string{{"RANK", "WORLD_SIZE"}, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, {"PMI_RANK", "PMI_SIZE"}} {
		r, err1 := strconv.Atoi(vars[pair[0]])
		n, err2 := strconv.Atoi(vars[pair[1]])
		if err1 == nil && err2 == nil && r >= 0 && n > 1 && r < n {
			return r, true
		}
	}
	return 0, false
}

// ppidOf is the parent pid from /proc/PID/stat (0 when unknown); the
// command name in parentheses may hold spaces and ')', so the fields are
// read after the last ')'.
func ppidOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// osState is py-spy's notion of active/idle on Linux: the kernel's thread
// state (R = running) from /proc.
func osState(pid, tid int) string {
	if tid <= 0 {
		return ""
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	if err != nil {
		return ""
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	if s[i+2] == 'R' {
		return "active"
	}
	return "idle"
}

// Snapshot is the one call bringup watch needs when a boot goes silent:
// capture pids (count snapshots, interval apart) and analyse them. Render
// the analysis with report/stacks (Text, JSON or Collapsed). Failures of
// single pids are in the Result; the error is set only when nothing could
// be captured.
func Snapshot(pids []int, count int, interval time.Duration, opt stacks.Options) (*stacks.Analysis, *Result, error) {
	res, err := CaptureLive(pids, count, interval)
	if err != nil {
		return nil, res, err
	}
	return stacks.Analyze(res.Processes, opt), res, nil
}
