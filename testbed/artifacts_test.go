package testbed

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// These tests read the runs recorded by scripts/testbed/record (torch
// 2.15.0+cu132, CPython 3.12.1, Inductor's C++ backend on the CPU; see
// testdata/MANIFEST.md) and check what bringup diagnose, trace and stacks
// make of them. They need no torch.

func findingOf(fs []finding, rule string) *finding {
	for i := range fs {
		if fs[i].Rule == rule {
			return &fs[i]
		}
	}
	return nil
}

func rules(fs []finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule+"/"+f.Severity)
	}
	return out
}

// diagnoseScenario runs bringup diagnose --json on a recorded run's stderr
// and stdout; want is the exit code (0 nothing error-level, 1 error-level).
func diagnoseScenario(t *testing.T, name string, want int) diagnosis {
	t.Helper()
	dir := scenario(t, name)
	var d diagnosis
	bringupJSON(t, dir, want, "bringup.diagnosis/v1", &d, "diagnose", "--json", "stderr.txt", "stdout.txt")
	return d
}

func traceScenario(t *testing.T, name string, want int) traceDoc {
	t.Helper()
	dir := scenario(t, name)
	var tr traceDoc
	bringupJSON(t, dir, want, "bringup.trace/v1", &tr, "trace", "--json", "trace")
	if tr.Versions["torch"] != "2.15.0+cu132" {
		t.Errorf("%s: trace versions %v, want torch 2.15.0+cu132", name, tr.Versions)
	}
	return tr
}

// TestItemFullgraph: on torch 2.15, fullgraph=True captures .item() as an
// unbacked float (capture_scalar_outputs is implied); the run succeeds.
func TestItemFullgraph(t *testing.T) {
	d := diagnoseScenario(t, "item_fullgraph", 0)
	if len(d.Findings) != 0 {
		t.Errorf("findings %v on a run that compiled and ran", rules(d.Findings))
	}
	tr := traceScenario(t, "item_fullgraph", 0)
	if len(tr.Compiles) != 1 || tr.Compiles[0].Status != "ok" || tr.Compiles[0].ID != "0/0" {
		t.Errorf("compiles %+v, want one ok [0/0]", tr.Compiles)
	}
	if len(tr.GraphBreaks) != 0 {
		t.Errorf("graph breaks %+v, want none under fullgraph", tr.GraphBreaks)
	}
	st := tr.CacheStats
	if st["fx_graph"].Miss != 1 || st["aotautograd"].Miss != 1 || st["fx_graph"].Hit+st["aotautograd"].Hit != 0 {
		t.Errorf("cache stats %+v, want one cold miss of each cache", st)
	}
}

// TestItemGraphBreak: .item() under fullgraph=False graph-breaks; the
// program finishes. Dynamo traces the break once; later calls reuse the
// compiled graphs.
func TestItemGraphBreak(t *testing.T) {
	tr := traceScenario(t, "item_graph_break", 0)
	if len(tr.GraphBreaks) != 1 {
		t.Fatalf("distinct graph breaks %+v, want 1", tr.GraphBreaks)
	}
	gb := tr.GraphBreaks[0]
	if !strings.HasSuffix(gb.UserFrame, "item_graph_break.py:14") || gb.GBID != "GB0124" ||
		gb.Count != 1 || !slices.Equal(gb.CompileIDs, []string{"0/0"}) {
		t.Errorf("graph break %+v, want GB0124 at item_graph_break.py:14, once, in [0/0]", gb)
	}
	// [0/0] is restarted at the break; the resume function compiles as [1/0]
	// and again as [1/1] for the second call's new float.
	var ids []string
	for _, c := range tr.Compiles {
		ids = append(ids, c.ID+" "+c.Status)
	}
	if !slices.Equal(ids, []string{"0/0 restarted", "1/0 ok", "1/1 ok"}) {
		t.Errorf("compiles %v, want [0/0 restarted, 1/0 ok, 1/1 ok]", ids)
	}
	// The reason is the break itself (its gb_type), not Dynamo's wrapper line
	// "Encountered graph break when attempting to trace CALL: …".
	const itemType = "Unsupported Tensor.item() call with capture_scalar_outputs=False"
	if gb.Reason != itemType || gb.GBType != itemType {
		t.Errorf("graph break reason %q, gb_type %q; want both %q", gb.Reason, gb.GBType, itemType)
	}
	d := diagnoseScenario(t, "item_graph_break", -1)
	f := findingOf(d.Findings, "data-dependent-value")
	if f == nil {
		t.Fatalf("findings %v, want data-dependent-value", rules(d.Findings))
	}
	if d.Status == "failed" || f.Severity == "error" {
		t.Errorf("diagnose calls a graph break that the run survived (W-level 'Graph break from `Tensor.item()`' lines, exit 0) "+
			"an error: status %q, %s at %s (rules/dynamo.yaml data-dependent-value has one severity for the fatal and the non-fatal text)",
			d.Status, f.Rule, f.Severity)
	}
}

