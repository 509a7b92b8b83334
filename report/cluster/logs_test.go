package cluster

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/cluster"
	"github.com/bringup-tool/bringup/diagnose"
	"github.com/bringup-tool/bringup/report"
)

// gathered lays out what GatherLogs leaves: a temporary directory with a
// directory per node, a real Python traceback in bt2's stderr.
func gathered(t *testing.T) (*cluster.LogGather, string) {
	t.Helper()
	root := t.TempDir()
	trace := "rank 3: loading layer 1 of 2\n" +
		"Traceback (most recent call last):\n" +
		"  File \"/job/crash_rank.py\", line 41, in <module>\n" +
		"    main()\n" +
		"  File \"/job/crash_rank.py\", line 19, in read_shard\n" +
		"    raise RuntimeError(\"rank 3: checkpoint shard model-00003.safetensors is truncated\")\n" +
		"RuntimeError: rank 3: checkpoint shard model-00003.safetensors is truncated\n"
	os.MkdirAll(filepath.Join(root, "bt1"), 0o700)
	os.MkdirAll(filepath.Join(root, "bt2"), 0o700)
	os.WriteFile(filepath.Join(root, "bt1", "job-12.out"), []byte("rank 0 starting on bt1\n"), 0o600)
	os.WriteFile(filepath.Join(root, "bt2", "job-12-bt2.err"), []byte(trace), 0o600)
	g := &cluster.LogGather{Backend: "srun", Root: root, Nodes: []cluster.NodeResult{
		{Target: cluster.Target{Name: "bt1", NodeRank: -1}, Status: cluster.StatusOK, Elapsed: 120 * time.Millisecond,
			Logs: &cluster.NodeLogs{Dir: "bt1", Files: []cluster.LogFile{{Name: "job-12.out", Source: "/shared/job-12.out", Bytes: 23, Size: 23, FromLine: 1, ReadHere: true, Path: filepath.Join(root, "bt1", "job-12.out")}},
				Notes: []string{"/local/job-12-bt1.err: not on this node \x1b]0;pwned\x07"}}},
		{Target: cluster.Target{Name: "bt2", NodeRank: -1}, Status: cluster.StatusOK, Elapsed: 150 * time.Millisecond,
			Logs: &cluster.NodeLogs{Dir: "bt2", Files: []cluster.LogFile{{Name: "job-12-bt2.err", Source: "/local/job-12-bt2.err", Bytes: int64(len(trace)), Size: 4 << 20, FromLine: 9001, Path: filepath.Join(root, "bt2", "job-12-bt2.err")}}, Notes: []string{}}},
		{Target: cluster.Target{Name: "bt3", NodeRank: -1}, Status: cluster.StatusTimeout, Detail: "no answer within 3s; the srun launcher was killed", Elapsed: 3 * time.Second},
	}}
	return g, root
}

// diagnosed is the gathered logs diagnosed as `bringup diagnose` does,
// each copy named NODE/FILE.
func diagnosed(t *testing.T) (*cluster.LogGather, string, *diagnose.Diagnosis) {
	t.Helper()
	g, root := gathered(t)
	paths, names := g.Files()
	d, err := diagnose.Run(paths, diagnose.Options{Name: func(p string) string { return names[p] }})
	if err != nil {
		t.Fatal(err)
	}
	return g, root, d
}

// The diagnosis of gathered logs names the node in every evidence line
// (through diagnose.Options.Name), never the temporary directory, and
// puts the nodes after the verdict.
func TestDiagnosisText(t *testing.T) {
	g, root, d := diagnosed(t)
	var buf bytes.Buffer
	if err := DiagnosisText(&buf, g, d, report.Style{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "FAILED") {
		t.Errorf("the verdict is not first: %q", lines[0])
	}
	for i, want := range []string{
		"partial result: logs: 2 of 3 node(s) answered (srun)",
		"  bt1  ok           1 log(s), 23 B: bt1/job-12.out (read here)  0.12s",
		"       note: /local/job-12-bt1.err: not on this node ",
		"  bt2  ok           1 log(s), 341 B: bt2/job-12-bt2.err (its last 341 B of 4 MiB, from line 9001)  0.15s",
		"  bt3  timeout      no answer within 3s; the srun launcher was killed  3.00s",
	} {
		if lines[i+1] != want {
			t.Errorf("line %d: %q\nwant     %q", i+2, lines[i+1], want)
		}
	}
	if !strings.Contains(out, "bt2/job-12-bt2.err:7") || strings.Contains(out, root) || strings.Contains(out, "\x1b") {
		t.Errorf("evidence not named by the node, or the temporary directory or an escape shown:\n%s", out)
	}
}

func TestDiagnosisJSON(t *testing.T) {
	g, root, d := diagnosed(t)
	var buf bytes.Buffer
	if err := DiagnosisJSON(&buf, g, d); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), root) {
		t.Errorf("the temporary directory is in the JSON:\n%s", buf.String())
	}
	var doc DiagnosisDoc
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != diagnose.Schema || !doc.Cluster.Partial || len(doc.Cluster.Nodes) != 3 || doc.Inputs[1].Path != "bt2/job-12-bt2.err" {
		t.Errorf("document %+v %+v", doc.Cluster, doc.Inputs)
	}
	n := doc.Cluster.Nodes[1]
	if n.Dir != "bt2" || len(n.Files) != 1 || n.Files[0].FromLine != 9001 || n.Files[0].Source != "/local/job-12-bt2.err" {
		t.Errorf("bt2: %+v", n)
	}
	if doc.Cluster.Nodes[2].Status != cluster.StatusTimeout || doc.Cluster.Nodes[2].Files == nil {
		t.Errorf("bt3: %+v", doc.Cluster.Nodes[2])
	}
}
