package diagnosis

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden pins the text reports of the bundled examples; run with
// -update after an intended change and review the diff. (The JSON is
// checked by field in TestJSONSchema: its timeline details belong to
// analyze/timeline and change with it.)
func TestGolden(t *testing.T) {
	for _, ex := range []string{"aot-graph-break", "inlined-keyerror", "inductor-hang", "healthy"} {
		d := diagnoseExample(t, ex)
		var text bytes.Buffer
		if err := WriteText(&text, d, report.Style{}); err != nil {
			t.Fatal(err)
		}
		for name, got := range map[string][]byte{ex + ".txt": text.Bytes()} {
			p := filepath.Join("testdata", name)
			if *update {
				os.MkdirAll("testdata", 0o755)
				if err := os.WriteFile(p, got, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update ./report/diagnosis)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the golden file; rerun with -update if intended.\ngot:\n%s", p, got)
			}
		}
	}
}
