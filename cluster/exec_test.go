package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeCollector writes an executable that prints a minimal node document
// and the arguments it got, standing where bringup would: the remote
// script and the delivery protocol are what is tested, with a real sh.
func fakeCollector(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "collector")
	script := "#!/bin/sh\nprintf '{\"schema\":\"bringup.node-stacks/v1\",\"node\":{\"hostname\":\"%s\",\"launcher_name\":\"%s\"}}\\n' \"$(hostname)\" \"$*\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// local runs the remote argv here, as a launcher would run it there.
func local(t *testing.T, d *Delivery, stream bool) ran {
	t.Helper()
	argv, err := d.remoteArgv(stream, d.collector("--node-name", "n1"))
	if err != nil {
		t.Fatal(err)
	}
	send := ""
	if stream {
		send = d.Self
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return run(ctx, argv, nil, send)
}

func TestDeliveryStream(t *testing.T) {
	dir := t.TempDir()
	remote := filepath.Join(dir, "remote")
	d := &Delivery{Self: fakeCollector(t, dir), SelfOnNode: filepath.Join(dir, "absent"), RemoteDir: remote, Copy: CopyAuto,
		Collector: []string{"stacks", "--local", "--json"}}

	// Missing on the node: the script asks, the binary is streamed, run.
	r := local(t, d, true)
	if r.err != nil || r.exit != 0 || !r.sent {
		t.Fatalf("first run: exit %d err %v sent %v stderr %s", r.exit, r.err, r.sent, r.stderr)
	}
	doc, err := outcome(r, "n1", func(ran) *NodeError { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if doc.Node.LauncherName != "stacks --local --json --node-name n1" {
		t.Errorf("the collector got %q", doc.Node.LauncherName)
	}
	copyPath, _ := d.RemotePath(os.Getuid())
	st, err := os.Stat(copyPath)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("copy %s: %v %v", copyPath, st, err)
	}
	// Now it is there: nothing is sent.
	if r := local(t, d, true); r.exit != 0 || r.sent {
		t.Errorf("second run: exit %d sent %v", r.exit, r.sent)
	}
	// The node's own copy at this binary's path comes first.
	d.SelfOnNode = d.Self
	os.Remove(copyPath)
	if r := local(t, d, true); r.exit != 0 || r.sent {
		t.Errorf("own path: exit %d sent %v", r.exit, r.sent)
	}
	// Without streaming (srun): exit 97, so sbcast can copy it.
	d.SelfOnNode = filepath.Join(dir, "absent")
	r = local(t, d, false)
	if r.exit != exitMissing || !strings.Contains(string(r.stderr), markerMissing+" "+copyPath) {
		t.Errorf("nostream: exit %d stderr %s", r.exit, r.stderr)
	}
	// --copy-binary=never: the own path only.
	d.Copy = CopyNever
	if r := local(t, d, true); r.exit != exitMissing || r.sent {
		t.Errorf("never: exit %d sent %v", r.exit, r.sent)
	}
}

// A file at the copy's path that another user owns is never run: it is
// replaced by the streamed binary (as root; a user cannot even replace it
// in a sticky /tmp, and the copy fails with a message).
func TestDeliveryForeignCopy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a file another user owns")
	}
	dir := t.TempDir()
	d := &Delivery{Self: fakeCollector(t, dir), RemoteDir: dir, Copy: CopyAlways}
	copyPath, _ := d.RemotePath(0)
	ran := filepath.Join(dir, "foreign-ran")
	os.WriteFile(copyPath, []byte("#!/bin/sh\ntouch "+ran+"\n"), 0o755)
	os.Chown(copyPath, 65534, 65534)
	r := local(t, d, true)
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("a copy owned by another user was run")
	}
	if r.exit != 0 || !r.sent {
		t.Errorf("exit %d sent %v stderr %s", r.exit, r.sent, r.stderr)
	}
}

