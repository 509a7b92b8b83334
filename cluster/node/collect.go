package node

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bringup-tool/bringup/pyproc"
	"github.com/bringup-tool/bringup/stacks/live"
)

// Options tune Collect.
type Options struct {
	// SlurmJob keeps only the processes of this Slurm job, SlurmStep only
	// those of this step of it. The collector's own step is always left out.
	SlurmJob  string
	SlurmStep string
	// LauncherName is recorded as the node's name in the fan-out.
	LauncherName string
	// Count snapshots, Interval apart (stacks --count/--interval).
	Count    int
	Interval time.Duration
	// Version is the bringup version recorded in the document.
	Version string
}

// Collect captures every Python process in scope on this node. It fails
// only when the process table cannot be listed; processes that cannot be
// read are in Doc.Failures.
func Collect(o Options) (*Doc, error) {
	d := &Doc{Schema: Schema, Processes: []Process{}, Failures: []Failure{}}
	d.Node = identity(o.LauncherName, o.Version)
	d.Node.CapturedAt = time.Now().UTC()
	d.Scope = Scope{SlurmJob: o.SlurmJob, SlurmStep: o.SlurmStep}
	if o.SlurmJob != "" && os.Getenv("SLURM_JOB_ID") == o.SlurmJob {
		d.Scope.SkippedStep = os.Getenv("SLURM_STEP_ID")
	}

	cands, err := candidates()
	if err != nil {
		return nil, err
	}
	var pids []int
	hints := map[int]Hints{}
	for _, c := range cands {
		h := readHints(c.pid)
		if o.SlurmJob != "" {
			if h.EnvironError != "" {
				d.Scope.Unreadable++
				continue
			}
			if h.SlurmJobID != o.SlurmJob || (o.SlurmStep != "" && h.SlurmStepID != o.SlurmStep) {
				continue
			}
			if d.Scope.SkippedStep != "" && h.SlurmStepID == d.Scope.SkippedStep {
				continue
			}
		}
		d.Scope.Python++
		if c.denied != nil {
			d.Failures = append(d.Failures, Failure{PID: c.pid, Name: c.name, Kind: FailPermission, Error: c.denied.Error()})
			continue
		}
		hints[c.pid] = h
		pids = append(pids, c.pid)
	}
	if len(pids) > 0 {
		count := max(o.Count, 1)
		res, _ := live.Capture(pids, live.Options{Count: count, Interval: o.Interval})
		if res != nil {
			for _, p := range res.Processes {
				d.Processes = append(d.Processes, Process{Process: *p, Hints: hints[p.PID]})
			}
			for _, f := range res.Failures {
				if errors.Is(f.Err, pyproc.ErrNoProcess) ||
					(errors.Is(f.Err, pyproc.ErrNotPython) && !errors.Is(f.Err, pyproc.ErrUnsupported)) {
					d.Scope.Python-- // exited, or not Python after all
					continue
				}
				d.Failures = append(d.Failures, Failure{PID: f.PID, Name: cmdline(f.PID), Kind: failKind(f.Err), Error: f.Error()})
			}
		}
	}
	ResolveRanks(d.Processes)
	sort.SliceStable(d.Processes, func(i, j int) bool {
		if d.Processes[i].PID != d.Processes[j].PID {
			return d.Processes[i].PID < d.Processes[j].PID
		}
		return d.Processes[i].Snapshot < d.Processes[j].Snapshot
	})
	sort.Slice(d.Failures, func(i, j int) bool { return d.Failures[i].PID < d.Failures[j].PID })
	d.Node.FinishedAt = time.Now().UTC()
	return d, nil
}

func failKind(err error) string {
	switch {
	case errors.Is(err, pyproc.ErrPermission):
		return FailPermission
	case errors.Is(err, pyproc.ErrUnsupported):
		return FailUnsupported
	}
	return FailError
}

func identity(launcher, version string) Identity {
	id := Identity{LauncherName: launcher, Version: version, UID: os.Getuid(), SlurmNode: os.Getenv("SLURMD_NODENAME")}
	id.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		id.BootID = strings.TrimSpace(string(b))
	}
	id.PIDNamespace = nsInode("/proc/self/ns/pid")
	return id
}

