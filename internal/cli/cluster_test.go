package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/cluster/node"
)

// The collector on this machine: a real Python process with torchrun's
// variables is found with its rank and the node's identity.
func TestClusterStacksLocal(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	cmd := exec.Command(py, filepath.Join("..", "..", "cluster", "testdata", "rank.py"), dir)
	cmd.Env = append(os.Environ(), "RANK=6", "WORLD_SIZE=8", "LOCAL_RANK=2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(dir, "ready.6")); err == nil {
			break
		}
		if i == 600 {
			t.Fatal("rank.py never got ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
	code, out, errs := runCLI("stacks", "--local", "--json", "--node-name", "n7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var d node.Doc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.Schema != node.Schema || d.Node.LauncherName != "n7" || d.Node.BootID == "" {
		t.Errorf("document %+v", d.Node)
	}
	for _, p := range d.Processes {
		if p.PID == cmd.Process.Pid {
			if p.Rank != "rank6" || p.World != 8 || p.Hints.LocalRank == nil || *p.Hints.LocalRank != 2 {
				t.Errorf("rank %q world %d hints %+v", p.Rank, p.World, p.Hints)
			}
			return
		}
	}
	for _, f := range d.Failures {
		if f.PID == cmd.Process.Pid && f.Kind == node.FailPermission {
			t.Skipf("live capture not permitted here: %s", f.Error)
		}
	}
	t.Errorf("pid %d not in the document", cmd.Process.Pid)
}

func TestClusterStacksUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stacks", "--srun", "1", "--ssh", "a"}, "alternatives"},
		{[]string{"stacks", "--srun", "12;ls"}, "not a Slurm job id"},
		{[]string{"stacks", "--ssh", "-oProxyCommand=x"}, "not a host name"},
		{[]string{"stacks", "--hostfile", "/nonexistent/hostfile"}, "no such file"},
		{[]string{"stacks", "--ray", "ftp://x"}, "not a dashboard address"},
		{[]string{"stacks", "--ssh", "a", "--deadline", "0s"}, "--deadline"},
		{[]string{"stacks", "--ssh", "a", "-n", "ns"}, "go with --kube"},
		{[]string{"stacks", "--ssh", "a", "--copy-binary", "sometimes"}, "auto, always or never"},
		{[]string{"stacks", "--ssh", "a", "--remote-dir", "tmp"}, "absolute path"},
		{[]string{"stacks", "--ssh", "a", "--count", "3", "--interval", "10s"}, "raise --deadline"},
		{[]string{"stacks", "--srun", "1", "--node-name", "x"}, "collector's"},
	} {
		code, _, errs := runCLI(c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

func TestDiagnoseLogsUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"diagnose"}, "--srun JOBID"},
		{[]string{"diagnose", "--srun", "1", "--ray", "http://127.0.0.1:1"}, "alternatives"},
		{[]string{"diagnose", "--srun", "12;ls"}, "not a Slurm job id"},
		{[]string{"diagnose", "--srun", "12.0"}, "the job's, not a step's"},
		{[]string{"diagnose", "--ray", "ftp://x"}, "not a dashboard address"},
		{[]string{"diagnose", "--srun", "1", "--deadline", "0s"}, "--deadline"},
		{[]string{"diagnose", "--srun", "1", "-n", "ns"}, "go with --kube"},
		{[]string{"diagnose", "-c", "engine", "examples"}, "go with --kube"},
		{[]string{"diagnose", "--kube", "app=x", "--log-bytes", "12 parsecs"}, "--log-bytes"},
		{[]string{"diagnose", "--kube", "app=x", "--log-bytes", "10"}, "1KiB or more"},
	} {
		code, _, errs := runCLI(c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "512K": 512 << 10, "16MiB": 16 << 20, "16M": 16 << 20, "1G": 1 << 30, "2KiB": 2048} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "MiB", "1T", "99999999999999G"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("%q taken for a size", bad)
		}
	}
}

// diagnose --ray against a dashboard on loopback that fails: exit 2, the
// reason on stderr, nothing else of diagnose runs.
func TestDiagnoseRayUnreachable(t *testing.T) {
	code, out, errs := runCLI("diagnose", "--ray", "http://127.0.0.1:9", "--deadline", "2s")
	if code != ExitUsage || out != "" || !strings.Contains(errs, "ray: GET http://127.0.0.1:9/api/v0/nodes") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