// Noise a login shell prints before the document is skipped and kept for
// the error message.
func TestRunNoise(t *testing.T) {
	ctx := context.Background()
	r := run(ctx, []string{"sh", "-c", `echo "Welcome to node 7"; echo '{"schema":"bringup.node-stacks/v1"}'`}, nil, "")
	doc, err := outcome(r, "n", func(ran) *NodeError { return nil })
	if err != nil || doc.Schema == "" || len(r.noise) != 1 {
		t.Errorf("%v %v %v", doc, err, r.noise)
	}
	r = run(ctx, []string{"sh", "-c", `echo "Welcome"; echo 'not json'`}, nil, "")
	_, err = outcome(r, "n", func(ran) *NodeError { return nil })
	if err == nil || !strings.Contains(err.Error(), "printed nothing") || !strings.Contains(err.Error(), "Welcome") {
		t.Errorf("%v", err)
	}
	r = run(ctx, []string{"sh", "-c", `echo 'Error: unknown flag: --local' >&2; exit 2`}, nil, "")
	_, err = outcome(r, "n", func(ran) *NodeError { return nil })
	if ne, ok := err.(*NodeError); !ok || !strings.Contains(ne.Fix, "--copy-binary=always") {
		t.Errorf("%v", err)
	}
}

// At the deadline the launcher and everything it started are killed.
func TestRunKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// Like a hung srun that ignores SIGTERM, with a child holding stdout.
	script := fmt.Sprintf(`trap '' TERM; sleep 60 & echo $! > %s; wait`, pidFile)
	r := run(ctx, []string{"sh", "-c", script}, nil, "")
	if r.err == nil {
		t.Fatalf("not killed: exit %d", r.exit)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for i := 0; i < 50; i++ {
		if syscall.Kill(child, 0) != nil || zombie(child) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("the launcher's child %d survived the deadline", child)
	syscall.Kill(child, syscall.SIGKILL)
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func TestShellQuote(t *testing.T) {
	words := []string{"plain", "", "two words", "it's", `a"b`, "$HOME", "`id`", "x;y", "new\nline", "--flag=v", "/tmp/a b/c", "*"}
	out, err := exec.Command("sh", "-c", "printf '%s\\0' "+shellJoin(words)).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(got) != len(words) {
		t.Fatalf("got %q", got)
	}
	for i := range words {
		if got[i] != words[i] {
			t.Errorf("%q came back as %q", words[i], got[i])
		}
	}
}

// The remote script runs under dash, bash and busybox sh alike: it is
// checked here with every sh this machine has.
func TestRemoteScriptShells(t *testing.T) {
	for _, sh := range []string{"dash", "bash", "busybox"} {
		path, err := exec.LookPath(sh)
		if err != nil {
			continue
		}
		args := []string{"-n", "-c", remoteScript}
		if sh == "busybox" {
			args = append([]string{"sh"}, args...)
		}
		if out, err := exec.Command(path, args...).CombinedOutput(); err != nil {
			t.Errorf("%s: %v %s", sh, err, out)
		}
	}
}

// unquote reads one word the way sh does for the two forms shellQuote
// writes: bare safe characters, or '…' with '\” for a quote.
func unquote(q string) (string, bool) {
	if !strings.HasPrefix(q, "'") {
		return q, q != "" && !strings.ContainsAny(q, " \t\n'\"\\$`;&|<>()*?[]#~!{}")
	}
	var b strings.Builder
	for i := 0; i < len(q); {
		if q[i] != '\'' {
			return "", false
		}
		j := strings.IndexByte(q[i+1:], '\'')
		if j < 0 {
			return "", false
		}
		b.WriteString(q[i+1 : i+1+j])
		i += j + 2
		if strings.HasPrefix(q[i:], `\''`) {
			b.WriteByte('\'')
			i += 2
			if i < len(q) && q[i] == '\'' {
				continue
			}
			return "", false
		}
		if i != len(q) {
			return "", false
		}
	}
	return b.String(), true
}

func FuzzShellQuote(f *testing.F) {
	for _, s := range []string{"plain", "", "it's", "a'b'c", "''", "$(id)", "x y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := shellQuote(s)
		got, ok := unquote(q)
		if !ok || got != s {
			t.Fatalf("%q quoted as %q reads back as %q (%v)", s, q, got, ok)
		}
	})
}
