package compiles

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/ingest/torchtrace"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func analyze(t *testing.T, args ...string) *Result {
	t.Helper()
	res, err := Analyze(args, Options{Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func corpus(t *testing.T, name string) string { return testcorpus.File(t, "tlparse-inputs", name) }

// rankDir copies corpus files into a temp dir under rank file names, the
// way tlparse's multi-rank tests build their inputs.
func rankDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for i, n := range names {
		b, err := os.ReadFile(corpus(t, n))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, "dedicated_log_torch_trace_rank_"+string(rune('0'+i))+".log")
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func findDiv(res *Result, kind string) *Divergence {
	for i := range res.Divergence {
		if res.Divergence[i].Kind == kind {
			return &res.Divergence[i]
		}
	}
	return nil
}

func artifactNames(res *Result, cid string) map[string]int {
	m := map[string]int{}
	for _, a := range res.Artifacts {
		if a.CompileID == cid {
			m[a.Name]++
		}
	}
	return m
}

func compile(res *Result, rank int, id string) *Compile {
	for i := range res.Compiles {
		c := &res.Compiles[i]
		if c.Rank == rank && c.ID == id && c.Occurrence == 0 {
			return c
		}
	}
	return nil
}

// TestEveryCorpusLog runs the whole analysis on every log of the corpus:
// nothing fails, counts are present for each input, every artifact
// reference reads back, and the JSON carries the schema and every key.
func TestEveryCorpusLog(t *testing.T) {
	root := testcorpus.Dir(t, "tlparse-inputs")
	var files []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".log") || strings.HasSuffix(p, ".txt")) {
			files = append(files, p)
		}
		return nil
	})
	if len(files) < 40 {
		t.Fatalf("found %d corpus logs", len(files))
	}
	for _, p := range files {
		res := analyze(t, p)
		st := res.Counts[p]
		if st == nil || st.Bytes == 0 && !strings.Contains(p, "messy") {
			t.Errorf("%s: counts %+v", p, st)
			continue
		}
		// Every payload reference reads back with the MD5 the scanner saw.
		for _, a := range res.Artifacts {
			if a.Envelope {
				if _, err := torchtrace.ReadEnvelope(a.PayloadRef); err != nil {
					t.Errorf("%s:%d envelope: %v", p, a.Line, err)
				}
				continue
			}
			if _, err := torchtrace.ReadPayload(a.PayloadRef); err != nil {
				t.Errorf("%s:%d %s: %v", p, a.Line, a.Name, err)
			}
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]json.RawMessage
		_ = json.Unmarshal(b, &doc)
		for _, k := range []string{"schema", "ranks", "compiles", "graph_breaks", "recompiles", "cache", "open_phases", "divergence", "counts"} {
			if v, ok := doc[k]; !ok || string(v) == "null" {
				t.Errorf("%s: JSON key %q is %s", p, k, v)
			}
		}
		if string(doc["schema"]) != `"bringup.trace/v1"` {
			t.Errorf("schema %s", doc["schema"])
		}
		// Compiles account for every compile id the parser saw.
		ids := map[string]bool{}
		for _, c := range res.Compiles {
			ids[c.ID] = true
		}
		for _, id := range st.CompileIDs {
			if !ids[unitOf(id)] {
				t.Errorf("%s: compile id %s has no compile unit", p, id)
			}
		}
	}
}

// test_parse_simple: [0/0] has aot_forward_graph*, dynamo_output_graph,
// inductor_post_grad_graph and inductor_output_code outputs; no failures.
func TestSimple(t *testing.T) {
	for _, name := range []string{"simple.log", "simple_corrupted_json.log"} {
		res := analyze(t, corpus(t, name))
		got := artifactNames(res, "0/0")
		for _, want := range []string{"aot_forward_graph_fw_metadata", "dynamo_output_graph", "inductor_post_grad_graph", "aot_inference_graph"} {
			if got[want] == 0 {
				t.Errorf("%s: [0/0] lacks %s (has %v)", name, want, got)
			}
		}
		code := false
		for _, a := range res.Artifacts {
			if a.Kind == "inductor_output_code" && a.CompileID == "0/0" {
				code = true
				p, err := torchtrace.ReadPayload(a.PayloadRef)
				if err != nil || !strings.Contains(p, "def call(args)") {
					t.Errorf("%s: output code not readable: %v", name, err)
				}
			}
		}
		if !code {
			t.Errorf("%s: no inductor_output_code", name)
		}
		c := compile(res, -1, "0/0")
		if c == nil || c.Status != StatusOK || c.Seconds.Total <= 0 || c.Seconds.Source != "us" {
			t.Fatalf("%s: compile %+v", name, c)
		}
		if len(res.OpenSpans) != 0 && name == "simple.log" {
			t.Errorf("simple.log: open phases %+v", res.OpenSpans)
		}
		// The corrupted copy lost the E of compile_file: reported, but as
		// uncertain, and no hang is concluded.
		if name == "simple_corrupted_json.log" {
			if len(res.OpenSpans) != 1 || !res.OpenSpans[0].Uncertain || res.OpenSpans[0].Name != "compile_file" {
				t.Errorf("corrupted: open phases %+v", res.OpenSpans)
			}
			set, _ := rules.Builtin()
			for _, f := range Conclude(res, set) {
				if f.Rule == "trace-phase-never-ended" {
					t.Error("a hang concluded from a phase whose E was unreadable")
				}
			}
		}
		if n := len(res.Spans); n < 20 {
			t.Errorf("%s: %d closed phases", name, n)
		}
		// fx_graph_cache_miss and the older aotautograd_cache_hash with
		// cache_state miss.
		if s := res.CacheStats[CacheFXGraph]; s.Miss != 1 {
			t.Errorf("%s: fx cache %+v", name, s)
		}
		if s := res.CacheStats[CacheAOTAutograd]; s.Miss != 1 {
			t.Errorf("%s: aot cache %+v", name, s)
		}
	}
}

