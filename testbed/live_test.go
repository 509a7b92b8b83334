package testbed

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The live tests run testbed scenarios for real (torch.compile on the CPU)
// under bringup watch and bringup stacks. They need the testbed's venv
// (scripts/testbed/run setup); without it they skip with one line, unless
// BRINGUP_TESTBED_REQUIRED=1 (set by .ci/run when PyPI answered), where a
// missing venv is a failure.

const runner = "../scripts/testbed/run"

// liveVenv returns the testbed venv when it is built for the current
// requirements.txt and its torch imports; otherwise it skips (or fails).
// With -short the live scenarios are skipped.
func liveVenv(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("testbed: live torch.compile scenarios are not run with -short")
	}
	venv := testbedVenv(t)
	if out, err := exec.Command(filepath.Join(venv, "bin", "python"), "-c", "import torch").CombinedOutput(); err != nil {
		testbedMissing(t, "testbed: torch does not import in %s: %v %s", venv, err, firstLines(string(out), 3))
	}
	return venv
}

// testbedMissing skips, or fails where the testbed must be there
// (BRINGUP_TESTBED_REQUIRED=1).
func testbedMissing(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("BRINGUP_TESTBED_REQUIRED") == "1" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// testbedVenv returns the testbed venv when it is built for the current
// requirements.txt (its tools: tlparse, py-spy, pystack).
func testbedVenv(t *testing.T) string {
	t.Helper()
	venv := os.Getenv("BRINGUP_TESTBED_VENV")
	if venv == "" {
		home, _ := os.UserHomeDir()
		venv = filepath.Join(home, ".cache", "bringup", "testbed", "venv")
	}
	req, err := os.ReadFile("../scripts/testbed/requirements.txt")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(req)
	stamp, _ := os.ReadFile(filepath.Join(venv, ".requirements-sha256"))
	if strings.TrimSpace(string(stamp)) != hex.EncodeToString(sum[:]) {
		testbedMissing(t, "testbed: no venv for the current requirements at %s (scripts/testbed/run setup builds it)", venv)
	}
	return venv
}

type runDoc struct {
	Outcome  string `json:"outcome"`
	ExitCode *int   `json:"exit_code"`
	Reason   string `json:"reason"`
	EnvCheck []struct {
		PID       int            `json:"pid"`
		Process   string         `json:"process"`
		Missing   []string       `json:"missing"`
		Different map[string]any `json:"different"`
	} `json:"env_check"`
	EnvSeen []struct {
		PID     int               `json:"pid"`
		Rank    string            `json:"rank"`
		Process string            `json:"process"`
		Env     map[string]string `json:"env"`
	} `json:"env_seen"`
	Silences []struct {
		StacksPath string `json:"stacks_path"`
	} `json:"silences"`
	Timeline []struct {
		Rank   string `json:"rank"`
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"timeline"`
	Findings []finding `json:"findings"`
}

// watchScenario runs `bringup watch ARGS -- scripts/testbed/run NAME -o OUT --exec`
// and returns the run document, the scenario's output directory and the result.
func watchScenario(t *testing.T, name string, args ...string) (runDoc, string, result) {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	runDir := filepath.Join(dir, "run")
	full := append([]string{"watch", "--store", filepath.Join(dir, "runs.db"), "--run-dir", runDir}, args...)
	full = append(full, "--", runner, name, "-o", out, "--exec")
	r := bringup(t, "", full...)
	var doc runDoc
	data, err := os.ReadFile(filepath.Join(runDir, "run.json"))
	if err != nil {
		t.Fatalf("watch %s: no run.json: %v\nstderr: %s", name, err, r.stderr)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("watch %s: run.json: %v", name, err)
	}
	return doc, out, r
}

// TestLiveWatchTP2Compile: two gloo ranks compile a transformer block with
// Inductor under bringup watch; every worker got the requested environment,
// the boot exits 0, and each rank's TORCH_TRACE file is found by its rank.
func TestLiveWatchTP2Compile(t *testing.T) {
	liveVenv(t)
	doc, out, r := watchScenario(t, "tp2_block", "--env", "OMP_NUM_THREADS=1",
		"--env", "TORCHINDUCTOR_COMPILE_THREADS=1", "--silence", "0", "--timeout", "10m")
	if doc.Outcome != "exited" || doc.ExitCode == nil || *doc.ExitCode != 0 || r.code != 0 {
		t.Fatalf("outcome %q (exit %v, bringup %d), want exited with 0: %s\n%s", doc.Outcome, doc.ExitCode, r.code, doc.Reason, r.stderr)
	}
	if len(doc.EnvCheck) != 0 {
		t.Errorf("env check found %d process(es) without the requested environment: %+v", len(doc.EnvCheck), doc.EnvCheck)
	}
	// Every process of the boot (torchrun, its workers, their forks, the
	// g++ Inductor runs) was seen; the two workers are named by the rank
	// their "[rank0]:" log prefix gives.
	ranked := map[string]bool{}
	for _, p := range doc.EnvSeen {
		if p.Env["OMP_NUM_THREADS"] != "1" {
			t.Errorf("pid %d (%s): OMP_NUM_THREADS=%q", p.PID, p.Process, p.Env["OMP_NUM_THREADS"])
		}
		if strings.Contains(p.Process, "tp2_block.py") && p.Rank != "" {
			ranked[p.Rank] = true
		}
	}
	if len(ranked) != 2 {
		t.Errorf("workers seen with ranks %v, want two (rank0, rank1)", ranked)
	}
	var tr traceDoc
	bringupJSON(t, "", 0, "bringup.trace/v1", &tr, "trace", "--json", filepath.Join(out, "trace"))
	ranks := map[int]int{}
	for _, in := range tr.Inputs {
		if in.RankFrom != "file_name" {
			t.Errorf("%s: rank from %q, want file_name (init_process_group ran before the first compile)", in.Path, in.RankFrom)
		}
		ranks[in.Rank]++
	}
	if len(ranks) != 2 || ranks[0] != 1 || ranks[1] != 1 {
		t.Errorf("trace ranks %v, want one file each for ranks 0 and 1", ranks)
	}
	for _, c := range tr.Compiles {
		if c.Status != "ok" {
			t.Errorf("rank %d [%s]: status %q, want ok", c.Rank, c.ID, c.Status)
		}
	}
	if len(tr.Compiles) < 2 {
		t.Errorf("%d compiles, want at least one per rank", len(tr.Compiles))
	}
}

// TestLiveWatchSilentCompile: a cold compile that formats implicit-fallback
// messages for a chain of custom ops goes silent; watch --silence captures
// the stacks, and they name the frames: GraphLowering.call_function and the
// operator_str formatting, with the IR's __str__ nested under it.
func TestLiveWatchSilentCompile(t *testing.T) {
	liveVenv(t)
	// The lowering is silent for about 40 s on 2 idle cores (longer under
	// load), and the scenario prints a heartbeat until it starts; --silence
	// must fire inside it, not in the quiet stretch that can follow it (the
	// generated code loading).
	doc, _, r := watchScenario(t, "silent_compile", "--silence", "15s", "--on-silence", "stop",
		"--snapshots", "5", "--snapshot-interval", "1s", "--grace", "3s", "--timeout", "8m")
	if doc.Outcome != "hung" {
		t.Fatalf("outcome %q, want hung: %s\n%s", doc.Outcome, doc.Reason, r.stderr)
	}
	if len(doc.Silences) == 0 || doc.Silences[0].StacksPath == "" {
		t.Fatalf("no stacks captured on silence: %+v", doc.Silences)
	}
	var st stacksDoc
	data, err := os.ReadFile(doc.Silences[0].StacksPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("%s: %v", doc.Silences[0].StacksPath, err)
	}
	checkSilentCompileStacks(t, st)
}

// TestLiveStacksTreeStuckRank: rank 1 is stuck in compile (a fake kernel
// that sleeps), rank 0 waits in a gloo all_reduce; bringup stacks --tree on
// torchrun reads both live and names the hang.
func TestLiveStacksTreeStuckRank(t *testing.T) {
	liveVenv(t)
	cmd := startStuckRank(t)
	var st stacksDoc
	bringupJSON(t, "", 1, "bringup.stacks/v1", &st, "stacks", "--json", "--tree", itoa(cmd.Process.Pid),
		"--count", "2", "--interval", "1s")
	checkStuckRankStacks(t, st, true)
}

// stopTree stops a scenario started in its own process group: SIGTERM to
// the group (torchrun then stops its workers, which run in sessions of
// their own), and after 10 s SIGKILL to whatever of its tree is left.
func stopTree(cmd *exec.Cmd) {
	tree := descendants(cmd.Process.Pid)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	for _, pid := range tree {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	<-done
}

// descendants lists the pids below pid, from /proc/*/stat's parent field.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 {
			if pp, err := strconv.Atoi(f[1]); err == nil {
				parent[p] = pp
			}
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
