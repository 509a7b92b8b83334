package cluster

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// SrunLogs reads a Slurm job's output files: the StdOut and StdErr paths
// of `scontrol show job`, each expanded for every node of the job (%N its
// name, %n its index) and read there through its own `srun --overlap`
// step, as the stacks gather reaches the node. A path that this machine
// can read and that the node's copy matches (same inode, same first 4 KiB)
// is a shared path: it is read here once, for the node that wrote it (the
// node its name expands for, else the batch host), and not sent through
// srun. A job that has ended cannot be reached with srun: only what is
// readable here is read then. Only files the job's user owns are read: a
// job names its output paths, and bringup may run as root.
type SrunLogs struct {
	Srun *Srun

	info    *JobInfo
	nodes   []string
	running bool
	token   string

	mu      sync.Mutex
	local   map[string]string   // path → fingerprint of the copy readable here ("" none)
	same    map[string][]string // path → the nodes whose copy is the one here
	fromAll map[string][]string // path + "\x00" + fingerprint → the nodes that sent it
}

// Kind implements LogBackend.
func (l *SrunLogs) Kind() string { return "srun" }

// Discover implements LogBackend: the job's nodes, all of them while it
// runs; once it has ended, the batch host (whose batch step wrote the
// output) and, where a path names the node (%N, %n), every node.
func (l *SrunLogs) Discover(ctx context.Context) ([]Target, error) {
	info, err := l.Srun.jobInfo(ctx)
	if err != nil {
		return nil, err
	}
	j := l.Srun.Job
	switch {
	case info.State == "PENDING":
		return nil, fmt.Errorf("job %s is PENDING: it has no output yet (squeue -j %s)", j, j)
	case len(info.Outputs) == 0:
		return nil, fmt.Errorf("job %s has no output file (an salloc or srun job writes to the terminal that started it: pipe that into bringup diagnose -)", j)
	}
	targets, err := l.Srun.nodes(ctx, info)
	if err != nil {
		return nil, err
	}
	l.info, l.running = info, info.State == "RUNNING"
	l.local, l.same, l.fromAll = map[string]string{}, map[string][]string{}, map[string][]string{}
	for _, t := range targets {
		l.nodes = append(l.nodes, t.Name)
	}
	if l.running {
		b := make([]byte, 12)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		l.token = "bringup-log-" + hex.EncodeToString(b)
		return targets, nil
	}
	perNode := slices.ContainsFunc(info.Outputs, nodeSpecific)
	var keep []Target
	for _, t := range targets {
		if perNode || t.Name == info.BatchHost {
			keep = append(keep, t)
		}
	}
	if len(keep) == 0 {
		return nil, fmt.Errorf("job %s is %s and names no batch host: its output files cannot be placed on a node", j, info.State)
	}
	return keep, nil
}

var outputPatternRE = regexp.MustCompile(`%([0-9]*)([A-Za-z%])`)

// nodeSpecific reports whether a Slurm filename pattern names the node.
func nodeSpecific(pattern string) bool {
	for _, m := range outputPatternRE.FindAllStringSubmatch(pattern, -1) {
		if m[2] == "N" || m[2] == "n" {
			return true
		}
	}
	return false
}

// ExpandOutput expands what `scontrol show job` leaves of a Slurm
// filename pattern for one node: %N the node, %n its index in the job,
// %t and %s as for the batch step (task 0, step "batch"), %j the job, %%;
// a number after % pads with zeros. Other symbols stay as they are.
func ExpandOutput(pattern, node string, index int, job string) string {
	return outputPatternRE.ReplaceAllStringFunc(pattern, func(m string) string {
		sub := outputPatternRE.FindStringSubmatch(m)
		width, _ := strconv.Atoi(sub[1])
		width = min(width, 10)
		num := func(v string) string {
			for len(v) < width {
				v = "0" + v
			}
			return v
		}
		switch sub[2] {
		case "N":
			return node
		case "n":
			return num(strconv.Itoa(index))
		case "t":
			return num("0")
		case "s":
			return "batch"
		case "j":
			return num(job)
		case "%":
			return "%"
		}
		return m
	})
}

