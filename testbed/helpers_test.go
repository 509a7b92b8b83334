package testbed

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// bin is the bringup binary built once for the package's tests.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bringup-testbed-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bin = filepath.Join(dir, "bringup")
	build := exec.Command("go", "build", "-o", bin, "../cmd/bringup")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "testbed: building bringup:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is one run of the bringup binary.
type result struct {
	stdout, stderr string
	code           int
}

// bringup runs the built binary with args in dir ("" for the package dir).
func bringup(t testing.TB, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("bringup %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// bringupJSON runs bringup with args (which include --json), checks the exit
// code (unless wantCode < 0) and the schema, and decodes stdout into v.
func bringupJSON(t testing.TB, dir string, wantCode int, schema string, v any, args ...string) {
	t.Helper()
	r := bringup(t, dir, args...)
	if wantCode >= 0 && r.code != wantCode {
		t.Errorf("bringup %s: exit %d, want %d; stderr: %s", strings.Join(args, " "), r.code, wantCode, r.stderr)
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &head); err != nil {
		t.Fatalf("bringup %s: output is not JSON: %v\n%s", strings.Join(args, " "), err, firstLines(r.stdout, 20))
	}
	if head.Schema != schema {
		t.Fatalf("bringup %s: schema %q, want %q", strings.Join(args, " "), head.Schema, schema)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("bringup %s: decoding: %v", strings.Join(args, " "), err)
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// scenario copies testdata/<name> into a temporary directory, gunzipping the
// recorded TORCH_TRACE files (trace/**/*.log.gz -> *.log), and returns it.
func scenario(t testing.TB, name string) string {
	t.Helper()
	src := filepath.Join("testdata", name)
	if _, err := os.Stat(src); err != nil {
		t.Fatalf("recorded scenario %s: %v (record it with scripts/testbed/record %s)", name, err, name)
	}
	dst := filepath.Join(t.TempDir(), name)
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		var r io.Reader = in
		if strings.HasSuffix(p, ".log.gz") {
			gz, err := gzip.NewReader(in)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			defer gz.Close()
			r, target = gz, strings.TrimSuffix(target, ".gz")
		}
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, r); err != nil {
			out.Close()
			return fmt.Errorf("%s: %w", p, err)
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// traceFiles lists the TORCH_TRACE files under dir/trace, sorted.
func traceFiles(t testing.TB, dir string) []string {
	t.Helper()
	var files []string
	filepath.WalkDir(filepath.Join(dir, "trace"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".log") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatalf("no TORCH_TRACE file under %s/trace", dir)
	}
	return files
}

func itoa(n int) string { return strconv.Itoa(n) }
