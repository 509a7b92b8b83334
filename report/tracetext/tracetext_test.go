package tracetext

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/report"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
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

// enums are the string fields the renderer compares with its constants
// (a compile's status, a cache outcome): poisoned, the sections they
// select would not be printed at all.
var enums = map[string]bool{"Status": true, "Outcome": true, "Kind": true, "Severity": true}

// poison puts terminal escape sequences and control characters around
// every string reachable from v, map keys included (the same string gets
// the same poison, so lookups by path or id still match).
func poison(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			poison(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() && !(f.Kind() == reflect.String && enums[v.Type().Field(i).Name]) {
				poison(f)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return // raw JSON and hashes: not printed as text
		}
		for i := 0; i < v.Len(); i++ {
			poison(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		m := reflect.MakeMap(v.Type())
		for _, k := range v.MapKeys() {
			nk := reflect.New(k.Type()).Elem()
			nk.Set(k)
			poison(nk)
			nv := reflect.New(v.Type().Elem()).Elem()
			nv.Set(v.MapIndex(k))
			poison(nv)
			m.SetMapIndex(nk, nv)
		}
		v.Set(m)
	case reflect.String:
		if v.CanSet() {
			v.SetString("\x1b]0;PWNED\x07" + v.String() + "\x1b[2J\u009b3J\x08\r")
		}
	}
}

// A trace is written by the traced program: every string the summary
// and the findings print from it is cleaned of escape sequences and
// control characters (the issue's `\x1b]0;PWNED\x07\x1b[2J` set the
// terminal title and cleared the screen), and with colour on, the only
// escapes left are the Style's own SGR colours.
func TestEverythingPrintedIsCleaned(t *testing.T) {
	var paths []string
	for _, p := range []string{"comp_failure.log", "cache_hit_miss.log", "comp_metrics.log", "multi_rank_logs", "multi_rank_schedule"} {
		paths = append(paths, filepath.Join(testcorpus.Dir(t, "tlparse-inputs"), p))
	}
	res, err := compiles.Analyze(paths, compiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	res.Findings = compiles.Conclude(res, set)
	res.Ignored = append(res.Ignored, compiles.Ignored{Path: "notes.txt", Reason: "not a TORCH_TRACE log"})
	if len(res.Findings) == 0 || len(res.GraphBreaks) == 0 || len(res.Divergence) == 0 || len(res.Cache) == 0 {
		t.Fatalf("the inputs no longer cover the sections: %d findings, %d breaks, %d divergences, %d cache events",
			len(res.Findings), len(res.GraphBreaks), len(res.Divergence), len(res.Cache))
	}
	poison(reflect.ValueOf(res))
	for _, colour := range []bool{false, true} {
		var buf bytes.Buffer
		opts := Options{Style: report.Style{Color: colour}, Top: 1000}
		if err := Write(&buf, res, opts); err != nil {
			t.Fatal(err)
		}
		if err := WriteFindings(&buf, res.Findings, opts); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if strings.Contains(out, "PWNED") {
			t.Errorf("colour %v: a title-setting sequence reached the output", colour)
		}
		sgr := regexp.MustCompile(`\x1b\[[0-9;]*m`)
		if !colour && strings.Contains(out, "\x1b") || colour && strings.Contains(sgr.ReplaceAllString(out, ""), "\x1b") {
			t.Errorf("colour %v: an escape other than the Style's colours in:\n%q", colour, out)
		}
		for _, r := range out {
			if r < 0x20 && r != '\n' && r != '\t' && r != 0x1b || r == 0x7f || r >= 0x80 && r < 0xa0 {
				t.Fatalf("colour %v: control character %U in:\n%q", colour, r, out)
			}
		}
		// The text itself is all still there.
		for _, want := range []string{"PROBLEM: 3 compile(s) failed", "Failed compiles (3)", "BackendCompilerFailed", "Findings (", "Graph breaks, distinct", "Recompiles (", "Cache lookups", "Divergence across ranks", "ignored notes.txt"} {
			if !strings.Contains(out, want) {
				t.Errorf("colour %v: %q lost", colour, want)
			}
		}
	}
}

// A failed compile Dynamo ran eagerly (fell_back) is named as such and
// does not make the verdict an error by itself; one that did not is.
func TestVerdictFellBack(t *testing.T) {
	res := &compiles.Result{Compiles: []compiles.Compile{{ID: "0/0", Status: compiles.StatusFailed, FailType: "Unsupported", FellBack: true}}}
	if v, bad := Verdict(res); bad || v != "PROBLEM: 1 compile(s) failed (1 fell back to eager)" {
		t.Errorf("fell back: verdict %q, error %v", v, bad)
	}
	res.Compiles = append(res.Compiles, compiles.Compile{ID: "1/0", Status: compiles.StatusFailed, FailType: "InductorError"})
	if v, bad := Verdict(res); !bad || v != "PROBLEM: 2 compile(s) failed (1 fell back to eager)" {
		t.Errorf("one hard failure: verdict %q, error %v", v, bad)
	}
}
