package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/bringup-tool/bringup/pyproc"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/ingest/stackdump"
	"github.com/bringup-tool/bringup/record"
)

func ip(n int) *int { return &n }

func TestParseEnviron(t *testing.T) {
	env := []byte("PATH=/usr/bin\x00RANK=3\x00LOCAL_RANK=1\x00WORLD_SIZE=8\x00LOCAL_WORLD_SIZE=2\x00GROUP_RANK=1\x00" +
		"SLURM_JOB_ID=4242\x00SLURM_STEP_ID=0\x00SLURM_PROCID=1\x00SLURM_LOCALID=1\x00SLURM_NODEID=0\x00SLURM_STEP_NUM_TASKS=2\x00" +
		"LWS_WORKER_INDEX=1\x00JOB_COMPLETION_INDEX=5\x00SECRET_TOKEN=abc\x00")
	h := ParseEnviron(env)
	want := Hints{Rank: ip(3), LocalRank: ip(1), WorldSize: ip(8), LocalWorldSize: ip(2), GroupRank: ip(1),
		SlurmJobID: "4242", SlurmStepID: "0", SlurmProcID: ip(1), SlurmLocalID: ip(1), SlurmNodeID: ip(0), SlurmStepTasks: ip(2),
		LWSWorkerIndex: ip(1), JobIndex: ip(5)}
	if h.Describe() != want.Describe() || h.SlurmJobID != "4242" || h.SlurmStepID != "0" || *h.JobIndex != 5 || *h.SlurmStepTasks != 2 {
		t.Errorf("got %+v", h)
	}
	// Nothing but the hints is kept.
	if b, _ := json.Marshal(h); bytes.Contains(b, []byte("abc")) || bytes.Contains(b, []byte("/usr/bin")) {
		t.Errorf("a variable that is no hint was kept: %s", b)
	}
	// Not numbers, negative numbers, control characters: left out.
	h = ParseEnviron([]byte("RANK=x\x00WORLD_SIZE=-1\x00SLURM_JOB_ID=1\n2\x00LOCAL_RANK= 2 \x00=3\x00junk"))
	if h.Rank != nil || h.WorldSize != nil || h.SlurmJobID != "" || h.LocalRank == nil || *h.LocalRank != 2 {
		t.Errorf("got %+v", h)
	}
}

func FuzzParseEnviron(f *testing.F) {
	f.Add([]byte("RANK=3\x00WORLD_SIZE=8\x00SLURM_JOB_ID=4242\x00"))
	f.Add([]byte("=\x00RANK==\x00\x00"))
	if b, err := os.ReadFile("/proc/self/environ"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, env []byte) {
		h := ParseEnviron(env)
		for _, v := range []*int{h.Rank, h.LocalRank, h.WorldSize, h.SlurmProcID, h.LWSWorkerIndex} {
			if v != nil && *v < 0 {
				t.Fatalf("negative hint %d", *v)
			}
		}
		if strings.ContainsAny(h.SlurmJobID+h.SlurmStepID, "\x00\n\r") || len(h.SlurmJobID) > 64 {
			t.Fatalf("unclean id %q", h.SlurmJobID)
		}
	})
}

func proc(pid int, title string, h Hints) Process {
	p := Process{Process: record.Process{PID: pid, Name: title, RankInfo: record.NoRank}, Hints: h}
	if title != "" { // as stacks/live reads a title
		p.RankInfo = stackdump.RankFromTitle(title)
		p.Rank = p.RankInfo.Key()
	}
	return p
}