// test_parse_compilation_metrics: [0/0_1], [1/0_1], [2/0] hold output
// graphs and metrics; the first two compiles restarted on a graph break.
func TestCompMetrics(t *testing.T) {
	res := analyze(t, corpus(t, "comp_metrics.log"))
	for _, id := range []string{"0/0_1", "1/0_1", "2/0"} {
		got := artifactNames(res, id)
		if got["dynamo_output_graph"] != 1 || got["compilation_metrics"] != 1 {
			t.Errorf("[%s] artifacts %v", id, got)
		}
	}
	for id, status := range map[string]string{"0/0": StatusRestarted, "1/0": StatusRestarted, "2/0": StatusOK} {
		c := compile(res, -1, id)
		if c == nil || c.Status != status {
			t.Fatalf("[%s] %+v, want %s", id, c, status)
		}
		if status == StatusRestarted && (c.Attempts != 2 || c.GraphBreaks != 1 || c.Seconds.BeforeRestart <= 0 || c.Seconds.Source != "s") {
			t.Errorf("[%s] attempts %d breaks %d seconds %+v", id, c.Attempts, c.GraphBreaks, c.Seconds)
		}
	}
	if len(res.GraphBreaks) != 2 || res.GraphBreaks[0].Source != "restart_reasons" ||
		!strings.HasPrefix(res.GraphBreaks[0].Reason, "skip function graph_break in file") || res.GraphBreaks[0].Function == "" {
		t.Errorf("graph breaks %+v", res.GraphBreaks)
	}
	if c := compile(res, -1, "0/0"); c.Frame.Func != "fn" || c.Frame.Line != 9549 || len(c.Stack) == 0 || !strings.HasSuffix(c.Stack[0].File, "test_misc.py") {
		t.Errorf("frame %+v stack[0] %+v", c.Frame, c.Stack)
	}
}

// test_parse_compilation_failures / test_parse_chromium_event: [0/0] failed
// with BackendCompilerFailed; its dynamo_error traceback is referenced;
// 6 chromium events pair into closed phases.
func TestCompFailure(t *testing.T) {
	for _, name := range []string{"comp_failure.log", "chromium_events.log"} {
		res := analyze(t, corpus(t, name))
		c := compile(res, -1, "0/0")
		if c == nil || c.Status != StatusFailed || c.FailType != "BackendCompilerFailed" || !strings.Contains(c.FailReason, "broken backend") {
			t.Fatalf("%s: %+v", name, c)
		}
		if c.DynamoError == nil {
			t.Fatalf("%s: no dynamo_error reference", name)
		}
		tb, err := torchtrace.ReadPayload(*c.DynamoError)
		if err != nil || !strings.HasPrefix(tb, "Traceback (most recent call last):") {
			t.Errorf("%s: dynamo_error %q %v", name, tb[:min(len(tb), 60)], err)
		}
		if len(res.Spans) != 3 || len(res.OpenSpans) != 0 {
			t.Errorf("%s: phases %d open %d, want 3 closed from 6 B/E events", name, len(res.Spans), len(res.OpenSpans))
		}
		set, err := rules.Builtin()
		if err != nil {
			t.Fatal(err)
		}
		fs := Conclude(res, set)
		if len(fs) == 0 || fs[0].Rule != "trace-compile-failed" || fs[0].Evidence[0].Line != c.MetricsLine {
			t.Errorf("%s: findings %+v", name, fs)
		}
	}
}

// test_parse_artifact and links.log.
func TestArtifactAndLinks(t *testing.T) {
	res := analyze(t, corpus(t, "artifacts.log"))
	if artifactNames(res, "0/0")["fx_graph_cache_hash"] != 1 {
		t.Errorf("artifacts %v", artifactNames(res, "0/0"))
	}
	res = analyze(t, corpus(t, "links.log"))
	if len(res.Links) != 1 || res.Links[0].URL == "" || res.Links[0].CompileID != "0/0" {
		t.Errorf("links %+v", res.Links)
	}
}

// test_cache_hit_miss: [1/0] has two FX graph misses and a hit, and three
// AOTAutograd bypasses (flex_attention); the second miss is explained by
// the graph hash differing from the hit's.
func TestCacheHitMiss(t *testing.T) {
	res := analyze(t, corpus(t, "cache_hit_miss.log"))
	var seq []string
	for _, ce := range res.Cache {
		if ce.CompileID != "1/0" {
			t.Errorf("cache event in %s", ce.CompileID)
		}
		seq = append(seq, ce.Kind+":"+ce.Outcome)
		if ce.Outcome == OutcomeBypass && !strings.HasPrefix(ce.Reason, "Unsupported call_function target flex_attention") {
			t.Errorf("bypass reason %q", ce.Reason)
		}
	}
	want := []string{"fx_graph:miss", "aotautograd:bypass", "fx_graph:hit", "aotautograd:bypass", "fx_graph:miss", "aotautograd:bypass"}
	if !reflect.DeepEqual(seq, want) {
		t.Errorf("cache sequence %v", seq)
	}
	if d := res.Cache[0].Differs; d == nil || !d.SameKey {
		t.Errorf("first miss: %+v, want same key as the later hit", d)
	}
	if d := res.Cache[4].Differs; d == nil || d.SameKey || !reflect.DeepEqual(d.Components, []string{"gm"}) {
		t.Errorf("second miss: %+v, want the graph (gm) to differ", d)
	}
	// Both misses are compared with the hit at line 4281, in the second
	// compile of [1/0]: the diff names that occurrence, in the JSON too.
	for _, i := range []int{0, 4} {
		if d := res.Cache[i].Differs; d == nil || d.Line != 4281 || d.CompileID != "1/0" || d.Occurrence != 1 {
			t.Errorf("miss %d compared with %+v, want [1/0]#2 at line 4281", i, d)
		} else if js, _ := json.Marshal(d); !strings.Contains(string(js), `"compile_id":"1/0","occurrence":1,`) {
			t.Errorf("differs as JSON: %s", js)
		}
	}
	// Three resets: each id compiled three times.
	n := 0
	for _, c := range res.Compiles {
		if c.ID == "1/0" {
			n++
		}
	}
	if n != 3 {
		t.Errorf("[1/0] compiled %d times, want 3 occurrences", n)
	}
}

