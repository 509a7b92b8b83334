package pyproc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/bringup-tool/bringup/record"
)

// Thread is one Python thread of a captured process.
type Thread struct {
	TID   int    // native thread id (Linux tid); 0 when it could not be determined
	Ident uint64 // threading.get_ident() (the pthread id)
	// Name is the threading name (Thread.name, read from threading._active);
	// when threading has none (not imported, as in a program that never
	// used it on 3.12+), "MainThread" for the main thread — what threading
	// calls it — and the OS thread name (/proc/PID/task/TID/comm) for others.
	Name string
	Main bool // the process's initial thread: TID == PID (without tids, the oldest thread state or "MainThread")
	// Partial: the thread kept running (calling and returning) while being
	// read and its frame chain never read the same twice; Frames then holds
	// only the outer frames two reads agreed on (its root path), the moving
	// inner part left out. A Partial thread is, by itself, evidence that it
	// is running rather than blocked.
	Partial bool
	// Tries is how many reads of the frame chain this capture took (1
	// for a thread that stood still; up to maxThreadAttempts for one that
	// kept moving).
	Tries  int
	Frames record.Stack
}

// Process is one snapshot of a Python process.
type Process struct {
	PID     int
	Python  string // "3.12.1"
	Exe     string
	Cmdline []string
	Threads []Thread
}

// captureAttempts: the target keeps running while we read it, so a walk can
// see a half-updated frame chain; a fresh attempt almost always succeeds.
const captureAttempts = 3

// Capture takes one snapshot of every Python thread of pid. The target is
// never stopped or written to. Errors match ErrNoProcess, ErrPermission,
// ErrNotPython or ErrUnsupported with errors.Is.
func Capture(pid int) (*Process, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	p, err := capture(pid)
	if err != nil && !errors.Is(err, ErrNoProcess) && gone(pid) {
		// Whatever went wrong, the reason is that the process ended.
		return nil, fmt.Errorf("pid %d exited while being read: %w", pid, ErrNoProcess)
	}
	return p, err
}

// gone reports whether pid no longer exists, is a zombie (exited, not yet
// reaped), or is exiting: its memory already released (empty maps) while it
// is not a kernel thread, which never has any.
func gone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	if s[i+2] == 'Z' || s[i+2] == 'X' {
		return true
	}
	const pfKthread = 0x00200000
	f := strings.Fields(s[i+1:])
	if len(f) > 6 {
		if flags, err := strconv.ParseUint(f[6], 10, 64); err == nil && flags&pfKthread != 0 {
			return false
		}
	}
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	return err == nil && len(maps) == 0
}

func capture(pid int) (*Process, error) {
	proc := fmt.Sprintf("/proc/%d", pid)
	mapsData, err := os.ReadFile(proc + "/maps")
	if err != nil {
		return nil, procErr(pid, err)
	}
	p := &Process{PID: pid}
	p.Exe, _ = os.Readlink(proc + "/exe")
	if raw, err := os.ReadFile(proc + "/cmdline"); err == nil {
		p.Cmdline = strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	}
	if len(mapsData) == 0 {
		return nil, fmt.Errorf("pid %d has no memory maps (a kernel thread): %w", pid, ErrNotPython)
	}
	mem := ProcessMemory{PID: pid}
	t, version, err := locate(pid, parseMaps(mapsData), p.Exe, mem)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	p.Python = version
	if stat, err := os.ReadFile(proc + "/stat"); err == nil {
		t.pid, t.start = pid, statStart(stat)
	}

	var raw []rawThread
	for attempt := 1; ; attempt++ {
		t.codes = map[uint64]*codeInfo{}
		raw, err = t.walk()
		var bad *badReadError
		if err == nil || !errors.As(err, &bad) || attempt == captureAttempts {
			break
		}
	}
	if err != nil {
		var bad *badReadError
		if errors.As(err, &bad) {
			return nil, fmt.Errorf("pid %d: %w", pid, unsupported("CPython %s memory does not match the layout generated from %s headers (%v)", version, t.lay.Source, err))
		}
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	if t.lay.TstateNativeThreadID < 0 {
		nativeFromPthread(pid, t.mem, raw)
	}
	p.Threads = threadsFrom(pid, raw, func(tid int) string {
		comm, err := os.ReadFile(fmt.Sprintf("%s/task/%d/comm", proc, tid))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(comm))
	})
	return p, nil
}

