package cluster

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/cluster"
	"github.com/bringup-tool/bringup/cluster/node"
	"github.com/bringup-tool/bringup/record"
	reportstacks "github.com/bringup-tool/bringup/report/stacks"
	"github.com/bringup-tool/bringup/stacks"
)

func merged() *cluster.Merged {
	rank := func(pid, r int) node.Process {
		p := node.Process{Process: record.Process{PID: pid, Source: record.SourceLive, RankInfo: record.NoRank,
			Threads: []record.Thread{{TID: uint64(pid), Main: true, Line: 1, Frames: record.Stack{{Func: "wait_for_peers", File: "rank.py", Line: 19}}}}},
			Hints: node.Hints{Rank: &r, WorldSize: new(int)}}
		*p.Hints.WorldSize = 4
		return p
	}
	procs := []node.Process{rank(30, 0), rank(31, 1)}
	node.ResolveRanks(procs)
	d := &node.Doc{Schema: node.Schema, Node: node.Identity{Hostname: "bt1", BootID: "b", PIDNamespace: 7, CapturedAt: time.Now()}, Processes: procs}
	return cluster.Merge("srun", []cluster.NodeResult{
		{Target: cluster.Target{Name: "bt1", NodeRank: -1}, Status: cluster.StatusOK, Doc: d, Elapsed: 270 * time.Millisecond},
		{Target: cluster.Target{Name: "bt2", NodeRank: -1}, Status: cluster.StatusDenied, Detail: "ssh bt2: Permission denied (publickey).", Fix: "ssh-copy-id bt2"},
	})
}

func TestText(t *testing.T) {
	m := merged()
	a := stacks.Analyze(m.Processes, stacks.Options{Level: stacks.DefaultLevel})
	var buf bytes.Buffer
	if err := Text(&buf, m, a, reportstacks.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	if !strings.HasPrefix(lines[0], "verdict: ") {
		t.Errorf("the verdict is not first: %q", lines[0])
	}
	for i, want := range []string{
		"partial result: nodes: 1 of 2 answered (srun); missing ranks 2-3 of world size 4",
		"  bt1  ok           2 process(es) · ranks 0-1  0.27s",
		"  bt2  denied       ssh bt2: Permission denied (publickey).  0.00s",
		"       fix: ssh-copy-id bt2",
	} {
		if lines[i+1] != want {
			t.Errorf("line %d: %q\nwant     %q", i+2, lines[i+1], want)
		}
	}
	if !strings.Contains(buf.String(), "#1 · ranks 0-1 (2/2)") {
		t.Errorf("no bucket:\n%s", buf.String())
	}
}

func TestJSON(t *testing.T) {
	m := merged()
	a := stacks.Analyze(m.Processes, stacks.Options{Level: stacks.DefaultLevel})
	var buf bytes.Buffer
	if err := JSON(&buf, m, a); err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(buf.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if d["schema"] != reportstacks.Schema || d["buckets"] == nil {
		t.Errorf("not a stacks document: %v", d["schema"])
	}
	c := d["cluster"].(map[string]any)
	nodes := c["nodes"].([]any)
	n0, n1 := nodes[0].(map[string]any), nodes[1].(map[string]any)
	if c["partial"] != true || n0["status"] != "ok" || n0["hostname"] != "bt1" || n0["processes"].(float64) != 2 ||
		n1["status"] != "denied" || n1["fix"] != "ssh-copy-id bt2" || n1["ranks"] == nil {
		t.Errorf("cluster %v", c)
	}
	missing := c["missing"].(map[string]any)
	if missing["world_size"].(float64) != 4 || len(missing["ranks"].([]any)) != 2 || missing["nodes"].([]any)[0] != "bt2" {
		t.Errorf("missing %v", missing)
	}
}
