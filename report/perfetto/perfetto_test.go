package perfetto

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"
	"testing"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

type traceFile struct {
	Schema      string `json:"schema"`
	TraceEvents []struct {
		Name string         `json:"name"`
		Cat  string         `json:"cat"`
		Ph   string         `json:"ph"`
		Ts   *float64       `json:"ts"`
		Dur  *float64       `json:"dur"`
		Pid  *int           `json:"pid"`
		Tid  *int           `json:"tid"`
		Args map[string]any `json:"args"`
	} `json:"traceEvents"`
}

func export(t *testing.T, res *compiles.Result) traceFile {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, res); err != nil {
		t.Fatal(err)
	}
	var tf traceFile
	if err := json.Unmarshal(buf.Bytes(), &tf); err != nil {
		t.Fatalf("export is not JSON: %v\n%.400s", err, buf.String())
	}
	return tf
}

func TestWriteMultiRank(t *testing.T) {
	res, err := compiles.Analyze([]string{testcorpus.Dir(t, "tlparse-inputs/multi_rank_logs")}, compiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tf := export(t, res)
	if tf.Schema != Schema {
		t.Errorf("schema = %q, want %q", tf.Schema, Schema)
	}
	want := len(res.Spans) + len(res.OpenSpans)
	if want == 0 {
		t.Fatal("multi_rank_logs has no phases: the test checks nothing")
	}
	xs, withID, named := 0, 0, map[int]string{}
	pids := map[int]bool{}
	type key struct{ pid, tid int }
	spans := map[key][][2]float64{}
	for _, e := range tf.TraceEvents {
		if e.Pid == nil {
			t.Fatalf("event %q without pid", e.Name)
		}
		switch e.Ph {
		case "M":
			if e.Name == "process_name" {
				named[*e.Pid], _ = e.Args["name"].(string)
			}
		case "X":
			xs++
			if e.Name == "" || e.Ts == nil || e.Dur == nil || e.Tid == nil || *e.Dur < 0 {
				t.Fatalf("incomplete X event: %+v", e)
			}
			if _, ok := e.Args["compile_id"]; ok {
				withID++
			}
			pids[*e.Pid] = true
			k := key{*e.Pid, *e.Tid}
			spans[k] = append(spans[k], [2]float64{*e.Ts, *e.Ts + *e.Dur})
		default:
			t.Errorf("unexpected ph %q", e.Ph)
		}
	}
	if xs != want {
		t.Errorf("%d X events, want one per phase (%d)", xs, want)
	}
	wantID := 0
	for _, ph := range [][]compiles.Span{res.Spans, res.OpenSpans} {
		for _, p := range ph {
			if p.CompileID != "" {
				wantID++
			}
		}
	}
	if withID != wantID || wantID == 0 {
		t.Errorf("%d X events carry args.compile_id, want %d (the phases that have one)", withID, wantID)
	}
	// One pid per rank: the file-name ranks that have phases.
	wantPids := map[int]bool{}
	for _, p := range res.Spans {
		wantPids[Pids(res)[p.Path]] = true
	}
	for p := range wantPids {
		if !pids[p] {
			t.Errorf("no events on pid %d", p)
		}
		if p < 0 || p > 3 {
			t.Errorf("pid %d is not a rank of multi_rank_logs (0..3)", p)
		}
	}
	for p := range pids {
		if named[p] == "" {
			t.Errorf("pid %d has no process_name", p)
		}
	}
	// Perfetto draws X events of one thread as a tree: they must nest.
	for k, ss := range spans {
		sort.Slice(ss, func(i, j int) bool {
			if ss[i][0] != ss[j][0] {
				return ss[i][0] < ss[j][0]
			}
			return ss[i][1] > ss[j][1]
		})
		var stack [][2]float64
		for _, s := range ss {
			for len(stack) > 0 && stack[len(stack)-1][1] <= s[0] {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 && s[1] > stack[len(stack)-1][1]+1 { // 1µs slack for float rounding
				t.Errorf("pid %d tid %d: [%f,%f] overlaps [%f,%f] without nesting", k.pid, k.tid, s[0], s[1], stack[len(stack)-1][0], stack[len(stack)-1][1])
				break
			}
			stack = append(stack, s)
		}
	}
}

func TestWriteOpenPhases(t *testing.T) {
	res, err := compiles.Analyze([]string{"../tracehtml/testdata/script_injection.log"}, compiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.OpenSpans) == 0 {
		t.Fatal("fixture has no open phase")
	}
	tf := export(t, res)
	open := 0
	for _, e := range tf.TraceEvents {
		if e.Ph == "X" && e.Args["open"] == true {
			open++
		}
	}
	if open != len(res.OpenSpans) {
		t.Errorf("%d events marked open, want %d", open, len(res.OpenSpans))
	}
}

func TestWriteEmptyAndNil(t *testing.T) {
	tf := export(t, &compiles.Result{})
	if len(tf.TraceEvents) != 0 {
		t.Errorf("empty result exported %d events", len(tf.TraceEvents))
	}
	if err := Write(io.Discard, nil); err == nil {
		t.Error("Write(nil) succeeded")
	}
}
