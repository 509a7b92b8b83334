package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bringup-tool/bringup/cluster/node"
)

// Copy policies for the collector binary.
const (
	CopyAuto   = "auto"   // the node's own copy at this binary's path, else a cached copy, else copy it there
	CopyAlways = "always" // never the node's own path: a cached copy of exactly this binary, else copy it
	CopyNever  = "never"  // only the node's own copy at this binary's path
)

// DefaultCollector is the command line that runs the collector, after the
// binary, when Delivery.Collector is empty.
var DefaultCollector = []string{"stacks", "--local", "--json"}

// Delivery is how the collector gets onto a node and is started there.
type Delivery struct {
	// Self is this binary (os.Executable); SelfOnNode is the path tried on
	// the node first ("" for none: a container never has it).
	Self       string
	SelfOnNode string
	// RemoteDir holds the copies: <RemoteDir>/bringup.<uid>.<hash>,
	// the hash of this binary's content, so a copy is used only by the
	// same binary and only when the user owns it.
	RemoteDir string
	Copy      string
	// Collector is the collector's command line after the binary
	// (DefaultCollector when empty); backends add their scope flags.
	Collector []string

	once sync.Once
	hash string
	err  error
}

// Hash is the first 16 hex digits of the SHA-256 of Self.
func (d *Delivery) Hash() (string, error) {
	d.once.Do(func() {
		f, err := os.Open(d.Self)
		if err != nil {
			d.err = fmt.Errorf("reading this binary to copy it to the nodes: %w", err)
			return
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			d.err = fmt.Errorf("reading this binary: %w", err)
			return
		}
		d.hash = hex.EncodeToString(h.Sum(nil))[:16]
	})
	return d.hash, d.err
}

// RemotePath is the copy's path on a node for a user id.
func (d *Delivery) RemotePath(uid int) (string, error) {
	h, err := d.Hash()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s/bringup.%d.%s", strings.TrimRight(d.dir(), "/"), uid, h), nil
}

// collector is the collector's command line followed by extra.
func (d *Delivery) collector(extra ...string) []string {
	base := d.Collector
	if len(base) == 0 {
		base = DefaultCollector
	}
	return append(append([]string{}, base...), extra...)
}

func (d *Delivery) dir() string {
	if d.RemoteDir == "" {
		return "/tmp"
	}
	return d.RemoteDir
}

// Markers the remote script prints.
const (
	markerMissing = "bringup-collector-missing"
	markerSend    = "bringup-collector-send"
	markerFailed  = "bringup-collector-copy-failed"
	exitMissing   = 97
	exitCopy      = 98
)

// remoteScript starts the collector on a node: the node's own copy at
// $1, else the user's cached copy $2/bringup.UID.$3 (owned by the user,
// never a file someone else put there), else, when $4 is "stream", it asks
// for the binary on stdout and reads it from stdin, over the connection
// that runs it. Otherwise it exits 97 so the caller can copy it another
// way (sbcast) and run it again. POSIX sh, one line, for any login shell.
const remoteScript = `a=$1; d=$2; h=$3; m=$4; shift 4; t="$d/bringup.$(id -u).$h"; ` +
	`if [ -n "$a" ] && [ -x "$a" ]; then exec "$a" "$@" </dev/null; fi; ` +
	`if [ -n "$h" ] && [ -O "$t" ] && [ -x "$t" ]; then exec "$t" "$@" </dev/null; fi; ` +
	`if [ "$m" != stream ]; then echo "` + markerMissing + ` $t" >&2; exit 97; fi; ` +
	`echo ` + markerSend + `; umask 077; ` +
	`mkdir -p "$d" && cat >"$t.$$" && chmod 700 "$t.$$" && mv -f "$t.$$" "$t" && exec "$t" "$@" </dev/null; ` +
	`rm -f "$t.$$"; echo "` + markerFailed + ` $t" >&2; exit 98`

