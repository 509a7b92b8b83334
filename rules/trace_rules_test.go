package rules

import "testing"

// Firing cases for rules/trace.yaml, added to the shared table so
// TestEveryRuleFires covers them; the subjects are what
// analyze/compiles.Subjects produces for the tlparse corpus.
func init() {
	add := func(id string, subs ...Subject) {
		for _, s := range subs {
			fires[id] = append(fires[id], struct {
				sub Subject
				v   Versions
			}{sub: s})
		}
	}
	add("trace-compile-failed", Subject{Fact: "trace.compile_failed", Text: "BackendCompilerFailed: backend='broken_backend' raised:\nRuntimeError: broken backend",
		Fields: map[string]string{"fail_type": "BackendCompilerFailed", "compile_id": "0/0"}})
	add("trace-graph-break", Subject{Fact: "trace.graph_break", Text: "skip function graph_break in file torch/_dynamo/decorators.py",
		Fields: map[string]string{"reason": "skip function graph_break in file torch/_dynamo/decorators.py", "count": "2"}})
	add("trace-phase-never-ended", Subject{Fact: "trace.open_phase", Fields: map[string]string{"name": "inductor_compile", "phase": "inductor", "innermost": "true", "uncertain": "false"}})
	add("trace-lowering-never-ended", Subject{Fact: "trace.open_phase", Fields: map[string]string{"name": "GraphLowering.run", "phase": "inductor", "innermost": "true", "uncertain": "false"}})
	add("trace-recompile-limit", Subject{Fact: "trace.recompile_limit", Text: "8 compiles of forward reached the recompile limit (8)", Fields: map[string]string{"compiles": "8", "limit": "8"}})
	add("trace-recompile-shape", Subject{Fact: "trace.recompile", Text: "0/0: tensor 'x' size mismatch at index 0. expected 2, actual 3"})
	add("trace-cache-miss-explained", Subject{Fact: "trace.cache_miss", Fields: map[string]string{"kind": "fx_graph", "differs": "true", "same_key": "false", "components": "gm"}})
	add("trace-cache-bypass", Subject{Fact: "trace.cache_bypass", Text: "Unsupported call_function target flex_attention", Fields: map[string]string{"kind": "aotautograd"}})
	add("trace-collectives-diverge", Subject{Fact: "trace.divergence", Fields: map[string]string{"kind": "collective_schedule"}})
	add("trace-compile-ids-diverge", Subject{Fact: "trace.divergence", Fields: map[string]string{"kind": "compile_ids"}},
		Subject{Fact: "trace.divergence", Fields: map[string]string{"kind": "compile_status"}},
		Subject{Fact: "trace.divergence", Fields: map[string]string{"kind": "tensor_meta"}})
	add("trace-cache-pattern-diverge", Subject{Fact: "trace.divergence", Fields: map[string]string{"kind": "cache_pattern"}})
	add("trace-execution-order-diverge", Subject{Fact: "trace.divergence", Fields: map[string]string{"kind": "execution_order"}})
	add("trace-collectives-parity", Subject{Fact: "trace.collectives_parity", Fields: map[string]string{"offset": "0", "missing_waits": "3"}})
	add("trace-rank-missing", Subject{Fact: "trace.divergence", Fields: map[string]string{"kind": "missing_rank"}},
		Subject{Fact: "trace.divergence", Fields: map[string]string{"kind": "empty_rank"}})
}

// Near misses: facts that must not fire the trace rules.
func TestTraceRulesQuiet(t *testing.T) {
	s := builtin(t)
	for _, sub := range []Subject{
		{Fact: "trace.open_phase", Fields: map[string]string{"name": "inductor_compile", "innermost": "false", "uncertain": "false"}},
		{Fact: "trace.open_phase", Fields: map[string]string{"name": "GraphLowering.run", "innermost": "true", "uncertain": "true"}},
		{Fact: "trace.cache_miss", Fields: map[string]string{"differs": "true", "same_key": "true"}},
		{Fact: "trace.recompile", Text: "0/0: ___check_type_id(L['self'], 1234)"},
		{Fact: "trace.divergence", Fields: map[string]string{"kind": "nothing"}},
	} {
		for _, r := range s.Match(sub, nil) {
			if len(r.ID) > 6 && r.ID[:6] == "trace-" {
				t.Errorf("%v matched %s", sub, r.ID)
			}
		}
	}
}
