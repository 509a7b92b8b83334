package watch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// procInfo is what /proc says about one process. A pid is only the same
// process while its start time is the same: pids are reused.
type procInfo struct {
	PID     int
	PPID    int
	PGID    int
	Start   uint64 // clock ticks after boot (field 22 of /proc/PID/stat)
	State   byte
	Comm    string
	Cmdline string
}

// readStat parses /proc/PID/stat. The comm field is in parentheses and may
// itself hold spaces and parentheses, so fields are counted from the last ')'.
func readStat(pid int) (procInfo, error) {
	var buf [1024]byte
	return readStatBuf(pid, buf[:0])
}

// readStatBuf reads /proc/PID/stat into buf's space with bare open, read
// and close: os.ReadFile adds an fstat, a second read, and the file's
// registration with the poller, which made up most of the 200 ms scan.
func readStatBuf(pid int, buf []byte) (procInfo, error) {
	var path [32]byte
	name := strconv.AppendInt(append(path[:0], "/proc/"...), int64(pid), 10)
	name = append(name, "/stat"...)
	b, err := readSmall(string(name), buf)
	if err != nil {
		return procInfo{}, err
	}
	return parseStat(pid, b)
}

// readSmall reads a whole small file into buf (growing it if needed).
func readSmall(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

func parseStat(pid int, b []byte) (procInfo, error) {
	open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || close < open {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	// Fields from the state (field 3) on; start time is field 22. Only
	// the first 20 are split, without allocating.
	var fields [20][]byte
	nf := 0
	for rest := b[close+1:]; nf < len(fields); {
		i := 0
		for i < len(rest) && isSpace(rest[i]) {
			i++
		}
		if i == len(rest) {
			break
		}
		j := i
		for j < len(rest) && !isSpace(rest[j]) {
			j++
		}
		fields[nf] = rest[i:j]
		nf++
		rest = rest[j:]
	}
	if nf < 20 || len(fields[0]) != 1 || !(fields[0][0] >= 'A' && fields[0][0] <= 'Z' || fields[0][0] >= 'a' && fields[0][0] <= 'z') {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, nf)
	}
	p := procInfo{PID: pid, Comm: string(b[open+1 : close]), State: fields[0][0]}
	p.PPID, _ = strconv.Atoi(string(fields[1]))
	p.PGID, _ = strconv.Atoi(string(fields[2]))
	p.Start, _ = strconv.ParseUint(string(fields[19]), 10, 64)
	return p, nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// readCmdline is the command line with NULs as spaces; empty for kernel
// threads and zombies.
func readCmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// readEnviron is the environment a process was started (exec'd) with.
func readEnviron(pid int) (map[string]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return nil, err
	}
	return parseEnviron(b), nil
}

// parseEnviron splits NUL-separated NAME=VALUE entries; the first '='
// ends the name (values may hold '=').
func parseEnviron(b []byte) map[string]string {
	env := map[string]string{}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if i := bytes.IndexByte(kv, '='); i > 0 {
			env[string(kv[:i])] = string(kv[i+1:])
		}
	}
	return env
}

// procTable reads the stat of every process once: one pass over /proc
// costs one read per process, where walking /proc/PID/task/*/children
// costs one per thread (a TP=8 boot has hundreds).
func procTable() map[int]procInfo { return readProcs(nil) }

// readProcs is procTable without the pids skip says to pass over.
func readProcs(skip func(pid int) bool) map[int]procInfo {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	tab := make(map[int]procInfo, len(names))
	var buf [1024]byte
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(n)
		if err != nil || skip != nil && skip(pid) {
			continue
		}
		if p, err := readStatBuf(pid, buf[:0]); err == nil {
			tab[pid] = p
		}
	}
	return tab
}

// treeScanner reads /proc for the periodic scan of the boot's tree. A
// process found outside the tree stays outside (an orphan re-parents to its
// nearest subreaper ancestor, and the boot's is bringup), so it is not read
// again: on a build box most of /proc is outside, and reading a stat costs
// ~10 us of kernel time. Every fullScanEvery-th scan reads everything,
// which bounds what the shortcut can miss — a pid freed outside and reused
// inside the tree within one interval (pid_max is 32768 on many hosts), or
// a descendant of a child bringup had before the boot re-parented to it —
// to that many intervals.
type treeScanner struct {
	outside map[int]bool
	scans   int
}

const fullScanEvery = 5

// table reads the processes not known to be outside the tree.
func (s *treeScanner) table() map[int]procInfo {
	full := s.scans%fullScanEvery == 0
	s.scans++
	kept := map[int]bool{}
	tab := readProcs(func(pid int) bool {
		if !full && s.outside[pid] {
			kept[pid] = true // still listed, still outside
			return true
		}
		return false
	})
	s.outside = kept
	return tab
}

// settle notes which processes of tab the tree computed from it left out.
func (s *treeScanner) settle(tab map[int]procInfo, tree []int) {
	in := make(map[int]bool, len(tree))
	for _, p := range tree {
		in[p] = true
	}
	for pid := range tab {
		if !in[pid] {
			s.outside[pid] = true
		}
	}
}

// subtree is roots and all their descendants in tab, breadth first.
func subtree(tab map[int]procInfo, roots ...int) []int {
	kids := map[int][]int{}
	for pid, p := range tab {
		kids[p.PPID] = append(kids[p.PPID], pid)
	}
	seen := map[int]bool{}
	var out []int
	queue := append([]int(nil), roots...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		if _, ok := tab[p]; ok {
			out = append(out, p)
		}
		queue = append(queue, kids[p]...)
	}
	return out
}

// children lists the direct children of pid from /proc/PID/task/*/children
// (a child belongs to the thread that forked it).
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// alive reports whether the process still exists as the same process and
// is not a zombie.
func alive(pid int, start uint64) bool {
	p, err := readStat(pid)
	if err != nil || p.State == 'Z' || p.State == 'X' {
		return false
	}
	return start == 0 || p.Start == start
}

// becomeSubreaper makes orphaned descendants (a daemon that double-forks
// out of the boot's process group) re-parent to us instead of init, so they
// stay visible in our tree and can be stopped.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// reapChild collects a dead direct child other than the boot itself (which
// exec.Cmd waits for), so re-parented orphans do not stay zombies.
func reapChild(pid int) {
	var ws unix.WaitStatus
	unix.Wait4(pid, &ws, unix.WNOHANG, nil)
}

// signal sends sig to one process, ignoring "already gone".
func signal(pid int, sig syscall.Signal) {
	if pid > 1 {
		syscall.Kill(pid, sig)
	}
}

// shortCmd shortens a command line for one-line reports: paths become
// their base names ("python3 envdrop.py worker 0"), then it is cut.
func shortCmd(cmd string) string {
	const max = 100
	fields := strings.Fields(cmd)
	for i, f := range fields {
		if strings.HasPrefix(f, "/") && !strings.HasSuffix(f, "/") {
			fields[i] = filepath.Base(f)
		}
	}
	cmd = strings.Join(fields, " ")
	if len(cmd) > max {
		return cmd[:max-1] + "…"
	}
	return cmd
}
