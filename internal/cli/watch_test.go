package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func watchScript(name string) string {
	return filepath.Join(testcorpus.Root(), "watch", "testdata", name)
}

// Repeated boots under two settings, then the matrix: "hung 3/3" against
// "ready 3/3", and show/compare on the same store.
func TestWatchRunsMatrix(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH")
	}
	// The interpreter itself, not a pyenv shim (a shell script that runs a
	// dozen bash helpers first: seconds under heavy load, all of them
	// before the boot's first line).
	if out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output(); err == nil && filepath.IsAbs(strings.TrimSpace(string(out))) {
		py = strings.TrimSpace(string(out))
	}
	// Six boots on one store. --silence 4s is a promise about the machine
	// as much as about the boot: a process starved under heavy load printed
	// nothing in 4 s (HUNG, "0 lines") although its mode is ok. When a boot
	// did not get to run before the silence (an ok boot called hung, a
	// hung boot that had not printed its 3 lines), all six start again on a new store
	// with twice the silence, up to 32 s, whose boots must pass.
	var db string
	for silence := 4 * time.Second; ; silence *= 2 {
		db = filepath.Join(t.TempDir(), "runs.db")
		if bootMatrix(t, py, db, silence, silence >= 32*time.Second) {
			break
		}
		t.Logf("a boot did not get to run within --silence %s: again with twice as long", silence)
	}
	code, out, stderr := runCLI("runs", "matrix", "--store", db, "--by", "FAKE_COMPILE_MODE")
	if code != ExitOK {
		t.Fatalf("matrix exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "FAKE_COMPILE_MODE") {
		t.Fatalf("matrix:\n%s", out)
	}
	if f := strings.Fields(lines[1]); f[0] != "hang" || f[1] != "3" || !strings.HasSuffix(lines[1], "hung 3/3") {
		t.Errorf("hang row %q", lines[1])
	}
	if f := strings.Fields(lines[2]); f[0] != "ok" || f[1] != "3" || !strings.HasSuffix(lines[2], "ready 3/3") {
		t.Errorf("ok row %q", lines[2])
	}

	code, out, _ = runCLI("runs", "matrix", "--store", db, "--by", "FAKE_COMPILE_MODE,FAKE_OTHER", "--json")
	var m struct {
		Schema string `json:"schema"`
		Rows   []struct {
			Values   []string       `json:"values"`
			Outcomes map[string]int `json:"outcomes"`
		} `json:"rows"`
	}
	if code != ExitOK || json.Unmarshal([]byte(out), &m) != nil || m.Schema != "bringup.runs-matrix/v1" || len(m.Rows) != 2 || m.Rows[0].Outcomes["hung"] != 3 {
		t.Errorf("matrix --json (exit %d): %s", code, out)
	}

	code, out, _ = runCLI("runs", "show", "last", "--store", db, "--json")
	var r map[string]any
	if code != ExitOK || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("show --json exit %d: %s", code, out)
	}
	for _, k := range []string{"schema", "id", "command", "env", "env_check", "started", "ended", "outcome", "exit_code", "silences", "timeline", "findings"} {
		if _, ok := r[k]; !ok {
			t.Errorf("bringup.run/v1 lacks %q", k)
		}
	}
	if r["schema"] != "bringup.run/v1" || r["outcome"] != "ready" || r["id"] != float64(6) {
		t.Errorf("show last: schema %v outcome %v id %v", r["schema"], r["outcome"], r["id"])
	}

	code, out, _ = runCLI("runs", "show", "1", "--store", db)
	if code != ExitOK || !strings.HasPrefix(out, "HUNG run #1") || !strings.Contains(out, "silences") || !strings.Contains(out, "inductor") {
		t.Errorf("show 1 (exit %d):\n%s", code, out)
	}
	code, out, _ = runCLI("runs", "compare", "1", "last", "--store", db)
	if code != ExitOK || !strings.Contains(out, "≠ FAKE_COMPILE_MODE") || !strings.Contains(out, "≠ outcome") || strings.Contains(out, "FAKE_OTHER") {
		t.Errorf("compare (exit %d):\n%s", code, out)
	}
	code, out, _ = runCLI("runs", "list", "--store", db)
	if code != ExitOK || strings.Count(out, "\n") != 7 {
		t.Errorf("list (exit %d):\n%s", code, out)
	}
}