func TestResolveRanks(t *testing.T) {
	procs := []Process{
		// torchrun worker: RANK wins over the Slurm task id it inherited.
		proc(10, "", Hints{Rank: ip(5), WorldSize: ip(8), SlurmJobID: "7", SlurmStepID: "0", SlurmProcID: ip(1)}),
		// torchrun's agent in the same step: its task id is no rank.
		proc(11, "", Hints{SlurmJobID: "7", SlurmStepID: "0", SlurmProcID: ip(1), SlurmStepTasks: ip(2)}),
		// an engine worker named by its title.
		proc(12, "VLLM::Worker_TP3", Hints{}),
		// a task of a plain srun step.
		proc(13, "", Hints{SlurmJobID: "7", SlurmStepID: "1", SlurmProcID: ip(2), SlurmStepTasks: ip(4)}),
		// a Python batch script: SLURM_PROCID=0 but no step.
		proc(14, "", Hints{SlurmJobID: "7", SlurmProcID: ip(0)}),
		proc(15, "", Hints{}),
	}
	// stacks/live names a process by PMI_RANK (srun sets it for every
	// task, torchrun's agent too) or OMPI_COMM_WORLD_RANK: not the hints'.
	for _, pid := range []int{11, 13, 15} {
		for i := range procs {
			if procs[i].PID == pid {
				procs[i].RankInfo.Global = 1
				procs[i].Rank = procs[i].RankInfo.Key()
			}
		}
	}
	ResolveRanks(procs)
	want := []struct {
		rank, from string
		world      int
	}{{"rank5", FromRANK, 8}, {"", FromNobody, 0}, {"TP3", FromTitle, 0}, {"rank2", FromSlurm, 4}, {"", FromNobody, 0}, {"", FromNobody, 0}}
	for i, w := range want {
		p := procs[i]
		if p.Rank != w.rank || p.RankFrom != w.from || p.World != w.world {
			t.Errorf("pid %d: rank %q from %q world %d; want %q from %q world %d", p.PID, p.Rank, p.RankFrom, p.World, w.rank, w.from, w.world)
		}
	}
}

