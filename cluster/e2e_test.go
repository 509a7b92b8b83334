package cluster_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/cluster"
	"github.com/bringup-tool/bringup/record"
	reportcluster "github.com/bringup-tool/bringup/report/cluster"
	"github.com/bringup-tool/bringup/stacks"
)

// The tests of this file run bringup against a real two-node Slurm
// cluster that scripts/cluster/slurm-up brings up on this machine (network,
// UTS, PID and mount namespaces per node; slurmctld, slurmd, munged and one
// sshd per node), a real two-node Ray cluster on it when a Ray virtual
// environment exists, and a kubectl STAND-IN. They need root and Debian's
// slurm and openssh packages; without them they skip with one line, unless
// BRINGUP_CLUSTER_TEST=require, which CI sets so that a broken bring-up
// fails instead of skipping.

type fixture struct {
	dir   string // slurm-up's directory (short: Ray's socket paths are limited)
	env   map[string]string
	bin   string // bringup, under DIR/hide: the nodes do not see it
	job   string
	ranks map[int]string // rank → "host pid" from the ranks' ready files
}

func skipOrFail(t *testing.T, format string, a ...any) {
	t.Helper()
	if os.Getenv("BRINGUP_CLUSTER_TEST") == "require" {
		t.Fatalf(format, a...)
	}
	t.Skipf(format, a...)
}

func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = strings.Trim(v, `"`)
		}
	}
	return env
}

// runLogged runs a script with its output in a log file (the daemons it
// starts inherit no pipe of ours) and returns the log's last line on
// failure.
func runLogged(dir, log string, timeout time.Duration, name string, args ...string) error {
	f, err := os.Create(log)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-done
		err = fmt.Errorf("did not finish within %s", timeout)
	}
	if err != nil {
		b, _ := os.ReadFile(log)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		return fmt.Errorf("%s: %v: %s", filepath.Base(name), err, lines[len(lines)-1])
	}
	return nil
}

func python(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		skipOrFail(t, "cluster test: no python3")
	}
	return strings.TrimSpace(string(out))
}

