package probe

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/testsupport/pyenv"
)

// The tests in this file run the real probe in real CPython processes: every
// pyenv CPython among 3.10–3.13, each skipped with a line when missing.

type python struct {
	minor string // "3.12"
	path  string
	raise bool // sys.monitoring: recorded where raised too
}

func pythons(t *testing.T) []python {
	t.Helper()
	var out []python
	for _, m := range []string{"3.10", "3.11", "3.12", "3.13"} {
		p := pyenv.Python(m)
		if p == "" {
			t.Logf("CPython %s: not installed under pyenv (%s), skipped", m, pyenv.Root())
			continue
		}
		out = append(out, python{minor: m, path: p, raise: m >= "3.12"})
	}
	if len(out) == 0 {
		t.Skip("no pyenv CPython 3.10–3.13 installed")
	}
	return out
}

// cleanEnv is the test process's environment without anything that would
// put another probe or path into the boot.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "PYTHONPATH" || k == EnvVar || k == "PYTHONSTARTUP" || k == "PYTHONSAFEPATH" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

type boot struct {
	stdout, stderr []byte
	code           int
}

func run(t *testing.T, env []string, dir string, args ...string) boot {
	t.Helper()
	c := exec.Command(args[0], args[1:]...)
	c.Env = env
	c.Dir = dir
	var so, se bytes.Buffer
	c.Stdout, c.Stderr = &so, &se
	err := c.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %v: %v", args, err)
	}
	return boot{so.Bytes(), se.Bytes(), c.ProcessState.ExitCode()}
}