// paths are the job's outputs on node t: every output while the job runs
// (a node-local path holds that node's own file); once it has ended, the
// ones that name t, and the others on the batch host.
func (l *SrunLogs) paths(t Target) []string {
	idx := slices.Index(l.nodes, t.Name)
	var out []string
	for _, p := range l.info.Outputs {
		if l.running || nodeSpecific(p) || t.Name == l.info.BatchHost {
			if e := ExpandOutput(p, t.Name, idx, l.Srun.Job); !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	return out
}

// localPrint is the fingerprint of the copy of path readable here, "" when
// none; computed once per path.
func (l *SrunLogs) localPrint(path string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if fp, ok := l.local[path]; ok {
		return fp
	}
	fp, _ := Fingerprint(path)
	l.local[path] = fp
	return fp
}

// Fingerprint names a file as the node script does: its inode, and the
// POSIX cksum (CRC and length) of its first 4 KiB. A log only grows, so
// the fingerprint of one file is the same seen from every machine that
// mounts it; two nodes' own files differ in inode or in content.
func Fingerprint(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file", path)
	}
	head := make([]byte, 4096)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return "", err
	}
	return fmt.Sprintf("%d %d %d", st.Ino, Cksum(head[:n]), n), nil
}

// cksumTable is CRC-32 with the polynomial 0x04C11DB7, most significant
// bit first, as POSIX cksum computes it.
var cksumTable = func() (t [256]uint32) {
	for i := range t {
		c := uint32(i) << 24
		for k := 0; k < 8; k++ {
			if c&0x80000000 != 0 {
				c = c<<1 ^ 0x04C11DB7
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// Cksum is the CRC that POSIX cksum prints for b.
func Cksum(b []byte) uint32 {
	var c uint32
	for _, x := range b {
		c = c<<8 ^ cksumTable[byte(c>>24)^x]
	}
	for n := len(b); n > 0; n >>= 8 {
		c = c<<8 ^ cksumTable[byte(c>>24)^byte(n)]
	}
	return ^c
}

// logScript runs on a node: for each (path, fingerprint of the copy
// here) it says the file is missing, not a regular file, unreadable, the
// same as the copy here, or sends it: a header with its fingerprint, size
// and what is left out (k-1 bytes, l newlines) when it is larger than the
// cap, then exactly m bytes (the last cap bytes and the one before them),
// then an end line; a file another user than the job's ($3, "-" for any)
// owns is not read. Every line of its own starts with a random token, and
// the bytes are counted, so no log text can pass for a header. POSIX sh
// with stat, dd, cksum, head, tail, wc.
const logScript = `t=$1; c=$2; u=$3; shift 3; i=0; ` +
	`while [ $# -ge 2 ]; do p=$1; w=$2; shift 2; i=$((i+1)); ` +
	`if [ ! -e "$p" ]; then echo "$t $i missing"; continue; fi; ` +
	`if [ ! -f "$p" ]; then echo "$t $i notfile"; continue; fi; ` +
	`if [ ! -r "$p" ]; then echo "$t $i unreadable"; continue; fi; ` +
	`n=$(stat -L -c %i -- "$p" 2>/dev/null) && s=$(stat -L -c %s -- "$p" 2>/dev/null) && o=$(stat -L -c %u -- "$p" 2>/dev/null) || { echo "$t $i unreadable"; continue; }; ` +
	`if [ "$u" != - ] && [ "$o" != "$u" ]; then echo "$t $i foreign $o"; continue; fi; ` +
	`f="$n $(dd if="$p" bs=4096 count=1 2>/dev/null | cksum)"; ` +
	`if [ "$f" = "$w" ]; then echo "$t $i same"; continue; fi; ` +
	`k=0; l=0; o=1; m=$s; ` +
	`if [ "$s" -gt "$c" ]; then k=$((s-c)); o=$k; m=$((c+1)); l=$(head -c $((k-1)) -- "$p" | wc -l); fi; ` +
	`echo "$t $i data $f $s $k $l $m"; ` +
	`tail -c +$o -- "$p" | head -c $m; ` +
	`printf '\n%s %s end\n' "$t" "$i"; done`

// Logs implements LogBackend.
func (l *SrunLogs) Logs(ctx context.Context, t Target, f *Fetch, r *NodeResult) error {
	paths := l.paths(t)
	if !l.running {
		return l.readHere(t, paths, f, r)
	}
	argv := []string{"srun", "--overlap", "--jobid=" + l.Srun.Job, "-w", t.Name, "-N1", "-n1", "--gres=none",
		"--quiet", "--job-name=bringup-logs", "--", "sh", "-c", logScript, "sh", l.token, strconv.FormatInt(f.o.MaxFileBytes, 10), l.owner()}
	for _, p := range paths {
		fp := l.localPrint(p)
		if fp == "" {
			fp = "-"
		}
		argv = append(argv, p, fp)
	}
	var perr error
	res := launch(ctx, argv, l.Srun.env(), false, func(out io.Reader, _ io.WriteCloser, kill func()) error {
		perr = l.parse(bufio.NewReaderSize(out, 64<<10), t, paths, f)
		if perr != nil {
			kill()
		}
		return nil
	})
	if res.err != nil {
		if errors.Is(res.err, context.DeadlineExceeded) || errors.Is(res.err, context.Canceled) {
			return &NodeError{Status: StatusTimeout, Msg: lastLines(res.stderr, 2)}
		}
		return &NodeError{Status: StatusLaunch, Msg: res.err.Error()}
	}
	if res.exit != 0 {
		if ne := l.Srun.classify(res); ne != nil {
			return ne
		}
		return &NodeError{Status: StatusLaunch, Msg: fmt.Sprintf("srun exited %d: %s", res.exit, lastLines(res.stderr, 3))}
	}
	if perr != nil {
		r.Status, r.Detail = StatusError, perr.Error()
	}
	return nil
}

// parse reads the node script's answer.
func (l *SrunLogs) parse(br *bufio.Reader, t Target, paths []string, f *Fetch) error {
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			return nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[0] != l.token {
			return fmt.Errorf("the node's answer is garbled: %q", clipStr(strings.TrimSpace(line), 120))
		}
		i, _ := strconv.Atoi(fields[1])
		if i < 1 || i > len(paths) {
			return fmt.Errorf("the node's answer names file %q of %d", fields[1], len(paths))
		}
		p := paths[i-1]
		switch fields[2] {
		case "missing":
			f.Note("%s: not on this node", p)
		case "notfile":
			f.Note("%s: not a regular file", p)
		case "unreadable":
			f.Note("%s: not readable by this user on the node", p)
		case "foreign":
			f.Note("%s: not read: owned by uid %s, not by the job's user", p, clipStr(strings.Join(fields[3:], " "), 12))
		case "same":
			l.mu.Lock()
			l.same[p] = append(l.same[p], t.Name)
			l.mu.Unlock()
		case "data":
			if err := l.receive(br, fields, t, p, f); err != nil {
				return err
			}
		default:
			return fmt.Errorf("the node's answer has an unknown state %q", clipStr(fields[2], 40))
		}
	}
}

// receive copies one file of the node's answer.
func (l *SrunLogs) receive(br *bufio.Reader, fields []string, t Target, p string, f *Fetch) error {
	if len(fields) != 10 {
		return fmt.Errorf("the node's header for %s is garbled", p)
	}
	var nums [4]int64
	for j, s := range fields[6:] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return fmt.Errorf("the node's header for %s is garbled", p)
		}
		nums[j] = v
	}
	size, skip, lines, m := nums[0], nums[1], nums[2], nums[3]
	fp := strings.Join(fields[3:6], " ")
	w, err := f.Open(filepath.Base(p), p, size)
	if err != nil {
		return err
	}
	dst := io.Discard
	if w != nil {
		if skip > 0 {
			w.Skipped(skip-1, lines)
		}
		dst = w
	}
	got, err := io.CopyN(dst, br, m)
	trailer := ""
	if err == nil {
		trailer, err = br.ReadString('\n')
		if err == nil && trailer == "\n" {
			trailer, err = br.ReadString('\n')
		}
	}
	if want := fmt.Sprintf("%s %s end\n", l.token, fields[1]); err != nil || got != m || trailer != want {
		if w != nil {
			w.Abort()
		}
		return fmt.Errorf("the node's answer broke off in %s after %d of %d bytes (did the file shrink while it was read?)", p, got, m)
	}
	if w == nil {
		return nil
	}
	if err := w.Close(); err != nil {
		return err
	}
	l.mu.Lock()
	key := p + "\x00" + fp
	l.fromAll[key] = append(l.fromAll[key], t.Name)
	l.mu.Unlock()
	return nil
}

// owner is the uid a file must have to be read: the job's, "-" when
// scontrol did not say.
func (l *SrunLogs) owner() string {
	if l.info == nil || l.info.UID < 0 {
		return "-"
	}
	return strconv.Itoa(l.info.UID)
}

// readHere reads a node's paths on this machine (the job has ended).
func (l *SrunLogs) readHere(t Target, paths []string, f *Fetch, r *NodeResult) error {
	var unreachable []string
	for _, p := range paths {
		if err := l.readLocal(f, p); errors.Is(err, errForeign) {
			f.Note("%s: not read: %v", p, err)
		} else if err != nil {
			unreachable = append(unreachable, p)
		}
	}
	if len(unreachable) > 0 {
		r.Status = StatusLaunch
		r.Detail = fmt.Sprintf("job %s is %s: srun cannot reach %s, and %s is not readable here", l.Srun.Job, l.info.State, t.Name, strings.Join(unreachable, ", "))
		r.Fix = "a path on the node only: read it there, or send the job's output to a shared file system"
	}
	return nil
}

var errForeign = errors.New("owned by another user than the job's")

// readLocal copies a file of this machine into the node's directory.
func (l *SrunLogs) readLocal(f *Fetch, p string) error {
	in, err := os.Open(p)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", p)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && l.info != nil && l.info.UID >= 0 && int(st.Uid) != l.info.UID {
		return errForeign
	}
	w, err := f.Open(filepath.Base(p), p, fi.Size())
	if err != nil || w == nil {
		return err
	}
	w.file.ReadHere = true
	if _, err := io.Copy(w, in); err != nil {
		w.Abort()
		return err
	}
	return w.Close()
}