func up(t *testing.T) *fixture {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "cluster test: needs root (network namespaces, slurmd)")
	}
	py := python(t)
	dir, err := os.MkdirTemp("", "bt")
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs last: nothing of the cluster may be
	// left running.
	t.Cleanup(func() {
		if pids := leftovers(dir); len(pids) > 0 {
			t.Errorf("processes of the test cluster left running: %v", pids)
		}
		os.RemoveAll(dir)
	})
	scripts, _ := filepath.Abs(filepath.Join("..", "scripts", "cluster"))
	t.Cleanup(func() {
		if err := runLogged(dir, filepath.Join(os.TempDir(), "slurm-down.log"), time.Minute, filepath.Join(scripts, "slurm-down"), dir); err != nil {
			t.Errorf("slurm-down: %v", err)
		}
	})
	if err := runLogged(dir, filepath.Join(dir, "slurm-up.log"), 90*time.Second, filepath.Join(scripts, "slurm-up"), dir); err != nil {
		skipOrFail(t, "cluster test: %v", err)
	}
	f := &fixture{dir: dir, env: readEnv(t, filepath.Join(dir, "env")), ranks: map[int]string{}}
	f.bin = filepath.Join(f.env["BT_HIDE"], "bringup")
	build := exec.Command(goTool(), "build", "-o", f.bin, "./cmd/bringup")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// The job: 2 ranks on each node, rank 3 elsewhere than the others.
	ready := filepath.Join(dir, "ready")
	os.Mkdir(ready, 0o755)
	rankPy, _ := filepath.Abs(filepath.Join("testdata", "rank.py"))
	out, err := f.slurm("sbatch", "-N2", "--ntasks-per-node=2", "-o", filepath.Join(dir, "job.out"),
		"--wrap", fmt.Sprintf("srun %s %s %s 3", py, rankPy, ready)).Output()
	if err != nil {
		t.Fatalf("sbatch: %v", err)
	}
	m := regexp.MustCompile(`Submitted batch job (\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("sbatch printed %q", out)
	}
	f.job = string(m[1])
	t.Cleanup(func() { f.slurm("scancel", f.job).Run() })
	deadline := time.Now().Add(60 * time.Second)
	for r := 0; r < 4; r++ {
		for {
			b, err := os.ReadFile(filepath.Join(ready, fmt.Sprintf("ready.%d", r)))
			if err == nil {
				f.ranks[r] = strings.TrimSpace(string(b))
				break
			}
			if time.Now().After(deadline) {
				job, _ := os.ReadFile(filepath.Join(dir, "job.out"))
				t.Fatalf("rank %d never got ready; job output: %s", r, job)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return f
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

func (f *fixture) slurm(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+f.env["SLURM_CONF"])
	return cmd
}

// bringup runs the binary; env adds variables.
func (f *fixture) bringup(t *testing.T, env []string, args ...string) (stdout, stderr string, code int, took time.Duration) {
	t.Helper()
	cmd := exec.Command(f.bin, args...)
	cmd.Env = append(append(os.Environ(), "SLURM_CONF="+f.env["SLURM_CONF"]), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return o.String(), e.String(), code, took
}

func decode(t *testing.T, out string) reportcluster.Doc {
	t.Helper()
	var d reportcluster.Doc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	return d
}

// checkAllRanks: every rank of both nodes captured, with its node and pid
// as the rank itself wrote them, and bucketed: ranks 0-2 together in
// wait_for_peers across both nodes, rank 3 alone in compile_graph and
// named the outlier.
func (f *fixture) checkAllRanks(t *testing.T, d reportcluster.Doc, nodeOf func(host string) string) {
	t.Helper()
	got := map[string]*record.Process{}
	for _, p := range d.Processes {
		got[p.Rank] = p
	}
	for r := 0; r < 4; r++ {
		p := got[fmt.Sprintf("rank%d", r)]
		if p == nil {
			t.Errorf("rank %d missing; processes: %v", r, ranksOf(d))
			continue
		}
		host, pid, _ := strings.Cut(f.ranks[r], " ")
		if want := fmt.Sprintf("%s pid %s", nodeOf(host), pid); p.Path != want {
			t.Errorf("rank %d is %q, the rank says it is %q", r, p.Path, want)
		}
	}
	var wait, compile *stacks.Bucket
	for _, b := range d.Buckets {
		if len(b.Frames) > 0 && b.Frames[0].Func == "wait_for_peers" {
			wait = b
		}
		if len(b.Frames) > 0 && b.Frames[0].Func == "compile_graph" {
			compile = b
		}
	}
	if wait == nil || !slices.Equal(wait.Ranks, []string{"rank0", "rank1", "rank2"}) {
		t.Errorf("no bucket of ranks 0-2 in wait_for_peers: %+v", wait)
	}
	if compile == nil || !slices.Equal(compile.Ranks, []string{"rank3"}) {
		t.Errorf("no bucket of rank 3 in compile_graph: %+v", compile)
	}
	if len(d.Outliers) != 1 || d.Outliers[0].Rank != "rank3" {
		t.Errorf("outliers %+v, want rank3", d.Outliers)
	}
}

func ranksOf(d reportcluster.Doc) []string {
	var out []string
	for _, p := range d.Processes {
		out = append(out, p.Rank+"@"+p.Path)
	}
	return out
}

func checkNodes(t *testing.T, d reportcluster.Doc, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, n := range d.Cluster.Nodes {
		got[n.Name] = string(n.Status)
	}
	compareStatuses(t, got, want, d.Cluster.Nodes)
}

// compareStatuses: every node has the status wanted, and no other node
// answered; nodes is printed on a mismatch.
func compareStatuses(t *testing.T, got, want map[string]string, nodes any) {
	t.Helper()
	for name, st := range want {
		if got[name] != st {
			t.Errorf("node %s: status %q, want %q (nodes: %+v)", name, got[name], st, nodes)
		}
	}
	if len(got) != len(want) {
		t.Errorf("nodes %v, want %v", got, want)
	}
}

// onNode runs a command inside a node's namespaces.
func (f *fixture) onNode(node string, args ...string) ([]byte, error) {
	argv := append([]string{"-t", f.env["BT_INIT_"+node], "--net", "--uts", "--pid", "--mount", "--"}, args...)
	return exec.Command("nsenter", argv...).CombinedOutput()
}

// copies lists the copies of bringup in a node's private directory.
func (f *fixture) copies(t *testing.T, node string) []string {
	t.Helper()
	out, err := f.onNode(node, "sh", "-c", "ls "+f.env["BT_NODETMP"]+" | grep '^bringup\\.' || true")
	if err != nil {
		t.Fatalf("listing %s: %v %s", node, err, out)
	}
	return strings.Fields(string(out))
}

func (f *fixture) clearCopies(t *testing.T) {
	t.Helper()
	for _, n := range []string{"bt1", "bt2"} {
		if out, err := f.onNode(n, "sh", "-c", "rm -f "+f.env["BT_NODETMP"]+"/bringup.*"); err != nil {
			t.Fatalf("%s: %v %s", n, err, out)
		}
	}
}

// childNamed is the pid of a child of parent with that command name.
func childNamed(t *testing.T, parent, comm string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%s/task/%s/children", parent, parent))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range strings.Fields(string(b)) {
		name, _ := os.ReadFile("/proc/" + c + "/comm")
		if strings.TrimSpace(string(name)) == comm {
			n, _ := strconv.Atoi(c)
			return n
		}
	}
	t.Fatalf("no %s below pid %s", comm, parent)
	return 0
}

// leftovers lists the live processes whose command line or environment
// names dir.
func leftovers(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		for _, f := range []string{"cmdline", "environ"} {
			b, _ := os.ReadFile("/proc/" + e.Name() + "/" + f)
			if bytes.Contains(b, []byte(dir)) {
				stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
				if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
					break // a zombie its parent has not reaped yet
				}
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func TestTwoNodeCluster(t *testing.T) {
	f := up(t)
	nodetmp := "--remote-dir=" + f.env["BT_NODETMP"]
	same := func(host string) string { return host }

	t.Run("srun", func(t *testing.T) {
		out, stderr, code, took := f.bringup(t, nil, "stacks", "--srun", f.job, "--json", nodetmp)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		d := decode(t, out)
		checkNodes(t, d, map[string]string{"bt1": "ok", "bt2": "ok"})
		f.checkAllRanks(t, d, same)
		if d.Cluster.Partial || d.Cluster.Missing.World != 4 || len(d.Cluster.Missing.Ranks) != 0 {
			t.Errorf("missing %+v partial %v, want world 4 and nothing missing", d.Cluster.Missing, d.Cluster.Partial)
		}
		// The binary is hidden on the nodes: sbcast put a copy in each
		// node's private directory.
		for _, n := range []string{"bt1", "bt2"} {
			if c := f.copies(t, n); len(c) != 1 {
				t.Errorf("%s holds copies %v, want one from sbcast", n, c)
			}
		}
		t.Logf("gathered 2 nodes over srun in %s (binary copied with sbcast)", took.Round(time.Millisecond))
		_, _, _, took = f.bringup(t, nil, "stacks", "--srun", f.job, "--json", nodetmp)
		t.Logf("gathered 2 nodes over srun in %s (binary already there)", took.Round(time.Millisecond))
	})

	t.Run("srun_text", func(t *testing.T) {
		out, stderr, code, _ := f.bringup(t, nil, "stacks", "--srun", f.job, nodetmp)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		// The verdict (first) names rank 3, whatever words report/stacks uses.
		if first, _, _ := strings.Cut(out, "\n"); !regexp.MustCompile(`^verdict: .*rank ?3`).MatchString(first) {
			t.Errorf("verdict %q does not name rank 3", first)
		}
		for _, want := range []string{"nodes: 2 of 2 answered (srun)", "bt1  ok", "ranks 0-1", "ranks 2-3", "#1 · ranks 0-2 (3/4)"} {
			if !strings.Contains(out, want) {
				t.Errorf("report lacks %q:\n%s", want, out)
			}
		}
		out, stderr, code, _ = f.bringup(t, nil, "stacks", "--srun", f.job, "--collapsed", nodetmp)
		if code != 0 || !strings.Contains(out, ";wait_for_peers (") || !strings.HasSuffix(strings.TrimSpace(strings.Split(out, "\n")[0]), " 3") {
			t.Errorf("collapsed: exit %d %s\n%s", code, stderr, out)
		}
	})

	t.Run("srun_frozen_node", func(t *testing.T) {
		slurmd := childNamed(t, f.env["BT_INIT_bt2"], "slurmd")
		if err := syscall.Kill(slurmd, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Kill(slurmd, syscall.SIGCONT) })
		out, stderr, code, took := f.bringup(t, nil, "stacks", "--srun", f.job, "--json", "--deadline=3s", nodetmp)
		syscall.Kill(slurmd, syscall.SIGCONT)
		if code != 3 {
			t.Fatalf("exit %d, want 3 (partial): %s", code, stderr)
		}
		// The deadline is 3 s; srun alone would hang 20 s.
		if took > 8*time.Second {
			t.Errorf("took %s with a 3 s deadline", took)
		}
		d := decode(t, out)
		checkNodes(t, d, map[string]string{"bt1": "ok", "bt2": "timeout"})
		if !d.Cluster.Partial || !slices.Equal(d.Cluster.Missing.Ranks, []int{2, 3}) || !slices.Equal(d.Cluster.Missing.Nodes, []string{"bt2"}) {
			t.Errorf("missing %+v, want ranks 2,3 on bt2", d.Cluster.Missing)
		}
		if len(d.Processes) != 2 {
			t.Errorf("processes %v, want bt1's two ranks", ranksOf(d))
		}
		// The killed srun left nothing behind on this machine.
		if p := leftoverSrun(); len(p) > 0 {
			t.Errorf("srun still running after the deadline: %v", p)
		}
	})

	t.Run("ssh", func(t *testing.T) {
		f.clearCopies(t)
		out, stderr, code, took := f.bringup(t, nil, "stacks", "--ssh", "bt1,bt2", "--ssh-config", f.env["BT_SSH_CONFIG"], "--json", nodetmp)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		d := decode(t, out)
		checkNodes(t, d, map[string]string{"bt1": "ok", "bt2": "ok"})
		f.checkAllRanks(t, d, same)
		// Streamed over the ssh connection into each node.
		for _, n := range []string{"bt1", "bt2"} {
			if c := f.copies(t, n); len(c) != 1 {
				t.Errorf("%s holds copies %v, want the one streamed over ssh", n, c)
			}
		}
		t.Logf("gathered 2 nodes over ssh in %s (binary streamed)", took.Round(time.Millisecond))
	})

	t.Run("hostfile", func(t *testing.T) {
		hf := filepath.Join(f.dir, "hostfile")
		os.WriteFile(hf, []byte("# DeepSpeed style\nbt1 slots=2\nbt2 slots=2\n"), 0o644)
		out, stderr, code, _ := f.bringup(t, nil, "stacks", "--hostfile", hf, "--ssh-config", f.env["BT_SSH_CONFIG"], "--json", nodetmp)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		d := decode(t, out)
		checkNodes(t, d, map[string]string{"bt1": "ok", "bt2": "ok"})
		f.checkAllRanks(t, d, same)
	})

	t.Run("ssh_refused", func(t *testing.T) {
		// A port no sshd listens on, on the test node's own address.
		out, stderr, code, _ := f.bringup(t, nil, "stacks", "--ssh", "bt1,"+f.env["BT_ADDR_bt2"]+":2", "--ssh-config", f.env["BT_SSH_CONFIG"], "--json", nodetmp)
		if code != 3 {
			t.Fatalf("exit %d, want 3: %s", code, stderr)
		}
		d := decode(t, out)
		addr := f.env["BT_ADDR_bt2"] + ":2"
		checkNodes(t, d, map[string]string{"bt1": "ok", addr: "launch-error"})
		for _, n := range d.Cluster.Nodes {
			if n.Name == addr && (!strings.Contains(n.Detail, "Connection refused") || !strings.Contains(n.Fix, "no sshd")) {
				t.Errorf("refused node: detail %q fix %q", n.Detail, n.Fix)
			}
		}
	})

	t.Run("ssh_denied", func(t *testing.T) {
		// A key the nodes do not know: BatchMode fails at once, with the fix.
		cfg, _ := os.ReadFile(f.env["BT_SSH_CONFIG"])
		bad := filepath.Join(f.dir, "ssh", "config.badkey")
		os.WriteFile(bad, regexp.MustCompile(`IdentityFile \S+`).ReplaceAll(cfg, []byte("IdentityFile "+filepath.Join(f.dir, "ssh", "no-such-key"))), 0o600)
		_, stderr, code, _ := f.bringup(t, nil, "stacks", "--ssh", "bt1", "--ssh-config", bad, nodetmp)
		if code != 2 || !strings.Contains(stderr, "bt1: denied") || !strings.Contains(stderr, "Permission denied (publickey)") || !strings.Contains(stderr, "ssh-copy-id bt1") {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("collector_denied", func(t *testing.T) {
		// The collector as another user on bt1 cannot read the root-owned
		// ranks: each is a failure of kind permission with the fix.
		pub, err := os.MkdirTemp("", "btpub")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(pub) })
		os.Chmod(pub, 0o755)
		b, _ := os.ReadFile(f.bin)
		bin := filepath.Join(pub, "bringup")
		os.WriteFile(bin, b, 0o755)
		out, err := f.onNode("bt1", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "stacks", "--local", "--json", "--slurm-job", f.job)
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var d struct {
			Scope struct {
				Unreadable int `json:"unreadable_environ"`
			} `json:"scope"`
			Processes []any `json:"processes"`
			Failures  []struct {
				Kind  string `json:"kind"`
				Error string `json:"error"`
			} `json:"failures"`
		}
		if err := json.Unmarshal(out, &d); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		// With a job given, processes whose environment cannot be read are
		// not known to be the job's: counted, not captured.
		if len(d.Processes) != 0 || d.Scope.Unreadable < 2 {
			t.Errorf("as another user: %s", out)
		}
		out, err = f.onNode("bt1", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "stacks", "--local", "--json")
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if err := json.Unmarshal(out, &d); err != nil {
			t.Fatal(err)
		}
		if len(d.Failures) < 2 {
			t.Fatalf("failures %+v", d.Failures)
		}
		for _, fl := range d.Failures {
			if fl.Kind != "permission" || !strings.Contains(fl.Error, "CAP_SYS_PTRACE") {
				t.Errorf("failure %+v, want permission with the fix", fl)
			}
		}
	})

	t.Run("kube_standin", func(t *testing.T) {
		// A STAND-IN for kubectl (scripts/cluster/kubectl-standin), not a
		// Kubernetes cluster: get pods and exec mapped onto the nodes.
		env := f.kubeEnv(t)
		f.clearCopies(t)
		out, stderr, code, _ := f.bringup(t, env, "stacks", "--kube", "app=bringup-standin", "--json", nodetmp)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		d := decode(t, out)
		checkNodes(t, d, map[string]string{"engine-0": "ok", "engine-0-1": "ok"})
		pod := map[string]string{"bt1": "engine-0", "bt2": "engine-0-1"}
		f.checkAllRanks(t, d, func(h string) string { return pod[h] })
		for _, n := range d.Cluster.Nodes {
			if want := map[string]int{"engine-0": 0, "engine-0-1": 1}[n.Name]; n.NodeRank != want {
				t.Errorf("%s: node rank %d, want the LWS worker index %d", n.Name, n.NodeRank, want)
			}
		}
		for _, n := range []string{"bt1", "bt2"} {
			if c := f.copies(t, n); len(c) != 1 {
				t.Errorf("%s holds copies %v, want the one streamed over kubectl exec", n, c)
			}
		}
		_, stderr, code, _ = f.bringup(t, env, "stacks", "--kube", "app=bringup-standin", "-c", "sidecar", nodetmp)
		if code != 2 || !strings.Contains(stderr, "container not found") || !strings.Contains(stderr, "-c CONTAINER") {
			t.Errorf("wrong container: exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("diagnose_kube_standin", func(t *testing.T) {
		// diagnose --kube against the kubectl STAND-IN: each pod's
		// container log is a CRI file on its node, as the kubelet keeps
		// it. engine-0-1's container restarted after a real Python
		// traceback: the log from before the restart (--previous) has it.
		crash, _ := filepath.Abs(filepath.Join("testdata", "crash_rank.py"))
		out, err := f.onNode("bt2", "env", "RANK=1", python(t), crash, f.env["BT_NODETMP"], "1")
		if !strings.Contains(string(out), "RuntimeError: rank 1") {
			t.Fatalf("the rank did not fail: %v %s", err, out)
		}
		pods := f.env["BT_NODETMP"] + "/pods/"
		f.writeOnNode(t, "bt2", pods+"engine-0-1/engine/0.log", cri(out))
		f.writeOnNode(t, "bt2", pods+"engine-0-1/engine/1.log", cri([]byte("rank 1 starting on bt2\n")))
		f.writeOnNode(t, "bt1", pods+"engine-0/engine/0.log", cri([]byte("rank 0 starting on bt1\n")))
		stdout, stderr, code, _ := f.bringup(t, f.kubeEnv(t), "diagnose", "--kube", "app=bringup-standin", "--json")
		if code != 1 {
			t.Fatalf("exit %d, want 1: %s", code, stderr)
		}
		d := decodeDiagnosis(t, stdout)
		checkLogNodes(t, d, map[string]string{"engine-0": "ok", "engine-0-1": "ok"})
		checkNamed(t, d)
		line := slices.IndexFunc(strings.Split(string(out), "\n"), func(l string) bool { return strings.HasPrefix(l, "RuntimeError: rank 1") }) + 1
		if ev := firstEvidence(d); ev != fmt.Sprintf("engine-0-1/engine.previous.log:%d", line) || !strings.HasPrefix(d.Verdict, "FAILED") {
			t.Errorf("verdict %q, evidence %s: want the traceback of the container before its restart", d.Verdict, ev)
		}
		// The traceback's lines were joined into one record (kubectl logs
		// without --timestamps: every line of it has the same --prefix
		// bytes): the error has its four frames and where it was raised.
		if !strings.HasSuffix(d.RaisedIn, "crash_rank.py:19 read_shard") || len(d.Errors) == 0 || len(d.Errors[0].Frames) != 4 {
			t.Errorf("raised in %q, errors %+v: want the whole traceback, 4 frames, raised in read_shard", d.RaisedIn, d.Errors)
		}
	})

	t.Run("diagnose_srun", func(t *testing.T) {
		// A job whose rank 3, on bt2, fails with a real traceback while the
		// others wait. Its stdout (srun forwards every rank's) is a file
		// on a shared path; its stderr is %N-named in each node's private
		// directory, where srun -e puts each node's ranks' stderr.
		f.slurm("scancel", f.job).Run() // its CPUs
		waitIdle(t, f)
		ready := filepath.Join(f.dir, "logready")
		os.Mkdir(ready, 0o755)
		crash, _ := filepath.Abs(filepath.Join("testdata", "crash_rank.py"))
		errPattern := f.env["BT_NODETMP"] + "/logjob-%j-%N.err"
		out, err := f.slurm("sbatch", "-N2", "--ntasks-per-node=2", "--open-mode=append", "-o", filepath.Join(f.dir, "logjob-%j.out"), "-e", errPattern,
			"--wrap", fmt.Sprintf("srun -e %s --open-mode=append %s %s %s 3 100", errPattern, python(t), crash, ready)).Output()
		m := regexp.MustCompile(`Submitted batch job (\d+)`).FindSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("sbatch: %v %s", err, out)
		}
		job := string(m[1])
		t.Cleanup(func() { f.slurm("scancel", job).Run() })
		errOn := func(n string) string { return fmt.Sprintf("%s/logjob-%s-%s.err", f.env["BT_NODETMP"], job, n) }
		deadline := time.Now().Add(60 * time.Second)
		for {
			b, _ := f.onNode("bt2", "cat", errOn("bt2"))
			// Every rank's line in the shared stdout too: a file still
			// growing while it is gathered is read on the node (its print
			// here no longer matches), not here.
			o, _ := os.ReadFile(filepath.Join(f.dir, "logjob-"+job+".out"))
			if bytes.Contains(b, []byte("RuntimeError: rank 3")) && bytes.Count(o, []byte(" starting on ")) == 4 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("rank 3 never failed or a rank never started; bt2's stderr: %s; stdout: %s", b, o)
			}
			time.Sleep(100 * time.Millisecond)
		}

		stdout, stderr, code, took := f.bringup(t, nil, "diagnose", "--srun", job, "--json")
		if code != 1 {
			t.Fatalf("exit %d, want 1: %s", code, stderr)
		}
		d := decodeDiagnosis(t, stdout)
		checkLogNodes(t, d, map[string]string{"bt1": "ok", "bt2": "ok"})
		checkNamed(t, d)
		traceLine := grepLine(t, f, "bt2", errOn("bt2"), "RuntimeError: rank 3")
		if ev, want := firstEvidence(d), fmt.Sprintf("bt2/logjob-%s-bt2.err:%d", job, traceLine); ev != want || !strings.HasPrefix(d.Verdict, "FAILED") {
			t.Errorf("verdict %q, evidence %s, want %s", d.Verdict, ev, want)
		}
		// The shared stdout is read here, once, for the batch host.
		shared := fmt.Sprintf("logjob-%s.out", job)
		if lf := fileOf(d, "bt1", shared); lf == nil || !lf.ReadHere || fileOf(d, "bt2", shared) != nil {
			t.Errorf("shared stdout: bt1 %+v, bt2 %+v", lf, fileOf(d, "bt2", shared))
		}
		t.Logf("diagnosed 2 nodes' logs over srun in %s", took.Round(time.Millisecond))

		// Text: the verdict first, the nodes after it, no temporary path.
		text, _, code, _ := f.bringup(t, nil, "diagnose", "--srun", job)
		first, _, _ := strings.Cut(text, "\n")
		if code != 1 || !strings.HasPrefix(first, "FAILED") || strings.Contains(text, "bringup-logs-") {
			t.Errorf("exit %d:\n%s", code, text)
		}
		for _, want := range []string{"logs: 2 of 2 node(s) answered (srun)", "\n  bt2  ok ", fmt.Sprintf("bt2/logjob-%s-bt2.err:%d", job, traceLine)} {
			if !strings.Contains(text, want) {
				t.Errorf("report lacks %q:\n%s", want, text)
			}
		}

		// A cap smaller than bt2's stderr: its end is kept, and the
		// evidence line plus the line the copy starts at is the file's.
		stdout, stderr, code, _ = f.bringup(t, nil, "diagnose", "--srun", job, "--json", "--log-bytes=2KiB")
		if code != 1 {
			t.Fatalf("cut: exit %d: %s", code, stderr)
		}
		d = decodeDiagnosis(t, stdout)
		lf := fileOf(d, "bt2", fmt.Sprintf("logjob-%s-bt2.err", job))
		ev := d.Findings[0].Evidence[0]
		if lf == nil || lf.FromLine <= 1 || lf.Bytes > 2048 || int64(ev.Line)+lf.FromLine-1 != int64(traceLine) {
			t.Errorf("cut copy %+v, evidence line %d, the file's line %d", lf, ev.Line, traceLine)
		}

		// bt2's slurmd frozen: bt1's logs within the deadline, exit 3.
		slurmd := childNamed(t, f.env["BT_INIT_bt2"], "slurmd")
		if err := syscall.Kill(slurmd, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code, took = f.bringup(t, nil, "diagnose", "--srun", job, "--json", "--deadline=3s")
		syscall.Kill(slurmd, syscall.SIGCONT)
		if code != 3 || took > 8*time.Second {
			t.Fatalf("frozen node: exit %d in %s, want 3 within the deadline: %s", code, took, stderr)
		}
		d = decodeDiagnosis(t, stdout)
		checkLogNodes(t, d, map[string]string{"bt1": "ok", "bt2": "timeout"})
		if p := leftoverSrun(); len(p) > 0 {
			t.Errorf("srun still running after the deadline: %v", p)
		}
		if !d.Cluster.Partial || fileOf(d, "bt1", shared) == nil {
			t.Errorf("partial %v, bt1's files %+v", d.Cluster.Partial, d.Cluster.Nodes)
		}

		// The job ended: srun reaches no node; the shared file is still
		// read here, the node-private ones are said to be unreachable.
		f.slurm("scancel", job).Run()
		// A deadline only a stuck cluster reaches: a job stays listed
		// while its tasks are killed (up to KillWait, 30 s).
		for deadline := time.Now().Add(90 * time.Second); ; {
			q, _ := f.slurm("squeue", "-h", "-j", job).Output()
			if len(bytes.TrimSpace(q)) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s still queued: %s", job, q)
			}
			time.Sleep(100 * time.Millisecond)
		}
		stdout, stderr, code, _ = f.bringup(t, nil, "diagnose", "--srun", job, "--json")
		if code != 3 {
			t.Fatalf("ended job: exit %d, want 3: %s", code, stderr)
		}
		d = decodeDiagnosis(t, stdout)
		checkLogNodes(t, d, map[string]string{"bt1": "launch-error", "bt2": "launch-error"})
		if lf := fileOf(d, "bt1", shared); lf == nil || !lf.ReadHere {
			t.Errorf("ended job: the shared stdout not read here: %+v", d.Cluster.Nodes)
		}
		for _, n := range d.Cluster.Nodes {
			if !strings.Contains(n.Detail, "is CANCELLED: srun cannot reach "+n.Name) || !strings.Contains(n.Detail, errOn(n.Name)) {
				t.Errorf("%s: %q", n.Name, n.Detail)
			}
		}
	})

	t.Run("watch_srun", func(t *testing.T) {
		// bringup watch around `srun …` that allocates a job of its own:
		// the job is found from Slurm's AllocNode:Sid of the boot's srun
		// (--srun auto), the silence capture gathers both nodes through the
		// fan-out, and the verdict names the hang across them.
		f.slurm("scancel", f.job).Run() // its CPUs
		waitIdle(t, f)
		ready := filepath.Join(f.dir, "watchready")
		os.Mkdir(ready, 0o755)
		runDir := filepath.Join(f.dir, "watchrun")
		rankPy, _ := filepath.Abs(filepath.Join("testdata", "rank.py"))
		// The launcher prints until the 4 ranks are blocked: the silence
		// counts from then, however long srun and the interpreters took.
		launch, _ := filepath.Abs(filepath.Join("testdata", "launch.sh"))
		stdout, stderr, code, took := f.bringup(t, nil, "watch", "--srun", "auto", "--silence", "6s", "--on-silence", "stop",
			"--snapshots", "2", "--snapshot-interval", "500ms", "--grace", "5s", nodetmp,
			"--store", filepath.Join(f.dir, "watch.db"), "--run-dir", runDir,
			"--", "sh", launch, ready, "4", "srun", "-N2", "--ntasks-per-node=2", python(t), rankPy, ready, "3")
		out := stdout + stderr
		if code != 1 {
			t.Fatalf("exit %d, want 1 (hung), after %s:\n%s", code, took, out)
		}
		f.checkWatchCapture(t, runDir, ready, out)
		m := regexp.MustCompile(`job: (\d+), found from the job Slurm allocated for the boot's srun`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("watch does not say which job it found:\n%s", out)
		}
		verdict := regexp.MustCompile(`STUCK .*across 2 node\(s\) of srun job ` + m[1] + `: bt1,bt2`)
		if !verdict.MatchString(out) {
			t.Errorf("no verdict naming the hang across bt1,bt2 of job %s:\n%s", m[1], out)
		}
		if !strings.Contains(out, "nodes: 2 of 2 answered (srun)") {
			t.Errorf("the capture's report lacks the nodes:\n%s", out)
		}
		// The boot was stopped: the job is gone.
		if q, _ := f.slurm("squeue", "-h", "-j", m[1]).Output(); strings.Contains(string(q), " R ") {
			t.Errorf("job %s still running after watch: %s", m[1], q)
		}
		t.Logf("watch --srun auto: hung boot captured across 2 nodes; took %s; %s", took.Round(time.Millisecond), verdict.FindString(out))
	})

	t.Run("watch_srun_in_sbatch", func(t *testing.T) {
		// The usual shape: an sbatch script runs `bringup watch --srun
		// auto -- srun …` on the job's first node. The job is the
		// enclosing one (SLURM_JOB_ID of the boot's srun), and the silence
		// capture fans out from inside the node to both nodes.
		f.slurm("scancel", f.job).Run() // its CPUs
		waitIdle(t, f)
		bin := filepath.Join(f.dir, "bin", "bringup") // seen by the nodes
		os.MkdirAll(filepath.Dir(bin), 0o755)
		if b, err := os.ReadFile(f.bin); err != nil || os.WriteFile(bin, b, 0o755) != nil {
			t.Fatalf("copying bringup: %v", err)
		}
		ready := filepath.Join(f.dir, "sbready")
		os.Mkdir(ready, 0o755)
		runDir := filepath.Join(f.dir, "sbrun")
		rankPy, _ := filepath.Abs(filepath.Join("testdata", "rank.py"))
		launch, _ := filepath.Abs(filepath.Join("testdata", "launch.sh")) // the silence from the last rank blocked
		jobOut := filepath.Join(f.dir, "sbwatch.out")
		script := fmt.Sprintf("%s watch --srun auto --silence 6s --on-silence stop --snapshots 1 --grace 5s --store %s --run-dir %s -- sh %s %s 4 srun %s %s %s 3",
			bin, filepath.Join(f.dir, "sb.db"), runDir, launch, ready, python(t), rankPy, ready)
		out, err := f.slurm("sbatch", "-N2", "--ntasks-per-node=2", "-o", jobOut, "--wrap", script).Output()
		m := regexp.MustCompile(`Submitted batch job (\d+)`).FindSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("sbatch: %v %s", err, out)
		}
		job := string(m[1])
		t.Cleanup(func() { f.slurm("scancel", job).Run() })
		deadline := time.Now().Add(90 * time.Second)
		for {
			q, _ := f.slurm("squeue", "-h", "-j", job).Output()
			if len(bytes.TrimSpace(q)) == 0 {
				break
			}
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(jobOut)
				t.Fatalf("the job's watch never ended:\n%s", b)
			}
			time.Sleep(250 * time.Millisecond)
		}
		log, _ := os.ReadFile(jobOut)
		f.checkWatchCapture(t, runDir, ready, string(log))
		if !strings.Contains(string(log), "job: "+job+", found from SLURM_JOB_ID in the boot's environment") {
			t.Errorf("watch does not say it found job %s from SLURM_JOB_ID:\n%s", job, log)
		}
		if !regexp.MustCompile(`STUCK .*across 2 node\(s\) of srun job ` + job + `: bt1,bt2`).Match(log) {
			t.Errorf("no verdict naming the hang across bt1,bt2:\n%s", log)
		}
	})

	t.Run("watch_srun_jobid", func(t *testing.T) {
		// watch --srun JOBID around a command that is not the job's (here
		// one that prints nothing): the silence capture is the job's nodes'.
		waitIdle(t, f)
		ready := filepath.Join(f.dir, "idready")
		os.Mkdir(ready, 0o755)
		rankPy, _ := filepath.Abs(filepath.Join("testdata", "rank.py"))
		out, err := f.slurm("sbatch", "-N2", "--ntasks-per-node=2", "-o", filepath.Join(f.dir, "idjob.out"),
			"--wrap", fmt.Sprintf("srun %s %s %s 3", python(t), rankPy, ready)).Output()
		m := regexp.MustCompile(`Submitted batch job (\d+)`).FindSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("sbatch: %v %s", err, out)
		}
		job := string(m[1])
		t.Cleanup(func() { f.slurm("scancel", job).Run() })
		for r, deadline := 0, time.Now().Add(60*time.Second); r < 4; {
			if _, err := os.Stat(filepath.Join(ready, fmt.Sprintf("ready.%d", r))); err == nil {
				r++
				continue
			}
			if time.Now().After(deadline) {
				t.Fatalf("rank %d never got ready", r)
			}
			time.Sleep(100 * time.Millisecond)
		}
		runDir := filepath.Join(f.dir, "idrun")
		stdout, stderr, code, _ := f.bringup(t, nil, "watch", "--srun", job, "--silence", "2s", "--on-silence", "stop",
			"--snapshots", "1", nodetmp, "--store", filepath.Join(f.dir, "id.db"), "--run-dir", runDir, "--", "sleep", "60")
		if code != 1 {
			t.Fatalf("exit %d, want 1 (hung):\n%s%s", code, stdout, stderr)
		}
		b, err := os.ReadFile(filepath.Join(runDir, "silence-1.stacks.json"))
		if err != nil {
			t.Fatalf("no capture: %v\n%s%s", err, stdout, stderr)
		}
		d := decode(t, string(b))
		checkNodes(t, d, map[string]string{"bt1": "ok", "bt2": "ok"})
		if len(d.Processes) != 4 || len(d.Outliers) != 1 || d.Outliers[0].Rank != "rank3" {
			t.Errorf("processes %v, outliers %+v: want 4 ranks, rank 3 the outlier", ranksOf(d), d.Outliers)
		}
		if !strings.Contains(stdout+stderr, "across 2 node(s) of srun job "+job+": bt1,bt2") {
			t.Errorf("the verdict does not name the nodes:\n%s%s", stdout, stderr)
		}
	})

	t.Run("srun_torchrun_gloo", func(t *testing.T) {
		// The testbed's stuck_rank scenario as a real two-node torch boot:
		// `srun torchrun --nnodes 2` over gloo, rank 1 stuck in compile,
		// rank 0 waiting for it in all_reduce.
		venv := os.Getenv("BRINGUP_TESTBED_VENV")
		if venv == "" {
			home, _ := os.UserHomeDir()
			venv = filepath.Join(home, ".cache", "bringup", "testbed", "venv")
		}
		scenario, _ := filepath.Abs(filepath.Join("..", "scripts", "testbed", "scenarios", "stuck_rank.py"))
		if _, err := os.Stat(filepath.Join(venv, "bin", "torchrun")); err != nil {
			t.Skipf("torchrun test: no testbed at %s (scripts/testbed; BRINGUP_TESTBED_VENV names another)", venv)
		}
		if _, err := os.Stat(scenario); err != nil {
			t.Skipf("torchrun test: no %s", scenario)
		}
		// The nodes' CPUs are the first job's: end it.
		f.slurm("scancel", f.job).Run()
		waitIdle(t, f)
		markers := filepath.Join(f.dir, "markers")
		os.Mkdir(markers, 0o755)
		run := fmt.Sprintf("export GLOO_SOCKET_IFNAME=%s TESTBED_MARKERS=%s OMP_NUM_THREADS=1 TORCHINDUCTOR_COMPILE_THREADS=1 "+
			"TORCHINDUCTOR_CACHE_DIR=%s/inductor; srun %s --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint %s:29500 --rdzv-id bt %s",
			f.env["BT_IFNAME"], markers, f.env["BT_NODETMP"], filepath.Join(venv, "bin", "torchrun"), f.env["BT_ADDR_bt1"], scenario)
		out, err := f.slurm("sbatch", "-N2", "--ntasks-per-node=1", "-o", filepath.Join(f.dir, "torch.out"), "--wrap", run).Output()
		m := regexp.MustCompile(`Submitted batch job (\d+)`).FindSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("sbatch: %v %s", err, out)
		}
		job := string(m[1])
		t.Cleanup(func() { f.slurm("scancel", job).Run() })
		deadline := time.Now().Add(300 * time.Second) // under go test ./... on 2 cores the compile alone can pass 150 s
		for _, mk := range []string{"rank1-in-compile", "rank0-in-all_reduce"} {
			for {
				if _, err := os.Stat(filepath.Join(markers, mk)); err == nil {
					break
				}
				q, _ := f.slurm("squeue", "-h", "-j", job).Output()
				if time.Now().After(deadline) || len(bytes.TrimSpace(q)) == 0 {
					b, _ := os.ReadFile(filepath.Join(f.dir, "torch.out"))
					t.Fatalf("%s never came; job output:\n%s", mk, b)
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
		out2, stderr, code, took := f.bringup(t, nil, "stacks", "--srun", job, "--json", nodetmp, "--deadline=30s")
		if code != 0 && code != 1 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		d := decode(t, string(out2))
		checkNodes(t, d, map[string]string{"bt1": "ok", "bt2": "ok"})
		nodeOf := map[string]string{}
		agents := 0
		for _, p := range d.Processes {
			node, _, _ := strings.Cut(p.Path, " pid ")
			switch {
			case p.Rank == "rank0" || p.Rank == "rank1":
				nodeOf[p.Rank] = node
			case strings.Contains(p.Name, "torchrun"):
				agents++
				// The agent's Slurm task id is no torch rank.
				if strings.HasPrefix(p.Rank, "rank") {
					t.Errorf("torchrun agent named %q", p.Rank)
				}
			}
		}
		if nodeOf["rank0"] == "" || nodeOf["rank1"] == "" || nodeOf["rank0"] == nodeOf["rank1"] || agents != 2 {
			t.Errorf("ranks on %v, %d agents; want rank 0 and rank 1 on the two nodes and two agents: %v", nodeOf, agents, ranksOf(d))
		}
		if d.Cluster.Missing.World != 2 || len(d.Cluster.Missing.Ranks) != 0 {
			t.Errorf("missing %+v", d.Cluster.Missing)
		}
		var inReduce, inCompile bool
		for _, b := range d.Buckets {
			if !b.Primary || len(b.Frames) == 0 {
				continue
			}
			if b.Frames[0].Func == "all_reduce" && slices.Equal(b.Ranks, []string{"rank0"}) {
				inReduce = true
			}
			for _, fr := range b.Frames {
				if strings.Contains(fr.File, "_dynamo") && slices.Contains(b.Ranks, "rank1") {
					inCompile = true
				}
			}
		}
		if !inReduce || !inCompile {
			t.Errorf("rank 0 in all_reduce %v, rank 1 in Dynamo %v; findings %v", inReduce, inCompile, d.Findings)
		}
		t.Logf("gathered a 2-node srun torchrun (gloo) boot in %s; verdict: %s", took.Round(time.Millisecond), d.Verdict)
	})

	t.Run("ray", func(t *testing.T) {
		venv := os.Getenv("BRINGUP_RAY_VENV")
		if venv == "" {
			home, _ := os.UserHomeDir()
			venv = filepath.Join(home, ".cache", "bringup", "ray-venv")
		}
		if _, err := os.Stat(filepath.Join(venv, "bin", "ray")); err != nil {
			t.Skipf("ray test: no Ray at %s (scripts/cluster/ray-venv %s makes one; BRINGUP_RAY_VENV names another)", venv, venv)
		}
		scripts, _ := filepath.Abs(filepath.Join("..", "scripts", "cluster"))
		t.Cleanup(func() {
			runLogged(f.dir, filepath.Join(f.dir, "ray-down.log"), time.Minute, filepath.Join(scripts, "ray-down"), f.dir)
		})
		// ray-up gives the head 300 s; the worker's start comes after it.
		if err := runLogged(f.dir, filepath.Join(f.dir, "ray-up.log"), 420*time.Second, filepath.Join(scripts, "ray-up"), f.dir, venv); err != nil {
			t.Fatal(err)
		}
		re := readEnv(t, filepath.Join(f.dir, "ray.env"))
		// The driver runs in the head's PID namespace and ends with it.
		ready := filepath.Join(f.dir, "ray.ready")
		script, _ := filepath.Abs(filepath.Join("testdata", "ray_ranks.py"))
		log, _ := os.Create(filepath.Join(f.dir, "log", "ray-driver.out"))
		defer log.Close()
		drv := exec.Command("nsenter", "-t", re["RAY_HEAD_INIT"], "--pid", "--mount", "--",
			filepath.Join(venv, "bin", "python"), script, re["RAY_GCS"], ready, "bthead", "btw1", "--fail", "btw1")
		drv.Stdout, drv.Stderr = log, log
		if err := drv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { drv.Process.Kill(); drv.Wait() })
		deadline := time.Now().Add(240 * time.Second) // only a broken cluster reaches it: two actors start on loaded cores
		for {
			if _, err := os.Stat(ready); err == nil {
				break
			}
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(filepath.Join(f.dir, "log", "ray-driver.out"))
				t.Fatalf("the Ray driver never got ready: %s", b)
			}
			time.Sleep(200 * time.Millisecond)
		}
		out, stderr, code, took := f.bringup(t, nil, "stacks", "--ray", re["RAY_DASHBOARD"], "--json", "--deadline=30s")
		if code != 0 && code != 1 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		d := decode(t, out)
		headIP, workerIP := f.env["BT_HEAD_ADDR"], f.env["BT_ADDR_bt1"]
		checkNodes(t, d, map[string]string{headIP: "ok", workerIP: "ok"})
		waiting := map[string]bool{}
		for _, p := range d.Processes {
			for _, th := range p.Threads {
				if len(th.Frames) > 0 && th.Frames[0].Func == "Rank.wait_for_peers" || len(th.Frames) > 0 && th.Frames[0].Func == "wait_for_peers" {
					node, _, _ := strings.Cut(p.Path, " pid ")
					waiting[node] = true
				}
			}
		}
		if !waiting[headIP] || !waiting[workerIP] {
			t.Errorf("actors in wait_for_peers on %v, want both nodes; processes %v", waiting, ranksOf(d))
		}
		t.Logf("gathered 2 Ray nodes in %s", took.Round(time.Millisecond))

		// The actor on bt1 logged a traceback into its worker's stderr
		// there; the dashboard's log API reaches it.
		out, stderr, code, took = f.bringup(t, nil, "diagnose", "--ray", re["RAY_DASHBOARD"], "--json")
		if code != 1 {
			t.Fatalf("diagnose --ray: exit %d, want 1: %s", code, stderr)
		}
		dd := decodeDiagnosis(t, out)
		checkLogNodes(t, dd, map[string]string{headIP: "ok", workerIP: "ok"})
		checkNamed(t, dd)
		if ev := firstEvidence(dd); !strings.HasPrefix(ev, workerIP+"/worker-") || !strings.Contains(ev, ".err:") || !strings.HasPrefix(dd.Verdict, "FAILED") {
			t.Errorf("verdict %q, evidence %s: want the worker's stderr on %s", dd.Verdict, ev, workerIP)
		}
		t.Logf("diagnosed 2 Ray nodes' logs in %s", took.Round(time.Millisecond))
	})
}

