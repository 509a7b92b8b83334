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
	if got := wrapped([]string{"  and more"}, "Call x() now."); got != "" {
		t.Errorf("wrapped went past the sentence's end: %q", got)
	}
}
