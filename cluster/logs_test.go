package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func newFetch(t *testing.T, o LogOptions) *Fetch {
	t.Helper()
	o.defaults()
	f := &Fetch{dir: t.TempDir(), o: o, names: map[string]bool{}}
	f.logs = &NodeLogs{Dir: "n", Files: []LogFile{}, Notes: []string{}, fetch: f}
	return f
}

// wantTail is what a copy keeps of content with the cap keep: its last
// keep bytes from a line start, and the line of content they start at.
func wantTail(content []byte, keep int) ([]byte, int64) {
	if len(content) <= keep {
		return content, 1
	}
	tail := content[len(content)-keep:]
	if content[len(content)-keep-1] != '\n' {
		if i := bytes.IndexByte(tail, '\n'); i >= 0 {
			tail = tail[i+1:]
		} else {
			tail = nil
		}
	}
	return tail, int64(bytes.Count(content[:len(content)-len(tail)], []byte{'\n'})) + 1
}

func randomLog(r *rand.Rand, n int) []byte {
	var b []byte
	for line := 1; len(b) < n; line++ {
		if r.Intn(7) == 0 {
			b = append(b, '\n') // empty lines too
			continue
		}
		b = append(b, fmt.Sprintf("line %d %s\n", line, strings.Repeat("x", r.Intn(90)))...)
	}
	if r.Intn(2) == 0 {
		b = b[:len(b)-1] // no final newline
	}
	return b
}

// TestLogWriter writes logs in random pieces through the writer, as a
// stream arrives, and through Skipped, as the node script sends a cut
// file, and checks the copy against wantTail: the bytes and the line it
// starts at.
func TestLogWriter(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 300; i++ {
		content := randomLog(r, r.Intn(6000))
		keep := 1 + r.Intn(1500)
		want, line := wantTail(content, keep)
		for _, skipped := range []bool{false, true} {
			f := newFetch(t, LogOptions{MaxFileBytes: int64(keep), MaxNodeBytes: 1 << 30, MaxFiles: 1000})
			w, err := f.Open("x.log", "src", int64(len(content)))
			if err != nil || w == nil {
				t.Fatal(err)
			}
			data := content
			if skipped && len(content) > keep {
				k := len(content) - keep // as the script: from byte k-1 on
				w.Skipped(int64(k-1), int64(bytes.Count(content[:k-1], []byte{'\n'})))
				data = content[k-1:]
			}
			for len(data) > 0 {
				n := min(len(data), 1+r.Intn(700))
				if _, err := w.Write(data[:n]); err != nil {
					t.Fatal(err)
				}
				data = data[n:]
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				if len(f.logs.Files) != 0 {
					t.Fatalf("case %d: nothing to keep, kept %+v", i, f.logs.Files)
				}
				continue
			}
			if len(f.logs.Files) != 1 {
				t.Fatalf("case %d: files %+v notes %v", i, f.logs.Files, f.logs.Notes)
			}
			lf := f.logs.Files[0]
			got, _ := os.ReadFile(lf.Path)
			if !bytes.Equal(got, want) || lf.FromLine != line || lf.Bytes != int64(len(want)) || lf.Size != int64(len(content)) {
				t.Fatalf("case %d (%d bytes, keep %d, skipped %v): from line %d (want %d), %d bytes (want %d)",
					i, len(content), keep, skipped, lf.FromLine, line, len(got), len(want))
			}
			if lf.Cut() != (len(content) > keep) {
				t.Fatalf("case %d: Cut %v", i, lf.Cut())
			}
			if len(content) > 2*keep && !skipped {
				if left, _ := filepath.Glob(filepath.Join(f.dir, "*.part")); len(left) > 0 {
					t.Fatalf("left %v", left)
				}
			}
		}
	}
}

