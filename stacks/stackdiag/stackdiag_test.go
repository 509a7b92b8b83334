package stackdiag

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/diagnose"
	"github.com/bringup-tool/bringup/internal/testcorpus"
)

// diagnose reads the eight per-rank py-spy dumps of the seed-004 hang
// through this analyzer and names the hang on all ranks.
func TestDiagnoseReadsStackDumps(t *testing.T) {
	dir := filepath.Join(testcorpus.Root(), "stacks", "testdata", "seed004-snap1")
	d, err := diagnose.Run([]string{dir}, diagnose.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Inputs) != 8 {
		t.Fatalf("%d inputs", len(d.Inputs))
	}
	for _, in := range d.Inputs {
		if in.Kind != "stackdump" || in.Error != "" || in.Records != 3 {
			t.Errorf("input %+v", in)
		}
	}
	var found bool
	for _, f := range d.Findings {
		if f.Rule == "inductor-implicit-fallback-operator-str" {
			found = true
			if len(f.Ranks) != 8 {
				t.Errorf("ranks %v", f.Ranks)
			}
		}
	}
	if !found || d.Status != "failed" {
		t.Errorf("status %q findings %+v", d.Status, d.Findings)
	}
	if _, ok := d.Facts[d.Inputs[0].Path].(Facts); !ok {
		t.Errorf("facts %T", d.Facts[d.Inputs[0].Path])
	}
}

func TestInterleavedDumpIsAnInputError(t *testing.T) {
	p := testcorpus.File(t, "stackdumps", "sglang-issue-6763-faulthandler-interleaved.txt")
	d, err := diagnose.Run([]string{p}, diagnose.Options{})
	// The only input is unusable: diagnose says so, with the fix.
	if err == nil || len(d.Inputs) != 1 || d.Inputs[0].Kind != "stackdump" ||
		!strings.Contains(d.Inputs[0].Error, ":12: output of several processes is interleaved") ||
		!strings.Contains(d.Inputs[0].Error, "faulthandler.enable(file=") {
		t.Errorf("err %v inputs %+v", err, d.Inputs)
	}
}