func TestDecode(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "bt2.json"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decode(good, "node bt2")
	if err != nil {
		t.Fatal(err)
	}
	if d.Node.Hostname != "bt2" || d.Node.PIDNamespace == 0 || len(d.Processes) != 2 || d.Processes[0].Rank != "rank2" ||
		d.Processes[0].Hints.SlurmProcID == nil || len(d.Processes[0].Threads) == 0 {
		t.Errorf("decoded %+v", d)
	}
	for _, c := range []struct{ in, want string }{
		{"", "printed nothing"},
		{"Welcome to node bt2\n{}", "not JSON"},
		{`{"schema":"bringup.stacks/v1"}`, `schema "bringup.stacks/v1"`},
		{`{"schema":"bringup.node-stacks/v1","processes":[{"pid":0}]}`, "pid 0"},
		{`{"schema":"bringup.node-stacks/v1"} {}`, "continues after"},
		{`{"schema":"bringup.node-stacks/v1",`, "JSON"},
		{`{"schema":"bringup.node-stacks/v1","processes":[{"pid":"x"}]}`, "JSON"},
	} {
		_, err := Decode([]byte(c.in), "node bt2")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "node bt2: ") {
			t.Errorf("Decode(%q) = %v, want an error naming the node and %q", c.in, err, c.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	good, err := os.ReadFile(filepath.Join("testdata", "bt2.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"schema":"bringup.node-stacks/v1","processes":null,"failures":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Decode(b, "fuzz")
		if err != nil {
			return
		}
		if d.Schema != Schema || d.Processes == nil || d.Failures == nil {
			t.Fatalf("accepted %+v", d)
		}
		for _, p := range d.Processes {
			if p.PID <= 0 {
				t.Fatalf("accepted pid %d", p.PID)
			}
		}
		var buf bytes.Buffer
		if err := Write(&buf, d); err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(buf.Bytes(), "again"); err != nil {
			t.Fatalf("a written document does not decode: %v", err)
		}
	})
}

// startRank runs ../testdata/rank.py with env and extra arguments and
// returns its pid once it is blocked.
func startRank(t *testing.T, env []string, title string) int {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	args := []string{filepath.Join("..", "testdata", "rank.py"), dir, "-1"}
	if title != "" {
		args = append(args, title)
	}
	cmd := exec.Command(py, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	rank := "0"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "RANK="); ok {
			rank = v
		} else if v, ok := strings.CutPrefix(kv, "SLURM_PROCID="); ok && rank == "0" {
			rank = v
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(dir, "ready."+rank)); err == nil {
			return cmd.Process.Pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("rank.py never got ready")
	return 0
}

// Real processes: every Python process of a Slurm job is found, with its
// hints and rank, the node's identity is this machine's, and processes of
// other jobs and of the collector's own step are left out.
func TestCollectSlurmJob(t *testing.T) {
	job := fmt.Sprintf("9%d", os.Getpid())
	a := startRank(t, []string{"SLURM_JOB_ID=" + job, "SLURM_STEP_ID=0", "SLURM_PROCID=1", "SLURM_STEP_NUM_TASKS=2", "RANK=1", "WORLD_SIZE=2"}, "")
	b := startRank(t, []string{"SLURM_JOB_ID=" + job, "SLURM_STEP_ID=0", "SLURM_PROCID=0", "SLURM_STEP_NUM_TASKS=2"}, "VLLM::Worker_TP0")
	other := startRank(t, []string{"SLURM_JOB_ID=1" + job, "SLURM_STEP_ID=0", "SLURM_PROCID=0"}, "")
	own := startRank(t, []string{"SLURM_JOB_ID=" + job, "SLURM_STEP_ID=5", "SLURM_PROCID=0"}, "")
	t.Setenv("SLURM_JOB_ID", job)
	t.Setenv("SLURM_STEP_ID", "5") // as if the collector ran in step 5

	d, err := Collect(Options{SlurmJob: job, LauncherName: "n1", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range d.Failures {
		if f.Kind == FailPermission {
			t.Skipf("live capture not permitted here: %s", f.Error)
		}
	}
	got := map[int]Process{}
	for _, p := range d.Processes {
		got[p.PID] = p
	}
	if p := got[a]; p.Rank != "rank1" || p.RankFrom != FromRANK || p.World != 2 || p.Hints.SlurmProcID == nil || len(p.Threads) == 0 {
		t.Errorf("RANK process: %+v", p)
	}
	if p := got[b]; p.Rank != "TP0" || p.RankFrom != FromTitle {
		t.Errorf("titled process: rank %q from %q", p.Rank, p.RankFrom)
	}
	if _, ok := got[other]; ok {
		t.Error("a process of another job was captured")
	}
	if _, ok := got[own]; ok {
		t.Error("a process of the collector's own step was captured")
	}
	if len(d.Processes) != 2 || d.Scope.Python != 2 || d.Scope.SkippedStep != "5" {
		t.Errorf("scope %+v, processes %d", d.Scope, len(d.Processes))
	}
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if d.Node.Hostname != host || d.Node.BootID != strings.TrimSpace(string(boot)) || d.Node.PIDNamespace == 0 ||
		d.Node.LauncherName != "n1" || d.Node.UID != os.Getuid() || d.Node.FinishedAt.Before(d.Node.CapturedAt) {
		t.Errorf("identity %+v", d.Node)
	}
	// The document survives its own reader.
	var buf bytes.Buffer
	if err := Write(&buf, d); err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(buf.Bytes(), "self"); err != nil {
		t.Fatal(err)
	}
}

// Without a job every Python process of the node is captured.
func TestCollectEveryPython(t *testing.T) {
	a := startRank(t, []string{"RANK=4"}, "")
	d, err := Collect(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Processes {
		if p.PID == a {
			if p.Rank != "rank4" {
				t.Errorf("rank %q", p.Rank)
			}
			return
		}
	}
	for _, f := range d.Failures {
		if f.PID == a && f.Kind == FailPermission {
			t.Skipf("live capture not permitted here: %s", f.Error)
		}
	}
	t.Errorf("pid %d not captured; failures %+v", a, d.Failures)
}

func TestPythonNames(t *testing.T) {
	for s, want := range map[string]bool{
		"python3": true, "python3.12": true, "libpython3.12.so.1.0": true, "python3.13t": true,
		"bash": false, "pythonista": false, "python2.7": false, "mypython3": false,
	} {
		if pyproc.IsPythonFile(s) != want {
			t.Errorf("%s: %v", s, !want)
		}
	}
	maps := []byte("7f00-7f01 r--p 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0\n")
	if !pyproc.MapsPython(maps) || pyproc.MapsPython([]byte("7f00-7f01 r--p 0 0 0 /usr/lib/libc.so.6\n")) {
		t.Error("mapsPython")
	}
	if !isPythonName("/usr/bin/python3.11 -m vllm") || isPythonName("VLLM::Worker_TP3") {
		t.Error("isPythonName")
	}
}
