package watch

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/cluster"
	"github.com/bringup-tool/bringup/cluster/node"
	"github.com/bringup-tool/bringup/report"
	reportcluster "github.com/bringup-tool/bringup/report/cluster"
)

// docBackend answers for bt2 with the document a real bt2 collector gave
// (cluster/node/testdata) and for every other node with a timeout.
type docBackend struct{ doc []byte }

func (b docBackend) Kind() string { return "srun" }
func (b docBackend) Discover(context.Context) ([]cluster.Target, error) {
	return []cluster.Target{{Name: "bt1", NodeRank: -1}, {Name: "bt2", NodeRank: -1}}, nil
}
func (b docBackend) Collect(_ context.Context, t cluster.Target) (*node.Doc, error) {
	if t.Name != "bt2" || b.doc == nil {
		return nil, &cluster.NodeError{Status: cluster.StatusLaunch, Msg: "srun: error: Unable to confirm allocation"}
	}
	return node.Decode(b.doc, t.Name)
}

func fixedJob(b cluster.Backend) ClusterJob {
	return func(context.Context, []int) (cluster.Backend, string, string, error) {
		return b, "srun job 1", "job: 1, found from a test", nil
	}
}

// A partial gather is still a capture: the file is stacks --srun's
// document, and the headline names the node that answered and the one
// that did not.
func TestClusterCapturePartial(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "cluster", "node", "testdata", "bt2.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	capture := ClusterCapture(fixedJob(docBackend{doc}), cluster.Options{Deadline: 5 * time.Second, Parallel: 2}, report.Style{})
	res, err := capture(context.Background(), CaptureRequest{Dir: dir, Name: "silence-1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "silence-1.stacks.json"))
	if err != nil || res.Path != filepath.Join(dir, "silence-1.stacks.json") {
		t.Fatalf("capture file %s: %v", res.Path, err)
	}
	var d reportcluster.Doc
	if err := json.Unmarshal(b, &d); err != nil || !d.Cluster.Partial || len(d.Cluster.Nodes) != 2 || len(d.Processes) != 2 {
		t.Fatalf("document %v: partial %v, %d nodes, %d processes", err, d.Cluster.Partial, len(d.Cluster.Nodes), len(d.Processes))
	}
	if !strings.Contains(res.Where.Text, "; across 1 node(s) of srun job 1: bt2; not answered: bt1 launch-error") {
		t.Errorf("headline %q", res.Where.Text)
	}
	// The file keeps stacks --srun's headline; only the verdict's names the nodes.
	if strings.Contains(d.Where.Text, "across") {
		t.Errorf("the file's headline was changed: %q", d.Where.Text)
	}
	if !strings.Contains(res.Text, "partial result: nodes: 1 of 2 answered (srun)") || !strings.HasSuffix(res.Text, "job: 1, found from a test\n") {
		t.Errorf("report:\n%s", res.Text)
	}
}

// No node answering is a failed capture that gives every node's reason.
func TestClusterCaptureNoNode(t *testing.T) {
	capture := ClusterCapture(fixedJob(docBackend{}), cluster.Options{Deadline: 5 * time.Second, Parallel: 2}, report.Style{})
	_, err := capture(context.Background(), CaptureRequest{Dir: t.TempDir(), Name: "silence-1"})
	if err == nil || !strings.Contains(err.Error(), "bt1 launch-error (srun: error: Unable to confirm allocation); bt2 launch-error") {
		t.Errorf("error %v", err)
	}
}