// remoteArgv is `sh -c SCRIPT sh SELF DIR HASH MODE collector-args…`.
func (d *Delivery) remoteArgv(stream bool, collector []string) ([]string, error) {
	self, hash := d.SelfOnNode, ""
	mode := "nostream"
	if stream {
		mode = "stream"
	}
	switch d.Copy {
	case CopyNever:
		mode = "never"
	case CopyAlways:
		self = ""
	}
	if d.Copy != CopyNever {
		h, err := d.Hash()
		if err != nil {
			return nil, err
		}
		hash = h
	}
	argv := []string{"sh", "-c", remoteScript, "sh", self, d.dir(), hash, mode}
	return append(argv, collector...), nil
}

// shellQuote quotes one word for a POSIX shell (ssh joins its remote
// command into one string for the login shell).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// ran is one launcher run.
type ran struct {
	stdout []byte
	stderr []byte
	exit   int   // -1 when killed or not started
	err    error // start failure, or the context's error when killed
	sent   bool  // the binary was streamed
	noise  []string
}

// maxStderr bounds what is kept of a launcher's stderr.
const maxStderr = 64 << 10

// launch starts argv in its own process group, killed as a group with
// SIGKILL when ctx ends (a hung srun ignores SIGTERM; a kubectl
// stand-in's children must go too), and hands its stdout to consume
// (with its stdin when withStdin is set, and kill, which ends it at
// once). The stderr's last maxStderr bytes are kept. Every launcher of
// the package, for stacks and for logs, runs through here.
func launch(ctx context.Context, argv []string, env []string, withStdin bool, consume func(out io.Reader, in io.WriteCloser, kill func()) error) ran {
	r := ran{exit: -1}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	var stdin io.WriteCloser
	if withStdin {
		w, err := cmd.StdinPipe()
		if err != nil {
			r.err = err
			return r
		}
		stdin = w
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.err = err
		return r
	}
	if err := cmd.Start(); err != nil {
		r.err = err
		return r
	}
	cerr := consume(out, stdin, func() { _ = cmd.Cancel() })
	if stdin != nil {
		stdin.Close()
	}
	// What consume left unread must not block the launcher's exit.
	_, _ = io.Copy(io.Discard, out)
	werr := cmd.Wait()
	r.stderr = stderr.Bytes()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.err = ctx.Err()
	case cerr != nil:
		r.err = cerr
	case errors.As(werr, &ee):
		r.exit = ee.ExitCode()
	case werr != nil:
		r.err = werr
	default:
		r.exit = 0
	}
	return r
}

// run is launch reading a collector's document: with send set, a line
// markerSend on stdout makes it write the file send to stdin and close
// it; other lines before the JSON document are the remote shell's noise
// (a .bashrc that prints).
func run(ctx context.Context, argv []string, env []string, send string) ran {
	var doc bytes.Buffer
	var sent bool
	var noise []string
	var writeErr error
	r := launch(ctx, argv, env, send != "", func(out io.Reader, stdin io.WriteCloser, kill func()) error {
		var wrote sync.WaitGroup
		defer wrote.Wait()
		closeIn := func() {
			if stdin != nil {
				stdin.Close()
				stdin = nil
			}
		}
		defer closeIn()
		br := bufio.NewReaderSize(out, 64<<10)
		inDoc := false
		for {
			line, rerr := br.ReadBytes('\n')
			if !inDoc && len(line) > 0 {
				t := bytes.TrimSpace(line)
				switch {
				case send != "" && !sent && string(t) == markerSend:
					sent = true
					in := stdin
					stdin = nil
					wrote.Add(1)
					go func() {
						defer wrote.Done()
						writeErr = copyFile(in, send)
					}()
					line = nil
				case len(t) > 0 && t[0] == '{':
					inDoc = true
					closeIn()
				case len(t) > 0:
					if len(noise) < 5 {
						noise = append(noise, clipStr(string(t), 200))
					}
					line = nil
				}
			}
			if inDoc {
				doc.Write(line)
				if doc.Len() > node.MaxDoc {
					kill()
					return fmt.Errorf("the collector's output exceeded %d bytes; killed", node.MaxDoc)
				}
			}
			if rerr != nil {
				return nil
			}
		}
	})
	r.stdout, r.sent, r.noise = doc.Bytes(), sent, noise
	if writeErr != nil && r.err == nil && r.exit != 0 {
		r.err = fmt.Errorf("streaming the binary: %w", writeErr)
	}
	return r
}