func TestLogWriterCaps(t *testing.T) {
	f := newFetch(t, LogOptions{MaxFileBytes: 100, MaxNodeBytes: 150, MaxFiles: 3})
	write := func(name, text string) {
		t.Helper()
		w, err := f.Open(name, "src:"+name, -1)
		if err != nil {
			t.Fatal(err)
		}
		if w == nil {
			return
		}
		w.Write([]byte(text))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("empty.log", "")                    // counted, not kept
	write("a.log", strings.Repeat("a\n", 40)) // 80 bytes: whole
	write("a.log", strings.Repeat("b\n", 40)) // the same name: another copy, 70 of the 150 left
	write("d.log", "never\n")                 // the fourth: over the cap of 3
	if len(f.logs.Files) != 2 || f.logs.Files[0].Name != "a.log" || f.logs.Files[1].Name != "a.log~2" {
		t.Fatalf("files %+v", f.logs.Files)
	}
	if b := f.logs.Files[1]; b.Bytes != 70 || b.FromLine != 6 || b.Size != 80 {
		t.Errorf("second: %+v, want its last 70 bytes from line 6", b)
	}
	if f.logs.Empty != 1 || len(f.logs.Notes) != 1 || !strings.Contains(f.logs.Notes[0], "cap of 3 logs") {
		t.Errorf("empty %d notes %v", f.logs.Empty, f.logs.Notes)
	}
	g := newFetch(t, LogOptions{MaxFileBytes: 10, MaxNodeBytes: 10})
	f = g
	write("long.log", strings.Repeat("x", 50)+"\n")
	if len(f.logs.Files) != 0 || len(f.logs.Notes) != 1 || !strings.Contains(f.logs.Notes[0], "no line start") {
		t.Errorf("a line longer than the cap: %+v %v", f.logs.Files, f.logs.Notes)
	}
	write("next.log", "y\n")
	if len(f.logs.Files) != 1 {
		t.Errorf("the budget of the dropped copy was not given back: %+v %v", f.logs.Files, f.logs.Notes)
	}
}

func TestCksum(t *testing.T) {
	// POSIX cksum's check values.
	for in, want := range map[string]uint32{"": 4294967295, "123456789": 930766865, "a": 1220704766} {
		if got := Cksum([]byte(in)); got != want {
			t.Errorf("cksum %q = %d, want %d", in, got, want)
		}
	}
	if _, err := exec.LookPath("cksum"); err != nil {
		return
	}
	b := randomLog(rand.New(rand.NewSource(2)), 5000)
	cmd := exec.Command("cksum")
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d %d", Cksum(b), len(b)); strings.TrimSpace(string(out)) != want {
		t.Errorf("cksum says %q, Cksum %q", out, want)
	}
}

func TestExpandOutput(t *testing.T) {
	for _, c := range []struct {
		pattern, want string
		perNode       bool
	}{
		{"/l/%x-12-%N.out", "/l/%x-12-bt2.out", true},
		{"/l/out-%n-%3t-%s-%j-%%.txt", "/l/out-1-000-batch-12-%.txt", true},
		{"/l/slurm-12.out", "/l/slurm-12.out", false},
		{"/l/a%", "/l/a%", false},
	} {
		if got := ExpandOutput(c.pattern, "bt2", 1, "12"); got != c.want {
			t.Errorf("%s → %s, want %s", c.pattern, got, c.want)
		}
		if nodeSpecific(c.pattern) != c.perNode {
			t.Errorf("%s: per node %v", c.pattern, !c.perNode)
		}
	}
}

func TestParseScontrolOutputs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "slurm", "show-job.txt"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := ParseScontrolJob(b)
	if err != nil || info.BatchHost != "bt1" || !slices.Equal(info.Outputs, []string{"/tmp/bt/job.out"}) || info.JobName != "wrap" || info.UID != 0 {
		t.Errorf("%+v %v", info, err)
	}
	// Paths with spaces; /dev/null and (null) are no output.
	line := "JobId=3 JobName=my job JobState=RUNNING NodeList=bt1 BatchHost=bt1 WorkDir=/w StdErr=/logs/a b/err-%N.txt StdIn=/dev/null StdOut=/logs/out.txt Power=\n"
	info, err = ParseScontrolJob([]byte(line))
	if err != nil || !slices.Equal(info.Outputs, []string{"/logs/out.txt", "/logs/a b/err-%N.txt"}) || info.JobName != "my job" {
		t.Errorf("%+v %v", info, err)
	}
	info, _ = ParseScontrolJob([]byte("JobId=4 JobState=RUNNING NodeList=bt1 BatchHost=bt1 StdErr=/dev/null StdIn=/dev/null StdOut=(null) Power=\n"))
	if len(info.Outputs) != 0 {
		t.Errorf("outputs %v", info.Outputs)
	}
}