// Export and AOTInductor provenance logs have no compile ids: everything
// sits outside any compile ("-_-_-_-" in tlparse), JIT variants under [0/0].
func TestExportAndProvenance(t *testing.T) {
	for name, want := range map[string][]string{
		"export.log":                                   {"exported_program", "guard_added"},
		"export_guard_added.log":                       {"exported_program", "guard_added"},
		"inductor_provenance_aot_cuda_log.txt":         {"before_pre_grad_graph", "after_post_grad_graph", "inductor_provenance_tracking_node_mappings", "inductor_aot_wrapper_code"},
		"inductor_provenance_aot_log.txt":              {"before_pre_grad_graph", "inductor_provenance_tracking_node_mappings"},
		"inductor_provenance_aot_log_old.txt":          {"before_recompile_pre_grad", "inductor_provenance_tracking_node_mappings"},
		"inductor_provenance_aot_debug_handle_log.txt": {"inductor_provenance_tracking_kernel_stack_traces"},
		"inductor_provenance_extended_log.txt":         {"inductor_provenance_tracking_kernel_stack_traces"},
	} {
		res := analyze(t, corpus(t, name))
		got := artifactNames(res, "")
		for _, w := range want {
			if got[w] == 0 {
				t.Errorf("%s: no %s outside compiles (have %v)", name, w, got)
			}
		}
		if len(res.Compiles) != 0 {
			t.Errorf("%s: %d compiles", name, len(res.Compiles))
		}
	}
	for _, name := range []string{"inductor_provenance_jit_cuda_log.txt", "inductor_provenance_jit_log.txt", "inductor_provenance_jit_debug_handle_log.txt"} {
		res := analyze(t, corpus(t, name))
		if artifactNames(res, "0/0")["inductor_provenance_tracking_node_mappings"] != 1 {
			t.Errorf("%s: [0/0] %v", name, artifactNames(res, "0/0"))
		}
	}
	// The extended log's stack-trace payload has an MD5 mismatch and still
	// reads back, with the "line 1\n  foo()" text tlparse renders.
	res := analyze(t, corpus(t, "inductor_provenance_extended_log.txt"))
	for _, a := range res.Artifacts {
		if a.Name == "inductor_provenance_tracking_kernel_stack_traces" {
			p, err := torchtrace.ReadPayload(a.PayloadRef)
			if a.MD5OK || err != nil || !strings.Contains(p, `line 1\\n  foo()`) {
				t.Errorf("kernel stack traces: md5 ok %v, err %v", a.MD5OK, err)
			}
		}
	}
}

// autotune_with_compile_id: the runtime metrics event without an attempt
// joins [0/0] rather than making a new compile.
func TestRuntimeMetricsJoinCompile(t *testing.T) {
	res := analyze(t, corpus(t, "autotune_with_compile_id.log"))
	if len(res.Compiles) != 1 || res.Compiles[0].ID != "0/0" || res.Compiles[0].Attempts != 1 {
		t.Errorf("compiles %+v", res.Compiles)
	}
	if artifactNames(res, "0/0")["compilation_metrics_runtime"] != 1 {
		t.Errorf("artifacts %v", artifactNames(res, "0/0"))
	}
}

// test_all_ranks_basic / test_diverging_compile_ids_warning /
// test_diverging_cache_events_multiple_groups on multi_rank_logs.
func TestMultiRankLogs(t *testing.T) {
	res := analyze(t, testcorpus.Dir(t, "tlparse-inputs/multi_rank_logs"))
	if len(res.Inputs) != 4 || len(res.Ranks) != 4 {
		t.Fatalf("inputs %d ranks %d", len(res.Inputs), len(res.Ranks))
	}
	for i, in := range res.Inputs {
		if in.Rank != i || in.RankFrom != "file_name" || in.Label == "" {
			t.Errorf("input %d: %+v", i, in)
		}
	}
	d := findDiv(res, DivCompileIDs)
	if d == nil || len(d.Groups) != 3 || !reflect.DeepEqual(d.Groups[0].Ranks, []int{0, 2}) {
		t.Errorf("compile-id divergence %+v", d)
	}
	if d := findDiv(res, DivCache); d == nil || len(d.Groups) < 2 {
		t.Errorf("cache divergence %+v", d)
	}
	if c := compile(res, 1, "0/14"); c == nil || len(c.RecompileReasons) != 14 || !strings.Contains(c.RecompileReasons[0], "size mismatch") {
		t.Errorf("rank 1 [0/14] %+v", c)
	}
	if len(res.Recompiles) != 20 {
		t.Errorf("%d recompiles, want 14 on rank 1 + 6 on rank 3", len(res.Recompiles))
	}
	if s := res.CacheStats[CacheFXGraph]; s.Hit != 17 || s.Miss != 5 {
		t.Errorf("fx cache %+v", s)
	}
	// rank 1's late misses are explained by the hit of [0/0]: only the
	// example input (a new size) differs.
	for _, ce := range res.Cache {
		if ce.Outcome == OutcomeMiss && (ce.Differs == nil || !reflect.DeepEqual(ce.Differs.Components, []string{"example_inputs[0]"})) {
			t.Errorf("miss %s [%s] differs %+v", ce.Kind, ce.CompileID, ce.Differs)
		}
	}
}

