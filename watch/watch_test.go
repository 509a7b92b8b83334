package watch

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/report"
	"github.com/bringup-tool/bringup/store"
)

// These tests run real child processes: the small Python programs in
// testdata/ that boot like an engine (multiprocessing workers, vLLM-style
// prefixed logs). Nothing of the OS or the database is mocked.

func needPython(t *testing.T) string {
	t.Helper()
	py := realPython()
	if py == "" {
		t.Skip("python3 is not on PATH: the fake boots need it")
	}
	return py
}

// realPython is the interpreter python3 on PATH runs, not the pyenv shim
// that may stand in its place: the shim is a shell script that runs a
// dozen bash helpers before it execs Python. Under heavy load the scans
// caught those helpers as processes of the boot (env_seen listed three
// "bash pyenv exec python3 envdrop.py" beside the launcher), and they made
// every boot start seconds later.
var realPython = sync.OnceValue(func() string {
	py, err := exec.LookPath("python3")
	if err != nil {
		return ""
	}
	out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output()
	if exe := strings.TrimSpace(string(out)); err == nil && filepath.IsAbs(exe) {
		if _, err := os.Stat(exe); err == nil {
			return exe
		}
	}
	return py
})

func script(name string) string {
	abs, _ := filepath.Abs(filepath.Join("testdata", name))
	return abs
}

