package cluster

import (
	"fmt"
	"time"

	"github.com/bringup-tool/bringup/cluster/node"
	"github.com/bringup-tool/bringup/record"
)

// Merged is every node's processes as one input for stacks.Analyze, with
// what is missing.
type Merged struct {
	Backend string
	Nodes   []NodeResult
	// Processes are every node's, each Path naming its node ("bt1 pid 13").
	// Rank labels are kept where they are unique across nodes and prefixed
	// with the node where two nodes have the same ("bt1:TP0"); an unranked
	// pid that two nodes both have is labelled "bt1 pid 13", so that no two
	// processes of different nodes are taken for snapshots of one, and so
	// is every pid when no process of any node has a rank.
	Processes []*record.Process
	// Failures are the processes the nodes found but could not read.
	Failures []ProcFailure
	Missing  Missing
	// Spread is the time between the first and the last node's capture.
	Spread time.Duration
}

// ProcFailure is one node's unreadable process.
type ProcFailure struct {
	Node string `json:"node"`
	node.Failure
}

// Missing is what the merged result lacks.
type Missing struct {
	// World is the number of ranks the launchers started (WORLD_SIZE, or
	// the Slurm step's task count), 0 when no process said.
	World int `json:"world_size,omitempty"`
	// Ranks are the ranks below World that no node returned.
	Ranks []int `json:"ranks"`
	// Nodes are the nodes whose status is not ok.
	Nodes []string `json:"nodes"`
}

// Partial reports whether a node or a rank is missing.
func (m *Merged) Partial() bool { return len(m.Missing.Nodes) > 0 || len(m.Missing.Ranks) > 0 }

// Answered counts the nodes whose document was merged.
func (m *Merged) Answered() int {
	n := 0
	for _, r := range m.Nodes {
		if r.Doc != nil {
			n++
		}
	}
	return n
}

// Merge joins the nodes' documents.
func Merge(backend string, nodes []NodeResult) *Merged {
	m := &Merged{Backend: backend, Nodes: nodes, Missing: Missing{Ranks: []int{}, Nodes: []string{}}}
	type entry struct {
		node string
		p    *record.Process
		src  *node.Process
	}
	var all []entry
	seenTable := map[string]string{} // boot id + pid namespace → node
	var first, last time.Time
	for i := range m.Nodes {
		r := &m.Nodes[i]
		if r.Status != StatusOK {
			m.Missing.Nodes = append(m.Missing.Nodes, r.Name)
		}
		if r.Doc == nil {
			continue
		}
		id := r.Doc.Node
		if id.BootID != "" && id.PIDNamespace != 0 {
			key := fmt.Sprintf("%s/%d", id.BootID, id.PIDNamespace)
			if other, dup := seenTable[key]; dup {
				r.Detail = "the same machine and pid namespace as " + other + ": its processes are counted once"
				r.Doc = nil
				continue
			}
			seenTable[key] = r.Name
		}
		if first.IsZero() || id.CapturedAt.Before(first) {
			first = id.CapturedAt
		}
		if id.CapturedAt.After(last) {
			last = id.CapturedAt
		}
		if r.NodeRank < 0 {
			r.NodeRank = lwsIndex(r.Doc)
		}
		for j := range r.Doc.Processes {
			src := &r.Doc.Processes[j]
			p := src.Process // a copy: the node's document is left as it came
			p.Path = fmt.Sprintf("%s pid %d", r.Name, p.PID)
			all = append(all, entry{r.Name, &p, src})
		}
		for _, f := range r.Doc.Failures {
			m.Failures = append(m.Failures, ProcFailure{Node: r.Name, Failure: f})
		}
	}
	m.Spread = last.Sub(first)

	// Which labels and unranked pids occur on more than one node.
	labelNodes, pidNodes := map[string]map[string]bool{}, map[int]map[string]bool{}
	nodePIDs := map[string]map[int]bool{}
	add := func(mm map[string]bool, n string) map[string]bool {
		if mm == nil {
			mm = map[string]bool{}
		}
		mm[n] = true
		return mm
	}
	for _, e := range all {
		if e.p.Rank != "" {
			labelNodes[e.p.Rank] = add(labelNodes[e.p.Rank], e.node)
		} else {
			pidNodes[e.p.PID] = add(pidNodes[e.p.PID], e.node)
		}
		if nodePIDs[e.node] == nil {
			nodePIDs[e.node] = map[int]bool{}
		}
		nodePIDs[e.node][e.p.PID] = true
	}
	anyPID := map[int]int{} // pid → on how many nodes
	for _, pids := range nodePIDs {
		for pid := range pids {
			anyPID[pid]++
		}
	}
	// Where no process has a rank at all (a Ray cluster, plain Python
	// processes) every pid is named with its node; where ranks are known
	// the unranked helpers stay unranked, so the analysis does not compare
	// them with the ranks, unless their pid is on two nodes.
	noRanks := len(labelNodes) == 0 && len(nodePIDs) > 1
	for _, e := range all {
		switch {
		case e.p.Rank != "" && len(labelNodes[e.p.Rank]) > 1:
			e.p.Rank = e.node + ":" + e.p.Rank
		case e.p.Rank == "" && (noRanks || len(pidNodes[e.p.PID]) > 1):
			e.p.Rank = fmt.Sprintf("%s pid %d", e.node, e.p.PID)
		}
		// A parent pid names a process of this node only: where it is not
		// captured here but another node has that pid, the launcher test
		// of the analysis would join two nodes' processes.
		if e.p.PPID > 0 && !nodePIDs[e.node][e.p.PPID] && anyPID[e.p.PPID] > 0 {
			e.p.PPID = 0
		}
		m.Processes = append(m.Processes, e.p)
	}
	srcs := make([]*node.Process, len(all))
	for i, e := range all {
		srcs[i] = e.src
	}
	m.Missing.World, m.Missing.Ranks = missingRanks(srcs)
	return m
}

// missingRanks compares the ranks found with the world size the
// launchers announced: RANK against WORLD_SIZE where any process has
// RANK, else Slurm task ids against the step's task count.
func missingRanks(procs []*node.Process) (int, []int) {
	for _, from := range []string{node.FromRANK, node.FromSlurm} {
		world, seen := 0, map[int]bool{}
		for _, p := range procs {
			if p.RankFrom != from {
				continue
			}
			world = max(world, p.World)
			switch from {
			case node.FromRANK:
				seen[*p.Hints.Rank] = true
			case node.FromSlurm:
				seen[*p.Hints.SlurmProcID] = true
			}
		}
		if len(seen) == 0 {
			continue
		}
		missing := []int{}
		for r := 0; r < world && r < 1<<20; r++ {
			if !seen[r] {
				missing = append(missing, r)
			}
		}
		return world, missing
	}
	return 0, []int{}
}

// lwsIndex is the LWS_WORKER_INDEX (or JOB_COMPLETION_INDEX) all of a
// node's processes agree on; -1 when none or they differ.
func lwsIndex(d *node.Doc) int {
	idx := -1
	for _, p := range d.Processes {
		v := p.Hints.LWSWorkerIndex
		if v == nil {
			v = p.Hints.JobIndex
		}
		if v == nil {
			continue
		}
		if idx >= 0 && idx != *v {
			return -1
		}
		idx = *v
	}
	return idx
}

// RanksOn lists the rank labels a node's document holds.
func RanksOn(d *node.Doc) []string {
	if d == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range d.Processes {
		if p.Rank != "" && !seen[p.Rank] {
			seen[p.Rank] = true
			out = append(out, p.Rank)
		}
	}
	return out
}