// threadsFrom turns thread states as read into Threads: oldest (main)
// first, OS names where threading's are unknown, Main marked.
func threadsFrom(pid int, raw []rawThread, osName func(tid int) string) []Thread {
	var out []Thread
	// CPython links the newest thread first; list the main thread first as
	// people expect.
	for i := len(raw) - 1; i >= 0; i-- {
		r := raw[i]
		th := Thread{TID: r.native, Ident: r.ident, Name: r.name, Main: r.native == pid, Partial: r.partial, Tries: r.tries, Frames: r.frames}
		if th.Name == "" && th.TID > 0 {
			th.Name = osName(th.TID)
		}
		out = append(out, th)
	}
	// Without tids (3.10 when glibc's tid could not be located), the main
	// thread is the oldest thread state, first here, unless a thread is
	// named "MainThread".
	if len(out) > 0 && out[0].TID == 0 {
		main := 0
		for i, th := range out {
			if th.Name == "MainThread" {
				main = i
			}
		}
		out[main].Main = true
	}
	// No threading name for the main thread: threading would call it
	// MainThread (the OS name is the executable's, "python3").
	for i := range out {
		if out[i].Main && !named(raw, out[i].Ident) {
			out[i].Name = "MainThread"
		}
	}
	return out
}

// named reports whether the thread with this ident got a threading name.
func named(raw []rawThread, ident uint64) bool {
	for _, r := range raw {
		if r.ident == ident {
			return r.name != ""
		}
	}
	return false
}

// procErr turns a /proc read failure into the package's errors.
func procErr(pid int, err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("pid %d: %w", pid, ErrPermission)
	}
	return fmt.Errorf("pid %d: %w", pid, err)
}

var patchRe = regexp.MustCompile(`^3\.\d+\.\d+`)

var libpythonRe = regexp.MustCompile(`/libpython3\.\d+[^/]*\.so`)

// locate finds the ELF object holding _PyRuntime (a loaded libpython, else
// the executable), picks and checks the layout, and returns a walker.
func locate(pid int, maps []mapping, exe string, mem Memory) (*target, string, error) {
	var candidates []string
	seen := map[string]bool{}
	for _, m := range maps {
		if libpythonRe.MatchString(m.Path) && !seen[m.Path] {
			seen[m.Path] = true
			candidates = append(candidates, m.Path)
		}
	}
	if exe != "" && !seen[exe] {
		candidates = append(candidates, exe)
	}
	var lastErr error
	for _, path := range candidates {
		bi, err := loadBinary(hostPath(pid, path))
		if err != nil {
			lastErr = err
			continue
		}
		rt, ok := bi.syms["_PyRuntime"]
		if !ok {
			continue
		}
		b, ok := bias(maps, path, bi.firstVaddr)
		if !ok {
			continue
		}
		return build(bi, b, rt, mem)
	}
	if lastErr != nil && errors.Is(lastErr, os.ErrPermission) {
		return nil, "", ErrPermission
	}
	for _, path := range candidates {
		if strings.Contains(filepath.Base(path), "python") {
			return nil, "", unsupported("%s has no _PyRuntime symbol (a stripped build, or not CPython 3.7+); pyproc cannot find the interpreter", filepath.Base(path))
		}
	}
	return nil, "", ErrNotPython
}

// hostPath is how we open a file the target mapped: through its root, so
// targets in other mount namespaces (containers) resolve.
func hostPath(pid int, path string) string {
	p := fmt.Sprintf("/proc/%d/root%s", pid, path)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return path
}

