package probe

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Proc is a Python process of a boot as /proc showed it.
type Proc struct {
	PID     int
	Cmdline []string
	Exe     string // base name of /proc/PID/exe, or of argv[0] when unreadable
	// PythonPath and Config are the process's PYTHONPATH and BRINGUP_PROBE
	// (HasPath, HasConfig say whether they were set at all).
	PythonPath string
	HasPath    bool
	HasConfig  bool
	EnvErr     string // why /proc/PID/environ could not be read
}

// NotLoaded is a Python process of the boot that wrote no loaded marker,
// with the reason as far as its command line and environment tell it.
type NotLoaded struct {
	Proc
	Reason string
}

// Scanner follows a boot's process tree (the root and its descendants) and
// remembers every Python process it sees; a process that lives less than
// one scan interval may be missed. It reads /proc only.
type Scanner struct {
	root  int
	proc  string // "/proc", replaced by tests
	mu    sync.Mutex
	procs map[int]*Proc
}

// NewScanner follows the tree below root (root included).
func NewScanner(root int) *Scanner {
	return &Scanner{root: root, proc: "/proc", procs: map[int]*Proc{}}
}

var pythonExe = regexp.MustCompile(`^python[0-9.]*[dmu]*$`)

// Scan reads the tree once.
func (s *Scanner) Scan() {
	entries, err := os.ReadDir(s.proc)
	if err != nil {
		return
	}
	kids := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := readPPID(filepath.Join(s.proc, e.Name(), "stat")); ok {
			kids[ppid] = append(kids[ppid], pid)
		}
	}
	queue := []int{s.root}
	seen := map[int]bool{s.root: true}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		s.look(pid)
		for _, k := range kids[pid] {
			if !seen[k] {
				seen[k] = true
				queue = append(queue, k)
			}
		}
	}
}

func (s *Scanner) look(pid int) {
	dir := filepath.Join(s.proc, strconv.Itoa(pid))
	raw, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil || len(raw) == 0 {
		return
	}
	argv := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	exe := ""
	if l, err := os.Readlink(filepath.Join(dir, "exe")); err == nil {
		exe = filepath.Base(strings.TrimSuffix(l, " (deleted)"))
	} else {
		exe = filepath.Base(argv[0])
	}
	if !pythonExe.MatchString(exe) {
		s.mu.Lock()
		delete(s.procs, pid) // it exec'd something else, or the pid was reused
		s.mu.Unlock()
		return
	}
	p := &Proc{PID: pid, Cmdline: argv, Exe: exe}
	env, err := os.ReadFile(filepath.Join(dir, "environ"))
	if err != nil {
		p.EnvErr = err.Error()
	} else {
		for _, kv := range bytes.Split(env, []byte{0}) {
			k, v, _ := bytes.Cut(kv, []byte("="))
			switch string(k) {
			case "PYTHONPATH":
				p.PythonPath, p.HasPath = string(v), true
			case EnvVar:
				p.HasConfig = true
			}
		}
	}
	s.mu.Lock()
	s.procs[pid] = p
	s.mu.Unlock()
}

// readPPID is field 4 of /proc/PID/stat, counted after the comm field's
// closing parenthesis (comm may hold spaces and parentheses).
func readPPID(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// Python is every Python process seen, by pid.
func (s *Scanner) Python() []Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Proc, 0, len(s.procs))
	for _, p := range s.procs {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// Missing is every process of procs that has no loaded marker among
// reports, with the reason.
func (d Deployment) Missing(procs []Proc, reports []Report) []NotLoaded {
	loaded := map[int]bool{}
	for _, r := range reports {
		if r.Loaded {
			loaded[r.PID] = true
		}
	}
	var out []NotLoaded
	for _, p := range procs {
		if !loaded[p.PID] {
			out = append(out, NotLoaded{Proc: p, Reason: WhyNotLoaded(p, d.Site)})
		}
	}
	return out
}

// WhyNotLoaded says why a Python process did not load the probe whose site
// directory is site: the interpreter flags that turn it off (-I, -E, -S),
// else an environment without it, else what remains possible.
func WhyNotLoaded(p Proc, site string) string {
	var why []string
	for _, f := range pythonFlags(p.Cmdline) {
		switch f {
		case 'I':
			why = append(why, "-I (isolated mode ignores PYTHONPATH)")
		case 'E':
			why = append(why, "-E (PYTHON* variables, PYTHONPATH among them, are ignored)")
		case 'S':
			why = append(why, "-S (the site module is not imported, so no sitecustomize runs)")
		}
	}
	if len(why) > 0 {
		return strings.Join(why, "; ")
	}
	switch {
	case p.EnvErr != "":
		return "its environment could not be read (" + p.EnvErr + ")"
	case !p.HasPath:
		return "PYTHONPATH is not in its environment: a launcher dropped it"
	case !pathHas(p.PythonPath, site):
		return "its PYTHONPATH does not hold the probe's directory: a launcher replaced it"
	case !p.HasConfig:
		return EnvVar + " is not in its environment: a launcher dropped it"
	}
	return "no loaded marker although its command line and environment allow it: it ended before site ran, the probe failed to load, or it is not CPython"
}

func pathHas(pp, dir string) bool {
	for _, e := range filepath.SplitList(pp) {
		if filepath.Clean(e) == filepath.Clean(dir) {
			return true
		}
	}
	return false
}

// pythonFlags is the single-letter interpreter options of a CPython command
// line, up to the script, -c or -m (what follows belongs to the program).
func pythonFlags(argv []string) []byte {
	var flags []byte
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			break
		}
		if strings.HasPrefix(a, "--") {
			if a == "--check-hash-based-pycs" {
				i++ // takes a value
			}
			continue
		}
	cluster:
		for j := 1; j < len(a); j++ {
			switch c := a[j]; c {
			case 'c', 'm':
				return flags
			case 'W', 'X':
				if j == len(a)-1 {
					i++ // the value is the next argument
				}
				break cluster
			default:
				flags = append(flags, c)
			}
		}
	}
	return flags
}

// String is the process as a report names it.
func (p Proc) String() string {
	cmd := strings.Join(p.Cmdline, " ")
	if len(cmd) > 200 {
		cmd = cmd[:200] + "…"
	}
	return fmt.Sprintf("pid %d (%s)", p.PID, cmd)
}
