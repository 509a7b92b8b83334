package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/cluster/node"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/stacks"
)

func iptr(n int) *int { return &n }

// nproc is a process of a node document, blocked in leaf.
func nproc(pid, ppid int, title string, h node.Hints, leaf string) node.Process {
	p := node.Process{Process: record.Process{PID: pid, PPID: ppid, Name: title, Source: record.SourceLive, RankInfo: record.NoRank,
		Path: fmt.Sprintf("pid %d", pid), Threads: []record.Thread{{TID: uint64(pid), Main: true, Name: "MainThread", Line: 1,
			Frames: record.Stack{{Func: leaf, File: "w.py", Line: 3}, {Func: "main", File: "w.py", Line: 9}}}}}, Hints: h}
	if strings.Contains(title, "_TP") {
		var tp int
		fmt.Sscanf(title[strings.Index(title, "_TP")+3:], "%d", &tp)
		p.RankInfo.TP = tp
		p.Rank = p.RankInfo.Key()
	}
	return p
}

func doc(host string, pidns uint64, at time.Time, procs ...node.Process) *node.Doc {
	node.ResolveRanks(procs)
	return &node.Doc{Schema: node.Schema, Node: node.Identity{Hostname: host, BootID: "boot-" + host, PIDNamespace: pidns, CapturedAt: at},
		Processes: procs, Failures: []node.Failure{}}
}

func ok(name string, d *node.Doc) NodeResult {
	return NodeResult{Target: Target{Name: name, NodeRank: -1}, Status: StatusOK, Doc: d}
}

func TestMergeTorchrunAcrossNodes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// torchrun on two nodes: an agent (pid 13) and two workers (14, 15)
	// on each, pids the same on both nodes; rank 3 elsewhere; world 4.
	w := func(pid, rank int, leaf string) node.Process {
		return nproc(pid, 13, "", node.Hints{Rank: iptr(rank), WorldSize: iptr(4), SlurmJobID: "7", SlurmStepID: "0", SlurmProcID: iptr(rank / 2)}, leaf)
	}
	agent := func(procid int) node.Process {
		return nproc(13, 1, "", node.Hints{SlurmJobID: "7", SlurmStepID: "0", SlurmProcID: iptr(procid)}, "wait_agent")
	}
	m := Merge("srun", []NodeResult{
		ok("bt1", doc("bt1", 1, t0, agent(0), w(14, 0, "all_reduce"), w(15, 1, "all_reduce"))),
		ok("bt2", doc("bt2", 2, t0.Add(40*time.Millisecond), agent(1), w(14, 2, "all_reduce"), w(15, 3, "compile"))),
	})
	if m.Partial() || m.Missing.World != 4 || len(m.Missing.Ranks) != 0 || m.Spread != 40*time.Millisecond {
		t.Errorf("missing %+v spread %s", m.Missing, m.Spread)
	}
	var labels []string
	for _, p := range m.Processes {
		labels = append(labels, p.Rank+"@"+p.Path)
	}
	// The agents, unranked with pid 13 on both nodes, are named by node
	// so that they are not snapshots of one process.
	want := []string{"bt1 pid 13@bt1 pid 13", "rank0@bt1 pid 14", "rank1@bt1 pid 15", "bt2 pid 13@bt2 pid 13", "rank2@bt2 pid 14", "rank3@bt2 pid 15"}
	if !slices.Equal(labels, want) {
		t.Errorf("labels %v\nwant   %v", labels, want)
	}
	a := stacks.Analyze(m.Processes, stacks.Options{Level: stacks.DefaultLevel})
	if len(a.Current) != 6 {
		t.Fatalf("analysis sees %d processes, want 6", len(a.Current))
	}
	if len(a.Outliers) != 1 || a.Outliers[0].Rank != "rank3" {
		t.Errorf("outliers %+v", a.Outliers)
	}
	for _, b := range a.Buckets {
		if b.Frames[0].Func == "all_reduce" && !slices.Equal(b.Ranks, []string{"rank0", "rank1", "rank2"}) {
			t.Errorf("all_reduce bucket %v", b.Ranks)
		}
	}
}

func TestMergeCollisions(t *testing.T) {
	t0 := time.Now()
	// Two engines, one per node, both with a TP0 worker; a helper pid
	// that exists on both nodes; a parent pid of another node.
	m := Merge("ssh", []NodeResult{
		ok("a", doc("a", 1, t0, nproc(20, 0, "VLLM::Worker_TP0", node.Hints{}, "x"), nproc(30, 0, "", node.Hints{}, "y"))),
		ok("b", doc("b", 2, t0, nproc(21, 30, "VLLM::Worker_TP0", node.Hints{}, "x"), nproc(30, 0, "", node.Hints{}, "y"), nproc(31, 20, "", node.Hints{}, "z"))),
	})
	got := map[string]int{}
	for _, p := range m.Processes {
		got[p.Rank+"@"+p.Path] = p.PPID
	}
	want := map[string]int{"a:TP0@a pid 20": 0, "a pid 30@a pid 30": 0, "b:TP0@b pid 21": 30, "b pid 30@b pid 30": 0, "@b pid 31": 0}
	for k, ppid := range want {
		if g, ok := got[k]; !ok || g != ppid {
			t.Errorf("%s: ppid %d present %v, want ppid %d (got %v)", k, g, ok, ppid, got)
		}
	}
}

