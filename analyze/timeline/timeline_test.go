package timeline

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/litscan"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func build(t *testing.T, paths ...string) ([]record.Phase, []Gap) {
	t.Helper()
	b := New()
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := enginelog.Parse(f, p, b.Add); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	return b.Finish()
}

// row renders a phase compactly for comparison.
func row(p record.Phase) string {
	return fmt.Sprintf("%s|%s|%s|%s|%s|%.2f|%s|%d-%d", p.Rank, p.Name, p.Detail,
		p.Start.Format("01-02 15:04:05"), p.End.Format("01-02 15:04:05"), p.Seconds, p.Status, p.Line, p.EndLine)
}

func compare(t *testing.T, got []record.Phase, want []string) {
	t.Helper()
	var rows []string
	for _, p := range got {
		rows = append(rows, row(p))
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("phases:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

func TestVLLMColdCompileFailsOnOneRank(t *testing.T) {
	phases, gaps := build(t, filepath.Join("..", "..", "ingest", "enginelog", "testdata", "vllm-v1-tp2.log"))
	compare(t, phases, []string{
		// "Loading weights took" and "Model loading took" are one phase.
		"DP0 TP0|load||12-31 23:59:55|01-01 00:00:42|46.30|done|3-6",
		"DP0 TP1|load||12-31 23:59:55|01-01 00:00:42|46.80|done|4-7",
		"DP0 TP0|dynamo||01-01 00:00:50|01-01 00:00:58|8.03|done|8-9",
		"DP0 TP0|compile||01-01 00:00:50|01-01 00:01:31|39.55|done|8-12",
		"DP0 TP0|inductor|dynamic shape|01-01 00:00:58|01-01 00:01:30|31.52|done|9-11",
		"DP0 TP1|dynamo||01-01 00:00:50|01-01 00:00:59|9.00|done|13-14",
		// TP1 never finished compiling and then logged errors.
		"DP0 TP1|compile||01-01 00:00:50|01-01 00:01:41|51.00|failed|13-50",
		"DP0 TP1|inductor||01-01 00:00:59|01-01 00:01:41|42.00|failed|14-50",
	})
	// The log crosses new year without printing a year: the load phase
	// still spans 47 s, not minus a year.
	if d := phases[1].End.Sub(phases[1].Start); d != 47*time.Second {
		t.Errorf("TP1 load spans %v", d)
	}
	if len(gaps) != GapsPerSource || gaps[0].Line != 4 || gaps[0].Seconds != 46 || gaps[1].Line != 10 || gaps[1].Seconds != 29 {
		t.Errorf("gaps %+v", gaps)
	}
	if gaps[0].Start.Format("01-02 15:04:05") != "12-31 23:59:55" {
		t.Errorf("gap start %v", gaps[0].Start)
	}
}

func TestVLLMCacheHitCapturesReady(t *testing.T) {
	phases, gaps := build(t, filepath.Join("testdata", "vllm-cache-hit.log"))
	compare(t, phases, []string{
		"EngineCore DP0|load||03-01 10:00:05|03-01 10:00:16|10.10|done|2-4",
		"EngineCore DP0|dynamo||03-01 10:00:20|03-01 10:00:22|2.31|done|5-6",
		"EngineCore DP0|compile||03-01 10:00:20|03-01 10:00:26|5.40|done|5-8",
		// A cache hit: no Inductor phase at all.
		"EngineCore DP0|cache-load|compile range (1, 8192)|03-01 10:00:22|03-01 10:00:25|2.85|done|7-7",
		"EngineCore DP0|profile||03-01 10:00:29|03-01 10:00:31|1.20|done|10-10",
		// tqdm bars carry no header: their elapsed time and the last time seen.
		"EngineCore DP0|cudagraph|mixed prefill-decode, PIECEWISE|03-01 10:00:27|03-01 10:00:31|4.00|done|11-11",
		"EngineCore DP0|cudagraph|decode, FULL|03-01 10:00:29|03-01 10:00:31|2.00|done|12-12",
		"EngineCore DP0|cudagraph||03-01 10:00:31|03-01 10:00:38|7.00|done|13-13",
		"EngineCore DP0|ready||03-01 10:00:15|03-01 10:00:39|23.10|done|14-14",
	})
	if gaps[0].Seconds != 300 || gaps[0].Line != 14 {
		t.Errorf("gaps %+v", gaps)
	}
}

func TestVLLMStuckAfterInductor(t *testing.T) {
	phases, gaps := build(t, filepath.Join("testdata", "vllm-stuck.log"))
	compare(t, phases, []string{
		"DP0 TP0|dynamo||03-02 11:00:00|03-02 11:00:09|9.00|done|1-2",
		// No "torch.compile took": the compile never finished.
		"DP0 TP0|compile||03-02 11:00:00|03-02 11:10:50|650.00|unfinished|1-6",
		// Wording drift: "took" (new) and "takes" (old), compile ranges.
		"DP0 TP0|inductor|compile range (1, 8192)|03-02 11:00:09|03-02 11:00:42|30.00|done|2-4",
		"DP0 TP0|inductor|compile range (8193, 16384)|03-02 11:00:42|03-02 11:00:50|7.50|done|5-5",
	})
	if gaps[0].Seconds != 600 || gaps[0].Line != 5 || gaps[0].Start.Format("15:04:05") != "11:00:50" {
		t.Errorf("gaps %+v", gaps)
	}
}

func TestSGLangCaptureNeverEnds(t *testing.T) {
	phases, _ := build(t, filepath.Join("..", "..", "ingest", "enginelog", "testdata", "sglang-tp2.log"))
	compare(t, phases, []string{
		"TP0|load||10-29 11:20:05|10-29 11:21:05|60.12|done|2-4",
		"TP1|load||10-29 11:20:05|10-29 11:23:07|182.00|unfinished|3-24",
		"TP0|cudagraph||10-29 11:21:06|10-29 11:23:07|121.00|unfinished|5-24",
		"TP1|cudagraph||10-29 11:21:06|10-29 11:23:07|121.00|unfinished|6-24",
	})
	if phases[0].Start.Year() != 2025 {
		t.Errorf("SGLang times keep their year: %v", phases[0].Start)
	}
}

func TestATOMMidnight(t *testing.T) {
	phases, gaps := build(t, filepath.Join("..", "..", "ingest", "enginelog", "testdata", "atom.log"))
	compare(t, phases, []string{
		"|dynamo||01-01 23:59:55|01-01 23:59:59|3.10|done|3-3",
		// ATOM prints no date: 00:00:41 is the next day.
		"|inductor|dynamic shape|01-01 23:59:59|01-02 00:00:41|40.20|done|3-4",
		"|ready||01-02 00:00:45|01-02 00:00:45|0.00|done|5-5",
	})
	if gaps[0].Seconds != 42 {
		t.Errorf("gap across midnight %+v", gaps[0])
	}
}

func TestCorpusVLLM15598(t *testing.T) {
	phases, _ := build(t, testcorpus.File(t, "engine-logs", "vllm-issue-15598.log"))
	compare(t, phases, []string{
		// The V0 capture notice opens a capture the excerpt never closes.
		"RayWorkerWrapper pid 1861983|cudagraph||03-27 10:29:03|03-27 10:29:03|0.00|unfinished|1-4",
		"RayWorkerWrapper pid 1463574|profile||03-27 10:28:56|03-27 10:29:01|4.26|done|2-2",
	})
}

func TestCorpusNoPhases(t *testing.T) {
	for _, name := range []string{"vllm-issue-18851.log", "vllm-issue-30905.log", "vllm-issue-21858.log", "sglang-issue-1117.log", "pytorch-issue-120774.log"} {
		phases, _ := build(t, testcorpus.File(t, "engine-logs", name))
		if len(phases) != 0 {
			t.Errorf("%s: %v", name, phases)
		}
	}
}

func TestMatchWordingDrift(t *testing.T) {
	cases := []struct {
		text   string
		name   string
		detail string
		secs   float64
	}{
		{"Compiling a graph for dynamic shape takes 31.52 s", PhaseInductor, "dynamic shape", 31.52},
		{"Compiling a graph for dynamic compile range took 3.10 s", PhaseInductor, "dynamic compile range", 3.10},
		{"Compiling a graph for shape 8 takes 1.50 s", PhaseInductor, "shape 8", 1.50},
		{"Directly load the compiled graph(s) for dynamic shape from the cache, took 0.912 s", PhaseCacheLoad, "dynamic shape", 0.912},
		{"torch.compile takes 12.00 s in total", PhaseCompile, "", 12},
		{"torch.compile took 13.25 s in total", PhaseCompile, "", 13.25},
		{"Graph capturing finished in 13 secs, took 0.55 GiB", PhaseCUDAGraph, "", 13},
		{"Capture cuda graph end. Time elapsed: 35.21 s. mem usage=1.2 GB. avail mem=9.0 GB.", PhaseCUDAGraph, "", 35.21},
		{"Load weight end. elapsed=60.12 s, type=X", PhaseLoad, "", 60.12},
		{"Model loading took 15.27 GiB memory and 10.100000 seconds", PhaseLoad, "", 10.1},
		{"Loading weights took 9.50 seconds", PhaseLoad, "", 9.5},
		{"Memory profiling takes 4.26 seconds", PhaseProfile, "", 4.26},
		{"init engine (profile, create kv cache, warmup model) took 23.10 seconds", PhaseReady, "", 23.10},
		{"Capturing CUDA graphs (decode, FULL): 100%|██| 35/35 [1:00:02<00:00, 14.9it/s]", PhaseCUDAGraph, "decode, FULL", 3602},
	}
	for _, c := range cases {
		e, ok := match(c.text)
		if !ok || e.name() != c.name || e.detail != c.detail || e.secs != c.secs {
			t.Errorf("match(%q) = %+v, %v", c.text, e, ok)
		}
	}
	for _, s := range []string{"Loading safetensors checkpoint shards: 50%", "hello", "Compiled graph is fine"} {
		if e, ok := match(s); ok {
			t.Errorf("match(%q) = %+v", s, e)
		}
	}
}

func TestGapsKeepLongestPerSource(t *testing.T) {
	b := New()
	base := time.Date(0, 5, 1, 0, 0, 0, 0, time.UTC)
	secs := []int{0, 3, 10, 11, 40, 41, 42, 100, 101, 130}
	for i, s := range secs {
		b.Add(record.Record{Source: "a", Line: i + 1, EndLine: i + 1, Time: base.Add(time.Duration(s) * time.Second), Text: "x"})
		b.Add(record.Record{Source: "b", Line: i + 1, EndLine: i + 1, Time: base.Add(time.Duration(2*s) * time.Second), Text: "x"})
	}
	_, gaps := b.Finish()
	var got []string
	for _, g := range gaps {
		got = append(got, fmt.Sprintf("%s:%d:%.0f", g.Source, g.Line, g.Seconds))
	}
	want := "a:7:58 a:4:29 a:9:29 a:2:7 a:1:3 b:7:116 b:4:58 b:9:58 b:2:14 b:1:6"
	if strings.Join(got, " ") != want {
		t.Errorf("gaps %v, want %s", got, want)
	}
}

func TestPhasesAreBounded(t *testing.T) {
	b := New()
	base := time.Date(0, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < MaxPhases+10; i++ {
		b.Add(record.Record{Source: "a", Line: i + 1, EndLine: i + 1, Time: base.Add(time.Duration(10*i) * time.Second),
			Text: "Memory profiling takes 1.00 seconds"})
	}
	phases, _ := b.Finish()
	if len(phases) != MaxPhases || b.Dropped != 10 {
		t.Errorf("%d phases kept, %d dropped", len(phases), b.Dropped)
	}
}

// Every line match recognises, and every traceback header, holds one of
// Markers: a reader that skips lines without them misses no phase.
func TestMarkersCoverMatch(t *testing.T) {
	set := litscan.New(Markers())
	if set == nil {
		t.Fatal("Markers cannot be compiled into a litscan set (a literal shorter than litscan.MinLen)")
	}
	for _, l := range Markers() {
		if len(l) < 11 {
			t.Errorf("marker %q is shorter than 11 bytes: litscan would read 4-byte windows", l)
		}
	}
	seen := 0
	for _, name := range []string{"pytorch-issue-120774.log", "sglang-issue-1117.log", "vllm-issue-15598.log", "vllm-issue-18851.log", "vllm-issue-21858.log", "vllm-issue-30905.log"} {
		data, err := os.ReadFile(testcorpus.File(t, "engine-logs", name))
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(data), "\n") {
			// match reads the message; any prefix before it only adds bytes.
			for k := 0; k < len(line); k++ {
				if _, ok := match(line[k:]); ok || strings.HasPrefix(line[k:], "Traceback (most recent call last)") {
					seen++
					if !set.Any(line) {
						t.Errorf("%s:%d: marker line holds none of Markers: %q", name, n+1, line)
					}
					break
				}
			}
		}
	}
	// Every example of the marker table.
	for i := range markers {
		for _, s := range markers[i].examples {
			if _, ok := match(s); !ok {
				t.Errorf("match does not recognise its example %q", s)
			}
			if !set.Any(s) {
				t.Errorf("marker %q holds none of Markers", s)
			}
		}
	}
	if seen == 0 {
		t.Error("no marker line in the corpus logs: the check checked nothing")
	}
}

// TestAddGapKeepsLongest: the gaps kept are the GapsPerSource longest,
// longest first and the earlier first among equals, as a stable sort of
// every gap would give (what Finish reported when every gap was kept).
func TestAddGapKeepsLongest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 2000; round++ {
		var s sourceState
		var all []Gap
		n := rng.IntN(20)
		for i := 0; i < n; i++ {
			g := Gap{Line: i, Seconds: float64(1 + rng.IntN(4))}
			all = append(all, g)
			s.addGap(g)
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].Seconds > all[j].Seconds })
		if len(all) > GapsPerSource {
			all = all[:GapsPerSource]
		}
		if !reflect.DeepEqual(s.gaps, all) && !(len(s.gaps) == 0 && len(all) == 0) {
			t.Fatalf("round %d: kept %+v, want %+v", round, s.gaps, all)
		}
	}
}