func build(bi *binaryInfo, b, rt uint64, mem Memory) (*target, string, error) {
	r := reader{mem}
	version := bi.rodataVer
	var hex uint64
	if pv, ok := bi.syms["Py_Version"]; ok {
		v, err := r.u64(pv + b)
		if err != nil {
			return nil, "", err
		}
		hex = v
		version = hexVersion(v)
	}
	if hex == 0 && bi.versionBuf != 0 {
		buf := make([]byte, 64)
		if err := mem.Read(bi.versionBuf+b, buf); err == nil {
			if v := strings.Fields(strings.TrimRight(string(buf), "\x00")); len(v) > 0 && (bi.minor == "" || strings.HasPrefix(v[0], bi.minor+".")) && patchRe.MatchString(v[0]) {
				version = v[0]
			}
		}
	}
	minor := bi.minor
	if hex != 0 {
		minor = fmt.Sprintf("%d.%d", hex>>24&0xff, hex>>16&0xff)
	}
	if minor == "" {
		return nil, "", unsupported("cannot tell which CPython version %s is", filepath.Base(bi.path))
	}
	if version == "" {
		version = minor
	}
	lay, err := layoutFor(minor)
	if err != nil {
		return nil, version, err
	}
	if lay.Debug != nil {
		raw := make([]byte, lay.Debug.Size)
		if err := mem.Read(rt+b, raw); err != nil {
			return nil, version, err
		}
		if err := lay.applyDebugOffsets(raw, hex); err != nil {
			return nil, version, err
		}
	}
	ct, ok := bi.syms["PyCode_Type"]
	if !ok {
		return nil, version, unsupported("%s exports no PyCode_Type symbol, so pyproc cannot validate what it reads", filepath.Base(bi.path))
	}
	var st uint64
	if s, ok := bi.syms["PyUnicode_Type"]; ok {
		st = s + b
	}
	t := newTarget(mem, lay, rt+b, ct+b, st)
	if s, ok := bi.syms["PyDict_Type"]; ok {
		t.dictType = s + b
	}
	return t, version, nil
}

// nativeFromPthread fills in Linux tids on CPython 3.10, whose thread state
// records only the pthread id. glibc keeps the tid inside struct pthread,
// which the pthread id points at; its offset differs between glibc builds,
// so it is found, not assumed: the first offset at which every thread's
// value is a distinct live task of the process. When none fits, tids stay 0.
func nativeFromPthread(pid int, mem reader, threads []rawThread) {
	tasks := map[int]bool{}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return
	}
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			tasks[n] = true
		}
	}
	const span = 2048
	bufs := make([][]byte, len(threads))
	for i, th := range threads {
		bufs[i] = make([]byte, span)
		if th.ident == 0 || mem.Read(th.ident, bufs[i]) != nil {
			return
		}
	}
	for off := 0; off+4 <= span; off += 4 {
		used := map[int]bool{}
		fits := true
		for _, b := range bufs {
			v := int(int32(binary.LittleEndian.Uint32(b[off:])))
			if !tasks[v] || used[v] {
				fits = false
				break
			}
			used[v] = true
		}
		if fits {
			for i := range threads {
				threads[i].native = int(int32(binary.LittleEndian.Uint32(bufs[i][off:])))
			}
			return
		}
	}
}

// Descendants returns pid followed by all its descendants (children first,
// breadth-first), from /proc. The caller keeps the Python ones by whether
// Capture succeeds.
func Descendants(pid int) ([]int, error) {
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return nil, procErr(pid, err)
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	children := map[int][]int{}
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		if ppid, ok := statPPID(data); ok {
			children[ppid] = append(children[ppid], child)
		}
	}
	out := []int{pid}
	seen := map[int]bool{pid: true}
	for i := 0; i < len(out); i++ {
		kids := children[out[i]]
		sort.Ints(kids)
		for _, k := range kids {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out, nil
}

// statPPID reads the parent pid from /proc/PID/stat; the command name may
// hold spaces and parentheses, so fields are counted after the last ')'.
func statPPID(data []byte) (int, bool) {
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// statStart reads the process start time (clock ticks since boot, field 22)
// from /proc/PID/stat.
func statStart(data []byte) uint64 {
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}