// settle implements logSettler: a file that several nodes share is kept
// once, for the node that wrote it.
func (l *SrunLogs) settle(_ context.Context, g *LogGather) {
	if !l.running {
		return
	}
	byName := map[string]*NodeResult{}
	for i := range g.Nodes {
		byName[g.Nodes[i].Name] = &g.Nodes[i]
	}
	owner := func(p string, nodes []string) string {
		for _, o := range l.info.Outputs {
			if nodeSpecific(o) {
				for _, n := range nodes {
					if ExpandOutput(o, n, slices.Index(l.nodes, n), l.Srun.Job) == p {
						return n
					}
				}
			}
		}
		if slices.Contains(nodes, l.info.BatchHost) {
			return l.info.BatchHost
		}
		return nodes[0]
	}
	ordered := func(nodes []string) []string {
		out := slices.Clone(nodes)
		slices.SortFunc(out, func(a, b string) int { return slices.Index(l.nodes, a) - slices.Index(l.nodes, b) })
		return out
	}
	for _, p := range sortedKeys(l.same) {
		nodes := ordered(l.same[p])
		o := owner(p, nodes)
		r := byName[o]
		if r == nil || r.Logs == nil {
			continue
		}
		if err := l.readLocal(r.Logs.fetch, p); err != nil {
			r.Logs.fetch.Note("%s: a shared path, but reading it here failed: %v", p, err)
		}
		for _, n := range nodes {
			if n != o && byName[n] != nil && byName[n].Logs != nil {
				byName[n].Logs.fetch.Note("%s: the same file as %s's (a shared path), read once, here", p, o)
			}
		}
	}
	for _, key := range sortedKeys(l.fromAll) {
		nodes := ordered(l.fromAll[key])
		if len(nodes) < 2 {
			continue
		}
		p, _, _ := strings.Cut(key, "\x00")
		o := owner(p, nodes)
		for _, n := range nodes {
			r := byName[n]
			if n == o || r == nil || r.Logs == nil {
				continue
			}
			r.Logs.Files = slices.DeleteFunc(r.Logs.Files, func(lf LogFile) bool {
				if lf.Source == p {
					os.Remove(lf.Path)
					return true
				}
				return false
			})
			r.Logs.fetch.Note("%s: the same file as %s's (a path the nodes share), kept once", p, o)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