// TestItemCaptureScalar: capture_scalar_outputs=True and a Python branch on
// the unbacked value: "Could not guard on data-dependent expression u0 > 2".
func TestItemCaptureScalar(t *testing.T) {
	d := diagnoseScenario(t, "item_capture_scalar", 1)
	f := findingOf(d.Findings, "data-dependent-value")
	if f == nil || f.Severity != "error" || f.Phase != "dynamo" {
		t.Fatalf("findings %v, want data-dependent-value error in phase dynamo", rules(d.Findings))
	}
	if len(f.Evidence) == 0 || !strings.Contains(f.Evidence[0].Text, "Could not guard on data-dependent expression u0 > 2") {
		t.Errorf("evidence %+v, want the guard message", f.Evidence)
	}
	tr := traceScenario(t, "item_capture_scalar", 1)
	if len(tr.Compiles) != 1 || tr.Compiles[0].Status != "failed" || tr.Compiles[0].FailType != "UserError" ||
		!strings.HasSuffix(tr.Compiles[0].FailUserFrame, "item_capture_scalar.py:15") {
		t.Errorf("compiles %+v, want [0/0] failed with UserError at item_capture_scalar.py:15", tr.Compiles)
	}
	if findingOf(tr.Findings, "data-dependent-value") == nil {
		t.Errorf("trace findings %v, want data-dependent-value", rules(tr.Findings))
	}
}

// TestInlinedExceptionFullgraph: a KeyError raised in a callee Dynamo
// inlined, under fullgraph=True: "Unsupported: Observed exception" with
// "raised exception KeyError('down')"; the culprit line is the callee's
// (inlined_exception_fullgraph.py:19), shown under "from user code:".
func TestInlinedExceptionFullgraph(t *testing.T) {
	tr := traceScenario(t, "inlined_exception_fullgraph", 1)
	if len(tr.Compiles) != 1 || tr.Compiles[0].Status != "failed" || tr.Compiles[0].FailType != "Unsupported" ||
		!strings.HasSuffix(tr.Compiles[0].FailUserFrame, "inlined_exception_fullgraph.py:19") {
		t.Errorf("compiles %+v, want [0/0] failed (Unsupported) at the callee's line 19", tr.Compiles)
	}
	d := diagnoseScenario(t, "inlined_exception_fullgraph", 1)
	// The chain's root is Dynamo's stand-in for the user's KeyError
	// (ObservedKeyError) under the Unsupported that reports it; either,
	// named with KeyError('down'), is the one error.
	if len(d.Errors) != 1 || (d.Errors[0].Exception != "torch._dynamo.exc.Unsupported" && d.Errors[0].Exception != "torch._dynamo.exc.ObservedKeyError") ||
		!strings.Contains(d.Errors[0].Message, "KeyError('down')") {
		t.Fatalf("errors %+v, want the one Unsupported (or its ObservedKeyError root) naming KeyError('down')", d.Errors)
	}
	// Named (dynamo-observed-exception), in phase dynamo (the compile
	// failed, not the run), and the only finding: the generic
	// dynamo-unsupported and the unrecognised-exception floor give way.
	if len(d.Findings) != 1 || d.Findings[0].Rule != "dynamo-observed-exception" || d.Findings[0].Phase != "dynamo" {
		t.Fatalf("findings %v, want dynamo-observed-exception alone, in phase dynamo", rules(d.Findings))
	}
	if rem := d.Findings[0].Remedy; len(rem) == 0 || !strings.Contains(rem[0], "KeyError('down')") {
		t.Errorf("remedy %q, want the first step to name KeyError('down')", rem)
	}
}

