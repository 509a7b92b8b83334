package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/bringup-tool/bringup/cluster"
	"github.com/bringup-tool/bringup/diagnose"
	"github.com/bringup-tool/bringup/report"
	"github.com/bringup-tool/bringup/report/diagnosis"
)

// maxNodeNotes is how many of a node's notes the text shows.
const maxNodeNotes = 3

// DiagnosisText writes a diagnosis of logs gathered from nodes: the
// diagnosis report with, after its verdict, the nodes (status, the logs
// each gave, what is missing and the fix).
func DiagnosisText(w io.Writer, g *cluster.LogGather, d *diagnose.Diagnosis, st report.Style) error {
	var buf bytes.Buffer
	if err := diagnosis.WriteText(&buf, d, st); err != nil {
		return err
	}
	var sec bytes.Buffer
	WriteLogNodes(&sec, g, st)
	return afterVerdict(w, buf.Bytes(), sec.Bytes())
}

// WriteLogNodes writes the nodes' section of a logs gather.
func WriteLogNodes(w io.Writer, g *cluster.LogGather, st report.Style) {
	head := fmt.Sprintf("logs: %d of %d node(s) answered (%s)", g.Answered(), len(g.Nodes), g.Backend)
	if g.Partial() {
		head = st.Yellow("partial result: ") + head
	}
	fmt.Fprintf(w, "%s\n", st.Bold(head))
	width := nameWidth(g.Nodes)
	for _, r := range g.Nodes {
		var what []string
		if r.Logs != nil {
			what = append(what, logsWord(r.Logs))
		}
		writeRow(w, width, r, what, st)
		if r.Logs == nil {
			continue
		}
		for i, n := range r.Logs.Notes {
			if i == maxNodeNotes {
				fmt.Fprintf(w, "  %-*s %s\n", width, "", st.Dim(fmt.Sprintf("… %d more note(s) (--json has them)", len(r.Logs.Notes)-i)))
				break
			}
			fmt.Fprintf(w, "  %-*s %s\n", width, "", st.Dim("note: "+report.Clean(n)))
		}
	}
}

// logsWord says what a node gave: "2 log(s), 4.1 KiB: a.out (read here), b.err".
func logsWord(l *cluster.NodeLogs) string {
	var total int64
	var names []string
	for _, f := range l.Files {
		total += f.Bytes
		n := l.Dir + "/" + f.Name
		var how []string
		if f.ReadHere {
			how = append(how, "read here")
		}
		if f.Cut() {
			how = append(how, fmt.Sprintf("its last %s of %s, from line %d", cluster.ByteSize(f.Bytes), cluster.ByteSize(f.Size), f.FromLine))
		}
		if len(how) > 0 {
			n += " (" + strings.Join(how, "; ") + ")"
		}
		names = append(names, n)
	}
	s := fmt.Sprintf("%d log(s), %s", len(l.Files), cluster.ByteSize(total))
	if len(names) > 3 {
		names = append(names[:3], fmt.Sprintf("… %d more", len(names)-3))
	}
	if len(names) > 0 {
		s += ": " + strings.Join(names, ", ")
	}
	if l.Empty > 0 {
		s += fmt.Sprintf("; %d empty", l.Empty)
	}
	return s
}

// DiagnosisDoc is bringup.diagnosis/v1 with a "cluster" object added.
type DiagnosisDoc struct {
	*diagnosis.Doc
	Cluster LogCluster `json:"cluster"`
}

// LogCluster is the gather's part of the document.
type LogCluster struct {
	Backend string    `json:"backend"`
	Partial bool      `json:"partial"`
	Nodes   []LogNode `json:"nodes"`
}

// LogNode is one node's outcome in JSON: its status, and the logs it gave
// (files[].name under dir is how the diagnosis names them: dir/name).
type LogNode struct {
	cluster.NodeResult
	Dir   string            `json:"dir"`
	Files []cluster.LogFile `json:"files"`
	Empty int               `json:"empty"`
	Notes []string          `json:"notes"`
}

// NewDiagnosisDoc builds the JSON document.
func NewDiagnosisDoc(g *cluster.LogGather, d *diagnose.Diagnosis) DiagnosisDoc {
	c := LogCluster{Backend: g.Backend, Partial: g.Partial(), Nodes: []LogNode{}}
	for _, r := range g.Nodes {
		n := LogNode{NodeResult: r, Files: []cluster.LogFile{}, Notes: []string{}}
		if r.Logs != nil {
			n.Dir, n.Files, n.Empty, n.Notes = r.Logs.Dir, r.Logs.Files, r.Logs.Empty, r.Logs.Notes
		}
		c.Nodes = append(c.Nodes, n)
	}
	return DiagnosisDoc{Doc: diagnosis.NewDoc(d), Cluster: c}
}

// DiagnosisJSON writes the document, encoded as diagnosis.WriteJSON does.
func DiagnosisJSON(w io.Writer, g *cluster.LogGather, d *diagnose.Diagnosis) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(NewDiagnosisDoc(g, d))
}