// test_all_ranks_chromium_events_sparse mutates the folder: rank 1 empty,
// ranks 0 and 2 replaced by chromium_events.log. The empty rank is named.
func TestSparseRanks(t *testing.T) {
	dir := rankDir(t, "chromium_events.log", "chromium_events.log", "chromium_events.log")
	if err := os.Truncate(filepath.Join(dir, "dedicated_log_torch_trace_rank_1.log"), 0); err != nil {
		t.Fatal(err)
	}
	res := analyze(t, dir)
	d := findDiv(res, DivEmptyRank)
	if d == nil || !reflect.DeepEqual(d.Groups[0].Ranks, []int{1}) {
		t.Errorf("empty rank %+v", res.Divergence)
	}
	if findDiv(res, DivCompileIDs) != nil {
		t.Errorf("ranks 0 and 2 agree: %+v", res.Divergence)
	}
	if len(res.Spans) != 6 {
		t.Errorf("phases %d, want 3 per live rank", len(res.Spans))
	}
}

// test_all_ranks_messy_input (decoys ignored) and
// test_no_compile_id_divergence (two copies of simple.log).
func TestMessyInputAndNoDivergence(t *testing.T) {
	res := analyze(t, testcorpus.Dir(t, "tlparse-inputs/multi_rank_messy_input"))
	if len(res.Inputs) != 2 || len(res.Ignored) != 2 {
		t.Fatalf("inputs %+v ignored %+v", res.Inputs, res.Ignored)
	}
	for _, ig := range res.Ignored {
		if b := filepath.Base(ig.Path); b != "another.log" && b != "some_other_file.txt" || ig.Reason == "" {
			t.Errorf("ignored %+v", ig)
		}
	}
	if len(res.Divergence) != 0 {
		t.Errorf("identical ranks diverge: %+v", res.Divergence)
	}
	res = analyze(t, rankDir(t, "cache_hit_miss.log", "cache_hit_miss.log"))
	if findDiv(res, DivCache) != nil {
		t.Errorf("test_no_cache_event_divergence: %+v", res.Divergence)
	}
}

// test_diverging_cache_events_warning: rank0 cache_hit_miss, rank1 simple.
func TestDivergingCache(t *testing.T) {
	res := analyze(t, rankDir(t, "cache_hit_miss.log", "simple.log"))
	d := findDiv(res, DivCache)
	if d == nil || len(d.Groups) != 2 || !reflect.DeepEqual(d.Groups[1].Ranks, []int{1}) {
		t.Errorf("cache divergence %+v", d)
	}
}

// test_collective_schedule_parsing / _with_divergence / _no_divergence.
func TestCollectiveSchedules(t *testing.T) {
	dir := testcorpus.Dir(t, "tlparse-inputs/multi_rank_schedule")
	res := analyze(t, dir)
	ops := map[int]int{}
	for _, c := range res.Collectives {
		if c.CompileID == "0/0" {
			ops[c.Rank] = len(c.Ops)
		}
	}
	if !reflect.DeepEqual(ops, map[int]int{0: 6, 1: 4, 2: 6}) {
		t.Errorf("[0/0] ops per rank %v, want 6, 4, 6", ops)
	}
	d := findDiv(res, DivCollectives)
	if d == nil || len(d.Groups) != 2 || !reflect.DeepEqual(d.Groups[0].Ranks, []int{0, 2}) || !reflect.DeepEqual(d.Groups[1].Ranks, []int{1}) {
		t.Fatalf("collective divergence %+v", d)
	}
	// Envelope ranks say 0 in all three files; the file names win.
	if res.Inputs[1].Rank != 1 || res.Inputs[1].RankFrom != "file_name" {
		t.Errorf("input 1 %+v", res.Inputs[1])
	}
	set, _ := rules.Builtin()
	fs := Conclude(res, set)
	if len(fs) == 0 || fs[0].Rule != "trace-collectives-diverge" {
		t.Errorf("findings %+v", fs)
	}
	res = analyze(t, filepath.Join(dir, "dedicated_log_torch_trace_rank_0_6u3fubwl.log"), filepath.Join(dir, "dedicated_log_torch_trace_rank_2.log"))
	if findDiv(res, DivCollectives) != nil || findDiv(res, DivMissingRank) == nil {
		t.Errorf("ranks 0 and 2: %+v (want no collective divergence, rank 1 missing)", res.Divergence)
	}
}

// test_graph_execution_order_diagnostics: order differs, cache consistent.
func TestGraphExecutionOrder(t *testing.T) {
	res := analyze(t, testcorpus.Dir(t, "tlparse-inputs/graph_exec_order_tests"))
	if d := findDiv(res, DivExecOrder); d == nil || len(d.Groups) != 2 {
		t.Errorf("execution order %+v", res.Divergence)
	}
	if findDiv(res, DivCache) != nil {
		t.Errorf("cache should be consistent: %+v", res.Divergence)
	}
	if len(res.ExecutionOrders) != 2 || res.ExecutionOrders[0].Order[0] != "0/1" {
		t.Errorf("orders %+v", res.ExecutionOrders)
	}
}

// multi_rank_runtime: rank 5's envelope says rank 1, its name says 5;
// ranks 5 and 6 compiled fewer graphs (test_tensor_meta_divergence_groups).
func TestRuntimeRanks(t *testing.T) {
	res := analyze(t, testcorpus.Dir(t, "tlparse-inputs/multi_rank_runtime"))
	if len(res.Inputs) != 7 || res.Inputs[5].Rank != 5 {
		t.Fatalf("inputs %+v", res.Inputs)
	}
	d := findDiv(res, DivGraphCount)
	if d == nil || len(d.Groups) != 2 || !reflect.DeepEqual(d.Groups[1].Ranks, []int{5, 6}) {
		t.Errorf("graph count divergence %+v", d)
	}
	if st := res.Counts[res.Inputs[0].Path]; st.PayloadMD5Mismatch != 4 {
		t.Errorf("rank 0 md5 mismatches %d, want 4 (hand-edited fixture)", st.PayloadMD5Mismatch)
	}
}