func copyFile(w io.WriteCloser, path string) error {
	defer w.Close()
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// limitedBuffer keeps the last maxStderr bytes written.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.b = append(l.b, p...)
	if len(l.b) > maxStderr {
		l.b = append([]byte{}, l.b[len(l.b)-maxStderr:]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) Bytes() []byte { return l.b }

// lastLines is the tail of a launcher's stderr for a report: its last n
// non-empty lines joined with " | ".
func lastLines(b []byte, n int) string {
	var ls []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ls = append(ls, l)
		}
	}
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	s := strings.Join(ls, " | ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// outcome turns a launcher run into a document or a NodeError; classify
// names the launcher's own failures from its exit code and stderr.
func outcome(r ran, src string, classify func(r ran) *NodeError) (*node.Doc, error) {
	if r.err != nil {
		if errors.Is(r.err, context.DeadlineExceeded) || errors.Is(r.err, context.Canceled) {
			return nil, &NodeError{Status: StatusTimeout, Msg: lastLines(r.stderr, 2)}
		}
		return nil, &NodeError{Status: StatusLaunch, Msg: r.err.Error()}
	}
	if r.exit == 0 {
		d, err := node.Decode(r.stdout, src)
		if err != nil {
			msg := err.Error()
			if len(r.noise) > 0 {
				msg += "; the remote shell printed: " + strings.Join(r.noise, " | ")
			}
			return nil, &NodeError{Status: StatusError, Msg: msg}
		}
		return d, nil
	}
	if ne := classify(r); ne != nil {
		return nil, ne
	}
	return nil, collectorFailure(r, src)
}

// collectorFailure explains a collector (or remote script) that exited
// non-zero after the launcher reached the node.
func collectorFailure(r ran, src string) *NodeError {
	tail := lastLines(r.stderr, 3)
	switch {
	case r.exit == exitCopy || strings.Contains(string(r.stderr), markerFailed):
		return &NodeError{Status: StatusLaunch, Msg: "copying bringup to " + src + " failed: " + tail,
			Fix: "give a writable directory the user owns with --remote-dir"}
	case strings.Contains(tail, "unknown flag") || strings.Contains(tail, "unknown command"):
		return &NodeError{Status: StatusLaunch, Msg: "the bringup on " + src + " is another version: " + tail,
			Fix: "--copy-binary=always runs a copy of this binary instead"}
	case r.exit == 126 || strings.Contains(tail, "Exec format error"):
		return &NodeError{Status: StatusLaunch, Msg: "bringup cannot run on " + src + ": " + tail,
			Fix: "build bringup for that node's OS and architecture (GOOS/GOARCH) and put it at the same path"}
	}
	return &NodeError{Status: StatusError, Msg: fmt.Sprintf("the collector on %s exited %d: %s", src, r.exit, tail)}
}

// query runs a discovery command (scontrol, kubectl) and returns its
// stdout; a failure says the command, its last stderr lines, or missing
// when the command is not installed.
func query(ctx context.Context, env []string, missing, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var errb limitedBuffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err == nil {
		return out, nil
	}
	if _, lerr := exec.LookPath(name); lerr != nil {
		return nil, errors.New(missing)
	}
	msg := lastLines(errb.Bytes(), 2)
	if msg == "" {
		msg = err.Error()
	}
	return nil, fmt.Errorf("%s %s: %s", name, strings.Join(args, " "), msg)
}