// TestInlinedExceptionGraphBreak: the same KeyError under fullgraph=False:
// Dynamo gives up on the frame (graph break GB0088, "Observed exception"),
// the frame runs eagerly and raises the plain KeyError at the callee's line.
func TestInlinedExceptionGraphBreak(t *testing.T) {
	// The trace holds two soft failures Dynamo skipped ([0/0] and [1/0],
	// "Skipping the function and falling back to eager"): the compiles fell
	// back, trace finds no error (exit 0); the KeyError is the eager run's,
	// in stderr, which diagnose reads.
	tr := traceScenario(t, "inlined_exception_graph_break", 0)
	if len(tr.GraphBreaks) != 1 || tr.GraphBreaks[0].GBID != "GB0088" || tr.GraphBreaks[0].Count != 2 {
		t.Errorf("graph breaks %+v, want one distinct GB0088 seen twice", tr.GraphBreaks)
	}
	if len(tr.Compiles) != 2 || !tr.Compiles[0].FellBack || !tr.Compiles[1].FellBack {
		t.Errorf("compiles %+v, want [0/0] and [1/0] failed and fell back to eager", tr.Compiles)
	}
	d := diagnoseScenario(t, "inlined_exception_graph_break", 1)
	var keyErr bool
	for _, e := range d.Errors {
		keyErr = keyErr || e.Exception == "KeyError"
	}
	if !keyErr {
		t.Errorf("errors %+v, want the eager KeyError", d.Errors)
	}
	// The reason is the break itself, the line after Dynamo's wrapper "Failed
	// to handle graph break gracefully. … Graph break encountered:".
	if len(tr.GraphBreaks) == 1 {
		if gb := tr.GraphBreaks[0]; gb.Reason != "Observed exception" || gb.GBType != "Observed exception" {
			t.Errorf("graph break reason %q, gb_type %q; want both \"Observed exception\"", gb.Reason, gb.GBType)
		}
	}
}

// TestAOTCompileGraphBreak: aot_compile with fullgraph=False is refused up
// front with the message vLLM's AOT path shows (seed 000).
func TestAOTCompileGraphBreak(t *testing.T) {
	d := diagnoseScenario(t, "aot_compile_graph_break", 1)
	f := findingOf(d.Findings, "aot-compile-graph-break")
	if f == nil || f.Severity != "error" {
		t.Fatalf("findings %v, want aot-compile-graph-break", rules(d.Findings))
	}
	if len(f.Evidence) == 0 || !strings.Contains(f.Evidence[0].Text,
		"RuntimeError: Graph breaks are not supported with aot compile. Please use torch.compile(fullgraph=True).") {
		t.Errorf("evidence %+v, want the RuntimeError line", f.Evidence)
	}
}