// waitIdle waits until both nodes are idle (the jobs before have ended).
// checkWatchCapture: watch's first silence capture in runDir is the
// merged report of both nodes, with every rank of the job whose ranks
// wrote their ready files into ready; out is watch's output, for the
// failure message.
func (f *fixture) checkWatchCapture(t *testing.T, runDir, ready, out string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "silence-1.stacks.json"))
	if err != nil {
		t.Fatalf("no capture: %v\n%s", err, out)
	}
	d := decode(t, string(b))
	checkNodes(t, d, map[string]string{"bt1": "ok", "bt2": "ok"})
	g := *f
	g.ranks = map[int]string{}
	for r := 0; r < 4; r++ {
		rb, err := os.ReadFile(filepath.Join(ready, fmt.Sprintf("ready.%d", r)))
		if err != nil {
			t.Fatalf("rank %d never got ready: %v\n%s", r, err, out)
		}
		g.ranks[r] = strings.TrimSpace(string(rb))
	}
	g.checkAllRanks(t, d, func(host string) string { return host })
}

func waitIdle(t *testing.T, f *fixture) {
	t.Helper()
	// A deadline only a stuck cluster reaches: a node stays completing
	// while the tasks of the job before are killed (up to KillWait, 30 s).
	for deadline := time.Now().Add(90 * time.Second); ; {
		out, _ := f.slurm("sinfo", "-h", "-N", "-o", "%N %T").Output()
		if strings.Count(string(out), " idle") == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodes not idle: %s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeOnNode writes a file inside a node's mount namespace.
func (f *fixture) writeOnNode(t *testing.T, node, path string, data []byte) {
	t.Helper()
	cmd := exec.Command("nsenter", "-t", f.env["BT_INIT_"+node], "--mount", "--", "sh", "-c", `mkdir -p "$(dirname "$1")" && cat >"$1"`, "sh", path)
	cmd.Stdin = bytes.NewReader(data)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writing %s on %s: %v %s", path, node, err, out)
	}
}

// grepLine is the number of the first line of a file on a node that holds text.
func grepLine(t *testing.T, f *fixture, node, path, text string) int {
	t.Helper()
	b, err := f.onNode(node, "cat", path)
	if err != nil {
		t.Fatalf("%s: %v %s", path, err, b)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, text) {
			return i + 1
		}
	}
	t.Fatalf("%s on %s has no %q", path, node, text)
	return 0
}