// TestTimesStayWritable: a phase closed with its duration just after
// midnight on Jan 1 of a year-less log, a garbage duration, or a clock
// that rolls over again and again give times a report can hold (JSON
// writes years 0-9999 only: `diagnose --json` failed on such logs).
func TestTimesStayWritable(t *testing.T) {
	for name, text := range map[string]string{
		"jan1":    "INFO 01-01 00:00:10 [x.py:1] Loading weights took 45.1 seconds\n",
		"garbage": "Model loading took70000000 second0\nINFO 01-01 00:00:10 [x.py:1] Loading weights took 1e300 seconds\nINFO 01-01 00:00:10 [x.py:1] Loading weights took 99999999999999999999 seconds\n",
		"flips":   strings.Repeat("INFO 12-31 23:59:59 [x.py:1] tick\nINFO 01-01 00:00:01 [x.py:1] Loading weights took 2 seconds\n", 400),
	} {
		b := New()
		if _, err := enginelog.Parse(strings.NewReader(text), name, func(r record.Record) { b.Add(r) }); err != nil {
			t.Fatal(err)
		}
		phases, gaps := b.Finish()
		if len(phases) == 0 {
			t.Fatalf("%s: no phase", name)
		}
		if _, err := json.Marshal(struct {
			P []record.Phase
			G []Gap
		}{phases, gaps}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSecondClosingLineWindow: "Model loading took" within 5 s of a rank's
// "Loading weights took" extends that load phase (vLLM prints both for
// one load); 6 s later it is a load of its own.
func TestSecondClosingLineWindow(t *testing.T) {
	for _, c := range []struct {
		second string
		want   []string
	}{
		{"00:00:15", []string{"TP0|load||01-02 00:00:00|01-02 00:00:15|15.00|done|1-2"}},
		{"00:00:16", []string{
			"TP0|load||01-02 00:00:00|01-02 00:00:10|10.00|done|1-1",
			"TP0|load||01-02 00:00:01|01-02 00:00:16|15.00|done|2-2",
		}},
	} {
		log := "(Worker_TP0 pid=7) INFO 01-02 00:00:10 [default_loader.py:262] Loading weights took 10.00 seconds\n" +
			"(Worker_TP0 pid=7) INFO 01-02 " + c.second + " [gpu_model_runner.py:2653] Model loading took 38.41 GiB and 15.00 seconds\n"
		b := New()
		if _, err := enginelog.Parse(strings.NewReader(log), "x.log", b.Add); err != nil {
			t.Fatal(err)
		}
		phases, _ := b.Finish()
		compare(t, phases, c.want)
	}
}

// TestMarkerTable checks the table match and Markers come from: each
// prefix has an example that starts with it and matches as the marker's
// phase; no prefix is a prefix of another (so the order of the table does
// not decide a match); a line that lacks what a marker needs is none.
func TestMarkerTable(t *testing.T) {
	var all []string
	for i := range markers {
		m := &markers[i]
		for _, p := range m.prefixes {
			all = append(all, p)
			n := 0
			for _, ex := range m.examples {
				if !strings.HasPrefix(ex, p) {
					continue
				}
				n++
				e, ok := match(ex)
				if !ok || e.id != m.id || e.ready != m.ready {
					t.Errorf("example %q of %q: match = %+v, %v; want phase %s", ex, p, e, ok, phaseNames[m.id])
				}
				if m.needs != "" {
					if cut := strings.ReplaceAll(ex, m.needs, ""); strings.HasPrefix(cut, p) {
						if e, ok := match(cut); ok {
							t.Errorf("%q lacks %q but matches: %+v", cut, m.needs, e)
						}
					}
				}
			}
			if n == 0 {
				t.Errorf("prefix %q has no example", p)
			}
		}
	}
	for i, p := range all {
		for j, q := range all {
			if i != j && strings.HasPrefix(q, p) {
				t.Errorf("prefix %q is a prefix of %q", p, q)
			}
		}
	}
	if got := Markers(); len(got) != len(all)+1 || got[len(got)-1] != tracebackHeader {
		t.Errorf("Markers = %q, want the table's prefixes and the traceback header", got)
	}
}

// TestTorchStepLines: a plain torch run under TORCH_LOGS=dynamo,inductor
// (torchrun's prefixes, glog headers, compile ids) gets dynamo and
// inductor phases per rank from torch's own "Step 1/2/3" lines; a frame
// whose trace ends without a backend call (an empty graph) leaves no
// Inductor phase open, and a rank that dies inside Dynamo's trace stays in
// dynamo.
func TestTorchStepLines(t *testing.T) {
	log := `[default0]:[rank0]:I1201 20:33:28.350000 13317 torch/_dynamo/symbolic_convert.py:5795] [0/0] Step 1: torchdynamo start tracing forward /src/m.py:32
[default0]:[rank0]:I1201 20:33:30.925000 13317 torch/_dynamo/symbolic_convert.py:6070] [0/0] Step 1: torchdynamo done tracing forward (RETURN_VALUE)
[default0]:[rank0]:I1201 20:33:30.981000 13317 torch/_dynamo/output_graph.py:3289] [0/0] Step 2: calling compiler function inductor
[default0]:[rank0]:I1201 20:33:41.281000 13317 torch/_inductor/compile_fx.py:1606] [0/0] Step 3: torchinductor compiling FORWARDS graph 0
[default0]:[rank0]:I1201 20:34:17.086000 13317 torch/_inductor/compile_fx.py:1505] [0/0] Step 3: torchinductor done compiling FORWARDS graph 0
[default0]:[rank0]:I1201 20:34:17.123000 13317 torch/_dynamo/output_graph.py:3293] [0/0] Step 2: done compiler function inductor
[default0]:[rank0]:I1201 20:34:18.000000 13317 torch/_dynamo/symbolic_convert.py:5795] [1/0] Step 1: torchdynamo start tracing helper /src/m.py:50
[default0]:[rank0]:I1201 20:34:18.100000 13317 torch/_dynamo/symbolic_convert.py:6070] [1/0] Step 1: torchdynamo done tracing helper (RETURN_VALUE)
[default1]:[rank1]:I1201 20:33:28.922000 13318 torch/_dynamo/symbolic_convert.py:5795] [0/0] Step 1: torchdynamo start tracing forward /src/m.py:32
`
	b := New()
	if _, err := enginelog.Parse(strings.NewReader(log), "torchrun.log", b.Add); err != nil {
		t.Fatal(err)
	}
	phases, _ := b.Finish()
	var rows []string
	for _, p := range phases {
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%d", p.Rank, p.Name, p.Status, p.Line))
	}
	want := []string{"rank0|dynamo|done|1", "rank0|dynamo|done|7", "rank0|inductor|done|3", "rank1|dynamo|unfinished|9"}
	sort.Strings(rows)
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("phases:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

// A source that mixes a clock without a year (vLLM's "INFO 02-22
// 17:20:58") with one that has it (a Python logger's "2025-02-22
// 17:20:59,847"): the 2025 years between them are no silence (sglang
// issue 3765 printed 2562047.8 h of it), and a later gap on the dated
// clock still counts.
func TestMixedClocksNoGap(t *testing.T) {
	b := New()
	at := func(y int, mo time.Month, d, h, m, s int) time.Time { return time.Date(y, mo, d, h, m, s, 0, time.UTC) }
	b.Add(record.Record{Source: "s", Line: 1, EndLine: 1, Time: at(0, 2, 22, 17, 20, 58), Text: "Automatically detected platform cuda."})
	b.Add(record.Record{Source: "s", Line: 2, EndLine: 2, Time: at(2025, 2, 22, 17, 20, 59), Text: "Prebuilt kernels not found"})
	b.Add(record.Record{Source: "s", Line: 3, EndLine: 3, Time: at(2025, 2, 22, 17, 30, 59), Text: "server_args=ServerArgs()"})
	_, gaps := b.Finish()
	if len(gaps) != 1 || gaps[0].Seconds != 600 || gaps[0].Line != 2 {
		t.Errorf("gaps %+v, want one of 600 s after line 2", gaps)
	}
}