// TestCacheMissHitPartial: three processes share one Inductor cache dir:
// cold (both graphs miss), warm (both hit), partial (backbone hits, the late
// graph misses because its input shape changed).
func TestCacheMissHitPartial(t *testing.T) {
	tr := traceScenario(t, "cache", 0)
	want := map[string]string{ // run/compile id/cache -> outcome
		"1-cold/0/0/fx_graph": "miss", "1-cold/0/0/aotautograd": "miss",
		"1-cold/1/0/fx_graph": "miss", "1-cold/1/0/aotautograd": "miss",
		"2-warm/0/0/fx_graph": "hit", "2-warm/0/0/aotautograd": "hit",
		"2-warm/1/0/fx_graph": "hit", "2-warm/1/0/aotautograd": "hit",
		"3-partial/0/0/fx_graph": "hit", "3-partial/0/0/aotautograd": "hit",
		"3-partial/1/0/fx_graph": "miss", "3-partial/1/0/aotautograd": "miss",
	}
	got := map[string]string{}
	var partialMiss *struct {
		Path       string   `json:"path"`
		Components []string `json:"components"`
		SameKey    bool     `json:"same_key"`
	}
	for _, c := range tr.Cache {
		run := filepath.Base(filepath.Dir(c.Path))
		key := run + "/" + c.CompileID + "/" + c.Kind
		if _, dup := got[key]; dup {
			t.Errorf("two %s lookups for %s", c.Kind, key)
		}
		got[key] = c.Outcome
		if key == "3-partial/1/0/fx_graph" {
			partialMiss = c.Differs
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d cache lookups %v, want %d", len(got), got, len(want))
	}
	if partialMiss == nil || !slices.Contains(partialMiss.Components, "example_inputs[0]") ||
		filepath.Base(filepath.Dir(partialMiss.Path)) != "2-warm" && filepath.Base(filepath.Dir(partialMiss.Path)) != "1-cold" {
		t.Errorf("partial miss explained by %+v, want example_inputs[0] against the earlier runs' hit", partialMiss)
	}
	if f := findingOf(tr.Findings, "trace-cache-miss-explained"); f == nil {
		t.Errorf("trace findings %v, want trace-cache-miss-explained", rules(tr.Findings))
	}
	// The three files are three runs of one program, not three ranks: none
	// of them names a rank. Comparing their hit patterns as "ranks that
	// diverge" misreads a rerun as a distributed job.
	if findingOf(tr.Findings, "trace-cache-pattern-diverge") != nil || len(tr.Divergence) != 0 {
		t.Errorf("three rank-less runs in sibling directories are compared as ranks: findings %v, divergence %+v "+
			"(cache_pattern divergence across 'ranks' that are reruns)", rules(tr.Findings), tr.Divergence)
	}
}

// TestTP2Block: two gloo ranks, init_process_group before the first
// compile: one TORCH_TRACE file per rank, named by rank; each rank compiles
// the block once ([0/0]) with a cold cache.
func TestTP2Block(t *testing.T) {
	tr := traceScenario(t, "tp2_block", 0)
	if len(tr.Ranks) != 2 {
		t.Fatalf("ranks %+v, want 2", tr.Ranks)
	}
	for i, r := range tr.Ranks {
		if r.Rank != i || r.Compiles != 1 || r.Failed != 0 || r.CacheMisses != 2 || r.CacheHits != 0 {
			t.Errorf("rank summary %+v, want rank %d with 1 compile and 2 cold misses", r, i)
		}
	}
	for _, in := range tr.Inputs {
		if in.RankFrom != "file_name" {
			t.Errorf("%s: rank from %q, want file_name", in.Path, in.RankFrom)
		}
	}
	for _, c := range tr.Compiles {
		if c.ID != "0/0" || c.Status != "ok" {
			t.Errorf("rank %d compile [%s] %s, want [0/0] ok", c.Rank, c.ID, c.Status)
		}
	}
	if len(tr.Divergence) != 0 {
		t.Errorf("divergence %+v between two ranks that compiled the same block", tr.Divergence)
	}
	d := diagnoseScenario(t, "tp2_block", 0)
	if d.Status != "ok" {
		t.Errorf("diagnose status %q, findings %v; want ok", d.Status, rules(d.Findings))
	}
	// TORCH_LOGS=dynamo,inductor: each rank printed "Step 1: torchdynamo start
	// tracing forward", "Step 2: calling compiler function inductor", "Step 3:
	// torchinductor compiling FORWARDS graph 0" ... "done" lines, under
	// torchrun's "[default0]:[rank0]:" prefixes.
	ranksIn := map[string]map[string]bool{} // phase -> ranks
	for _, p := range d.Timeline {
		if ranksIn[p.Phase] == nil {
			ranksIn[p.Phase] = map[string]bool{}
		}
		ranksIn[p.Phase][p.Rank] = true
	}
	if len(ranksIn["dynamo"]) != 2 || len(ranksIn["inductor"]) != 2 {
		t.Errorf("timeline %+v, want dynamo and inductor phases on both ranks from torch's \"Step 1/2/3\" lines", d.Timeline)
	}
	for _, p := range d.Timeline {
		if p.Status != "done" {
			t.Errorf("phase %s on %s is %s, want done (the run finished)", p.Phase, p.Rank, p.Status)
		}
	}
}

// TestRecompileLimit: a float argument that changes on every call with
// dynamic=False recompiles [0/1]..[0/3]; [0/4] hits recompile_limit (4) and
// the frame runs eagerly from then on; the program ends normally.
func TestRecompileLimit(t *testing.T) {
	d := diagnoseScenario(t, "recompile_limit", 0)
	f := findingOf(d.Findings, "recompile-limit")
	if f == nil || f.Severity != "warning" {
		t.Fatalf("findings %v, want recompile-limit at warning", rules(d.Findings))
	}
	if !strings.Contains(f.Evidence[0].Text, "torch._dynamo hit config.recompile_limit (4)") {
		t.Errorf("evidence %+v, want the recompile_limit (4) warning", f.Evidence)
	}
	tr := traceScenario(t, "recompile_limit", -1)
	checkRecompiles(t, tr)
	errs := []string{}
	for _, f := range tr.Findings {
		if f.Severity == "error" {
			errs = append(errs, f.Rule)
		}
	}
	// The limit fell back to eager (no fail_on_recompile_limit_hit; the run
	// went on): a warning, as diagnose of the same run says.
	if len(errs) != 0 {
		t.Errorf("trace calls a recompile limit that fell back to eager an error: %v; want warnings", errs)
	}
	if f := findingOf(tr.Findings, "trace-recompile-limit"); f == nil || f.Severity != "warning" {
		t.Errorf("trace findings %v, want trace-recompile-limit at warning", rules(tr.Findings))
	}
}

// checkRecompiles: frame shift compiled 5 times ([0/0]..[0/4]), the limit
// of 4 hit, 4 recompiles each naming the float guard k == <previous>.
func checkRecompiles(t *testing.T, tr traceDoc) {
	t.Helper()
	if len(tr.Frames) != 1 || tr.Frames[0].Name != "shift" || tr.Frames[0].Compiles != 5 ||
		tr.Frames[0].Limit != 4 || !tr.Frames[0].LimitHit {
		t.Errorf("frames %+v, want shift compiled 5 times, limit 4 hit", tr.Frames)
	}
	if len(tr.Recompiles) != 4 {
		t.Fatalf("%d recompiles, want 4", len(tr.Recompiles))
	}
	for i, r := range tr.Recompiles {
		id := "0/" + itoa(i+1)
		guard := "0/" + itoa(i) + ": k == " + itoa(i) + ".5"
		if r.CompileID != id || len(r.Reasons) == 0 || !strings.HasPrefix(r.Reasons[0], guard) {
			t.Errorf("recompile %d: [%s] %q, want [%s] triggered by %q", i, r.CompileID, r.Reasons, id, guard)
		}
	}
	last := tr.Compiles[len(tr.Compiles)-1]
	if last.ID != "0/4" || last.Status != "failed" ||
		!strings.Contains(last.FailReason, "recompile limit") && !strings.Contains(last.FailReason, "recompile_limit") {
		t.Errorf("last compile %+v, want [0/4] failed at the limit", last)
	}
}

// TestRecompileFail: the same with fail_on_recompile_limit_hit=True (and
// fullgraph=False): torch 2.15 raises FailOnRecompileLimitHit ("Hard failure
// due to fail_on_recompile_limit_hit"), chained from Unsupported "Dynamo
// recompile limit exceeded".
func TestRecompileFail(t *testing.T) {
	tr := traceScenario(t, "recompile_fail", 1)
	checkRecompiles(t, tr)
	if last := tr.Compiles[len(tr.Compiles)-1]; last.FailType != "FailOnRecompileLimitHit" {
		t.Errorf("last compile fail type %q, want FailOnRecompileLimitHit", last.FailType)
	}
	d := diagnoseScenario(t, "recompile_fail", 1)
	f := findingOf(d.Findings, "recompile-limit-fullgraph")
	if f == nil || f.Severity != "error" {
		t.Fatalf("findings %v, want the hard-failure rule", rules(d.Findings))
	}
	if !strings.Contains(f.Evidence[0].Text, "FailOnRecompileLimitHit: Hard failure due to fail_on_recompile_limit_hit") {
		t.Errorf("evidence %+v", f.Evidence)
	}
	// The Unsupported "Dynamo recompile limit exceeded" that
	// FailOnRecompileLimitHit is raised from is the same limit, not an
	// unexplained error nor a generic untraceable-code finding.
	if f := findingOf(d.Findings, "unrecognised-exception"); f != nil {
		t.Errorf("findings %v: the chained Unsupported is reported as unrecognised-exception", rules(d.Findings))
	}
	if f := findingOf(d.Findings, "dynamo-unsupported"); f != nil {
		t.Errorf("findings %v: the recompile limit is called untraceable code (dynamo-unsupported)", rules(d.Findings))
	}
	// fullgraph is off in this run: the rule must not say the failure came
	// from fullgraph=True; its first step names the setting that did it.
	if strings.Contains(f.Title+f.Cause, "Under fullgraph=True") {
		t.Errorf("recompile-limit-fullgraph explains a fail_on_recompile_limit_hit=True run (fullgraph=False) as %q", f.Title+": "+firstLines(f.Cause, 1))
	}
	if len(f.Remedy) == 0 || !strings.HasPrefix(f.Remedy[0], "The hard failure came from fail_on_recompile_limit_hit:") {
		t.Errorf("remedy %q, want the first step to name fail_on_recompile_limit_hit", f.Remedy)
	}
}

// TestSilentCompileTrace: the trace of the silent compile, stopped 20 s into
// the lowering: its one compile never finished and the open phases say where.
func TestSilentCompileTrace(t *testing.T) {
	tr := traceScenario(t, "silent_compile", 1)
	if len(tr.Compiles) != 1 || tr.Compiles[0].Status == "ok" {
		t.Errorf("compiles %+v, want one unfinished", tr.Compiles)
	}
	var names []string
	for _, p := range tr.OpenPhases {
		names = append(names, p.Name)
	}
	if !slices.Contains(names, "inductor_compile") && !slices.Contains(names, "compile_fx_inner") {
		t.Errorf("open phases %v, want Inductor's compile among them", names)
	}
}

// TestDynamicDimSpecialized: mark_dynamic on dim 0, then `if x.shape[0] ==
// 8:` specialises it: ConstraintViolationError "Constraints violated
// (L['x'].size()[0])!" with torch 2.15's "You marked L['x'].size()[0] as
// dynamic but your code specialized it to be a constant (8)"; the compile
// fails in Dynamo's guard production.
func TestDynamicDimSpecialized(t *testing.T) {
	onlyFinding(t, "dynamic_dim_specialized", "dynamic-dim-specialized", "dynamo",
		"ConstraintViolationError: Constraints violated (L['x'].size()[0])!")
	oneFailedCompile(t, "dynamic_dim_specialized", "ConstraintViolationError")
}

// TestStanceFailOnRecompile: set_stance("fail_on_recompile") after a first
// compile, then a new static shape: "RuntimeError: Detected recompile when
// torch.compile stance is 'fail_on_recompile'" naming the function, and no
// guard failure printed (torch 2.15, TORCH_LOGS=recompiles).
func TestStanceFailOnRecompile(t *testing.T) {
	d := diagnoseScenario(t, "stance_fail_on_recompile", 1)
	f := findingOf(d.Findings, "fail-on-recompile")
	if f == nil || f.Severity != "error" || len(d.Findings) != 1 {
		t.Fatalf("findings %v, want fail-on-recompile alone", rules(d.Findings))
	}
	if len(f.Evidence) == 0 || !strings.Contains(f.Evidence[0].Text, "function name: 'step', line number: 12") {
		t.Errorf("evidence %+v, want the RuntimeError naming step at line 12", f.Evidence)
	}
	// The only compile is the first one; the refused recompile leaves none.
	tr := traceScenario(t, "stance_fail_on_recompile", -1)
	if len(tr.Compiles) != 1 || tr.Compiles[0].ID != "0/0" || tr.Compiles[0].Status != "ok" {
		t.Errorf("compiles %+v, want the one ok [0/0]", tr.Compiles)
	}
}

// onlyFinding: diagnose of scenario name exits 1 with rule as its one
// finding, in phase, and an evidence line holding text.
func onlyFinding(t *testing.T, name, rule, phase, text string) {
	t.Helper()
	d := diagnoseScenario(t, name, 1)
	if len(d.Findings) != 1 || d.Findings[0].Rule != rule || d.Findings[0].Severity != "error" || d.Findings[0].Phase != phase {
		t.Fatalf("findings %v, want %s alone, an error in phase %s", rules(d.Findings), rule, phase)
	}
	for _, ev := range d.Findings[0].Evidence {
		if strings.Contains(ev.Text, text) {
			return
		}
	}
	t.Errorf("evidence %+v, want a line with %q", d.Findings[0].Evidence, text)
}

// oneFailedCompile: the scenario's trace has one compile, [0/0], failed
// with failType.
func oneFailedCompile(t *testing.T, name, failType string) {
	t.Helper()
	tr := traceScenario(t, name, 1)
	if len(tr.Compiles) != 1 || tr.Compiles[0].ID != "0/0" || tr.Compiles[0].Status != "failed" || tr.Compiles[0].FailType != failType {
		t.Errorf("compiles %+v, want [0/0] failed with %s", tr.Compiles, failType)
	}
}

// TestOneErrorScenarios: runs that fail with one error bringup names by
// its own rule, alone, in the phase that raised; the evidence quotes the
// real message; a compile that failed is the trace's one [0/0] with that
// fail_type.
func TestOneErrorScenarios(t *testing.T) {
	for _, c := range []struct{ scenario, rule, phase, text, failType string }{
		// A torch.library.custom_op without register_fake under fullgraph:
		// TorchRuntimeError "RuntimeError when making fake tensor call",
		// "Dynamo failed to run FX node with fake tensors …".
		{"fake_impl_missing", "fake-tensor-data-pointer", "dynamo",
			"There was no fake impl registered for <CustomOpDef(testbed::no_fake)>", "TorchRuntimeError"},
		// inspect.stack() under fullgraph: the builtin sys._getframe (GB0007).
		{"skipped_builtin", "fullgraph-untraceable-call", "dynamo",
			"torch._dynamo.exc.Unsupported: Attempted to call function marked as skipped", "Unsupported"},
		// A custom op with a fake but no lowering, implicit_fallbacks off,
		// raised in GraphLowering.call_function; not also an Inductor bug.
		{"missing_lowering", "inductor-lowering-failed", "inductor",
			"torch._inductor.exc.InductorError: MissingOperatorWithoutDecomp: missing lowering", "InductorError"},
		// A module-level threading.Lock entered under fullgraph (GB0142,
		// "Attempted SETUP_WITH/BEFORE_WITH/LOAD_SPECIAL on … lock"); the
		// generic dynamo-unsupported gives way.
		{"unsupported_context_manager", "dynamo-graph-break-in-context-manager", "dynamo",
			"torch._dynamo.exc.Unsupported: Unsupported context manager", "Unsupported"},
		// logging.Logger.info under fullgraph: no narrower rule names it, so
		// the generic dynamo-unsupported speaks.
		{"logger_in_fullgraph", "dynamo-unsupported", "dynamo",
			"torch._dynamo.exc.Unsupported: logging.Logger method not supported for non-export cases", "Unsupported"},
		// Rank 0's TCPStore on a port a socket holds: "DistNetworkError: The
		// server socket has failed to listen on any local network address";
		// the rendezvous rule, not the generic port-in-use.
		{"rendezvous_port_in_use", "rendezvous-port-in-use", "distributed-init",
			"code: -98, name: EADDRINUSE, message: address already in use", ""},
		// asyncio's create_server (what uvicorn calls) on a taken port.
		{"server_port_in_use", "port-in-use", "load",
			"OSError: [Errno 98] error while attempting to bind on address ('127.0.0.1',", ""},
		// Rank 0 of 2 and no rank 1: "DistStoreError: Timed out after 6
		// seconds waiting for clients. 1/2 clients joined."
		{"rendezvous_timeout", "rendezvous-timeout", "distributed-init",
			"Timed out after 6 seconds waiting for clients. 1/2 clients joined.", ""},
		// CXX names a compiler that is not there: Inductor's C++ backend
		// raises InvalidCxxCompiler from cpp_builder.cpp_compiler_search,
		// wrapped in InductorError.
		{"cxx_compiler_missing", "inductor-cxx-compiler-missing", "inductor-codegen",
			"InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx: (None, '/nonexistent/g++')", "InductorError"},
		// A custom op whose kernel returns its input, compiled with
		// aot_eager: the compile succeeds; when the compiled graph runs,
		// the op's aliasing check (torch/_library/utils.py, under
		// AOTAutograd's runtime wrapper) refuses the output.
		{"custom_op_alias", "custom-op-output-aliases-input", "aot-autograd",
			"The output of this custom operator (1) must not also be an input to this custom operator", ""},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			onlyFinding(t, c.scenario, c.rule, c.phase, c.text)
			if c.failType != "" {
				oneFailedCompile(t, c.scenario, c.failType)
			}
		})
	}
}