type bootResult struct {
	run    *store.Run
	stdout bytes.Buffer
	stderr bytes.Buffer
	msgs   bytes.Buffer
	mu     sync.Mutex // msgs, written by the terminal copy while the boot runs
	st     *store.Store
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// boot runs cfg under watch with a fresh store and run directory, and
// checks afterwards that no process of the boot is left.
func boot(t *testing.T, ctx context.Context, cfg Config) *bootResult {
	t.Helper()
	res := &bootResult{}
	st, err := store.Open(filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	res.st = st
	before := map[int]bool{}
	for _, c := range children(os.Getpid()) {
		before[c] = true
	}
	if cfg.Store == nil {
		cfg.Store = st
	}
	if cfg.RunsDir == "" && cfg.Dir == "" {
		cfg.RunsDir = t.TempDir()
	}
	// A test that gives its own terminal keeps it.
	if cfg.Stdout == nil {
		cfg.Stdout = &res.stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = &res.stderr
	}
	cfg.Messages = &lockedWriter{w: &res.msgs, mu: &res.mu}
	if cfg.Grace == 0 {
		cfg.Grace = 2 * time.Second
	}
	if cfg.Poll == 0 {
		cfg.Poll = 100 * time.Millisecond
	}
	if cfg.NewTracker == nil {
		cfg.NewTracker = NewEngineTracker
	}
	run, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v\nmessages:\n%s", err, res.msgs.String())
	}
	res.run = run
	t.Logf("outcome %s (%s)\nmessages:\n%s", run.Outcome, run.Reason, res.msgs.String())
	for _, c := range children(os.Getpid()) {
		if !before[c] {
			if p, err := readStat(c); err == nil && p.State != 'Z' {
				t.Errorf("process %d (%s) of the boot is still running after watch returned", c, readCmdline(c))
			}
		}
	}
	return res
}

func readLog(t *testing.T, run *store.Run) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run.Dir, "output.log"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFailedBoot(t *testing.T) {
	py := needPython(t)
	r := boot(t, t.Context(), Config{
		Command:  []string{py, script("fail.py")},
		Timeout:  60 * time.Second,
		Diagnose: PipelineDiagnose(nil, report.Style{}),
	})
	run := r.run
	if run.Outcome != store.OutcomeFailed || run.ExitCode == nil || *run.ExitCode != 1 {
		t.Errorf("outcome %q exit %v, want failed exit 1", run.Outcome, run.ExitCode)
	}
	// The verdict comes from the diagnose pipeline over the saved log: the
	// KeyError on TP1 behind the wrappers.
	if !strings.Contains(run.Verdict, "TP1") {
		t.Errorf("verdict %q does not name TP1", run.Verdict)
	}
	keyErr := false
	for _, f := range run.Findings {
		for _, e := range f.Evidence {
			if strings.Contains(e.Text, "KeyError: 'in_proj_qkvbfg_a'") && e.Rank == "TP1" && e.Path == run.Logs[0] && e.Line > 0 {
				keyErr = true
			}
		}
	}
	if !keyErr {
		t.Errorf("no finding has the KeyError on TP1 as evidence with its output.log line: %+v", run.Findings)
	}
	if !strings.Contains(r.msgs.String(), run.Verdict) {
		t.Error("the diagnosis was not printed")
	}
	log := readLog(t, run)
	for _, want := range []string{"KeyError: 'in_proj_qkvbfg_a'", "(Worker_TP1 pid=", "EngineCore failed to start.", "Failed core proc(s)"} {
		if !bytes.Contains(log, []byte(want)) {
			t.Errorf("output.log lacks %q", want)
		}
	}
	// stdout went to stdout, stderr to stderr.
	if !strings.Contains(r.stderr.String(), "Engine core initialization failed") || strings.Contains(r.stdout.String(), "Engine core initialization failed") {
		t.Errorf("stderr line not teed to stderr only")
	}
	got, err := r.st.Get("last")
	if err != nil || got.Outcome != store.OutcomeFailed || got.Verdict != run.Verdict || got.Lines != run.Lines || len(got.Findings) != len(run.Findings) {
		t.Errorf("stored run: %+v, %v", got, err)
	}
	var onDisk store.Run
	b, _ := os.ReadFile(filepath.Join(run.Dir, "run.json"))
	if err := json.Unmarshal(b, &onDisk); err != nil || onDisk.Schema != store.Schema || onDisk.Outcome != store.OutcomeFailed {
		t.Errorf("run.json: %v %+v", err, onDisk)
	}
}

func TestSilentBootIsCaptured(t *testing.T) {
	py := needPython(t)
	// The silence must come once the boot is at its hang: both workers
	// have printed their last line (then they block, and the engine core
	// stops its heartbeat). A boot starved that long under heavy load
	// before it got there is silent too, and its stacks show no hang; the
	// silence then doubles, up to 24 s, whose run must pass.
	silence := 3 * time.Second
	var r *bootResult
	for ; ; silence *= 2 {
		r = boot(t, t.Context(), Config{
			Command:   []string{py, script("silent.py")},
			Silence:   silence,
			OnSilence: "stop",
			Timeout:   60 * time.Second,
			Capture:   StacksCapture(2, 300*time.Millisecond, report.Style{}),
		})
		if bytes.Count(readLog(t, r.run), []byte("Cache the graph for dynamic shape")) == 2 || silence >= 24*time.Second {
			break
		}
		t.Logf("the boot was not at its hang after --silence %s: again with twice as long", silence)
	}
	run := r.run
	if run.Outcome != store.OutcomeHung {
		t.Fatalf("outcome %q, want hung", run.Outcome)
	}
	if len(run.Silences) != 1 {
		t.Fatalf("silences = %+v", run.Silences)
	}
	s := run.Silences[0]
	// The silence lasts from the last output to the stop, which comes
	// after the capture: at least --silence, and the quiet the stop saw
	// (how long the capture took on a loaded machine is no bound).
	if run.Stop == nil || run.Stop.LastOutput.IsZero() {
		t.Fatalf("stop %+v: want watch's, with the last output", run.Stop)
	}
	quiet := run.Stop.At.Sub(run.Stop.LastOutput).Seconds()
	if s.Seconds < silence.Seconds() || s.Seconds < quiet-0.2 || s.Seconds > quiet+0.2 {
		t.Errorf("silence of %.2fs, want at least --silence %v and the %.2fs of quiet before the stop", s.Seconds, silence, quiet)
	}
	if s.StacksPath == "" {
		t.Fatalf("no stacks captured; messages:\n%s", r.msgs.String())
	}
	var dump struct {
		Schema    string `json:"schema"`
		Processes []struct {
			PID     int `json:"pid"`
			Threads []struct {
				Frames record.Stack `json:"frames"`
			} `json:"threads"`
		} `json:"processes"`
		Buckets []struct {
			PIDs []int `json:"pids"`
		} `json:"buckets"`
	}
	b, err := os.ReadFile(s.StacksPath)
	if err != nil || json.Unmarshal(b, &dump) != nil {
		t.Fatalf("stacks file %s: %v", s.StacksPath, err)
	}
	// Both workers, in both snapshots, sit in operator_str under 40 nested
	// ExternKernel.__str__ frames.
	deep := map[int]int{}
	for _, p := range dump.Processes {
		for _, th := range p.Threads {
			n, op := 0, false
			for _, f := range th.Frames {
				if strings.HasSuffix(f.Func, "ExternKernel.__str__") {
					n++
				}
				if strings.HasSuffix(f.Func, "operator_str") {
					op = true
				}
			}
			if n >= 40 && op {
				deep[p.PID]++
			}
		}
	}
	if len(deep) != 2 {
		t.Errorf("processes stuck in the deep recursion: %v, want 2 workers", deep)
	}
	for pid, n := range deep {
		if n != 2 {
			t.Errorf("pid %d seen stuck in %d snapshots, want 2", pid, n)
		}
	}
	if !strings.Contains(r.msgs.String(), "ExternKernel.__str__") {
		t.Errorf("the capture summary was not printed")
	}
	// The stacks analysis names the signature (torch < 2.13 from the log).
	found := false
	for _, f := range run.Findings {
		if f.Rule == "inductor-implicit-fallback-operator-str" {
			found = true
		}
	}
	if !found {
		t.Errorf("findings %+v lack inductor-implicit-fallback-operator-str", run.Findings)
	}
	var inductor bool
	for _, p := range run.Timeline {
		if p.Name == "inductor" && p.Status == "unfinished" {
			inductor = true
		}
	}
	if !inductor {
		t.Errorf("timeline %+v has no unfinished inductor phase", run.Timeline)
	}
}

// A boot that prints nothing has nothing to diagnose: said plainly, not as
// a failed diagnosis.
func TestSilentExitSaysNoOutput(t *testing.T) {
	py := needPython(t)
	for _, c := range []struct {
		code    string
		outcome string
	}{{"0", store.OutcomeExited}, {"3", store.OutcomeFailed}} {
		r := boot(t, t.Context(), Config{
			Command:  []string{py, "-c", "import sys; sys.exit(" + c.code + ")"},
			Timeout:  30 * time.Second,
			Diagnose: PipelineDiagnose(nil, report.Style{}),
		})
		msgs := r.msgs.String()
		if r.run.Outcome != c.outcome {
			t.Errorf("exit %s: outcome %q, want %q", c.code, r.run.Outcome, c.outcome)
		}
		if strings.Contains(msgs, "diagnosis failed") || strings.Contains(msgs, "warning") {
			t.Errorf("exit %s: an empty run is reported as a problem of bringup:\n%s", c.code, msgs)
		}
		if !strings.Contains(msgs, "no output to diagnose") {
			t.Errorf("exit %s: messages do not say there was no output to diagnose:\n%s", c.code, msgs)
		}
		if r.run.Lines != 0 || r.run.Bytes != 0 {
			t.Errorf("exit %s: %d lines %d bytes recorded", c.code, r.run.Lines, r.run.Bytes)
		}
	}
}

func TestEnvDroppedByLauncher(t *testing.T) {
	py := needPython(t)
	for _, strict := range []bool{false, true} {
		t.Run("strict="+strconv.FormatBool(strict), func(t *testing.T) {
			r := boot(t, t.Context(), Config{
				Command:   []string{py, script("envdrop.py")},
				Env:       map[string]string{"VLLM_USE_AOT_COMPILE": "0", "VLLM_COMPILE_FULLGRAPH": "0", "TORCH_COMPILE_DEBUG": "1"},
				EnvStrict: strict,
				Timeout:   30 * time.Second,
			})
			run := r.run
			launcher := 0
			if len(run.EnvCheck) == 0 {
				t.Fatal("no env mismatch reported")
			}
			for _, ec := range run.EnvCheck {
				if !strings.Contains(ec.Process, "envdrop.py worker") {
					t.Errorf("pid %d (%s) reported, but only the workers lost variables", ec.PID, ec.Process)
					launcher++
					continue
				}
				if strings.Join(ec.Missing, ",") != "VLLM_COMPILE_FULLGRAPH,VLLM_USE_AOT_COMPILE" {
					t.Errorf("pid %d missing %v", ec.PID, ec.Missing)
				}
				if d := ec.Different["TORCH_COMPILE_DEBUG"]; d.Want != "1" || d.Got != "0" {
					t.Errorf("pid %d different %v", ec.PID, ec.Different)
				}
			}
			if strict {
				if run.Outcome != store.OutcomeFailed || !strings.Contains(run.Reason, "env-strict") {
					t.Errorf("strict: outcome %q (%s)", run.Outcome, run.Reason)
				}
			} else {
				if len(run.EnvCheck) != 2 {
					t.Errorf("env check has %d entries, want the 2 workers", len(run.EnvCheck))
				}
				if run.Outcome != store.OutcomeReady {
					t.Errorf("outcome %q (%s), want ready", run.Outcome, run.Reason)
				}
				ranks := map[string]bool{}
				for _, ec := range run.EnvCheck {
					ranks[ec.Rank] = true
				}
				// The launcher got everything; each worker is on record too.
				var launcher, workers int
				for _, es := range run.EnvSeen {
					switch {
					case strings.Contains(es.Process, "envdrop.py worker"):
						workers++
						if len(es.Env) != 1 || es.Env["TORCH_COMPILE_DEBUG"] != "0" {
							t.Errorf("worker env seen %v", es.Env)
						}
					case strings.HasSuffix(es.Process, "envdrop.py"):
						launcher++
						if len(es.Env) != 3 || es.Env["VLLM_USE_AOT_COMPILE"] != "0" {
							t.Errorf("launcher env seen %v", es.Env)
						}
					}
				}
				if launcher != 1 || workers != 2 {
					t.Errorf("env_seen has %d launcher and %d worker entries: %+v", launcher, workers, run.EnvSeen)
				}
				if !ranks["TP0"] || !ranks["TP1"] {
					t.Errorf("env check ranks %v, want TP0 and TP1 (from the workers' log prefixes)", ranks)
				}
			}
			if !strings.Contains(r.msgs.String(), "missing VLLM_COMPILE_FULLGRAPH, VLLM_USE_AOT_COMPILE") {
				t.Errorf("mismatch not printed while running")
			}
		})
	}
}

// The env check of a boot that comes up between two scans of the process
// tree: the workers exec, report in and the launcher prints ready before
// the periodic scan (here: never, Poll is an hour) has looked at them. The
// scan taken at ready still sees every worker as it runs (it was flaky
// under heavy load with a 100 ms poll: ready was seen before the scan that
// would have found the workers).
func TestEnvCheckedAtReadyWithoutPeriodicScan(t *testing.T) {
	py := needPython(t)
	readyFile := filepath.Join(t.TempDir(), "ready")
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		if _, err := os.Stat(readyFile); err != nil {
			rw.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	for _, strict := range []bool{false, true} {
		t.Run("strict="+strconv.FormatBool(strict), func(t *testing.T) {
			os.Remove(readyFile)
			r := boot(t, t.Context(), Config{
				Command:   []string{py, script("envdrop.py")},
				Env:       map[string]string{"VLLM_USE_AOT_COMPILE": "0", "VLLM_COMPILE_FULLGRAPH": "0", "TORCH_COMPILE_DEBUG": "1", "ENVDROP_READY_FILE": readyFile},
				EnvStrict: strict,
				ReadyURL:  srv.URL,
				Poll:      time.Hour,
				Timeout:   30 * time.Second,
			})
			workers := 0
			for _, ec := range r.run.EnvCheck {
				if strings.Contains(ec.Process, "envdrop.py worker") &&
					strings.Join(ec.Missing, ",") == "VLLM_COMPILE_FULLGRAPH,VLLM_USE_AOT_COMPILE" {
					workers++
				}
			}
			if workers != 2 || len(r.run.EnvCheck) != 2 {
				t.Errorf("env check %+v, want both workers missing the VLLM_* variables", r.run.EnvCheck)
			}
			want := store.OutcomeReady
			if strict {
				want = store.OutcomeFailed
			}
			if r.run.Outcome != want {
				t.Errorf("outcome %q (%s), want %q", r.run.Outcome, r.run.Reason, want)
			}
		})
	}
}

// stubbornPids reads the pids stubborn.py writes once it is set up (the
// SIGTERM-ignoring boot, its child, the daemon), waiting up to 30 s for the
// file; ok is false when it is not there (yet) with all three.
func stubbornPids(path string, wait time.Duration) (pids []int, b []byte, ok bool) {
	deadline := time.Now().Add(wait)
	for {
		b, _ = os.ReadFile(path)
		pids = pids[:0]
		for _, f := range strings.Fields(string(b)) {
			p, _ := strconv.Atoi(f)
			pids = append(pids, p)
		}
		if len(pids) == 3 || time.Now().After(deadline) {
			return pids, b, len(pids) == 3
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readPids(t *testing.T, path string) []int {
	t.Helper()
	pids, b, ok := stubbornPids(path, 30*time.Second)
	if !ok {
		t.Fatalf("pid file %s: %q", path, b)
	}
	return pids
}

func TestStubbornBootLeavesNoOrphans(t *testing.T) {
	py := needPython(t)
	for _, mode := range []string{"timeout", "exit"} {
		t.Run(mode, func(t *testing.T) {
			var pidfile string
			// The timeout must find the boot set up (SIGTERM ignored, the
			// daemon started, the pids written): a boot still starting when
			// it fires dies of SIGTERM and proves nothing. Under heavy load
			// 2 s is not always enough, so the timeout doubles (up to 32 s)
			// until a run finds it set up. The exiting boot needs no
			// timeout: 60 s is there only to end a hung test.
			timeout := 2 * time.Second
			if mode == "exit" {
				timeout = 60 * time.Second
			}
			for ; ; timeout *= 2 {
				pidfile = filepath.Join(t.TempDir(), "pids")
				cmd := []string{py, script("stubborn.py"), pidfile}
				if mode == "exit" {
					cmd = append(cmd, "exit")
				}
				r := boot(t, t.Context(), Config{Command: cmd, Timeout: timeout, Grace: 500 * time.Millisecond})
				want := map[string]string{"timeout": store.OutcomeTimeout, "exit": store.OutcomeExited}[mode]
				if r.run.Outcome != want {
					t.Errorf("outcome %q, want %q", r.run.Outcome, want)
				}
				if _, _, ok := stubbornPids(pidfile, 0); ok || mode == "exit" || timeout >= 32*time.Second {
					break
				}
				t.Logf("the boot was not set up within --timeout %s: again with twice as long", timeout)
			}
			// The SIGTERM-ignoring child and the daemon that left the
			// process group (setsid + double fork) are gone too.
			for _, pid := range readPids(t, pidfile) {
				if alive(pid, 0) {
					t.Errorf("pid %d (%s) survived", pid, readCmdline(pid))
					signal(pid, 9)
				}
			}
		})
	}
}

func TestFloodNoLineLost(t *testing.T) {
	py := needPython(t)
	const n = 300000
	for _, stream := range []string{"stdout", "stderr"} {
		t.Run(stream, func(t *testing.T) {
			r := boot(t, t.Context(), Config{Command: []string{py, script("flood.py"), strconv.Itoa(n), stream}, Timeout: 60 * time.Second})
			log := readLog(t, r.run)
			if got := bytes.Count(log, []byte("\n")); got != n {
				t.Errorf("output.log has %d lines, the boot printed %d", got, n)
			}
			if r.run.Lines != n {
				t.Errorf("run counted %d lines, want %d", r.run.Lines, n)
			}
			term := r.stdout.Bytes()
			if stream == "stderr" {
				term = r.stderr.Bytes()
			}
			if int64(len(log)) != r.run.Bytes {
				t.Errorf("bytes: file %d, counted %d", len(log), r.run.Bytes)
			}
			// The terminal copy never holds the boot back: on starved
			// cores even an in-memory terminal can fall behind a 35 MB
			// flood, and then what it left out is counted, line for line.
			var dropped int64
			if r.run.Output != nil {
				dropped = r.run.Output.TerminalDropped
			}
			shown := int64(bytes.Count(term, []byte("flood line ")))
			if shown+dropped != n || (dropped == 0 && int64(len(term)) < r.run.Bytes) {
				t.Errorf("terminal: %d lines shown + %d counted as left out, want %d (terminal %d bytes, file %d)", shown, dropped, n, len(term), len(log))
			}
			if dropped > 0 {
				t.Logf("the terminal copy fell behind: %d of %d lines left out and counted", dropped, n)
			}
			if !bytes.Contains(log, []byte("flood line "+strconv.Itoa(n-1)+" ")) {
				t.Error("last line missing")
			}
			if r.run.Outcome != store.OutcomeExited {
				t.Errorf("outcome %q", r.run.Outcome)
			}
		})
	}
}

func TestBinaryOutputSavedAsIs(t *testing.T) {
	py := needPython(t)
	r := boot(t, t.Context(), Config{Command: []string{py, script("binary.py")}, Timeout: 30 * time.Second})
	want := []byte("text line 1\n\x00\x01\x02\xff\xfe binary\n")
	var all []byte
	for i := 0; i < 256; i++ {
		all = append(all, byte(i))
	}
	want = append(want, bytes.Repeat(all, 8)...)
	want = append(want, '\n')
	want = append(want, bytes.Repeat([]byte("x"), 2<<20)...)
	want = append(want, []byte("\nlast line without newline\n")...)
	if got := readLog(t, r.run); !bytes.Equal(got, want) {
		t.Errorf("output.log differs from what the boot printed: %d bytes, want %d", len(got), len(want))
	}
	if r.run.Outcome != store.OutcomeExited {
		t.Errorf("outcome %q", r.run.Outcome)
	}
}

func TestCommandProblems(t *testing.T) {
	py := needPython(t)
	_, err := Run(t.Context(), Config{Command: []string{"no-such-engine-binary"}, RunsDir: t.TempDir()})
	if !errors.Is(err, ErrNotRunnable) || !strings.Contains(err.Error(), "no-such-engine-binary") {
		t.Errorf("missing command: %v", err)
	}
	r := boot(t, t.Context(), Config{Command: []string{py, "-c", "import sys; sys.exit(3)"}})
	if r.run.Outcome != store.OutcomeFailed || r.run.ExitCode == nil || *r.run.ExitCode != 3 {
		t.Errorf("exit 3: outcome %q exit %v", r.run.Outcome, r.run.ExitCode)
	}
	r = boot(t, t.Context(), Config{Command: []string{"true"}})
	if r.run.Outcome != store.OutcomeExited || *r.run.ExitCode != 0 {
		t.Errorf("true: outcome %q", r.run.Outcome)
	}
	r = boot(t, t.Context(), Config{Command: []string{py, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"}})
	if r.run.Outcome != store.OutcomeFailed || r.run.Signal != "segmentation fault" || r.run.ExitCode != nil {
		t.Errorf("SIGSEGV: outcome %q signal %q exit %v", r.run.Outcome, r.run.Signal, r.run.ExitCode)
	}
}

func TestInterruptStopsEverything(t *testing.T) {
	py := needPython(t)
	ctx, cancel := context.WithCancel(t.Context())
	interrupted := make(chan time.Time, 1)
	time.AfterFunc(2500*time.Millisecond, func() { interrupted <- time.Now(); cancel() })
	r := boot(t, ctx, Config{Command: []string{py, script("silent.py")}})
	if r.run.Outcome != store.OutcomeInterrupted {
		t.Errorf("outcome %q, want interrupted", r.run.Outcome)
	}
	// The closing line does not say it twice ("INTERRUPTED … — interrupted").
	if !regexp.MustCompile(` — stopped by Ctrl-C or SIGTERM before it was ready(, in phase \w+)? \(run #`).MatchString(r.msgs.String()) {
		t.Errorf("closing line:\n%s", r.msgs.String())
	}
	// Stopping is timed from the interrupt (a boot slow to start under
	// load is no slower to stop).
	select {
	case at := <-interrupted:
		if took := time.Since(at); took > 15*time.Second {
			t.Errorf("interrupt took %v", took)
		}
	default:
		t.Error("the boot ended before it was interrupted")
	}
	got, err := r.st.Get("last")
	if err != nil || got.Outcome != store.OutcomeInterrupted || got.Ended.IsZero() {
		t.Errorf("stored: %+v %v", got, err)
	}
}

func TestLockedStoreStillSavesOutput(t *testing.T) {
	py := needPython(t)
	path := filepath.Join(t.TempDir(), "runs.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Another process's transaction holds the write lock for the whole boot.
	locker, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	conn, err := locker.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	r := boot(t, t.Context(), Config{Command: []string{py, "-c", "print('hello from the boot')"}, Store: st})
	if !strings.Contains(r.msgs.String(), "locked by another process") {
		t.Errorf("no locked-store message:\n%s", r.msgs.String())
	}
	if !bytes.Contains(readLog(t, r.run), []byte("hello from the boot")) {
		t.Error("output not saved")
	}
	if _, err := os.Stat(filepath.Join(r.run.Dir, "run.json")); err != nil {
		t.Errorf("run.json not written: %v", err)
	}
}

func TestReadyBoot(t *testing.T) {
	py := needPython(t)
	r := boot(t, t.Context(), Config{Command: []string{py, script("ready.py")}, Silence: 10 * time.Second, Timeout: 60 * time.Second})
	run := r.run
	if run.Outcome != store.OutcomeReady {
		t.Fatalf("outcome %q (%s), want ready", run.Outcome, run.Reason)
	}
	if !strings.Contains(run.Reason, "printed its ready line at") {
		t.Errorf("reason %q does not say where the ready line is", run.Reason)
	}
	done := map[string]bool{}
	for _, p := range run.Timeline {
		if p.Status == "done" {
			done[p.Rank+" "+p.Name] = true
		}
		if !p.Start.IsZero() && p.Start.Year() != run.Started.Year() {
			t.Errorf("phase %+v not anchored to the run's year", p)
		}
	}
	for _, want := range []string{"TP0 load", "TP0 dynamo", "TP0 inductor", "TP1 dynamo", "TP1 inductor", "TP1 cudagraph", "EngineCore DP0 ready"} {
		if !done[want] {
			t.Errorf("timeline lacks finished %q: %v", want, done)
		}
	}
	if run.Versions["vllm"] != "0.11.0" {
		t.Errorf("versions = %v", run.Versions)
	}
	if len(run.Silences) != 0 || run.Signal != "terminated" {
		t.Errorf("silences %v, signal %q (--then stop sends SIGTERM)", run.Silences, run.Signal)
	}
}

func TestSlowBootIsNotHung(t *testing.T) {
	py := needPython(t)
	r := boot(t, t.Context(), Config{Command: []string{py, script("slow.py")}, Silence: 4 * time.Second, OnSilence: "stop", Timeout: 60 * time.Second})
	if r.run.Outcome != store.OutcomeReady || len(r.run.Silences) != 0 {
		t.Errorf("outcome %q, silences %v: a slow boot that keeps printing is not hung", r.run.Outcome, r.run.Silences)
	}
}

func TestReadyURLAndKeep(t *testing.T) {
	py := needPython(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// The server answers after a second; --then keep watches on until
	// the context ends (Ctrl-C), and the outcome stays ready. The Ctrl-C
	// comes once the run is stored as ready, and no sooner than 5 s after
	// the start (a fixed 5 s came before ready when the server took that
	// long to start under heavy load).
	st, err := store.Open(filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	interrupted := make(chan time.Time, 1)
	r := boot(t, ctx, Config{
		Command:  []string{"sh", "-c", "sleep 1; exec " + py + " -m http.server --bind 127.0.0.1 " + strconv.Itoa(port)},
		ReadyURL: "http://127.0.0.1:" + strconv.Itoa(port) + "/",
		Then:     "keep",
		Timeout:  60 * time.Second,
		Store:    st,
		NewTracker: func(string) Tracker {
			start := time.Now()
			go func() {
				for deadline := start.Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
					if run, err := st.Get("last"); err == nil && run.Outcome == store.OutcomeReady {
						break
					}
				}
				time.Sleep(time.Until(start.Add(5 * time.Second)))
				interrupted <- time.Now()
				cancel()
			}()
			return NewEngineTracker("")
		},
	})
	if r.run.Outcome != store.OutcomeReady || !strings.Contains(r.run.Reason, "answered 200") {
		t.Errorf("outcome %q (%s)", r.run.Outcome, r.run.Reason)
	}
	if r.run.Ended.Sub(r.run.Started) < 4*time.Second {
		t.Errorf("--then keep stopped watching at ready")
	}
	select {
	case at := <-interrupted:
		if r.run.Ended.Before(at) {
			t.Errorf("--then keep stopped watching at %v, before the interrupt at %v", r.run.Ended, at)
		}
	default:
		t.Errorf("--then keep stopped watching before the interrupt")
	}
}

func reportStyle() report.Style { return report.Style{} }

// The ready lines of the other engines, as the timeline recognises them.
func TestReadyLinesOfEachEngine(t *testing.T) {
	py := needPython(t)
	for engine, line := range map[string]string{
		"sglang": "[2026-11-29 23:00:01 TP0] The server is fired up and ready to roll!",
		"atom":   "[atom 23:00:01] Model warmup done: Qwen/Qwen3-0.6B",
		"vllm":   "(EngineCore_DP0 pid=7) INFO 11-29 23:00:01 [core.py:210] init engine (profile, create kv cache, warmup model) took 12.31 seconds",
	} {
		t.Run(engine, func(t *testing.T) {
			prog := "import time; print(" + strconv.Quote(line) + ", flush=True); print('serving', flush=True); time.sleep(60)"
			r := boot(t, t.Context(), Config{Command: []string{py, "-c", prog}, Timeout: 30 * time.Second})
			if r.run.Outcome != store.OutcomeReady {
				t.Errorf("outcome %q (%s)", r.run.Outcome, r.run.Reason)
			}
		})
	}
}

// A second interrupt does not wait out the grace period.
func TestHurrySkipsGrace(t *testing.T) {
	py := needPython(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	ctx, cancel := context.WithCancel(t.Context())
	hurry := make(chan struct{})
	// The first interrupt comes once the boot is set up (it ignores
	// SIGTERM from then on: the grace period is all that would end it),
	// the second a second later. A fixed 1.5 s interrupted a boot still
	// starting under heavy load: SIGTERM ended it before it wrote its pids.
	interrupted := make(chan time.Time, 1)
	go func() {
		stubbornPids(pidfile, 30*time.Second)
		interrupted <- time.Now()
		cancel()
		time.AfterFunc(time.Second, func() { close(hurry) })
	}()
	r := boot(t, ctx, Config{Command: []string{py, script("stubborn.py"), pidfile}, Grace: time.Minute, Hurry: hurry})
	select {
	case at := <-interrupted:
		if took := time.Since(at); took > 20*time.Second {
			t.Errorf("took %v after the interrupt: the second interrupt did not cut the 1m grace", took)
		}
	default:
		t.Errorf("the boot ended before it was interrupted")
	}
	if r.run.Outcome != store.OutcomeInterrupted {
		t.Errorf("outcome %q", r.run.Outcome)
	}
	for _, pid := range readPids(t, pidfile) {
		if alive(pid, 0) {
			t.Errorf("pid %d survived", pid)
			signal(pid, 9)
		}
	}
}

// The diagnosis is bounded: past DiagnoseTimeout, or once its context
// ends (a second Ctrl-C), the run goes on without it and says how to get it.
func TestPipelineDiagnoseIsBounded(t *testing.T) {
	log := filepath.Join(t.TempDir(), "output.log")
	var b strings.Builder
	for i := 0; i < 200000; i++ {
		b.WriteString("(Worker_TP0 pid=7) INFO 11-29 23:00:00 [gpu_model_runner.py:2912] line\n")
	}
	os.WriteFile(log, []byte(b.String()), 0o644)
	run := &store.Run{Logs: []string{log}}

	old := DiagnoseTimeout
	DiagnoseTimeout = time.Nanosecond
	_, err := PipelineDiagnose(nil, report.Style{})(t.Context(), run, Evidence{})
	DiagnoseTimeout = old
	if err == nil || !strings.Contains(err.Error(), "did not finish within") || !strings.Contains(err.Error(), "bringup diagnose "+log) {
		t.Errorf("timeout: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := PipelineDiagnose(nil, report.Style{})(ctx, run, Evidence{}); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("cancelled: %v", err)
	}
	d, err := PipelineDiagnose(nil, report.Style{})(t.Context(), run, Evidence{})
	if err != nil || d == nil || d.Verdict == "" {
		t.Errorf("unbounded run: %+v, %v", d, err)
	}
}

// The live status line of a boot that has printed nothing says so; it
// read "last output 1.4s ago" (the time since the start).
func TestStatusBeforeAnyOutput(t *testing.T) {
	// The boot prints once the status line has been drawn before any
	// output (it slept 1.5 s, which a watcher starved under load could
	// sleep through), or after 30 s, which fails the test.
	var status lockedBuffer
	drawn := filepath.Join(t.TempDir(), "drawn")
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(status.String(), "no output yet") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		os.WriteFile(drawn, nil, 0o644)
	}()
	r := boot(t, t.Context(), Config{
		Command: []string{"sh", "-c", "while [ ! -e \"$1\" ]; do sleep 0.05; done; echo hi; sleep 1.2", "sh", drawn},
		Status:  &status,
		Timeout: 60 * time.Second,
	})
	if r.run.Outcome != store.OutcomeExited {
		t.Errorf("outcome %q", r.run.Outcome)
	}
	s := status.String()
	before, after, _ := strings.Cut(s, "last output")
	if !strings.Contains(before, "· no output yet") || strings.Contains(after, "no output yet") {
		t.Errorf("status line drawn:\n%q", s)
	}
}

// The closing diagnosis of a large log is announced (it reads the whole
// log, which takes seconds per GB); a small one is not.
func TestLargeDiagnosisAnnounced(t *testing.T) {
	py := needPython(t)
	old := DiagnoseNoteBytes
	defer func() { DiagnoseNoteBytes = old }()
	for _, c := range []struct {
		limit int64
		want  bool
	}{{1 << 30, false}, {100, true}} {
		DiagnoseNoteBytes = c.limit
		r := boot(t, t.Context(), Config{
			Command:  []string{py, "-c", "import sys\nfor i in range(20): print('line', i)\nsys.exit(1)"},
			Timeout:  30 * time.Second,
			Diagnose: PipelineDiagnose(nil, report.Style{}),
		})
		got := strings.Contains(r.msgs.String(), fmt.Sprintf("bringup watch: diagnosing %d bytes of output (a second Ctrl-C skips it)", r.run.Bytes))
		if got != c.want {
			t.Errorf("limit %d, %d bytes: announced %v, want %v\n%s", c.limit, r.run.Bytes, got, c.want, r.msgs.String())
		}
	}
}

func TestSizeText(t *testing.T) {
	for n, want := range map[int64]string{512: "512 bytes", 12_300: "12 KB", 340_000_000: "340 MB", 1_230_000_000: "1.2 GB"} {
		if got := sizeText(n); got != want {
			t.Errorf("sizeText(%d) = %q, want %q", n, got, want)
		}
	}
}

// A timeout capture of one process says "1 process".
func TestTimeoutCaptureOneProcess(t *testing.T) {
	py := needPython(t)
	// The timeout must find the interpreter up: one still starting cannot
	// be captured ("none of the processes is a Python process"). Under
	// heavy load 2 s is not always enough, so while the capture fails the
	// timeout doubles, up to 32 s (whose run must pass).
	var r *bootResult
	for timeout := 2 * time.Second; ; timeout *= 2 {
		r = boot(t, t.Context(), Config{
			Command: []string{py, "-c", "import time; print('up', flush=True); time.sleep(60)"},
			Timeout: timeout,
			Capture: StacksCapture(1, time.Second, report.Style{}),
		})
		if !strings.Contains(r.msgs.String(), "stack capture failed") || timeout >= 32*time.Second {
			break
		}
		t.Logf("no capture at --timeout %s: again with twice as long", timeout)
	}
	if r.run.Outcome != store.OutcomeTimeout || !strings.Contains(r.msgs.String(), "bringup watch: stacks of 1 process saved to ") {
		t.Errorf("outcome %q\n%s", r.run.Outcome, r.msgs.String())
	}
}

// lockedBuffer is a bytes.Buffer that the test reads while the watcher
// writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// hungBoot runs script under watch with --on-silence stop, the stacks
// capture and the diagnosis, doubling the silence (from 3 s, up to 24 s)
// while a boot starved under load went quiet before both workers printed
// their last line.
func hungBoot(t *testing.T, name string) (*bootResult, time.Duration) {
	t.Helper()
	return hungAt(t, name, 2)
}

func hasFinding(fs []record.Finding, rule string) bool {
	for _, f := range fs {
		if f.Rule == rule {
			return true
		}
	}
	return false
}

// A boot that hangs in fusion benchmarking (torch 2.10 printed, the log
// silent in the Inductor phase) is named where its stacks say it is, and
// never blamed on the implicit-fallback formatting the log alone would
// suggest; the API server's KeyboardInterrupt traceback that watch's
// SIGTERM causes is the stop's, not a finding; the open phase and the
// silence last until the stop.
func TestHangNamedByItsStacks(t *testing.T) {
	r, silence := hungBoot(t, "fusionhang.py")
	run := r.run
	if run.Outcome != store.OutcomeHung {
		t.Fatalf("outcome %q, want hung", run.Outcome)
	}
	if !strings.HasPrefix(run.Verdict, "STUCK ") || !strings.Contains(run.Verdict, " in Inductor fusion benchmarking: 2/2 ranks in ") ||
		!strings.Contains(run.Verdict, "torch/_inductor/scheduler.py Scheduler.speedup_by_fusion (bucket #1), 2 snapshots identical") {
		t.Errorf("verdict %q", run.Verdict)
	}
	// The API server and the engine core are not ranks nor launchers.
	if strings.Contains(run.Verdict, "launcher") || strings.Contains(run.Verdict, "/3 ") {
		t.Errorf("a coordinator counted in the verdict %q", run.Verdict)
	}
	for _, rule := range []string{"implicit-fallback-format-hang", "inductor-implicit-fallback-operator-str", "unrecognised-exception"} {
		if hasFinding(run.Findings, rule) {
			t.Errorf("finding %s reported; findings %+v", rule, run.Findings)
		}
	}
	if !hasFinding(run.Findings, "inductor-fusion-benchmark") {
		t.Errorf("no inductor-fusion-benchmark finding: %+v", run.Findings)
	}
	if !bytes.Contains(readLog(t, run), []byte("KeyboardInterrupt: terminated")) {
		t.Fatal("the fake API server did not print its SIGTERM traceback")
	}
	st := run.Stop
	if st == nil || st.By != store.StopByWatch || len(st.After) == 0 || !strings.Contains(strings.Join(st.After, "\n"), "KeyboardInterrupt: terminated") {
		t.Errorf("stop %+v: want watch's, with the KeyboardInterrupt after it", st)
	}
	msgs := r.msgs.String()
	if !strings.Contains(msgs, "the stop's doing, not a failure of the boot") || strings.Contains(msgs, "no rule explains") {
		t.Errorf("messages:\n%s", msgs)
	}
	quiet := st.At.Sub(st.LastOutput)
	if quiet < silence {
		t.Errorf("quiet %v before the stop, want at least --silence %v", quiet, silence)
	}
	// Each rank's phase lasts from its own opening line to the stop: at
	// least the quiet before the stop (the line came before the last
	// output), and not past the stop. Its line's stamp (whole seconds,
	// taken before the line was printed) is no later than the line's
	// arrival, so the phase ends no later than the stop. The other rank's
	// lines can come seconds later under load: the quiet is no bound.
	inductor := 0
	for _, p := range run.Timeline {
		if p.Name != "inductor" {
			continue
		}
		inductor++
		if p.Status != "unfinished" || p.Seconds < silence.Seconds() || p.Start.IsZero() || p.End.After(st.At.Add(50*time.Millisecond)) {
			t.Errorf("inductor phase %+v: want unfinished, from its line to the stop (%v; quiet %v)", p, st.At, quiet)
		}
	}
	if inductor != 2 {
		t.Errorf("%d inductor phases, want one per rank: %+v", inductor, run.Timeline)
	}
	if s := run.Silences[0]; s.Seconds < quiet.Seconds()-0.2 {
		t.Errorf("silence %.2fs, want until the stop (%.2fs)", s.Seconds, quiet.Seconds())
	}
	// diagnose RUN_DIR reads the stacks beside the log and the stop in
	// run.json: the same judgement.
	runDirDiagnosis(t, run, nil, []string{"implicit-fallback-format-hang", "unrecognised-exception"})
	// runs compare shows the true length, not "0.0s (open)".
	c := store.Compare([]*store.Run{run, run})
	for _, row := range c.Phases {
		if row.Name == "inductor" && (row.Values[0] == "0.0s (open)" || !strings.HasSuffix(row.Values[0], "s (open)")) {
			t.Errorf("compare: inductor %q", row.Values[0])
		}
	}
}

// The implicit-fallback formatting hang (seed 004) is confirmed by the
// stacks: the log's rule stands, error-level, beside the stacks' own.
func TestFallbackHangConfirmedByStacks(t *testing.T) {
	r, _ := hungBoot(t, "silent.py")
	run := r.run
	for _, rule := range []string{"implicit-fallback-format-hang", "inductor-implicit-fallback-operator-str"} {
		found := false
		for _, f := range run.Findings {
			found = found || f.Rule == rule && f.Severity == record.SeverityError
		}
		if !found {
			t.Errorf("no error-level %s: %+v", rule, run.Findings)
		}
	}
	if !strings.HasPrefix(run.Verdict, "STUCK ") || !strings.Contains(run.Verdict, " in Inductor formatting an implicit-fallback message: 2/2 ranks in ") {
		t.Errorf("verdict %q", run.Verdict)
	}
	runDirDiagnosis(t, run, []string{"implicit-fallback-format-hang", "inductor-implicit-fallback-operator-str"}, nil)
}

// Ctrl-C: watch takes one snapshot of the stacks before it stops the
// boot, and says INTERRUPTED with the phase and where the ranks were;
// what the stop makes the boot print is not a finding.
func TestInterruptSaysWhereItWas(t *testing.T) {
	py := needPython(t)
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	go func() {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "output.log"))
			if bytes.Count(b, []byte("Cache the graph for dynamic shape")) == 2 {
				time.Sleep(500 * time.Millisecond) // into the hang
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		cancel(Interrupted{Signal: os.Interrupt})
	}()
	r := boot(t, ctx, Config{
		Command:  []string{py, script("fusionhang.py")},
		Dir:      dir,
		Capture:  StacksCapture(3, 300*time.Millisecond, report.Style{}),
		Diagnose: PipelineDiagnose(nil, report.Style{}),
	})
	run := r.run
	if run.Outcome != store.OutcomeInterrupted || run.Reason != "stopped by Ctrl-C (SIGINT) before it was ready, in phase inductor" {
		t.Fatalf("outcome %q (%s)", run.Outcome, run.Reason)
	}
	var doc struct {
		Processes []struct {
			PID      int `json:"pid"`
			Snapshot int `json:"snapshot"`
		} `json:"processes"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "interrupt.stacks.json"))
	if err != nil || json.Unmarshal(b, &doc) != nil || len(doc.Processes) == 0 {
		t.Fatalf("interrupt capture: %v", err)
	}
	for _, p := range doc.Processes {
		if p.Snapshot != 0 {
			t.Errorf("pid %d: snapshot %d; the interrupt takes one", p.PID, p.Snapshot)
		}
	}
	if !strings.HasPrefix(run.Verdict, "INTERRUPTED after ") || !strings.Contains(run.Verdict, " in phase inductor: 2/2 ranks in ") ||
		!strings.Contains(run.Verdict, "Scheduler.speedup_by_fusion") {
		t.Errorf("verdict %q", run.Verdict)
	}
	if st := run.Stop; st == nil || st.By != store.StopByUser || st.Signal != "interrupt" {
		t.Errorf("stop %+v, want the user's (interrupt)", st)
	}
	if hasFinding(run.Findings, "unrecognised-exception") || hasFinding(run.Findings, "implicit-fallback-format-hang") {
		t.Errorf("findings %+v", run.Findings)
	}
}

// Without stacks the log's guess at the implicit-fallback hang is a
// warning that says what to capture, not an error.
func TestFallbackGuessWithoutStacks(t *testing.T) {
	py := needPython(t)
	r := boot(t, t.Context(), Config{
		Command:  []string{py, script("silent.py")},
		Timeout:  10 * time.Second,
		Diagnose: PipelineDiagnose(nil, report.Style{}),
	})
	run := r.run
	if run.Outcome != store.OutcomeTimeout {
		t.Fatalf("outcome %q", run.Outcome)
	}
	if bytes.Count(readLog(t, run), []byte("Cache the graph for dynamic shape")) != 2 {
		t.Skip("the boot did not reach its hang within 10 s (a loaded machine)")
	}
	var f *record.Finding
	for i := range run.Findings {
		if run.Findings[i].Rule == "implicit-fallback-format-hang" {
			f = &run.Findings[i]
		}
	}
	if f == nil || f.Severity != record.SeverityWarning || len(f.Remedy) == 0 || !strings.HasPrefix(f.Remedy[0], "Unconfirmed") ||
		!strings.Contains(f.Remedy[0], "bringup stacks --tree") {
		t.Fatalf("implicit-fallback-format-hang without stacks: %+v", f)
	}
	if !strings.Contains(run.Verdict, "in phase inductor") || !strings.HasSuffix(run.Verdict, "(no stacks captured)") {
		t.Errorf("verdict %q", run.Verdict)
	}
}

// TestStopSendsOneSIGTERM: watch's stop signals the boot's process group
// and, one by one, only the processes that left it: a process of the group
// gets one SIGTERM. A second one, landing in its shutdown, cut vLLM's API
// server's KeyboardInterrupt traceback short under load.
func TestStopSendsOneSIGTERM(t *testing.T) {
	py := needPython(t)
	r := boot(t, t.Context(), Config{
		Command:   []string{py, script("sigcount.py")},
		Silence:   time.Second,
		OnSilence: "stop",
		Timeout:   60 * time.Second,
	})
	log := string(readLog(t, r.run))
	if !strings.Contains(log, "sigterms: 1") {
		t.Errorf("the boot's shutdown saw more (or no) SIGTERMs; log:\n%s", log)
	}
}