// runScript runs the node script here with a real sh, as srun would run
// it on a node, and parses its answer.
func runScript(t *testing.T, l *SrunLogs, f *Fetch, paths []string, prints map[string]string) error {
	t.Helper()
	argv := []string{"sh", "-c", logScript, "sh", l.token, strconv.FormatInt(f.o.MaxFileBytes, 10), l.owner()}
	for _, p := range paths {
		fp := prints[p]
		if fp == "" {
			fp = "-"
		}
		argv = append(argv, p, fp)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	return l.parse(bufio.NewReader(bytes.NewReader(out)), Target{Name: "n1"}, paths, f)
}

func TestLogScript(t *testing.T) {
	dir := t.TempDir()
	l := &SrunLogs{token: "bringup-log-0123456789abcdef01234567", same: map[string][]string{}, fromAll: map[string][]string{}}
	small := filepath.Join(dir, "-small log.out") // a leading dash and a space
	// Text that looks like the script's own lines passes as text.
	os.WriteFile(small, []byte("rank 0 up\n"+l.token+" 9 data 1 2 3 4 5 6 7\n"+l.token+" 1 end\nlast\n"), 0o644)
	var big bytes.Buffer
	for i := 1; i <= 400; i++ {
		fmt.Fprintf(&big, "line %d of the big log\n", i)
	}
	bigPath := filepath.Join(dir, "big.err")
	os.WriteFile(bigPath, big.Bytes(), 0o644)
	shared := filepath.Join(dir, "shared.out")
	os.WriteFile(shared, []byte(strings.Repeat("shared\n", 1000)), 0o644)
	empty := filepath.Join(dir, "empty.out")
	os.WriteFile(empty, nil, 0o644)
	fp, err := Fingerprint(shared)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{small, bigPath, shared, filepath.Join(dir, "missing.out"), dir, empty}
	f := newFetch(t, LogOptions{MaxFileBytes: 1000})
	if err := runScript(t, l, f, paths, map[string]string{shared: fp}); err != nil {
		t.Fatal(err)
	}
	if len(f.logs.Files) != 2 {
		t.Fatalf("files %+v notes %v", f.logs.Files, f.logs.Notes)
	}
	got, _ := os.ReadFile(f.logs.Files[0].Path)
	want, _ := os.ReadFile(small)
	if !bytes.Equal(got, want) || f.logs.Files[0].Name != "-small_log.out" || f.logs.Files[0].Source != small {
		t.Errorf("small: %+v %q", f.logs.Files[0], got)
	}
	b := f.logs.Files[1]
	wantB, line := wantTail(big.Bytes(), 1000)
	gotB, _ := os.ReadFile(b.Path)
	if !bytes.Equal(gotB, wantB) || b.FromLine != line || b.Size != int64(big.Len()) || !strings.HasPrefix(string(gotB), fmt.Sprintf("line %d of", line)) {
		t.Errorf("big: %+v, starts %q, want from line %d", b, clipStr(string(gotB), 30), line)
	}
	if !slices.Equal(l.same[shared], []string{"n1"}) {
		t.Errorf("shared file not found the same: %v", l.same)
	}
	notes := strings.Join(f.logs.Notes, "|")
	if !strings.Contains(notes, "missing.out: not on this node") || !strings.Contains(notes, dir+": not a regular file") || f.logs.Empty != 1 {
		t.Errorf("notes %v, empty %d", f.logs.Notes, f.logs.Empty)
	}
	// A job of another user: its output paths are read only where that
	// user owns the file, here and on the node.
	l.info = &JobInfo{UID: os.Getuid() + 1}
	f = newFetch(t, LogOptions{MaxFileBytes: 1 << 20})
	if err := runScript(t, l, f, []string{small}, nil); err != nil || len(f.logs.Files) != 0 || len(f.logs.Notes) != 1 ||
		!strings.Contains(f.logs.Notes[0], fmt.Sprintf("owned by uid %d, not by the job's user", os.Getuid())) {
		t.Errorf("another user's job: %v %+v %v", err, f.logs.Files, f.logs.Notes)
	}
	if err := l.readLocal(f, small); !errors.Is(err, errForeign) {
		t.Errorf("read here: %v", err)
	}
	l.info = nil
	// A fingerprint of another file is not "the same".
	l.same = map[string][]string{}
	f = newFetch(t, LogOptions{MaxFileBytes: 1 << 20})
	other, _ := Fingerprint(small)
	if err := runScript(t, l, f, []string{shared}, map[string]string{shared: other}); err != nil || len(f.logs.Files) != 1 || len(l.same) != 0 {
		t.Errorf("%v %+v %v", err, f.logs.Files, l.same)
	}
}

// FuzzLogAnswer feeds the parser of the node script's answer anything: it
// never panics, never writes outside the node's directory, and keeps no
// more than the cap.
func FuzzLogAnswer(f *testing.F) {
	tok := "bringup-log-00"
	f.Add([]byte(tok + " 1 data 12 34 5 5 0 0 5\nhello\n" + tok + " 1 end\n" + tok + " 2 missing\n"))
	f.Add([]byte(tok + " 1 data 12 34 5 90 80 3 11\nxyz\nabc\ndef\n" + tok + " 1 end\n"))
	f.Add([]byte(tok + " 2 same\n" + tok + " 1 data 1 2 3 4 5 6 99999999999\n"))
	f.Add([]byte("garbage\n"))
	f.Fuzz(func(t *testing.T, answer []byte) {
		l := &SrunLogs{token: tok, same: map[string][]string{}, fromAll: map[string][]string{}}
		fe := newFetch(t, LogOptions{MaxFileBytes: 64, MaxNodeBytes: 128, MaxFiles: 4})
		paths := []string{"/a/../../x.out", "/b/c.err"}
		_ = l.parse(bufio.NewReader(bytes.NewReader(answer)), Target{Name: "n"}, paths, fe)
		for _, lf := range fe.logs.Files {
			if filepath.Dir(lf.Path) != fe.dir || lf.Bytes > 64 {
				t.Fatalf("copy %+v", lf)
			}
		}
		ents, _ := os.ReadDir(filepath.Dir(fe.dir))
		if len(ents) != 1 {
			t.Fatalf("wrote beside the node's directory: %v", ents)
		}
	})
}

func TestRayLogFiles(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "ray", "logs.json"))
	if err != nil {
		t.Fatal(err)
	}
	cats, err := ParseRayLogList(b)
	if err != nil {
		t.Fatal(err)
	}
	cats["worker_err"] = append(cats["worker_err"], "../../etc/passwd.err", "/etc/x.err", "worker-\x1b[2J.err")
	cats["internal"] = append(cats["internal"], "job-driver-raysubmit_1.log")
	got := RayLogFiles(cats)
	want := []string{"raylet.err", "raylet.out", "job-driver-raysubmit_1.log",
		"worker-0cbd8bb4f821033a6c7e78673802f21af2edc56fadeb4f3ebb1815f7-01000000-379.err",
		"worker-0cbd8bb4f821033a6c7e78673802f21af2edc56fadeb4f3ebb1815f7-01000000-379.out"}
	if !slices.Equal(got, want) {
		t.Errorf("files %q\nwant %q", got, want)
	}
	if _, err := ParseRayLogList([]byte(`{"result": false, "msg": "node gone"}`)); err == nil || err.Error() != "node gone" {
		t.Errorf("failure: %v", err)
	}
}