// TestGraphBreakInContextManager: torch._dynamo.graph_break() inside a
// user context manager, fullgraph off: Dynamo cannot resume inside the
// with-block, logs "Failed to handle graph break gracefully. Skipping the
// function and falling back to eager" and "Graph break under
// GenericContextWrappingVariable" (GB0066); the function runs eagerly and
// the program prints its result and exits 0. A warning, not a failure.
func TestGraphBreakInContextManager(t *testing.T) {
	d := diagnoseScenario(t, "graph_break_in_context_manager", 0)
	if d.Status == "failed" || len(d.Findings) != 1 || d.Findings[0].Rule != "dynamo-frame-skipped-context-manager" ||
		d.Findings[0].Severity != "warning" {
		t.Fatalf("status %q, findings %v; want dynamo-frame-skipped-context-manager alone, a warning", d.Status, rules(d.Findings))
	}
	tr := traceScenario(t, "graph_break_in_context_manager", -1)
	if len(tr.GraphBreaks) != 1 || !strings.HasSuffix(tr.GraphBreaks[0].UserFrame, "graph_break_in_context_manager.py:24") {
		t.Errorf("graph breaks %+v, want one at graph_break_in_context_manager.py:24", tr.GraphBreaks)
	}
	// Dynamo records the skip in the compile's own graph-break record
	// ("Skipping the function and falling back to eager"); the metrics carry
	// fail_type Unsupported, as for a failed compile (tlparse too calls
	// [0/0] an error). The unit is failed and fell back; its findings are
	// warnings, as diagnose of the same run says.
	if len(tr.Compiles) != 1 || tr.Compiles[0].Status != "failed" || !tr.Compiles[0].FellBack {
		t.Errorf("compiles %+v, want [0/0] failed and fell back to eager", tr.Compiles)
	}
	var errs []string
	for _, f := range tr.Findings {
		if f.Severity == "error" {
			errs = append(errs, f.Rule)
		}
	}
	if len(errs) != 0 {
		t.Errorf("trace calls a frame Dynamo skipped (ran eagerly, run exit 0) an error: %v; want warnings", errs)
	}
}