func testdata(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// probed runs args with the probe for spec injected into a fresh run
// directory and returns the boot and what the probe wrote.
func probed(t *testing.T, spec string, opt Options, base []string, args ...string) (boot, []Report, Deployment) {
	t.Helper()
	s, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	runDir := t.TempDir()
	d, err := Inject(runDir, s, opt)
	if err != nil {
		t.Fatal(err)
	}
	b := run(t, d.Environ(base), t.TempDir(), args...)
	reports, problems := ReadDir(runDir)
	for _, p := range problems {
		t.Errorf("problem: %s", p)
	}
	return b, reports, d
}

// withRecords is the one process of reports that recorded something.
func withRecords(t *testing.T, reports []Report) *Report {
	t.Helper()
	var found *Report
	for i := range reports {
		if len(reports[i].Records) > 0 {
			if found != nil {
				t.Fatalf("more than one process recorded: %d and %d", found.PID, reports[i].PID)
			}
			found = &reports[i]
		}
	}
	if found == nil {
		t.Fatalf("no process recorded anything: %+v", reports)
	}
	return found
}

func records(reports []Report) []Record {
	var out []Record
	for _, r := range reports {
		out = append(out, r.Records...)
	}
	return out
}

func TestNoPositionDecoding(t *testing.T) {
	for _, py := range pythons(t) {
		t.Run(py.minor, func(t *testing.T) {
			b, reports, _ := probed(t, "KeyError:in_proj", Options{}, cleanEnv(), py.path, testdata(t, "nopos.py"))
			if b.code != 1 || !bytes.Contains(b.stderr, []byte("KeyError: 'in_proj_qkvbfg_a'")) {
				t.Fatalf("boot: exit %d, stderr %s", b.code, b.stderr)
			}
			// The traceback itself names only the def line: what the probe adds.
			if !bytes.Contains(b.stderr, []byte("line 16, in forward\n    def forward(self, x):\n")) {
				t.Fatalf("the fixture's traceback does not end at the def line:\n%s", b.stderr)
			}
			recs := records(reports)
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1: %+v", len(recs), recs)
			}
			r := recs[0]
			if py.raise {
				if r.SeenAt != "raise" || !contains(r.AlsoSeenAt, "uncaught") {
					t.Errorf("seen at %q then %v, want raise then uncaught", r.SeenAt, r.AlsoSeenAt)
				}
			} else if r.SeenAt != "uncaught" {
				t.Errorf("seen at %q, want uncaught", r.SeenAt)
			}
			o, _ := r.Origin()
			e := Explain(r)
			if e.Instruction != "LOAD_CONST 'in_proj_qkvbfg_a'; BINARY_SUBSCR" && e.Instruction != "LOAD_CONST 'in_proj_qkvbfg_a'; BINARY_OP []" {
				t.Errorf("instruction %q", e.Instruction)
			}
			if want := "self._modules['layers']._modules['3']._modules['in_proj_qkvbfg_a']"; o.Expression != want {
				t.Errorf("expression %q, want %q", o.Expression, want)
			}
			if o.Line == nil || *o.Line != 16 || o.FirstLineNo != 16 || !o.DefLine || !o.Generated || o.Function != "forward" {
				t.Errorf("origin frame %+v: want forward at its def line 16, generated", o)
			}
			wantPos := "no-columns"
			if py.minor == "3.10" {
				wantPos = "lines-only"
			}
			if o.Position != wantPos {
				t.Errorf("position %q, want %q", o.Position, wantPos)
			}
			if e.Shape != ShapeGenerated || r.DynamoLoaded {
				t.Errorf("shape %s, dynamo loaded %v", e.Shape, r.DynamoLoaded)
			}
			m, ok := missingStep(o)
			if !ok || m.Key != "in_proj_qkvbfg_a" || strings.Join(m.Keys, ",") != "self_attn,mlp" || m.On == nil || m.On.Kind != "module-like" {
				t.Errorf("missing step %+v (found %v)", m, ok)
			}
			if o.Self == nil || o.Self.Attrs["layer_idx"] != "3" || len(o.Self.Children) != 1 || o.Self.Children[0].Name != "layers" {
				t.Errorf("self summary %+v", o.Self)
			}
			if !strings.Contains(e.Module, "its _modules has no 'in_proj_qkvbfg_a' (it has self_attn, mlp)") {
				t.Errorf("module text %q", e.Module)
			}
			if len(r.Stack) != 2 || r.Stack[0].Function != "<module>" {
				t.Errorf("stack %+v", r.Stack)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// childRecords are the records of processes other than the root (the
// multiprocessing parent), by message.
func childRecords(t *testing.T, reports []Report) map[string]Record {
	t.Helper()
	out := map[string]Record{}
	for _, rep := range reports {
		for _, r := range rep.Records {
			if _, dup := out[r.Message]; dup {
				t.Errorf("%s recorded twice", r.Message)
			}
			out[r.Message] = r
		}
	}
	return out
}

func TestMultiprocessingChildrenDie(t *testing.T) {
	for _, py := range pythons(t) {
		t.Run(py.minor, func(t *testing.T) {
			b, reports, _ := probed(t, "KeyError:missing_", Options{}, cleanEnv(), py.path, testdata(t, "mpboot.py"), "die", "spawn", "fork", "forkserver")
			if b.code != 0 || !bytes.Contains(b.stdout, []byte("exitcodes [1, 1, 1]")) {
				t.Fatalf("boot: exit %d\n%s\n%s", b.code, b.stdout, b.stderr)
			}
			got := childRecords(t, reports)
			for _, m := range []string{"spawn", "fork", "forkserver"} {
				r, ok := got["'missing_"+m+"'"]
				if !ok {
					t.Errorf("%s child: no record (have %v)", m, keys(got))
					continue
				}
				want := "traceback" // multiprocessing prints it with traceback.print_exc
				if py.raise {
					want = "raise"
				}
				if r.SeenAt != want {
					t.Errorf("%s child: seen at %q, want %q", m, r.SeenAt, want)
				}
				if o, _ := r.Origin(); o.Function != "die" || o.Expression != "table['missing_' + tag]" {
					t.Errorf("%s child: origin %s %q", m, o.Function, o.Expression)
				}
			}
			// Every process loaded it: the parent, each child, and the
			// spawn method's helpers (resource tracker, fork server).
			loaded := 0
			forked := 0
			for _, r := range reports {
				if r.Loaded {
					loaded++
				}
				if r.ForkedFrom != 0 {
					forked++
				}
			}
			if loaded < 4 || forked < 2 {
				t.Errorf("%d processes loaded the probe, %d of them forked; want at least 4 and 2", loaded, forked)
			}
		})
	}
}

func keys(m map[string]Record) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestLoggedInChild(t *testing.T) {
	for _, py := range pythons(t) {
		t.Run(py.minor, func(t *testing.T) {
			b, reports, _ := probed(t, "KeyError", Options{}, cleanEnv(), py.path, testdata(t, "mpboot.py"), "log", "spawn", "fork")
			if b.code != 0 || !bytes.Contains(b.stderr, []byte("ERROR WorkerProc hit an exception.")) {
				t.Fatalf("boot: exit %d\n%s\n%s", b.code, b.stdout, b.stderr)
			}
			got := childRecords(t, reports)
			for _, m := range []string{"spawn", "fork"} {
				r, ok := got["'missing_"+m+"'"]
				if !ok {
					t.Errorf("%s child: no record (have %v)", m, keys(got))
					continue
				}
				if py.raise && (r.SeenAt != "raise" || !contains(r.AlsoSeenAt, "logging")) {
					t.Errorf("%s child: seen at %q then %v, want raise then logging", m, r.SeenAt, r.AlsoSeenAt)
				}
				if !py.raise && r.SeenAt != "logging" {
					t.Errorf("%s child: seen at %q, want logging", m, r.SeenAt)
				}
				if r.Logged == nil || r.Logged.Logger != "worker" || r.Logged.Level != "ERROR" || r.Logged.Message != "WorkerProc hit an exception." || r.Logged.Function != "logs" {
					t.Errorf("%s child: logged %+v", m, r.Logged)
				}
			}
		})
	}
}

// The probe never changes the boot: the same exit status and the same
// bytes on stdout and stderr with and without it, for a boot that prints,
// logs, runs children, reads its sys.path and dies of an uncaught
// KeyError.
func TestSameBehaviourWithAndWithout(t *testing.T) {
	for _, py := range pythons(t) {
		t.Run(py.minor, func(t *testing.T) {
			for _, args := range [][]string{
				{testdata(t, "nopos.py")},
				{testdata(t, "mpboot.py"), "die", "spawn", "fork"},
				{testdata(t, "mpboot.py"), "log", "spawn", "fork", "forkserver"},
				{"-c", "import sys, os; print([p for p in sys.path if p]); print(sys.excepthook is sys.__excepthook__ or 'hooked'); print(os.environ.get('HOME') is not None); raise SystemExit(7)"},
			} {
				cmd := append([]string{py.path}, args...)
				dir := t.TempDir()
				plain := run(t, cleanEnv(), dir, cmd...)
				with, reports, _ := probed(t, "KeyError", Options{}, cleanEnv(), cmd...)
				_ = reports
				with2 := run(t, cleanEnv(), dir, cmd...) // pids differ between runs: compare against a second plain run too
				if plain.code != with.code {
					t.Errorf("%v: exit %d without the probe, %d with it", args, plain.code, with.code)
				}
				if !bytes.Equal(normPids(plain.stdout), normPids(with.stdout)) {
					t.Errorf("%v: stdout differs\nwithout:\n%s\nwith:\n%s", args, plain.stdout, with.stdout)
				}
				if !bytes.Equal(normPids(plain.stderr), normPids(with.stderr)) {
					t.Errorf("%v: stderr differs\nwithout:\n%s\nwith:\n%s", args, plain.stderr, with.stderr)
				}
				if !bytes.Equal(normPids(plain.stdout), normPids(with2.stdout)) {
					t.Errorf("%v: two plain runs differ on stdout: the boot is not deterministic", args)
				}
			}
		})
	}
}

// normPids: multiprocessing's names (SpawnProcess-1) are stable, pids are
// not printed by these boots; the function is the identity kept as the one
// place to normalise if a boot prints one.
func normPids(b []byte) []byte { return b }

func TestChainsShadowedSitecustomize(t *testing.T) {
	for _, py := range pythons(t) {
		t.Run(py.minor, func(t *testing.T) {
			other := t.TempDir()
			mark := filepath.Join(t.TempDir(), "ran")
			src := "import os, sys\nopen(" + pyQuote(mark) + ", 'w').write(__file__)\nSHADOWED = True\n"
			if err := os.WriteFile(filepath.Join(other, "sitecustomize.py"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			base := append(cleanEnv(), "PYTHONPATH="+other)
			b, reports, d := probed(t, "KeyError", Options{}, base, py.path, "-c",
				"import sys, sitecustomize; print(getattr(sitecustomize, 'SHADOWED', False), sitecustomize.__file__ == "+
					pyQuote(filepath.Join(other, "sitecustomize.py"))+", "+pyQuote(d0(other))+" in sys.path)")
			if b.code != 0 || strings.TrimSpace(string(b.stdout)) != "True True True" {
				t.Fatalf("exit %d, stdout %q, stderr %s", b.code, b.stdout, b.stderr)
			}
			got, err := os.ReadFile(mark)
			if err != nil || string(got) != filepath.Join(other, "sitecustomize.py") {
				t.Errorf("shadowed sitecustomize did not run as itself: %q %v", got, err)
			}
			if len(reports) != 1 || !reports[0].Loaded || reports[0].Chained == nil || *reports[0].Chained != filepath.Join(other, "sitecustomize.py") {
				t.Errorf("marker does not name the chained sitecustomize: %+v", reports)
			}
			_ = d
		})
	}
}

func d0(s string) string { return s }

// pyQuote is a Python string literal for s (paths of the test's temp dirs).
func pyQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// A shadowed sitecustomize that fails is reported by site.py exactly as
// without the probe.
func TestShadowedSitecustomizeErrorUnchanged(t *testing.T) {
	for _, py := range pythons(t) {
		t.Run(py.minor, func(t *testing.T) {
			other := t.TempDir()
			if err := os.WriteFile(filepath.Join(other, "sitecustomize.py"), []byte("raise KeyError('from the shadowed one')\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			base := append(cleanEnv(), "PYTHONPATH="+other)
			cmd := []string{py.path, "-c", "print('boot ran')"}
			plain := run(t, base, t.TempDir(), cmd...)
			with, _, _ := probed(t, "KeyError", Options{}, base, cmd...)
			if plain.code != with.code || !bytes.Equal(plain.stdout, with.stdout) || !bytes.Equal(plain.stderr, with.stderr) {
				t.Errorf("without: %d %q %q\nwith: %d %q %q", plain.code, plain.stdout, plain.stderr, with.code, with.stdout, with.stderr)
			}
			if !bytes.Contains(plain.stderr, []byte("Error in sitecustomize")) {
				t.Errorf("site.py did not report the failing sitecustomize: %q", plain.stderr)
			}
		})
	}
}

// 10^5 matching raises (caught), and on 3.10/3.11 10^5 logged ones: the
// probe keeps its record cap, counts every one, and its report stays under
// its byte cap.
func TestCapsHold(t *testing.T) {
	const n = 100000
	script := `
import logging, sys
logging.getLogger().addHandler(logging.NullHandler())
log = logging.getLogger("boot")
d = {}
for i in range(` + "100000" + `):
    try:
        d["k%d" % i]
    except KeyError:
        if sys.version_info < (3, 12):
            log.error("lookup failed", exc_info=True)
print("done")
`
	for _, py := range pythons(t) {
		t.Run(py.minor, func(t *testing.T) {
			caps := Caps{Records: 8}
			start := time.Now()
			b, reports, _ := probed(t, "KeyError:k[0-9]", Options{Caps: caps}, cleanEnv(), py.path, "-c", script)
			t.Logf("%s: %d raises in %v", py.minor, n, time.Since(start))
			if b.code != 0 || string(b.stdout) != "done\n" || len(b.stderr) != 0 {
				t.Fatalf("boot: %d %q %q", b.code, b.stdout, b.stderr)
			}
			main := withRecords(t, reports)
			c := main.Counts
			if c.Matched != n || c.Recorded != 8 || len(main.Records) != 8 || c.DroppedCap+c.DroppedTime != n-8 {
				t.Errorf("counts %+v, %d records; want %d matched, 8 recorded, the rest dropped", c, len(main.Records), n)
			}
			fi, err := os.Stat(main.ReportPath)
			if err != nil || fi.Size() > int64(DefaultCaps.Bytes) {
				t.Errorf("report size %v (%v), cap %d", fi.Size(), err, DefaultCaps.Bytes)
			}
			if main.WrittenAt != "exit" {
				t.Errorf("report last written at %q, want exit (with the final counts)", main.WrittenAt)
			}
		})
	}
}

// An internal error of the probe (here: a module-like self whose __dict__
// raises when the probe summarises it) is swallowed and noted in the
// report; the boot is unchanged, the record kept; knobs are recorded, a
// secret one redacted.
func TestInternalErrorNotedBootUnchanged(t *testing.T) {
	script := `
class Hostile:
    @property
    def __dict__(self):
        raise RuntimeError("no dict for you")
    def forward(self):
        return {}["in_proj_gone"]
try:
    Hostile().forward()
except KeyError as e:
    print("caught", e)
`
	for _, py := range pythons(t) {
		t.Run(py.minor, func(t *testing.T) {
			base := append(cleanEnv(), "VLLM_USE_AOT_COMPILE=0", "VLLM_API_KEY=s3cret", "UNRELATED_KNOB=1")
			cmd := []string{py.path, "-c", script}
			plain := run(t, base, t.TempDir(), cmd...)
			with, reports, _ := probed(t, "KeyError", Options{}, base, cmd...)
			if plain.code != with.code || !bytes.Equal(plain.stdout, with.stdout) || !bytes.Equal(plain.stderr, with.stderr) {
				t.Fatalf("boot changed: %d %q %q vs %d %q %q", plain.code, plain.stdout, plain.stderr, with.code, with.stdout, with.stderr)
			}
			if !py.raise {
				return // caught and never reported: nothing to record on 3.10/3.11
			}
			rep := withRecords(t, reports)
			if len(rep.Errors) == 0 || !strings.Contains(strings.Join(rep.Errors, "\n"), "self: RuntimeError: no dict for you") {
				t.Errorf("errors %q", rep.Errors)
			}
			if o, _ := rep.Records[0].Origin(); o.Function != "Hostile.forward" || o.Self != nil {
				t.Errorf("origin %+v", o)
			}
			if rep.Env["VLLM_USE_AOT_COMPILE"] != "0" || rep.Env["VLLM_API_KEY"] != "<redacted>" || rep.Env["UNRELATED_KNOB"] != "" {
				t.Errorf("env %v", rep.Env)
			}
		})
	}
}