func FuzzParseRayLogList(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "ray", "logs.json")); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"result": true, "data": {"result": {"worker_err": ["../x", "a/b.err"]}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cats, err := ParseRayLogList(b)
		if err != nil {
			return
		}
		for _, n := range RayLogFiles(cats) {
			if !rayLogName(n) {
				t.Fatalf("picked %q", n)
			}
		}
	})
}

// TestRayLogs runs the Ray backend against a dashboard on loopback that
// answers with the list a real Ray 2.60 node gave.
func TestRayLogs(t *testing.T) {
	list, err := os.ReadFile(filepath.Join("testdata", "ray", "logs.json"))
	if err != nil {
		t.Fatal(err)
	}
	worker := "worker-0cbd8bb4f821033a6c7e78673802f21af2edc56fadeb4f3ebb1815f7-01000000-379"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case r.URL.Path == "/api/v0/logs" && q.Get("node_id") == "n1":
			w.Write(list)
		case r.URL.Path == "/api/v0/logs" && q.Get("node_id") == "gone":
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"result": false, "msg": "Agent for node id gone doesn't exist."}`))
		case r.URL.Path == "/api/v0/logs/file" && q.Get("lines") == "-1":
			switch q.Get("filename") {
			case worker + ".err":
				fmt.Fprint(w, ":job_id:01000000\n:actor_name:Rank\nTraceback (most recent call last):\n  File \"/x.py\", line 3, in f\n    g()\nRuntimeError: boom\n")
			case worker + ".out":
				fmt.Fprint(w, ":job_id:01000000\n:actor_name:Rank\nloading weights\n")
			case "raylet.out":
				fmt.Fprint(w, "[2026-12-01 21:34:19,012 I 8 8] main.cc:200: raylet started\n")
			case "raylet.err":
			default:
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprint(w, "A file is not found")
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	b := &RayLogs{Ray: &Ray{Address: srv.URL}}
	g := GatherLogs(context.Background(), b, []Target{{Name: "10.0.0.2", Host: "n1", NodeRank: -1}, {Name: "10.0.0.3", Host: "gone", NodeRank: -1}},
		t.TempDir(), Options{Deadline: 5 * time.Second}, LogOptions{})
	ok, gone := g.Nodes[0], g.Nodes[1]
	if ok.Status != StatusOK || len(ok.Logs.Files) != 3 || ok.Logs.Empty != 1 {
		t.Fatalf("node: %+v %+v", ok, ok.Logs)
	}
	if ok.Logs.Files[0].Name != "raylet.out" || ok.Logs.Files[1].Name != worker+".err" {
		t.Errorf("files %+v", ok.Logs.Files)
	}
	if gone.Status != StatusLaunch || !strings.Contains(gone.Detail, "doesn't exist") || gone.Logs != nil {
		t.Errorf("gone: %+v", gone)
	}
	paths, names := g.Files()
	if len(paths) != 3 || names[paths[1]] != "10.0.0.2/"+worker+".err" || !g.Partial() || g.Answered() != 1 {
		t.Errorf("files %v names %v", paths, names)
	}
}

// slowLogs is a backend whose nodes behave as named.
type slowLogs struct{}

func (slowLogs) Kind() string                               { return "test" }
func (slowLogs) Discover(context.Context) ([]Target, error) { return nil, nil }
func (slowLogs) Logs(ctx context.Context, t Target, f *Fetch, r *NodeResult) error {
	switch t.Host {
	case "hang":
		<-ctx.Done()
		return ctx.Err()
	case "denied":
		return &NodeError{Status: StatusDenied, Msg: "Forbidden", Fix: "RBAC"}
	case "partly":
		r.Status, r.Detail = StatusLaunch, "one file unreachable"
	}
	w, err := f.Open("x.log", "x", -1)
	if err != nil {
		return err
	}
	w.Write([]byte("hello\n"))
	return w.Close()
}

func TestGatherLogs(t *testing.T) {
	targets := []Target{{Name: "a/b", Host: "ok"}, {Name: "a_b", Host: "ok"}, {Name: "h", Host: "hang"}, {Name: "d", Host: "denied"}, {Name: "p", Host: "partly"}}
	g := GatherLogs(context.Background(), slowLogs{}, targets, t.TempDir(), Options{Deadline: time.Second}, LogOptions{})
	want := []Status{StatusOK, StatusOK, StatusTimeout, StatusDenied, StatusLaunch}
	for i, r := range g.Nodes {
		if r.Status != want[i] {
			t.Errorf("%s: %s %s", r.Name, r.Status, r.Detail)
		}
	}
	_, names := g.Files()
	var got []string
	for _, n := range names {
		got = append(got, n)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a_b/x.log", "a_b~2/x.log", "p/x.log"}) {
		t.Errorf("names %v", got)
	}
	if !strings.Contains(g.Nodes[2].Detail, "no answer within 1s") || g.Nodes[2].Logs != nil {
		t.Errorf("timeout: %+v", g.Nodes[2])
	}
	if !g.Partial() || g.Answered() != 3 {
		t.Errorf("partial %v answered %d", g.Partial(), g.Answered())
	}
	var ne *NodeError
	if !errors.As(error(&NodeError{Status: StatusDenied}), &ne) {
		t.Fatal("NodeError")
	}
}
