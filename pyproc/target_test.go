package pyproc

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/pyenv"
)

// testedMinors are the CPython versions the live tests expect pyenv to
// provide; an absent one is skipped with a message.
var testedMinors = []string{"3.10", "3.11", "3.12", "3.13"}

// anyPython is the first tested CPython pyenv has; the test is skipped
// when there is none.
func anyPython(t testing.TB) string {
	t.Helper()
	for _, m := range testedMinors {
		if py := pyenv.Python(m); py != "" {
			return py
		}
	}
	t.Skip("no CPython under pyenv")
	return ""
}

// eachPython runs fn as a subtest for every tested CPython pyenv has,
// skipping (with a message) the ones it does not.
func eachPython(t *testing.T, fn func(t *testing.T, minor, py string)) {
	for _, minor := range testedMinors {
		t.Run(minor, func(t *testing.T) {
			py := pyenv.Python(minor)
			if py == "" {
				t.Skipf("CPython %s is not installed under pyenv (%s); skipping", minor, pyenv.Root())
			}
			fn(t, minor, py)
		})
	}
}

// targetView is what testdata/target.py reports about itself.
type targetView struct {
	PID              int    `json:"pid"`
	Version          string `json:"version"`
	ReporterNativeID int    `json:"reporter_native_id"`
	Threads          []struct {
		Ident    uint64       `json:"ident"`
		NativeID int          `json:"native_id"`
		Name     string       `json:"name"`
		Main     bool         `json:"main"`
		Frames   record.Stack `json:"frames"`
	} `json:"threads"`
}

// startTarget runs testdata/target.py under python and waits until it has
// reported its own view and its reporter thread is gone. It is killed when
// the test ends.
func startTarget(tb testing.TB, python string) (*exec.Cmd, *targetView) {
	tb.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "target.py"))
	if err != nil {
		tb.Fatal(err)
	}
	return startTargetAt(tb, python, script)
}

func startTargetAt(tb testing.TB, python, script string, args ...string) (*exec.Cmd, *targetView) {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "view.json")
	cmd := exec.Command(python, append([]string{script, out}, args...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", python, err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	var view targetView
	for {
		if data, err := os.ReadFile(out); err == nil {
			if err := json.Unmarshal(data, &view); err != nil {
				tb.Fatalf("target view: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s did not report its stacks within 60s", python)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d", view.PID, view.ReporterNativeID)); err != nil {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("reporter thread %d did not exit", view.ReporterNativeID)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cmd, &view
}

func sleepMs(n int)     { time.Sleep(time.Duration(n) * time.Millisecond) }
func itoa(n int) string { return fmt.Sprint(n) }
