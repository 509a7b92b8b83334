package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/cluster/node"
)

// TestStacksTakesTheClusterFlags: `bringup stacks` is the node collector
// (--local) and the fan-out; the flags do not mix with dump files or pids.
func TestStacksTakesTheClusterFlags(t *testing.T) {
	code, out, errs := runCLI("stacks", "--local", "--json", "--node-name", "n3")
	if code != 0 {
		t.Fatalf("stacks --local: exit %d: %s", code, errs)
	}
	var d node.Doc
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Schema != node.Schema || d.Node.LauncherName != "n3" {
		t.Fatalf("stacks --local --json: %v %+v", err, d.Node)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stacks", "--local", "some.txt"}, "give no FILE, --pid or --tree"},
		{[]string{"stacks", "--srun", "1", "--pid", "1"}, "give no FILE, --pid or --tree"},
		{[]string{"stacks", "--srun", "1", "--ssh", "a"}, "alternatives"},
	} {
		if code, _, errs := runCLI(c.args...); code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q", c.args, code, errs)
		}
	}
}