// TestNoGPUVisible: PyPI's CUDA torch asked for a CUDA tensor on the
// testbed's machine, which has no NVIDIA driver: "RuntimeError: Found no
// NVIDIA driver on your system", raised from torch.cuda's lazy init: the
// device's setup, distributed-init in the phase vocabulary (where vLLM's
// init_device finds the same).
func TestNoGPUVisible(t *testing.T) {
	onlyFinding(t, "no_gpu_visible", "no-gpu-visible", "distributed-init",
		"RuntimeError: Found no NVIDIA driver on your system.")
}

// TestCustomOpRegisteredTwice: one schema defined twice in the testbed
// namespace: "RuntimeError: Tried to register an operator
// (testbed::twice(Tensor x) -> Tensor) with the same name and overload name
// multiple times", with both registration sites.
func TestCustomOpRegisteredTwice(t *testing.T) {
	onlyFinding(t, "custom_op_registered_twice", "custom-op-registered-twice", "import",
		"Tried to register an operator (testbed::twice(Tensor x) -> Tensor) with the same name and overload name multiple times")
}

// TestGlooPeerGone: a gloo peer that left after the rendezvous (lazy
// connections): torch 2.15's gloo retries the refused connect and raises
// "[gloo/transport/tcp/pair.cc:152] timed out connecting: SO_ERROR:
// Connection refused, remote=[127.0.0.1]:P". The run failed; bringup says
// so. gloo-connect-refused quotes the older "connect [ADDR]:PORT:
// Connection refused" and says in seen_on that 2.15 prints this instead
// (TestNotRecordedRulesStayQuiet fails once a rule fires here).
func TestGlooPeerGone(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "gloo_peer_gone", "stderr.txt"))
	if err != nil {
		t.Fatal(err)
	}
	stderr := string(data)
	for _, want := range []string{
		"rank 1: leaving before the first collective",
		"ERROR failed to connect, willRetry=1",
		"RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out connecting: SO_ERROR: Connection refused, remote=[127.0.0.1]:",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr.txt lacks %q", want)
		}
	}
	d := diagnoseScenario(t, "gloo_peer_gone", 1)
	if d.Status != "failed" {
		t.Errorf("status %q, want failed", d.Status)
	}
	// Rank 0's own traceback ("[rank0]: " on every line) is the finding,
	// named by the gloo rule with its exception, not torchrun's
	// ChildFailedError after it.
	if len(d.Findings) == 0 || d.Findings[0].Rule != "gloo-connect-refused" ||
		!strings.HasPrefix(d.Findings[0].Root, "RuntimeError: [") || !strings.Contains(d.Findings[0].Root, "timed out connecting: SO_ERROR: Connection refused") {
		t.Errorf("findings %v (first root %q), want gloo-connect-refused first with rank 0's RuntimeError", rules(d.Findings), firstRoot(d))
	}
}

