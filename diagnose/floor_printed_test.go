package diagnose

import "testing"

// A library's message that names the call which sets up what was missing
// is a printed workaround, with the rest of the sentence the message
// wrapped onto its next lines (vllm issue 55452, AITER's split-K
// workspace); a "Call stack:" heading, or a next line that starts a new
// sentence, is not part of it.
func TestPrintedCallAdvice(t *testing.T) {
	for in, want := range map[string]string{
		"Call aiter.opus_gemm_workspace_init() inside `with torch.cuda.stream(s):`": "Call aiter.opus_gemm_workspace_init() inside `with torch.cuda.stream(s):`",
		"Please call torch.cuda.set_device() before init":                           "Please call torch.cuda.set_device() before init",
		"Call stack:":           "",
		"Call to cuInit failed": "",
		// DDP's unused-parameter error names its own switch.
		"This error indicates that your module has parameters that were not used in producing loss. You can enable unused parameter detection by (1) passing the keyword argument `find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`; (2) making sure": "You can enable unused parameter detection by (1) passing the keyword argument `find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`",
		"You can read more about it in the docs": "",
		// A check that names the values it takes, and advice after a semicolon.
		"AssertionError: Only EAGLE and DSPARK speculative algorithms are supported for DeepseekV4ForCausalLM": "Only EAGLE and DSPARK speculative algorithms are supported for DeepseekV4ForCausalLM",
		"ValueError: CUDAGraphMode.FULL is not supported with X backend; please try cudagraph_mode=PIECEWISE":  "please try cudagraph_mode=PIECEWISE",
		"the only supported way is this":                                                                       "",
		"[FATAL ERROR]: Please set HSA_NO_SCRATCH_RECLAIM=1 and rerun.":                                        "Please set HSA_NO_SCRATCH_RECLAIM=1 and rerun",
		"AssertionError: n_physical_experts=256 must be divisible by ep_size=3. Adjust num_redundant_experts.": "Adjust num_redundant_experts",
		"x = self.proj(x). To prevent overwriting, clone the tensor outside of torch.compile() or call torch.compiler.cudagraph_mark_step_begin() before each model invocation.": "To prevent overwriting, clone the tensor outside of torch.compile() or call torch.compiler.cudagraph_mark_step_begin() before each model invocation",
	} {
		if got := adviceIn(in); got != want {
			t.Errorf("adviceIn(%q) = %q, want %q", in, got, want)
		}
	}
	lines := []string{"  (and warm with the largest expected gemm) before HIP graph capture.", "  and more"}
	if got := wrapped(lines, "Call x() inside s"); got != " (and warm with the largest expected gemm) before HIP graph capture." {
		t.Errorf("wrapped: %q", got)
	}
	if got := wrapped([]string{"  Next sentence here."}, "Call x() inside s"); got != "" {
		t.Errorf("wrapped joined a new sentence: %q", got)
	}
	if got := wrapped([]string{"es. Call stack:"}, "Use torch>=2.6 with native uuid support for custom pass"); got != "" {
		t.Errorf("wrapped joined a line at column 0: %q", got)
	}
	if got := wrapped([]string{"  and more"}, "Call x() now."); got != "" {
		t.Errorf("wrapped went past the sentence's end: %q", got)
	}
}

// A message whose first line only says where (a C++ check's file:line)
// has its next line in the root: that line says what failed (vllm issue
// 55452); a first line that says more stays the root alone.
func TestRootTextAfterLocation(t *testing.T) {
	for line, want := range map[string]bool{
		"[AITER] /workspace/aiter_meta/csrc/opus_gemm/opus_gemm.cu:540": true,
		"csrc/ops.cpp:12":           true,
		"CUDA error: out of memory": false,
		"/x/y.cu:540 failed":        false,
		"version 1.2:3":             false,
		"[rank0]: /a/b:12":          false,
		"http://host:8000":          false,
		"[enforce fail at .../gloo/transport/tcp/device.cc:84]":                         true,
		"[enforce fail at .../gloo/transport/tcp/pair.cc:446] op.preamble.length <= op": false,
	} {
		if got := locationOnly(line); got != want {
			t.Errorf("locationOnly(%q) = %v, want %v", line, got, want)
		}
	}
	log := "RuntimeError: [AITER] /workspace/aiter_meta/csrc/opus_gemm/opus_gemm.cu:540\n" +
		"  splitk workspace not initialized for the current CUDA stream.\n" +
		"  Call aiter.opus_gemm_workspace_init() inside `with torch.cuda.stream(s):`\n"
	f := topError(diagnoseText(t, log, Options{}))
	if f == nil || f.Root != "RuntimeError: [AITER] /workspace/aiter_meta/csrc/opus_gemm/opus_gemm.cu:540 — splitk workspace not initialized for the current CUDA stream." {
		t.Errorf("root %+v", f)
	}
}