func TestMergeNoRanksNamesEveryPid(t *testing.T) {
	m := Merge("ray", []NodeResult{
		ok("10.0.0.1", doc("h", 1, time.Now(), nproc(411, 0, "", node.Hints{}, "get"), nproc(429, 0, "", node.Hints{}, "w"))),
		ok("10.0.0.2", doc("w", 2, time.Now(), nproc(113, 0, "", node.Hints{}, "w"))),
	})
	for _, p := range m.Processes {
		if !strings.HasSuffix(p.Rank, fmt.Sprintf(" pid %d", p.PID)) || !strings.HasPrefix(p.Rank, "10.0.0.") {
			t.Errorf("pid %d named %q", p.PID, p.Rank)
		}
	}
}

func TestMergePartial(t *testing.T) {
	t0 := time.Now()
	w := func(pid, rank int) node.Process {
		return nproc(pid, 0, "", node.Hints{SlurmJobID: "7", SlurmStepID: "0", SlurmProcID: iptr(rank), SlurmStepTasks: iptr(4)}, "w")
	}
	same := doc("bt1", 1, t0, w(14, 0), w(15, 1))
	m := Merge("srun", []NodeResult{
		ok("bt1", same),
		{Target: Target{Name: "bt2", NodeRank: -1}, Status: StatusTimeout, Detail: "no answer"},
		// The same machine and pid namespace reached by another name.
		ok("bt1-alias", doc("bt1", 1, t0, w(14, 0), w(15, 1))),
	})
	if !m.Partial() || !slices.Equal(m.Missing.Ranks, []int{2, 3}) || !slices.Equal(m.Missing.Nodes, []string{"bt2"}) || m.Missing.World != 4 {
		t.Errorf("missing %+v", m.Missing)
	}
	if len(m.Processes) != 2 || m.Nodes[2].Doc != nil || !strings.Contains(m.Nodes[2].Detail, "same machine") {
		t.Errorf("duplicate node merged: %d processes, %+v", len(m.Processes), m.Nodes[2])
	}
	if m.Answered() != 1 {
		t.Errorf("answered %d", m.Answered())
	}
}

// procBackend runs a real child process per target through the same
// runner and outcome the launchers use.
type procBackend struct {
	script  map[string]string // target → sh script
	running atomic.Int32
	most    atomic.Int32
}

func (b *procBackend) Kind() string                               { return "test" }
func (b *procBackend) Discover(context.Context) ([]Target, error) { return nil, errors.New("unused") }
func (b *procBackend) classify(r ran) *NodeError                  { return nil }
func (b *procBackend) Collect(ctx context.Context, t Target) (*node.Doc, error) {
	n := b.running.Add(1)
	defer b.running.Add(-1)
	for {
		m := b.most.Load()
		if n <= m || b.most.CompareAndSwap(m, n) {
			break
		}
	}
	return outcome(run(ctx, []string{"sh", "-c", b.script[t.Name]}, nil, ""), t.Name, b.classify)
}

func TestGather(t *testing.T) {
	docLine := `sleep 0.2; echo '{"schema":"bringup.node-stacks/v1","node":{"hostname":"h"},"failures":[{"pid":9,"kind":"permission","error":"denied"}]}'`
	b := &procBackend{script: map[string]string{
		"a": docLine, "b": docLine, "c": docLine,
		"hang":   "trap '' TERM; sleep 30",
		"broken": "echo 'Error: unknown flag: --slurm-job' >&2; exit 2",
	}}
	var targets []Target
	for _, n := range []string{"a", "b", "c", "hang", "broken"} {
		targets = append(targets, Target{Name: n, NodeRank: -1})
	}
	var mu sync.Mutex
	var done []string
	rs := Gather(context.Background(), b, targets, Options{Deadline: 2 * time.Second, Parallel: 2, Done: func(r NodeResult) {
		mu.Lock()
		done = append(done, r.Name)
		mu.Unlock()
	}})
	if b.most.Load() > 2 {
		t.Errorf("%d nodes at once with --parallel 2", b.most.Load())
	}
	if len(done) != 5 {
		t.Errorf("done called for %v", done)
	}
	want := map[string]Status{"a": StatusDenied, "b": StatusDenied, "c": StatusDenied, "hang": StatusTimeout, "broken": StatusLaunch}
	for _, r := range rs {
		if r.Status != want[r.Name] {
			t.Errorf("%s: %s (%s), want %s", r.Name, r.Status, r.Detail, want[r.Name])
		}
	}
	if rs[0].Fix == "" || !strings.Contains(rs[0].Fix, "CAP_SYS_PTRACE") {
		t.Errorf("denied without the fix: %+v", rs[0])
	}
	if !strings.Contains(rs[3].Detail, "no answer within 2s") {
		t.Errorf("timeout detail %q", rs[3].Detail)
	}
	if !strings.Contains(rs[4].Fix, "--copy-binary=always") {
		t.Errorf("another version: %+v", rs[4])
	}
	skipped := Gather(context.Background(), b, []Target{{Name: "p", Skip: "pod is Pending, not Running"}}, Options{})
	if skipped[0].Status != StatusLaunch || skipped[0].Detail != "pod is Pending, not Running" {
		t.Errorf("skip: %+v", skipped[0])
	}
}