// nsInode reads the inode from a namespace link ("pid:[4026531836]").
func nsInode(path string) uint64 {
	l, err := os.Readlink(path)
	if err != nil {
		return 0
	}
	i, j := strings.IndexByte(l, '['), strings.IndexByte(l, ']')
	if i < 0 || j < i {
		return 0
	}
	n, _ := strconv.ParseUint(l[i+1:j], 10, 64)
	return n
}

// candidate is a process that looks like a Python interpreter.
type candidate struct {
	pid  int
	name string
	// denied is set when its memory map cannot be read (ptrace access):
	// it is then known as Python only by name, and cannot be captured.
	denied error
}

// candidates lists the processes that are Python by their executable or a
// mapped libpython, leaving out this process and kernel threads. Reading
// the maps is cheap next to capturing, and keeps the capture from parsing
// the ELF symbols of every shell and daemon on the node.
func candidates() ([]candidate, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	self := os.Getpid()
	var out []candidate
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := "/proc/" + e.Name()
		maps, err := os.ReadFile(dir + "/maps")
		if err != nil {
			if errors.Is(err, fs.ErrPermission) {
				// Another user's process, or ptrace forbidden: Python only
				// if its name says so.
				name := cmdline(pid)
				if isPythonName(name) || isPythonName(comm(pid)) {
					out = append(out, candidate{pid: pid, name: name, denied: fmt.Errorf("pid %d: %w", pid, pyproc.ErrPermission)})
				}
			}
			continue
		}
		if len(maps) == 0 {
			continue // a kernel thread, or gone
		}
		exe, _ := os.Readlink(dir + "/exe")
		if pyproc.IsPythonFile(filepath.Base(strings.TrimSuffix(exe, " (deleted)"))) || pyproc.MapsPython(maps) {
			out = append(out, candidate{pid: pid, name: cmdline(pid)})
		}
	}
	return out, nil
}

// isPythonName: the first word of a command line or comm names a Python
// interpreter ("/usr/bin/python3.12 -m vllm…", "python3").
func isPythonName(s string) bool {
	f := strings.Fields(s)
	return len(f) > 0 && pyproc.IsPythonFile(filepath.Base(f[0]))
}

func cmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return strings.Join(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), " ")
}

func comm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// readHints reads the rank hints from /proc/PID/environ.
func readHints(pid int) Hints {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		msg := err.Error()
		if errors.Is(err, fs.ErrPermission) {
			msg = "permission denied (another user's process)"
		}
		return Hints{EnvironError: msg}
	}
	return ParseEnviron(b)
}

// ParseEnviron picks the rank hints out of a NUL-separated environment
// (the format of /proc/PID/environ). Values that are not numbers where a
// number is expected are left out; nothing else is kept.
func ParseEnviron(env []byte) Hints {
	var h Hints
	num := func(v string) *int {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return nil
		}
		return &n
	}
	for _, kv := range bytes.Split(env, []byte{0}) {
		i := bytes.IndexByte(kv, '=')
		if i <= 0 {
			continue
		}
		k, v := string(kv[:i]), string(kv[i+1:])
		switch k {
		case "RANK":
			h.Rank = num(v)
		case "LOCAL_RANK":
			h.LocalRank = num(v)
		case "WORLD_SIZE":
			h.WorldSize = num(v)
		case "LOCAL_WORLD_SIZE":
			h.LocalWorldSize = num(v)
		case "GROUP_RANK":
			h.GroupRank = num(v)
		case "SLURM_JOB_ID":
			h.SlurmJobID = clean(v)
		case "SLURM_STEP_ID":
			h.SlurmStepID = clean(v)
		case "SLURM_PROCID":
			h.SlurmProcID = num(v)
		case "SLURM_LOCALID":
			h.SlurmLocalID = num(v)
		case "SLURM_NODEID":
			h.SlurmNodeID = num(v)
		case "SLURM_STEP_NUM_TASKS":
			h.SlurmStepTasks = num(v)
		case "LWS_WORKER_INDEX":
			h.LWSWorkerIndex = num(v)
		case "JOB_COMPLETION_INDEX":
			h.JobIndex = num(v)
		}
	}
	return h
}

// clean keeps an identifier short and printable.
func clean(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 64 {
		s = s[:64]
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return ""
		}
	}
	return s
}
