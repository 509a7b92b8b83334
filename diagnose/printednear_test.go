package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrintedNear: a workaround the engine or PyTorch printed on a line of
// its own around the error (not inside the exception's message) is offered
// as a remedy marked as printed, with where it was printed; one printed by
// another process, or far from the error, is not.
func TestPrintedNear(t *testing.T) {
	field := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "corpus", "field", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	remedies := func(text string) string {
		t.Helper()
		f := topError(diagnoseText(t, text, Options{}))
		if f == nil {
			t.Fatalf("no error finding")
		}
		return strings.Join(f.Remedy, "\n")
	}
	// SGLang prints "Use a shorter input or enable --allow-auto-truncate."
	// on the scheduler's lines after the TypeError that killed it.
	if r := remedies(field("sglang-issue-4048.log")); !strings.Contains(r, "Printed by the engine next to the error (-:3): Use a shorter input or enable --allow-auto-truncate") ||
		strings.Count(r, "allow-auto-truncate\n") > 1 {
		t.Errorf("sglang-issue-4048: %s", r)
	}
	// Dynamo's "You can suppress this exception … by setting:" and the
	// setting, under the blank lines that end the message.
	if r := remedies(field("pytorch-issue-108650.log")); !strings.Contains(r, "Printed by PyTorch next to the error (-:8): You can suppress this exception and fall back to eager by setting: import torch._dynamo; torch._dynamo.config.suppress_errors = True") {
		t.Errorf("pytorch-issue-108650: %s", r)
	}
	// vLLM's advice on the line before the exception, in a record of its own.
	before := "(EngineCore_DP0 pid=7) WARNING 06-01 10:00:00 [kv_cache_utils.py:700] Based on the available memory, the estimated maximum model length is 4096. Try decreasing `max_model_len` when initializing the engine.\n" +
		"(EngineCore_DP0 pid=7) ERROR 06-01 10:00:00 [core.py:700] EngineCore failed to start.\n" +
		"(EngineCore_DP0 pid=7) Traceback (most recent call last):\n" +
		"(EngineCore_DP0 pid=7)   File \"/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py\", line 80, in __init__\n" +
		"(EngineCore_DP0 pid=7)     self._initialize_kv_caches(vllm_config)\n" +
		"(EngineCore_DP0 pid=7) RuntimeError: the frobnicator ran out of blocks\n"
	if r := remedies(before); !strings.Contains(r, "Printed by the engine next to the error (-:1): Try decreasing `max_model_len` when initializing the engine") {
		t.Errorf("advice on the line before: %s", r)
	}
	// The same advice printed by another process, or 20 lines before the
	// error, is not this error's.
	other := strings.Replace(before, "(EngineCore_DP0 pid=7) WARNING", "(EngineCore_DP1 pid=9) WARNING", 1)
	if r := remedies(other); strings.Contains(r, "Try decreasing") {
		t.Errorf("another process's advice offered: %s", r)
	}
	far := strings.Replace(before, "engine.\n", "engine.\n"+strings.Repeat("(EngineCore_DP0 pid=7) INFO 06-01 10:00:00 [core.py:1] step\n", 20), 1)
	if r := remedies(far); strings.Contains(r, "Try decreasing") {
		t.Errorf("advice 20 lines away offered: %s", r)
	}
}

// TestEngineStartupPhase: a startup failure of vLLM's EngineCore gets its
// phase from the deepest engine frame it shows, also when the paste starts
// inside the traceback (the frame table's rows, analyze/timeline).
func TestEngineStartupPhase(t *testing.T) {
	p := "(EngineCore pid=114) ERROR 06-23 06:27:21 [core.py:1229] "
	sp := "/usr/local/lib/python3.12/dist-packages/"
	cases := []struct{ name, log, phase, why string }{
		{"kv-cache groups", p + "  File \"" + sp + "vllm/v1/core/kv_cache_utils.py\", line 1740, in get_kv_cache_groups\n" +
			p + "    filtered_spec = unify_kv_cache_spec_page_size(filtered_spec)\n" +
			p + "  File \"" + sp + "vllm/v1/core/kv_cache_utils.py\", line 1096, in unify_kv_cache_spec_page_size\n" +
			p + "    assert new_spec.page_size_bytes == max_page_size\n" +
			p + "AssertionError\n", "profile", "sizing and allocating the KV cache"},
		{"layer constructor", p + "EngineCore failed to start.\n" + p + "Traceback (most recent call last):\n" +
			p + "  File \"" + sp + "vllm/v1/engine/core.py\", line 1200, in run_engine_core\n" +
			p + "  File \"" + sp + "vllm/model_executor/models/llama.py\", line 300, in __init__\n" +
			p + "  File \"" + sp + "vllm/model_executor/layers/linear.py\", line 400, in create_weights\n" +
			p + "  File \"" + sp + "torch/utils/_device.py\", line 104, in __torch_function__\n" +
			p + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB. GPU 0 has a total capacity of 23.57 GiB of which 200.00 MiB is free.\n",
			"load", "building the model's layers"},
	}
	for _, c := range cases {
		f := topError(diagnoseText(t, c.log, Options{}))
		if f == nil || f.Phase != c.phase || !strings.Contains(f.PhaseWhy, c.why) {
			t.Errorf("%s: %+v", c.name, f)
		}
	}
}

// TestCausedByPhase: the frame of PyTorch's "Caused by:" line, its path
// relative to the torch package for torch's own files, says the phase.
func TestCausedByPhase(t *testing.T) {
	cases := []struct{ text, phase string }{
		{"GuardOnDataDependentSymNode: Could not guard on data-dependent expression Eq(Max(1, u0), 1)\n\nCaused by: (_inductor/output_code.py:141 in complex_memory_overlap)", "inductor"},
		{"Caused by: (_dynamo/variables/tensor.py:1100 in call_method)", "dynamo"},
		{"Caused by: (_meta_registrations.py:4832 in meta_select)", ""}, // no row knows it
		{"Caused by: (model.py:12 in forward)", ""},
		{"Caused by: (_inductor/output_code.py", ""}, // cut
		{"no such line", ""},
	}
	for _, c := range cases {
		if p, why := causedByPhase(c.text); p != c.phase || p != "" && !strings.Contains(why, "Caused by") {
			t.Errorf("%q: %q (%s), want %q", c.text, p, why, c.phase)
		}
	}
}
