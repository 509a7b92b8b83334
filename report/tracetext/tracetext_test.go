package tracetext

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/internal/testcorpus"
	"github.com/bringup-tool/bringup/report"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// Golden summaries of real traces: verdict first, then the sections.
func TestGolden(t *testing.T) {
	for name, sub := range map[string]string{
		"comp_metrics":   "tlparse-inputs/comp_metrics.log",
		"cache_hit_miss": "tlparse-inputs/cache_hit_miss.log",
		"multi_rank":     "tlparse-inputs/multi_rank_logs",
		"schedule":       "tlparse-inputs/multi_rank_schedule",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(testcorpus.Dir(t, "tlparse-inputs"), strings.TrimPrefix(sub, "tlparse-inputs/"))
			res, err := compiles.Analyze([]string{path}, compiles.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := Write(&buf, res, Options{}); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".txt")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if buf.String() != string(want) {
				t.Errorf("summary differs from %s (run with -update after checking):\n%s", golden, buf.String())
			}
		})
	}
}

func TestColourOnlyWhenAsked(t *testing.T) {
	res, err := compiles.Analyze([]string{testcorpus.File(t, "tlparse-inputs", "comp_failure.log")}, compiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var plain, colour bytes.Buffer
	_ = Write(&plain, res, Options{})
	_ = Write(&colour, res, Options{Style: report.Style{Color: true}})
	if strings.Contains(plain.String(), "\x1b[") || !strings.Contains(colour.String(), "\x1b[31m") {
		t.Error("colour must appear only with Style.Color")
	}
	if v, bad := Verdict(res); !bad || !strings.HasPrefix(v, "PROBLEM: 1 compile(s) failed") {
		t.Errorf("verdict %q %v", v, bad)
	}
}
