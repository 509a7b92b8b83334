package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// LogBackend reaches the logs of the nodes of one launcher: a Slurm job's
// output files (SrunLogs), the pods' container logs (KubeLogs), a Ray
// cluster's log files (RayLogs). Each node's logs are fetched into a
// directory of its own, under the same per-node deadline and with the
// same statuses as the stacks gather.
type LogBackend interface {
	// Kind names the backend: "srun", "kube", "ray".
	Kind() string
	// Discover lists the nodes to fetch from.
	Discover(ctx context.Context) ([]Target, error)
	// Logs fetches one node's logs with f. A failure is a *NodeError when
	// its status is known; a node may also set r's status and detail and
	// keep what it fetched (a job that ended: some files read here, the
	// rest unreachable).
	Logs(ctx context.Context, t Target, f *Fetch, r *NodeResult) error
}

// LogOptions are the caps on what is fetched.
type LogOptions struct {
	// MaxFileBytes is what is kept of one log: its last MaxFileBytes
	// bytes, from a line start (default 16 MiB).
	MaxFileBytes int64
	// MaxFiles and MaxNodeBytes cap one node: at most MaxFiles logs
	// (default 64) and MaxNodeBytes kept in all (default 4×MaxFileBytes).
	MaxFiles     int
	MaxNodeBytes int64
}

// Defaults of LogOptions.
const (
	DefaultLogFileBytes = 16 << 20
	DefaultLogFiles     = 64
)

func (o *LogOptions) defaults() {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultLogFileBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultLogFiles
	}
	if o.MaxNodeBytes <= 0 {
		o.MaxNodeBytes = 4 * o.MaxFileBytes
	}
}

// LogFile is one log a node gave.
type LogFile struct {
	// Name is the copy's name in the node's directory; the diagnosis names
	// it NODE/Name.
	Name string `json:"name"`
	// Source is where it came from: a path on the node, `kubectl logs
	// POD -c CTR`, a file of Ray's log directory.
	Source string `json:"source"`
	// Bytes is what was kept; Size the log's whole size (what was read
	// when the backend does not say).
	Bytes int64 `json:"bytes"`
	Size  int64 `json:"size"`
	// FromLine is the log's line the copy starts with: 1 when it is whole,
	// more when only its end was kept (a line N of the copy is then line
	// N+FromLine-1 of the log).
	FromLine int64 `json:"from_line"`
	// ReadHere: a shared path, read on this machine rather than through
	// the launcher.
	ReadHere bool `json:"read_here,omitempty"`
	// Path is the copy on this machine (under the gather's temporary
	// directory).
	Path string `json:"-"`
}

// Cut reports whether only the log's end was kept.
func (l LogFile) Cut() bool { return l.FromLine > 1 || l.Bytes < l.Size }

// NodeLogs is what one node gave.
type NodeLogs struct {
	// Dir is the node's directory name: the node's name made safe for a
	// path, the prefix of its files in the diagnosis.
	Dir   string    `json:"dir"`
	Files []LogFile `json:"files"`
	// Empty counts logs that exist but hold nothing (not diagnosed).
	Empty int `json:"empty"`
	// Notes say what else the node said of its logs: absent, unreadable,
	// left out by a cap, the same file as another node's.
	Notes []string `json:"notes"`

	fetch *Fetch
}

// LogGather is the outcome of GatherLogs.
type LogGather struct {
	Backend string
	// Root is the temporary directory that holds each node's directory.
	Root  string
	Nodes []NodeResult
}

// Answered counts the nodes that gave logs (even only some).
func (g *LogGather) Answered() int {
	n := 0
	for _, r := range g.Nodes {
		if r.Logs != nil {
			n++
		}
	}
	return n
}

// Partial reports whether a node did not answer, or answered only in part.
func (g *LogGather) Partial() bool {
	for _, r := range g.Nodes {
		if r.Status != StatusOK {
			return true
		}
	}
	return false
}

// Files lists the copies to diagnose, node by node, with the name each is
// to be reported by: "NODE/FILE".
func (g *LogGather) Files() (paths []string, names map[string]string) {
	names = map[string]string{}
	for _, r := range g.Nodes {
		if r.Logs == nil {
			continue
		}
		for _, f := range r.Logs.Files {
			paths = append(paths, f.Path)
			names[f.Path] = r.Logs.Dir + "/" + f.Name
		}
	}
	return paths, names
}