// cri writes output as a kubelet keeps a container's log: one "TIME
// stderr F LINE" per line.
func cri(output []byte) []byte {
	var b bytes.Buffer
	for _, l := range strings.Split(strings.TrimRight(string(output), "\n"), "\n") {
		fmt.Fprintf(&b, "%s stderr F %s\n", time.Now().UTC().Format(time.RFC3339Nano), l)
	}
	return b.Bytes()
}

// kubeEnv puts the kubectl stand-in on PATH.
func (f *fixture) kubeEnv(t *testing.T) []string {
	t.Helper()
	kbin := filepath.Join(f.dir, "kbin")
	os.Mkdir(kbin, 0o755)
	standin, _ := filepath.Abs(filepath.Join("..", "scripts", "cluster", "kubectl-standin"))
	os.Symlink(standin, filepath.Join(kbin, "kubectl"))
	return []string{"PATH=" + kbin + ":" + os.Getenv("PATH"), "BRINGUP_STANDIN_ENV=" + filepath.Join(f.dir, "env")}
}

func decodeDiagnosis(t *testing.T, out string) reportcluster.DiagnosisDoc {
	t.Helper()
	var d reportcluster.DiagnosisDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Doc == nil {
		t.Fatalf("output is not a diagnosis: %v\n%s", err, out)
	}
	return d
}

