package cluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The job of a real scontrol recording: allocated from localhost, in
// session 15940.
func TestParseAllocJobs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "slurm", "show-job.txt"))
	if err != nil {
		t.Fatal(err)
	}
	jobs := ParseAllocJobs(b)
	if len(jobs) == 0 || jobs[0] != (AllocJob{ID: "1", State: "RUNNING", AllocNode: "localhost", Sid: 15940}) {
		t.Fatalf("jobs %+v", jobs)
	}
	if !jobs[0].sessionMatches("some-other-name", 15940) {
		t.Error("a job allocated from localhost is not taken for this machine's")
	}
	if jobs[0].sessionMatches("x", 15941) {
		t.Error("another session matched")
	}
	// in a container both sides read session 0 (CI ran so)
	inContainer := AllocJob{ID: "3", State: "RUNNING", AllocNode: "localhost", Sid: 0}
	if !inContainer.sessionMatches("vm", 0) {
		t.Error("session 0 on both sides (a container) did not match")
	}
	if inContainer.sessionMatches("vm", 15940) {
		t.Error("a job of session 0 matched session 15940")
	}
	for _, bad := range []string{"JobId=1 JobState=RUNNING", "JobId=x JobState=RUNNING AllocNode:Sid=h:1", "No jobs in the system"} {
		if j := ParseAllocJobs([]byte(bad)); len(j) != 0 {
			t.Errorf("%q: %+v", bad, j)
		}
	}
}

func FuzzParseAllocJobs(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "slurm", "show-job.txt")); err == nil {
		f.Add(b)
	}
	f.Add([]byte("JobId=7 JobState=RUNNING AllocNode:Sid=login1:42\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, j := range ParseAllocJobs(b) {
			if j.ID == "" || j.State == "" || j.AllocNode == "" || strings.ContainsAny(j.AllocNode, ": \n") {
				t.Fatalf("job %+v", j)
			}
		}
	})
}

func TestJobidArg(t *testing.T) {
	for argv, want := range map[string]string{
		"srun --jobid=42 python x.py":             "42",
		"srun --overlap --jobid 42 -N 2 python x": "42",
		"srun -N 2 --jobid=7_3 python":            "7_3",
		"srun -N2 python x.py --jobid=9":          "",
		"srun --jobid=12;ls python":               "",
		"srun":                                    "",
		"srun -w bt1 python --jobid=5":            "",
	} {
		if got := jobidArg(strings.Fields(argv)); got != want {
			t.Errorf("%q: %q, want %q", argv, got, want)
		}
	}
}

// startAs starts a real sh whose command line is argv (argv[0] as given;
// the rest begins with -c and its script) with env added; it is killed at
// the end of the test.
func startAs(t *testing.T, argv []string, env ...string) int {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	cmd := &exec.Cmd{Path: sh, Args: argv, Env: append(os.Environ(), env...), SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The group: the script's sleep goes too.
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	// Until the exec is done the command line is the test's.
	for deadline := time.Now().Add(30 * time.Second); !slices.Equal(cmdline(cmd.Process.Pid), argv); {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never ran as %q: %q", cmd.Process.Pid, argv, cmdline(cmd.Process.Pid))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd.Process.Pid
}

// FindSrunJob on real processes: the srun's --jobid first, then
// SLURM_JOB_ID of the boot's processes; neither and no srun is an error
// that says to give the job.
func TestFindSrunJob(t *testing.T) {
	ctx := context.Background()
	// sh runs its -c script; the words after it are what an srun's
	// command line holds.
	srun := startAs(t, []string{"srun", "-c", "sleep 30; :", "--jobid=4242"})
	inAlloc := startAs(t, []string{"python3", "-c", "sleep 30; :"}, "SLURM_JOB_ID=77")
	if job, how, err := FindSrunJob(ctx, nil, []int{inAlloc, srun}, nil); err != nil || job != "4242" || how != FromArgv {
		t.Errorf("srun --jobid: %q %q %v", job, how, err)
	}
	if job, how, err := FindSrunJob(ctx, nil, []int{inAlloc}, nil); err != nil || job != "77" || how != FromEnv {
		t.Errorf("SLURM_JOB_ID: %q %q %v", job, how, err)
	}
	bad := startAs(t, []string{"python3", "-c", "sleep 30; :"}, "SLURM_JOB_ID=7;rm")
	if _, _, err := FindSrunJob(ctx, nil, []int{bad}, nil); err == nil || !strings.Contains(err.Error(), "--srun JOBID") {
		t.Errorf("no job: %v", err)
	}
}