func firstRoot(d diagnosis) string {
	if len(d.Findings) == 0 {
		return ""
	}
	return d.Findings[0].Root
}

// TestLocalScalarDenseFallback: .item() captured into the graph and a
// backend that fakes tensors without a ShapeEnv: "DataDependentOutputException:
// aten._local_scalar_dense.default", allowed as a backend fallback
// ("Backend compiler exception" graph break); Dynamo skips the frame, which
// runs eagerly, and the run exits 0. diagnose: the warning alone; trace:
// [0/0] failed and fell back, no error.
func TestLocalScalarDenseFallback(t *testing.T) {
	d := diagnoseScenario(t, "local_scalar_dense_fallback", 0)
	if d.Status == "failed" || len(d.Findings) != 1 || d.Findings[0].Rule != "local-scalar-dense-fallback" || d.Findings[0].Severity != "warning" {
		t.Fatalf("status %q, findings %v; want local-scalar-dense-fallback alone, a warning", d.Status, rules(d.Findings))
	}
	tr := traceScenario(t, "local_scalar_dense_fallback", 0)
	if len(tr.Compiles) != 1 || tr.Compiles[0].Status != "failed" || !tr.Compiles[0].FellBack {
		t.Errorf("compiles %+v, want [0/0] failed and fell back to eager", tr.Compiles)
	}
	if f := findingOf(tr.Findings, "local-scalar-dense-fallback"); f == nil || f.Severity != "warning" {
		t.Errorf("trace findings %v, want local-scalar-dense-fallback at warning", rules(tr.Findings))
	}
	for _, f := range tr.Findings {
		if f.Severity == "error" {
			t.Errorf("trace finding %s is an error on a run Dynamo ran eagerly", f.Rule)
		}
	}
}

// TestRendezvousNoMaster: rank 1 pointed at a port nobody serves: the
// TCPStore client retries and raises "DistNetworkError: The client socket
// has timed out after 5000ms while trying to connect to (127.0.0.1, P)."
// No rule names it yet; the run is a failure in distributed-init all the
// same.
func TestRendezvousNoMaster(t *testing.T) {
	d := diagnoseScenario(t, "rendezvous_no_master", 1)
	if d.Status != "failed" || len(d.Errors) == 0 || d.Errors[0].Exception != "torch.distributed.DistNetworkError" ||
		!strings.Contains(d.Errors[0].Message, "The client socket has timed out after 5000ms while trying to connect to (127.0.0.1, ") {
		t.Fatalf("status %q, errors %+v; want the DistNetworkError client timeout", d.Status, d.Errors)
	}
	if len(d.Findings) == 0 || d.Findings[0].Rule != "rendezvous-master-unreachable" || d.Findings[0].Phase != "distributed-init" {
		t.Errorf("findings %v, want rendezvous-master-unreachable first, in phase distributed-init", rules(d.Findings))
	}
}