// logSettler is a backend that settles what the nodes gave once all have
// answered (srun: one copy of a file that several nodes share).
type logSettler interface {
	settle(ctx context.Context, g *LogGather)
}

// GatherLogs fetches every target's logs into a directory of its own
// under root, at most o.Parallel nodes at once, each under its own
// deadline: the fan-out of Gather, with logs for documents.
func GatherLogs(ctx context.Context, b LogBackend, targets []Target, root string, o Options, lo LogOptions) *LogGather {
	lo.defaults()
	g := &LogGather{Backend: b.Kind(), Root: root}
	dirs := nodeDirs(targets)
	g.Nodes = fanOut(ctx, b.Kind(), targets, o, func(ctx context.Context, t Target, r *NodeResult) error {
		f := &Fetch{dir: filepath.Join(root, dirs[t.Name]), o: lo, names: map[string]bool{}}
		f.logs = &NodeLogs{Dir: dirs[t.Name], Files: []LogFile{}, Notes: []string{}, fetch: f}
		if err := os.MkdirAll(f.dir, 0o700); err != nil {
			return &NodeError{Status: StatusError, Msg: err.Error()}
		}
		r.Logs = f.logs
		return b.Logs(ctx, t, f, r)
	})
	if s, ok := b.(logSettler); ok {
		s.settle(ctx, g)
	}
	return g
}

// nodeDirs gives every target a distinct directory name made of its name.
func nodeDirs(targets []Target) map[string]string {
	out, used := map[string]string{}, map[string]bool{}
	for _, t := range targets {
		if _, ok := out[t.Name]; ok {
			continue
		}
		out[t.Name] = unique(safeName(t.Name), used)
	}
	return out
}

// safeName makes s a file name: letters, digits and ._-+@%,= kept, the
// rest '_', no leading dot, at most 120 bytes.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-+@%,=", c) >= 0) {
			b[i] = '_'
		}
	}
	s = strings.TrimLeft(string(b), ".")
	if len(s) > 120 {
		s = s[len(s)-120:]
	}
	if s == "" {
		s = "_"
	}
	return s
}

func unique(name string, used map[string]bool) string {
	n := name
	for i := 2; used[n]; i++ {
		n = fmt.Sprintf("%s~%d", name, i)
	}
	used[n] = true
	return n
}

// Fetch is one node's share of a logs gather: it names the copies in the
// node's directory and applies the caps.
type Fetch struct {
	dir   string
	o     LogOptions
	logs  *NodeLogs
	mu    sync.Mutex
	names map[string]bool
	used  int64 // bytes kept
	files int   // logs opened
}

// Note records what the node said of a log it did not give.
func (f *Fetch) Note(format string, a ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.logs.Notes) < 50 {
		f.logs.Notes = append(f.logs.Notes, fmt.Sprintf(format, a...))
	}
}

// Open starts a copy of the log source, named after name; nil (with a
// note) when the node's caps are used up. size is the log's size when
// known, else -1.
func (f *Fetch) Open(name, source string, size int64) (*LogWriter, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.files >= f.o.MaxFiles {
		f.logs.Notes = append(f.logs.Notes, fmt.Sprintf("%s: not read: the node's cap of %d logs was reached", source, f.o.MaxFiles))
		return nil, nil
	}
	keep := min(f.o.MaxFileBytes, f.o.MaxNodeBytes-f.used)
	if keep <= 0 {
		f.logs.Notes = append(f.logs.Notes, fmt.Sprintf("%s: not read: the node's cap of %s was reached", source, ByteSize(f.o.MaxNodeBytes)))
		return nil, nil
	}
	f.files++
	local := unique(safeName(name), f.names)
	w := &LogWriter{f: f, keep: keep, size: size, file: LogFile{Name: local, Source: source, Path: filepath.Join(f.dir, local)}}
	var err error
	if w.out, err = os.OpenFile(w.part(), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600); err != nil {
		return nil, err
	}
	f.used += keep // given back at Close for what was not kept
	return w, nil
}

