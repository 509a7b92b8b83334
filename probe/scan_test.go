package probe

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestPythonFlags(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"python3", "-X", "dev", "-I", "x.py"}, "I"},
		{[]string{"python", "-Wignore", "-E", "x.py", "-S"}, "E"},
		{[]string{"python", "-W", "ignore", "-bIS"}, "bIS"},
		{[]string{"python", "-c", "-I"}, ""},
		{[]string{"python", "-Ic", "code", "-S"}, "I"},
		{[]string{"python", "-m", "mod", "-S"}, ""},
		{[]string{"python", "--check-hash-based-pycs", "always", "-E"}, "E"},
		{[]string{"python", "x.py", "-I"}, ""},
		{[]string{"python", "-", "-I"}, ""},
		{[]string{"python"}, ""},
	} {
		if got := string(pythonFlags(c.argv)); got != c.want {
			t.Errorf("%q: flags %q, want %q", c.argv, got, c.want)
		}
	}
}

// Real processes of a boot that do not load the probe, each for its own
// reason, found by following the boot's tree while it runs.
func TestScannerNamesProcessesThatDidNotLoad(t *testing.T) {
	py := pythons(t)[0]
	spec, _ := ParseSpec("KeyError")
	run := t.TempDir()
	d, err := Inject(run, spec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sleep := "import time; time.sleep(1.5)"
	boot := `
import os, subprocess, sys
py = sys.executable
env = dict(os.environ)
no_path = {k: v for k, v in env.items() if k != "PYTHONPATH"}
other_path = dict(env, PYTHONPATH="/nonexistent")
no_cfg = {k: v for k, v in env.items() if k != "BRINGUP_PROBE"}
procs = [
    subprocess.Popen([py, "-I", "-c", SLEEP]),
    subprocess.Popen([py, "-E", "-c", SLEEP]),
    subprocess.Popen([py, "-S", "-c", SLEEP]),
    subprocess.Popen([py, "-c", SLEEP], env=no_path),
    subprocess.Popen([py, "-c", SLEEP], env=other_path),
    subprocess.Popen([py, "-c", SLEEP], env=no_cfg),
    subprocess.Popen([py, "-c", SLEEP]),
]
for p in procs:
    p.wait()
`
	boot = strings.ReplaceAll(boot, "SLEEP", pyQuote(sleep))
	c := exec.Command(py.path, "-c", boot)
	c.Env = d.Environ(cleanEnv())
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	s := NewScanner(c.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	for waiting := true; waiting; {
		s.Scan()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("boot: %v", err)
			}
			waiting = false
		case <-time.After(50 * time.Millisecond):
		}
	}
	reports, problems := ReadDir(run)
	if len(problems) > 0 {
		t.Fatalf("problems %v", problems)
	}
	missing := d.Missing(s.Python(), reports)
	want := []string{
		"-I (isolated mode ignores PYTHONPATH)",
		"-E (PYTHON* variables",
		"-S (the site module is not imported",
		"PYTHONPATH is not in its environment",
		"its PYTHONPATH does not hold the probe's directory",
		"BRINGUP_PROBE is not in its environment",
	}
	if len(missing) != len(want) {
		t.Fatalf("%d processes did not load, want %d: %+v", len(missing), len(want), missing)
	}
	for i, w := range want {
		if !strings.HasPrefix(missing[i].Reason, w) {
			t.Errorf("%s: reason %q, want %q", missing[i].Proc, missing[i].Reason, w)
		}
	}
	loaded := 0
	for _, r := range reports {
		if r.Loaded {
			loaded++
		}
	}
	if loaded != 2 {
		t.Errorf("%d processes loaded, want the boot and its plain child", loaded)
	}
}

// FuzzWhyNotLoaded: any command line and PYTHONPATH give a reason, never a
// panic; a command line with -I before the program always names it.
func FuzzWhyNotLoaded(f *testing.F) {
	f.Add("python3\x00-X\x00dev\x00-I\x00x.py", "/run/probe/site:/x", true)
	f.Add("python\x00-Wignore\x00-bES\x00-c\x00code", "", false)
	f.Add("python\x00--check-hash-based-pycs", "::", true)
	f.Fuzz(func(t *testing.T, cmdline, pythonPath string, hasConfig bool) {
		p := Proc{PID: 1, Cmdline: strings.Split(cmdline, "\x00"), PythonPath: pythonPath, HasPath: pythonPath != "", HasConfig: hasConfig}
		why := WhyNotLoaded(p, "/run/probe/site")
		if why == "" {
			t.Fatalf("%q: no reason", cmdline)
		}
		if len(p.Cmdline) > 2 && p.Cmdline[1] == "-I" && !strings.Contains(why, "-I") {
			t.Fatalf("%q: reason %q does not name -I", cmdline, why)
		}
	})
}

func TestReadPPID(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		stat string
		ppid int
		ok   bool
	}{
		{"123 (python3) S 45 123 123 0", 45, true},
		{"123 (a) b) (c) R 7 1 1", 7, true},
		{"123 (x", 0, false},
		{"123 (x) S", 0, false},
		{"123 (x) S notanumber", 0, false},
	} {
		p := dir + "/stat"
		if err := os.WriteFile(p, []byte(c.stat), 0o644); err != nil {
			t.Fatal(err)
		}
		if ppid, ok := readPPID(p); ppid != c.ppid || ok != c.ok {
			t.Errorf("%q: %d %v, want %d %v", c.stat, ppid, ok, c.ppid, c.ok)
		}
	}
}
