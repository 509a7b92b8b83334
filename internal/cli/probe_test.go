package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/testsupport/pyenv"
)

func TestProbeCommand(t *testing.T) {
	py := ""
	for _, m := range []string{"3.12", "3.13", "3.11", "3.10"} {
		if py = pyenv.Python(m); py != "" {
			break
		}
	}
	if py == "" {
		t.Skip("no pyenv CPython 3.10–3.13 installed")
	}
	t.Setenv("PYTHONPATH", "")
	out := filepath.Join(t.TempDir(), "run")
	script := `
import logging
logging.basicConfig(format="%(message)s")
def lookup(d):
    return d["gone"]
try:
    lookup({"here": 1})
except KeyError:
    logging.getLogger("worker").exception("WorkerProc hit an exception.")
print("hello")
raise SystemExit(3)
`
	code, stdout, stderr := runCLI("probe", "--spec", "KeyError:gone", "--out", out, "--", py, "-c", script)
	if code != 3 {
		t.Fatalf("exit %d, want the boot's 3\n%s", code, stderr)
	}
	if stdout != "hello\n" {
		t.Errorf("stdout %q: the boot's own, nothing of the probe's", stdout)
	}
	first := ""
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "probe:") {
			first = l
			break
		}
	}
	if !strings.HasPrefix(first, `probe: KeyError: 'gone' raised at <string>:5 in lookup: LOAD_CONST 'gone'; BINARY_SUBSCR evaluating d['gone']`) {
		t.Errorf("verdict line %q\n%s", first, stderr)
	}
	for _, w := range []string{"WorkerProc hit an exception.", "probe: 1 Python process loaded the probe, 0 did not", "reports in " + filepath.Join(out, "probe")} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "probe", "site", "sitecustomize.py")); err != nil {
		t.Error(err)
	}

	// The same --out again is refused: its reports would mix with these.
	if code, _, stderr := runCLI("probe", "--out", out, "--", py, "-c", "pass"); code != ExitUsage || !strings.Contains(stderr, "already holds") {
		t.Errorf("reused --out: exit %d, %q", code, stderr)
	}
	for _, c := range [][]string{
		{"probe"},
		{"probe", "--spec", "Key Error", "--", py, "-c", "pass"},
		{"probe", "--out", t.TempDir(), "--", filepath.Join(t.TempDir(), "no-such-boot")},
	} {
		if code, _, stderr := runCLI(c...); code != ExitUsage || !strings.HasPrefix(stderr, "bringup: ") {
			t.Errorf("%q: exit %d, stderr %q", c, code, stderr)
		}
	}
}