// bootMatrix runs the six boots of TestWatchRunsMatrix on db; it reports
// false, unless last, when a boot did not get to run within the silence.
func bootMatrix(t *testing.T, py, db string, silence time.Duration, last bool) bool {
	t.Helper()
	for _, mode := range []string{"hang", "ok"} {
		for i := 0; i < 3; i++ {
			code, _, stderr := runCLI("watch", "--store", db, "--silence", silence.String(), "--on-silence", "stop", "--grace", "1s",
				"--snapshots", "1", "--env", "FAKE_COMPILE_MODE="+mode, "--env", "FAKE_OTHER=x", "--", py, watchScript("matrix.py"))
			// matrix.py hangs after its third line.
			starved := strings.Contains(stderr, "HUNG after") && (mode == "ok" || !strings.Contains(stderr, "(3 lines)"))
			if starved && !last {
				return false
			}
			want := map[string]int{"hang": ExitFindings, "ok": ExitOK}[mode]
			if code != want {
				t.Fatalf("%s run %d: exit %d, want %d\n%s", mode, i, code, want, stderr)
			}
			word := map[string]string{"hang": "HUNG", "ok": "READY"}[mode]
			if !strings.Contains(stderr, word+" after") {
				t.Errorf("%s: no %s verdict line:\n%s", mode, word, stderr)
			}
		}
	}
	return true
}

func TestWatchBadInput(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	badEnv := filepath.Join(dir, "bad.env")
	os.WriteFile(badEnv, []byte("# knobs\nexport GOOD=1\nthis is not an assignment\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"watch", "--store", db}, "needs a command"},
		{[]string{"watch", "--store", db, "--", "no-such-engine-xyz"}, "no-such-engine-xyz"},
		{[]string{"watch", "--store", db, "--env", "NOEQUALS", "--", "true"}, "NAME=VALUE"},
		{[]string{"watch", "--store", db, "--env-file", badEnv, "--", "true"}, "bad.env:3"},
		{[]string{"watch", "--store", db, "--on-silence", "panic", "--", "true"}, "--on-silence"},
		{[]string{"watch", "--store", db, "--ready-url", "localhost:8000/health", "--", "true"}, "--ready-url"},
		{[]string{"watch", "--store", db, "--snapshot-interval", "-1s", "--", "true"}, "negative"},
		{[]string{"watch", "--store", db, "--snapshot-interval", "0s", "--", "true"}, "--snapshot-interval"},
		{[]string{"watch", "--store", db, "--snapshots", "0", "--", "true"}, "--snapshots 0: a stack capture takes at least 1 snapshot"},
		{[]string{"watch", "--store", db, "--snapshots", "-2", "--", "true"}, "--snapshots -2"},
		{[]string{"watch", "--store", db, "--patches", dir, "--", "true"}, "--patch-root"},
		{[]string{"watch", "--store", db, "--srun", "12;ls", "--", "true"}, "not a Slurm job id"},
		{[]string{"watch", "--store", db, "--deadline", "3s", "--", "true"}, "go with --srun"},
		{[]string{"watch", "--store", db, "--srun", "12", "--copy-binary", "sometimes", "--", "true"}, "auto, always or never"},
		{[]string{"watch", "--store", db, "--srun", "12", "--deadline", "0s", "--", "true"}, "--deadline 0s"},
		{[]string{"watch", "--store", db, "--srun", "12", "--snapshot-interval", "10s", "--", "true"}, "3 snapshots 10s apart take longer than --deadline 15s"},
		{[]string{"runs", "show", "99", "--store", db}, "no such run"},
		{[]string{"runs", "show", "yesterday", "--store", db}, "not a run id"},
		{[]string{"runs", "matrix", "--store", db}, "--by"},
		{[]string{"runs", "compare", "1", "--store", db}, "runs compare takes two or more runs, e.g. 'bringup runs compare 12 13'"},
		{[]string{"runs", "show", "--store", db}, "runs show takes one run: an id from 'bringup runs list', or last"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 mentioning %q", tc.args, code, stderr, tc.want)
		}
	}
}

// A corrupt store stops neither the boot nor its output; reading it is a
// clear exit 2, and the file is left as it was.
func TestWatchCorruptStore(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	junk := bytes.Repeat([]byte("not a database\n"), 100)
	os.WriteFile(db, junk, 0o644)
	runDir := filepath.Join(dir, "run")
	code, out, stderr := runCLI("watch", "--store", db, "--run-dir", runDir, "--", "sh", "-c", "echo booted")
	if code != ExitOK || !strings.Contains(out, "booted") || !strings.Contains(stderr, "corrupt or not a database") {
		t.Errorf("watch with a corrupt store: exit %d, out %q, stderr %q", code, out, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(runDir, "output.log")); string(b) != "booted\n" {
		t.Errorf("output.log = %q", b)
	}
	if _, err := os.Stat(filepath.Join(runDir, "run.json")); err != nil {
		t.Errorf("run.json: %v", err)
	}
	code, _, stderr = runCLI("runs", "list", "--store", db)
	if code != ExitUsage || !strings.Contains(stderr, "corrupt") {
		t.Errorf("runs list on a corrupt store: exit %d %q", code, stderr)
	}
	if b, _ := os.ReadFile(db); !bytes.Equal(b, junk) {
		t.Error("the corrupt store was modified")
	}
}

func TestWatchRefusesDriftedPatches(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "pkg"), 0o755)
	os.WriteFile(filepath.Join(root, "pkg", "mod.py"), []byte("x = 1\ny = 3\n"), 0o644)
	marker := filepath.Join(t.TempDir(), "booted")
	code, _, stderr := runCLI("watch", "--store", filepath.Join(t.TempDir(), "r.db"), "--patches", watchScript("patches"),
		"--patch-root", root, "--", "touch", marker)
	if code != ExitUsage || !strings.Contains(stderr, "drifted") || !strings.Contains(stderr, "not booting") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the boot ran although the series drifted")
	}
	// Consistent (not applied): boots, and the series state is recorded.
	os.WriteFile(filepath.Join(root, "pkg", "mod.py"), []byte("x = 1\ny = 2\n"), 0o644)
	db := filepath.Join(t.TempDir(), "r.db")
	code, _, stderr = runCLI("watch", "--store", db, "--patches", watchScript("patches"), "--patch-root", root, "--", "touch", marker)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, out, _ := runCLI("runs", "show", "last", "--store", db, "--json")
	if !strings.Contains(out, `"patches": {`) || !strings.Contains(out, "01-y.patch not-applied") {
		t.Errorf("series state not recorded:\n%s", out)
	}
}

// One line of output is "1 line" in watch's closing block and in runs show.
func TestWatchOneLine(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	code, _, stderr := runCLI("watch", "--store", db, "--", "sh", "-c", "echo one")
	if code != ExitOK || !strings.Contains(stderr, "/output.log (1 line)\n") {
		t.Errorf("watch: exit %d\n%s", code, stderr)
	}
	code, out, _ := runCLI("runs", "show", "last", "--store", db)
	if code != ExitOK || !strings.HasPrefix(out, "EXITED run #1 after ") || !strings.Contains(out, "(1 line of output)") {
		t.Errorf("runs show: exit %d\n%s", code, out)
	}
}