// collectives_parity: recompiles [0/1]..[0/3] with reasons.
func TestCollectivesParityLog(t *testing.T) {
	res := analyze(t, testcorpus.File(t, "tlparse-inputs/collectives_parity", "dedicated_log_torch_trace_rank_0.log"))
	if len(res.Compiles) != 4 || len(res.Recompiles) != 3 || len(res.Collectives) != 4 {
		t.Errorf("compiles %d recompiles %d collectives %d", len(res.Compiles), len(res.Recompiles), len(res.Collectives))
	}
}

func TestNoLogs(t *testing.T) {
	if _, err := Analyze([]string{t.TempDir()}, Options{}); err == nil || !strings.Contains(err.Error(), "no TORCH_TRACE files") {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := Analyze([]string{filepath.Join(t.TempDir(), "nope")}, Options{}); err == nil {
		t.Error("missing path must be an error")
	}
}

// FuzzAnalyzeFile feeds arbitrary bytes through the scanner and the whole
// per-file analysis and merge: payloads the analysis parses (chromium
// events, cache, recompile and graph-break artifacts) must never panic.
func FuzzAnalyzeFile(f *testing.F) {
	for _, name := range []string{"comp_metrics.log", "cache_hit_miss.log", "chromium_events.log", "simple_corrupted_json.log"} {
		b, err := os.ReadFile(corpusPath(f, name))
		if err == nil {
			f.Add(b[:min(len(b), 16384)])
		}
	}
	f.Add(symbolicSeed())
	f.Add([]byte("V1206 15:20:13.926000 1 a.py:1] {\"artifact\": {\"name\": \"dynamo_graph_break_reason\", \"encoding\": \"string\"}, \"frame_id\": 0, \"frame_compile_id\": 0, \"has_payload\": \"x\"}\n\tGraph break in user code at /a.py:3\n\tGraph Break Reason: GB0124 item()\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fa := newFileAnalysis(Input{Path: "fuzz.log", Rank: -1, RankFrom: "none"}, 100)
		sc := torchtrace.NewScanner(strings.NewReader(string(data)), "fuzz.log")
		sc.Want = fa.want
		for sc.Next() {
			fa.add(sc.Event())
		}
		fa.finish(sc.Stats())
		res := merge([]*fileAnalysis{fa}, []*torchtrace.Stats{sc.Stats()}, nil)
		_ = Subjects(res)
		if _, err := json.Marshal(res); err != nil {
			t.Fatal(err)
		}
	})
}

func corpusPath(t testing.TB, name string) string { return testcorpus.File(t, "tlparse-inputs", name) }

// test_tensor_meta_divergence_groups, test_runtime_analysis_working and
// test_runtime_analysis_mismatched_graphs.
func TestRuntimeAndTensorMeta(t *testing.T) {
	dir := testcorpus.Dir(t, "tlparse-inputs/multi_rank_runtime")
	res := analyze(t, dir)
	d := findDiv(res, DivTensorMeta)
	if d == nil || !reflect.DeepEqual(d.Groups[len(d.Groups)-1].Ranks, []int{5, 6}) {
		t.Errorf("tensor meta divergence %+v", d)
	}
	if !strings.Contains(res.RuntimeNote, "different numbers of compiled graphs") || len(res.RuntimeDeltas) != 0 {
		t.Errorf("all ranks: note %q deltas %d", res.RuntimeNote, len(res.RuntimeDeltas))
	}
	var four []string
	for r := 0; r < 4; r++ {
		four = append(four, filepath.Join(dir, "dedicated_log_torch_trace_rank_"+string(rune('0'+r))+".log"))
	}
	res = analyze(t, four...)
	if res.RuntimeNote != "" || len(res.RuntimeDeltas) != 4 || res.RuntimeDeltas[0].DeltaMs <= 0 {
		t.Errorf("ranks 0-3: note %q deltas %+v", res.RuntimeNote, res.RuntimeDeltas)
	}
	if findDiv(res, DivTensorMeta) != nil {
		t.Errorf("ranks 0-3 share tensor meta: %+v", res.Divergence)
	}
}

// The diagnose analyzer: per-file subjects, plus the directory's
// divergence once, on its lowest-ranked file.
func TestDiagnoseAnalyzer(t *testing.T) {
	p := corpus(t, "comp_failure.log")
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := DiagnoseAnalyzer(p, f)
	if err != nil {
		t.Fatal(err)
	}
	if a.Records != 21 || len(a.Subjects) != 1 || a.Subjects[0].Fact != FactCompileFailed || a.Subjects[0].Evidence.Line != 145 || a.Result == nil {
		t.Errorf("records %d subjects %+v", a.Records, a.Subjects)
	}
	dir := testcorpus.Dir(t, "tlparse-inputs/multi_rank_schedule")
	divs := func(name string) int {
		p := filepath.Join(dir, name)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		a, err := DiagnoseAnalyzer(p, f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range a.Subjects {
			if s.Fact == FactDivergence && s.Fields["kind"] == DivCollectives {
				n++
			}
		}
		return n
	}
	if divs("dedicated_log_torch_trace_rank_0_6u3fubwl.log") != 1 || divs("dedicated_log_torch_trace_rank_1_n8zycf07.log") != 0 {
		t.Error("the collective divergence must be reported once, with rank 0")
	}
}

// test_collectives_parity_detects_mismatch: [0/1] offset 0, missing waits
// 3; [0/0] offset 0, missing waits 1; the other graphs agree.
func TestCollectivesParity(t *testing.T) {
	res := analyze(t, testcorpus.File(t, "tlparse-inputs/collectives_parity", "dedicated_log_torch_trace_rank_0.log"))
	got := map[string][2]int{}
	for _, p := range res.CollectiveParity {
		got[p.CompileID] = [2]int{p.Offset, p.MissingWaits}
	}
	if want := map[string][2]int{"0/0": {0, 1}, "0/1": {0, 3}}; !reflect.DeepEqual(got, want) {
		t.Errorf("parity %v, want %v", got, want)
	}
	// rank 1 of the schedule fixture had its schedule edited (4 ops) but
	// not its code, which still calls reduce_scatter_tensor.
	res = analyze(t, testcorpus.Dir(t, "tlparse-inputs/multi_rank_schedule"))
	if len(res.CollectiveParity) != 1 || res.CollectiveParity[0].Rank != 1 || res.CollectiveParity[0].Offset != 1 ||
		res.CollectiveParity[0].CodeOps["reduce_scatter_tensor"] != 1 {
		t.Errorf("schedule fixture parity %+v", res.CollectiveParity)
	}
}

// A trace cut while Inductor lowered the graph (simple.log up to the B of
// GraphLowering.run and its payload): the open phases say what was running, the compile is
// "running", and the hang rules fire. Cut inside that event's payload, the
// half record is counted and the phase before it is the innermost.
func TestTraceStoppedInsideLowering(t *testing.T) {
	b, err := os.ReadFile(corpus(t, "simple.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	for _, c := range []struct {
		keep      int
		innermost string
		mismatch  int
	}{{471, "GraphLowering.run", 0}, {467, "inductor_compile", 1}} {
		p := filepath.Join(t.TempDir(), "cut.log")
		if err := os.WriteFile(p, []byte(strings.Join(lines[:c.keep], "")), 0o644); err != nil {
			t.Fatal(err)
		}
		res := analyze(t, p)
		inner := ""
		for _, ph := range res.OpenSpans {
			if ph.Innermost {
				inner = ph.Name
			}
		}
		if inner != c.innermost || len(res.OpenSpans) < 4 {
			t.Errorf("cut at %d: innermost %q of %d open phases, want %q", c.keep, inner, len(res.OpenSpans), c.innermost)
		}
		if cc := compile(res, -1, "0/0"); cc == nil || cc.Status != StatusRunning {
			t.Errorf("cut at %d: compile %+v", c.keep, cc)
		}
		if st := res.Counts[p]; st.PayloadMD5Mismatch != c.mismatch {
			t.Errorf("cut at %d: %d md5 mismatches", c.keep, st.PayloadMD5Mismatch)
		}
		set, _ := rules.Builtin()
		got := map[string]bool{}
		for _, f := range Conclude(res, set) {
			got[f.Rule] = true
		}
		if !got["trace-phase-never-ended"] || got["trace-lowering-never-ended"] != (c.innermost == "GraphLowering.run") {
			t.Errorf("cut at %d: findings %v", c.keep, got)
		}
	}
}

// Graph-break artifacts (none in the corpus): the newer text with a GB id
// and the older one, deduplicated by reason and user frame.
func TestGraphBreakArtifacts(t *testing.T) {
	gb := func(frame, compile int, text string) string {
		sum := md5.Sum([]byte(text))
		var sb strings.Builder
		fmt.Fprintf(&sb, `V0101 00:00:00.000000 7 torch/_dynamo/symbolic_convert.py:1] {"artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"}, "frame_id": %d, "frame_compile_id": %d, "attempt": 1, "has_payload": "%s"}`+"\n", frame, compile, hex.EncodeToString(sum[:]))
		for _, l := range strings.Split(text, "\n") {
			sb.WriteString("\t" + l + "\n")
		}
		return sb.String()
	}
	item := "Graph break in user code at /srv/model.py:42\nGraph Break Reason: Unsupported Tensor.item() call with capture_scalar_outputs=False\n  Explanation: Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.\n  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True`\n\n  Developer debug context: call_method TensorVariable() item () {}\n\n For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html\nUser code traceback:\n  File \"/srv/model.py\", line 42, in forward\n    n = x.sum().item()\n"
	old := "Graph Break Reason: call_function BuiltinVariable(print) [ConstantVariable(str)] {}\nUser code traceback:\n  File \"/srv/run.py\", line 7, in <module>\n    f(x)\n  File \"/srv/model.py\", line 9, in f\n    print(\"hi\")\n"
	p := filepath.Join(t.TempDir(), "gb.log")
	text := gb(0, 0, item) + gb(1, 0, item) + gb(0, 1, item) + gb(2, 0, old)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	res := analyze(t, p)
	if len(res.GraphBreaks) != 2 {
		t.Fatalf("graph breaks %+v", res.GraphBreaks)
	}
	a, b := res.GraphBreaks[0], res.GraphBreaks[1]
	if a.Count != 3 || a.UserFrame != "/srv/model.py:42" || a.GBID != "GB0124" || !strings.HasSuffix(a.URL, "/gb0124.html") ||
		a.Reason != "Unsupported Tensor.item() call with capture_scalar_outputs=False" || !reflect.DeepEqual(a.CompileIDs, []string{"0/0", "1/0", "0/1"}) {
		t.Errorf("item() break %+v", a)
	}
	if b.Count != 1 || b.UserFrame != "/srv/model.py:9" || b.GBID != "" || !strings.HasPrefix(b.Reason, "call_function BuiltinVariable(print)") {
		t.Errorf("print break %+v", b)
	}
	if c := compile(res, -1, "0/0"); c == nil || c.GraphBreaks != 1 {
		t.Errorf("compile 0/0 %+v", c)
	}
	set, _ := rules.Builtin()
	got := map[string]bool{}
	for _, f := range Conclude(res, set) {
		got[f.Rule] = true
	}
	if !got["trace-graph-break"] {
		t.Errorf("findings %v", got)
	}
}

// A frame compiled as many times as the logged recompile limit.
func TestRecompileLimit(t *testing.T) {
	var sb strings.Builder
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&sb, `V0101 00:00:00.000000 7 torch/_dynamo/convert_frame.py:1] {"dynamo_start": {"stack": [{"line": 3, "name": "forward", "filename": "m.py"}]}, "frame_id": 0, "frame_compile_id": %d, "attempt": 0}`+"\n", i)
		fmt.Fprintf(&sb, `V0101 00:00:00.000000 7 torch/_dynamo/utils.py:1] {"compilation_metrics": {"co_name": "forward", "co_filename": "m.py", "co_firstlineno": 3, "graph_op_count": 2, "restart_reasons": [], "recompile_reason": "0/%d: L['n'] == %d", "dynamo_config": "{\"recompile_limit\": 8}"}, "frame_id": 0, "frame_compile_id": %d, "attempt": 0}`+"\n", max(i-1, 0), i, i)
	}
	p := filepath.Join(t.TempDir(), "limit.log")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	res := analyze(t, p)
	if len(res.Frames) != 1 || !res.Frames[0].LimitHit || res.Frames[0].Limit != 8 || res.Frames[0].Compiles != 8 {
		t.Fatalf("frames %+v", res.Frames)
	}
	if len(res.Recompiles) != 8 {
		t.Errorf("recompiles %d", len(res.Recompiles))
	}
	set, _ := rules.Builtin()
	fs := Conclude(res, set)
	if len(fs) == 0 || fs[0].Rule != "trace-recompile-limit" {
		t.Errorf("findings %+v", fs)
	}
}

// Two processes interleaved in one file (forked workers writing into the
// parent's trace): each keeps its own compile [0/0].
func TestForkedProcessesInOneFile(t *testing.T) {
	b, err := os.ReadFile(corpus(t, "comp_failure.log"))
	if err != nil {
		t.Fatal(err)
	}
	other := strings.ReplaceAll(string(b), " 1543231 ", " 1543299 ")
	// Interleave record by record (a record is an envelope and its payload).
	split := func(s string) []string {
		var recs []string
		for _, l := range strings.SplitAfter(s, "\n") {
			if strings.HasPrefix(l, "V") || len(recs) == 0 {
				recs = append(recs, l)
			} else {
				recs[len(recs)-1] += l
			}
		}
		return recs
	}
	a, c := split(string(b)+"\n"), split(other+"\n")
	var sb strings.Builder
	for i := range a {
		sb.WriteString(a[i])
		sb.WriteString(c[i])
	}
	p := filepath.Join(t.TempDir(), "forked.log")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	res := analyze(t, p)
	if len(res.Compiles) != 2 || res.Compiles[0].PID == res.Compiles[1].PID || res.Compiles[0].Status != StatusFailed || res.Compiles[1].Status != StatusFailed {
		t.Errorf("compiles %+v", res.Compiles)
	}
	if len(res.Spans) != 6 || len(res.OpenSpans) != 0 {
		t.Errorf("phases %d open %d", len(res.Spans), len(res.OpenSpans))
	}
}

// Per-compile phase self times from the chromium B/E pairs: they add up
// to the outermost phase ("dynamo").
func TestPhaseSeconds(t *testing.T) {
	res := analyze(t, corpus(t, "simple.log"))
	c := compile(res, -1, "0/0")
	if c == nil || c.PhaseSeconds.Get("GraphLowering.run") <= 0 {
		t.Fatalf("phase seconds %v", c)
	}
	var sum, dynamo float64
	for _, p := range c.PhaseSeconds {
		sum += p.Seconds
	}
	for _, p := range res.Spans {
		if p.Name == "dynamo" && p.CompileID == "0/0" {
			dynamo = p.DurUs / 1e6
		}
	}
	if dynamo <= 0 || sum < dynamo*0.999 || sum > dynamo*1.001 {
		t.Errorf("self times add up to %.6fs, dynamo took %.6fs", sum, dynamo)
	}
}

// torch 2.15 wraps the break in a line of its own ("Encountered graph break
// when attempting to trace …:", "Failed to handle graph break gracefully.
// … Graph break encountered:"); the reason and gb_type are the break after
// it, and breaks under different wrappers are one break.
func TestGraphBreakWrapper(t *testing.T) {
	body := "\n\nObserved exception\n  Explanation: Dynamo found no exception handler at the top-level compiled function.\n\n  Developer debug context: raised exception KeyError('down')\n\n For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0088.html\n\nUser code traceback:\n  File \"/srv/m.py\", line 19, in forward\n"
	for _, wrapper := range []string{
		"Failed to handle graph break gracefully. Skipping the function and falling back to eager. Graph break encountered:",
		"Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):",
	} {
		gb := parseGraphBreak("Graph break in user code at /srv/m.py:19\nGraph Break Reason: " + wrapper + body)
		if gb.Reason != "Observed exception" || gb.GBType != "Observed exception" || gb.GBID != "GB0088" || gb.UserFrame != "/srv/m.py:19" {
			t.Errorf("%q: %+v, want the Observed exception break", wrapper, gb)
		}
	}
	// No wrapper and no Unsupported block: the one line is the reason.
	if gb := parseGraphBreak("Graph Break Reason: call_function BuiltinVariable(print)\nUser code traceback:\n"); gb.Reason != "call_function BuiltinVariable(print)" || gb.GBType != "" {
		t.Errorf("old text: %+v", gb)
	}
	// A wrapper with nothing after it stays the reason (nothing is guessed).
	if r, ty := realBreak("Encountered graph break when attempting to trace CALL:\n\nUser code traceback:\n"); r != "Encountered graph break when attempting to trace CALL:" || ty != "" {
		t.Errorf("bare wrapper: %q %q", r, ty)
	}
}

// A recompile limit that fell back to eager (Unsupported "Dynamo recompile
// limit exceeded") is a warning; FailOnRecompileLimitHit stays an error.
func TestRecompileLimitSeverity(t *testing.T) {
	set, _ := rules.Builtin()
	for _, c := range []struct{ failType, reason, want string }{
		{"Unsupported", "Dynamo recompile limit exceeded\n  Explanation: too many", "warning"},
		{"FailOnRecompileLimitHit", "Hard failure due to fail_on_recompile_limit_hit", "error"},
	} {
		var sb strings.Builder
		for i := 0; i < 5; i++ {
			fmt.Fprintf(&sb, `V0101 00:00:00.000000 7 torch/_dynamo/convert_frame.py:1] {"dynamo_start": {"stack": [{"line": 3, "name": "shift", "filename": "m.py"}]}, "frame_id": 0, "frame_compile_id": %d, "attempt": 0}`+"\n", i)
			fail := ""
			if i == 4 {
				reason, _ := json.Marshal(c.reason)
				fail = fmt.Sprintf(`"fail_type": %q, "fail_reason": %s, `, c.failType, reason)
			}
			fmt.Fprintf(&sb, `V0101 00:00:00.000000 7 torch/_dynamo/utils.py:1] {"compilation_metrics": {"co_name": "shift", "co_filename": "m.py", "co_firstlineno": 3, %s"restart_reasons": [], "dynamo_config": "{\"recompile_limit\": 4}"}, "frame_id": 0, "frame_compile_id": %d, "attempt": 0}`+"\n", fail, i)
		}
		p := filepath.Join(t.TempDir(), "limit.log")
		if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, f := range Conclude(analyze(t, p), set) {
			got[f.Rule] = string(f.Severity)
		}
		if got["trace-recompile-limit"] != c.want || got["trace-compile-failed"] != c.want {
			t.Errorf("%s: findings %v, want trace-recompile-limit and trace-compile-failed at %s", c.failType, got, c.want)
		}
	}
}

// A frame Dynamo gave up on and ran eagerly is told from a failed compile
// by the compile's own graph-break record, as torch 2.15 writes it (the
// testbed's graph_break_in_context_manager): both carry fail_type
// Unsupported in their metrics. The skip marker alone does not make a
// hard error (an InductorError) a fallback, and without the record (as
// under fullgraph) an Unsupported stays a failure.
func TestFellBackToEager(t *testing.T) {
	set, _ := rules.Builtin()
	skip := "Graph break in user code at /srv/m.py:24\nGraph Break Reason: Failed to handle graph break gracefully. Skipping the function and falling back to eager. Graph break encountered:\n\nCall to `torch._dynamo.graph_break()`\n  Explanation: User-inserted graph break. Message: None\n\nUser code traceback:\n  File \"/srv/m.py\", line 24, in step\n"
	for _, c := range []struct {
		name, record, failType string
		want                   bool
	}{
		{"skipped", skip, "Unsupported", true},
		{"skipped-usererror", skip, "torch._dynamo.exc.UserError", true},
		{"fullgraph", "", "Unsupported", false},
		{"hard-error", skip, "InductorError", false},
	} {
		var sb strings.Builder
		sb.WriteString(`V0101 00:00:00.000000 7 torch/_dynamo/convert_frame.py:1] {"dynamo_start": {"stack": [{"line": 21, "name": "step", "filename": "/srv/m.py"}]}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0}` + "\n")
		if c.record != "" {
			sum := md5.Sum([]byte(c.record))
			fmt.Fprintf(&sb, `V0101 00:00:00.000000 7 torch/_dynamo/symbolic_convert.py:1] {"artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0, "has_payload": "%s"}`+"\n", hex.EncodeToString(sum[:]))
			for _, l := range strings.Split(c.record, "\n") {
				sb.WriteString("\t" + l + "\n")
			}
		}
		fmt.Fprintf(&sb, `V0101 00:00:00.000000 7 torch/_dynamo/utils.py:1] {"compilation_metrics": {"co_name": "step", "co_filename": "/srv/m.py", "co_firstlineno": 21, "fail_type": %q, "fail_reason": "Call to graph_break()", "restart_reasons": []}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0}`+"\n", c.failType)
		p := filepath.Join(t.TempDir(), "skip.log")
		if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		res := analyze(t, p)
		if len(res.Compiles) != 1 || res.Compiles[0].Status != StatusFailed || res.Compiles[0].FellBack != c.want {
			t.Errorf("%s: compiles %+v, want one failed, fell_back %v", c.name, res.Compiles, c.want)
			continue
		}
		sev := ""
		for _, f := range Conclude(res, set) {
			if f.Rule == "trace-compile-failed" {
				sev = string(f.Severity)
			}
		}
		if want := map[bool]string{true: "warning", false: "error"}[c.want]; sev != want {
			t.Errorf("%s: trace-compile-failed at %q, want %s", c.name, sev, want)
		}
		// bringup diagnose matches the same subjects with the rules engine
		// alone (no Conclude): a fallback is no error there either, for
		// any rule (the text rules match the fail reason too).
		col := rules.NewCollector()
		for _, sub := range Subjects(res) {
			for _, r := range set.Match(sub, nil) {
				col.Add(r, sub)
			}
		}
		for _, f := range col.Findings() {
			if c.want && f.Severity == record.SeverityError {
				t.Errorf("%s: the rules engine makes %s an error on a frame that ran eagerly", c.name, f.Rule)
			}
			if !c.want && f.Rule == "trace-compile-failed" && f.Severity != record.SeverityError {
				t.Errorf("%s: the rules engine makes a failed compile %s", c.name, f.Severity)
			}
		}
	}
}