// LogWriter keeps the last bytes of one log: written in order, it holds
// at most twice its cap on disk, counting the lines it drops, so that the
// copy says which line of the log it starts with.
type LogWriter struct {
	f    *Fetch
	file LogFile
	keep int64
	size int64
	out  *os.File
	n    int64 // bytes in out
	// lines counts the newlines before out's first byte; cut is set once
	// anything before out's first byte was left out, so that byte is the
	// last one before the kept part and the first line of out is partial.
	lines int64
	cut   bool
	total int64
	err   error
}

// Skipped says the source left out the log's first lines (their newlines
// counted there): the first byte written is the last one left out.
func (w *LogWriter) Skipped(bytes, lines int64) {
	w.total += bytes
	w.lines += lines
	w.cut = true
}

// Write implements io.Writer.
func (w *LogWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if _, err := w.out.Write(p); err != nil {
		w.err = err
		return 0, err
	}
	w.n += int64(len(p))
	w.total += int64(len(p))
	if w.n >= 2*w.keep+1 {
		if err := w.compact(w.keep + 1); err != nil {
			w.err = err
			return 0, err
		}
	}
	return len(p), nil
}

// compact keeps the last keep bytes of out, counting the newlines of what
// it drops.
func (w *LogWriter) compact(keep int64) error {
	cut := w.n - keep
	if cut <= 0 {
		return nil
	}
	nl, err := countLines(io.NewSectionReader(w.out, 0, cut))
	if err != nil {
		return err
	}
	tmp, err := os.OpenFile(w.file.Path+".cut", os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	// The copy goes on in tmp, under the name of the part file.
	if err := os.Rename(tmp.Name(), w.part()); err != nil {
		tmp.Close()
		return err
	}
	if err != nil {
		return err
	}
	if _, err := io.Copy(tmp, io.NewSectionReader(w.out, cut, keep)); err != nil {
		tmp.Close()
		return err
	}
	w.out.Close()
	w.out, w.n = tmp, keep
	w.lines += nl
	w.cut = true
	return nil
}

func countLines(r io.Reader) (int64, error) {
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func (w *LogWriter) part() string { return w.file.Path + ".part" }

// Abort drops the copy.
func (w *LogWriter) Abort() {
	w.out.Close()
	os.Remove(w.part())
	w.f.mu.Lock()
	w.f.used -= w.keep
	w.f.mu.Unlock()
}

// Close finishes the copy: its last bytes from a line start, recorded
// with the line it starts at; an empty log is counted, not kept.
func (w *LogWriter) Close() error {
	err := w.err
	if err == nil && w.n > w.keep {
		err = w.compact(w.keep + 1)
		w.cut = true
	}
	if err == nil && w.cut {
		err = w.dropPartialLine()
	}
	if err != nil {
		w.Abort()
		return err
	}
	w.out.Close()
	w.file.Bytes, w.file.FromLine = w.n, w.lines+1
	w.file.Size = w.size
	if w.size < 0 {
		w.file.Size = w.total
	}
	f := w.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.used -= w.keep - w.n
	switch {
	case w.n == 0 && w.total > 0:
		os.Remove(w.part())
		f.logs.Notes = append(f.logs.Notes, fmt.Sprintf("%s: its last %s hold no line start (a line longer than the cap)", w.file.Source, ByteSize(w.keep)))
	case w.n == 0:
		os.Remove(w.part())
		f.logs.Empty++
	default:
		if err := os.Rename(w.part(), w.file.Path); err != nil {
			return err
		}
		f.logs.Files = append(f.logs.Files, w.file)
	}
	return nil
}

// dropPartialLine removes out's first line, which began before the kept
// part (or is the lone newline that ends the part left out).
func (w *LogWriter) dropPartialLine() error {
	head := make([]byte, 64<<10)
	var off int64
	for off < w.n {
		k, err := w.out.ReadAt(head, off)
		if i := bytes.IndexByte(head[:k], '\n'); i >= 0 {
			// compact counts the newline it drops.
			return w.compact(w.n - (off + int64(i) + 1))
		}
		off += int64(k)
		if err != nil {
			break
		}
	}
	// No line start at all: nothing kept.
	return w.compact(0)
}

// ByteSize writes n for people: 512 B, 3.1 KiB, 16 MiB.
func ByteSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<10))) + " KiB"
	case n < 1<<30:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<20))) + " MiB"
	}
	return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<30))) + " GiB"
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }
