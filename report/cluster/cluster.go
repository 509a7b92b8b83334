// Package cluster renders a stacks analysis gathered from many nodes:
// the stacks report of report/stacks with, after its verdict, the nodes
// (status, ranks, the fix for each failure) and what is missing; JSON is
// bringup.stacks/v1 with a "cluster" object added.
package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bringup-tool/bringup/cluster"
	"github.com/bringup-tool/bringup/report"
	reportstacks "github.com/bringup-tool/bringup/report/stacks"
	"github.com/bringup-tool/bringup/stacks"
)

// Text writes the analysis with the nodes' section after the verdict.
func Text(w io.Writer, m *cluster.Merged, a *stacks.Analysis, o reportstacks.TextOptions) error {
	var buf bytes.Buffer
	if err := reportstacks.Text(&buf, a, o); err != nil {
		return err
	}
	var sec bytes.Buffer
	writeNodes(&sec, m, o.Style)
	return afterVerdict(w, buf.Bytes(), sec.Bytes())
}

// afterVerdict writes a report with a section put after its first line,
// the verdict.
func afterVerdict(w io.Writer, body, section []byte) error {
	verdict := body
	if i := bytes.IndexByte(body, '\n'); i >= 0 {
		verdict, body = body[:i+1], body[i+1:]
	} else {
		body = nil
	}
	for _, part := range [][]byte{verdict, section, body} {
		if _, err := w.Write(part); err != nil {
			return err
		}
	}
	return nil
}

func writeNodes(w io.Writer, m *cluster.Merged, st report.Style) {
	total := len(m.Nodes)
	head := fmt.Sprintf("nodes: %d of %d answered (%s)", m.Answered(), total, m.Backend)
	if m.Partial() {
		head = st.Yellow("partial result: ") + head
	}
	if len(m.Missing.Ranks) > 0 {
		head += fmt.Sprintf("; missing %s of world size %d", rankWord(m.Missing.Ranks), m.Missing.World)
	}
	if m.Answered() > 1 {
		head += fmt.Sprintf("; capture spread %s", m.Spread.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "%s\n", st.Bold(head))
	width := nameWidth(m.Nodes)
	for _, r := range m.Nodes {
		var what []string
		if r.Doc != nil {
			what = append(what, fmt.Sprintf("%d process(es)", len(r.Doc.Processes)))
			if rs := cluster.RanksOn(r.Doc); len(rs) > 0 {
				what = append(what, stacks.RankSet(rs, 0))
			}
			if h := r.Doc.Node.Hostname; h != "" && h != r.Name {
				what = append(what, "host "+h)
			}
		}
		writeRow(w, width, r, what, st)
	}
	for i, f := range m.Failures {
		if i == 5 {
			fmt.Fprintf(w, "  %s\n", st.Dim(fmt.Sprintf("… %d more unreadable process(es)", len(m.Failures)-5)))
			break
		}
		fmt.Fprintf(w, "  %s %s pid %d (%s): %s\n", st.Yellow("unreadable:"), f.Node, f.PID, f.Kind, f.Error)
	}
}

func nameWidth(nodes []cluster.NodeResult) int {
	width := 4
	for _, r := range nodes {
		width = max(width, len(r.Name))
	}
	return width
}

// writeRow writes one node's line: name, status, what it gave (what),
// its rank, about and detail, the time it took, and the fix below.
func writeRow(w io.Writer, width int, r cluster.NodeResult, what []string, st report.Style) {
	status := fmt.Sprintf("%-12s", r.Status)
	if r.Status == cluster.StatusOK {
		status = st.Green(status)
	} else {
		status = st.Red(status)
	}
	if r.NodeRank >= 0 {
		what = append(what, fmt.Sprintf("node rank %d", r.NodeRank))
	}
	if r.About != "" {
		what = append(what, r.About)
	}
	if r.Detail != "" {
		what = append(what, r.Detail)
	}
	fmt.Fprintf(w, "  %-*s %s %s%s\n", width, r.Name, status, report.Clean(strings.Join(what, " · ")), st.Dim(fmt.Sprintf("  %.2fs", r.Elapsed.Seconds())))
	if r.Fix != "" {
		fmt.Fprintf(w, "  %-*s %s %s\n", width, "", st.Green("fix:"), r.Fix)
	}
}

func rankWord(rs []int) string {
	labels := make([]string, len(rs))
	for i, r := range rs {
		labels[i] = fmt.Sprintf("rank%d", r)
	}
	return stacks.RankSet(labels, 0)
}

// Doc is bringup.stacks/v1 with the cluster object added.
type Doc struct {
	reportstacks.Doc
	Cluster Cluster `json:"cluster"`
}

// Cluster is the gather's part of the document.
type Cluster struct {
	Backend  string                `json:"backend"`
	Partial  bool                  `json:"partial"`
	Nodes    []Node                `json:"nodes"`
	Missing  cluster.Missing       `json:"missing"`
	SpreadMS int64                 `json:"capture_spread_ms"`
	Failures []cluster.ProcFailure `json:"unreadable"`
}

// Node is one node's outcome in JSON.
type Node struct {
	cluster.NodeResult
	Hostname     string    `json:"hostname,omitempty"`
	BootID       string    `json:"boot_id,omitempty"`
	PIDNamespace uint64    `json:"pid_namespace,omitempty"`
	CapturedAt   time.Time `json:"captured_at,omitzero"`
	Processes    int       `json:"processes"`
	Ranks        []string  `json:"ranks"`
}

// NewDoc builds the JSON document.
func NewDoc(m *cluster.Merged, a *stacks.Analysis) Doc {
	d := Doc{Doc: reportstacks.NewDoc(a)}
	c := Cluster{Backend: m.Backend, Partial: m.Partial(), Missing: m.Missing, SpreadMS: m.Spread.Milliseconds(),
		Nodes: []Node{}, Failures: m.Failures}
	if c.Failures == nil {
		c.Failures = []cluster.ProcFailure{}
	}
	for _, r := range m.Nodes {
		n := Node{NodeResult: r, Ranks: []string{}}
		if r.Doc != nil {
			id := r.Doc.Node
			n.Hostname, n.BootID, n.PIDNamespace, n.CapturedAt = id.Hostname, id.BootID, id.PIDNamespace, id.CapturedAt
			n.Processes = len(r.Doc.Processes)
			if rs := cluster.RanksOn(r.Doc); rs != nil {
				n.Ranks = rs
			}
		}
		c.Nodes = append(c.Nodes, n)
	}
	d.Cluster = c
	return d
}

// JSON writes the document.
func JSON(w io.Writer, m *cluster.Merged, a *stacks.Analysis) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(NewDoc(m, a))
}