func checkLogNodes(t *testing.T, d reportcluster.DiagnosisDoc, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, n := range d.Cluster.Nodes {
		got[n.Name] = string(n.Status)
	}
	compareStatuses(t, got, want, d.Cluster.Nodes)
}

// checkNamed: every input and every evidence line is named NODE/FILE,
// never by the temporary directory the logs were gathered in.
func checkNamed(t *testing.T, d reportcluster.DiagnosisDoc) {
	t.Helper()
	dirs := map[string]bool{}
	for _, n := range d.Cluster.Nodes {
		dirs[n.Dir] = true
	}
	named := func(p string) bool {
		dir, _, ok := strings.Cut(p, "/")
		return ok && dirs[dir]
	}
	for _, in := range d.Inputs {
		if !named(in.Path) {
			t.Errorf("input %q not named by its node", in.Path)
		}
	}
	for _, f := range d.Findings {
		for _, e := range f.Evidence {
			if !named(e.Path) {
				t.Errorf("evidence %s:%d not named by its node", e.Path, e.Line)
			}
		}
	}
}

func firstEvidence(d reportcluster.DiagnosisDoc) string {
	if len(d.Findings) == 0 || len(d.Findings[0].Evidence) == 0 {
		return "(none)"
	}
	e := d.Findings[0].Evidence[0]
	return fmt.Sprintf("%s:%d", e.Path, e.Line)
}

// fileOf is a node's copy named name, nil when the node gave none.
func fileOf(d reportcluster.DiagnosisDoc, node, name string) *cluster.LogFile {
	for _, n := range d.Cluster.Nodes {
		if n.Name != node {
			continue
		}
		for i := range n.Files {
			if n.Files[i].Name == name {
				return &n.Files[i]
			}
		}
	}
	return nil
}

// leftoverSrun lists srun processes of the gathers still alive.
func leftoverSrun() []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if bytes.HasPrefix(b, []byte("srun\x00")) && (bytes.Contains(b, []byte("--job-name=bringup-stacks")) || bytes.Contains(b, []byte("--job-name=bringup-logs"))) {
			n, _ := strconv.Atoi(e.Name())
			out = append(out, n)
		}
	}
	return out
}
