package tracehtml

import (
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// contains reports whether page holds want, as markup or as text.
func contains(page, want string) bool {
	return strings.Contains(page, want) || strings.Contains(html.UnescapeString(page), want)
}

func wantAll(t *testing.T, name, page string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !contains(page, w) {
			t.Errorf("%s lacks %q", name, w)
		}
	}
}

var (
	failRowRE  = regexp.MustCompile(`(?s)<section class="card" id="failures">.*?</section>`)
	breakRowRE = regexp.MustCompile(`(?s)<section class="card" id="graph-breaks">.*?</section>`)
)

// The corpus reports show every view the issue asks for: the whole error
// with its phase and user code, user code in the failure and graph-break
// tables, occurrences, the stack trie, the failures-and-restarts page,
// symbolic shapes, the export report, provenance, per-rank landing pages.
func TestViews(t *testing.T) {
	t.Run("comp_failure", func(t *testing.T) {
		pages := checkSite(t, render(t, analyze(t, testcorpus.File(t, "tlparse-inputs", "comp_failure.log")), Options{}))
		index := pages["index.html"]
		// The headline error is the exception raised, then what wrapped it.
		wantAll(t, "index", index, `<p class="exc">RuntimeError: broken backend <span class="pill s-phase">backend</span></p>`,
			"&larr; BackendCompilerFailed: backend=&#39;broken_backend&#39; raised:", "fail_reason, every line",
			"phase backend", "Where compiles came from")
		fails := failRowRE.FindString(index)
		wantAll(t, "failures table", fails, `title="fn (/data/users/xmfan/a/pytorch/test/dynamo/test_misc.py:10755)"`, "fn (test_misc.py:10755)", "RuntimeError: broken backend")
		wantAll(t, "failures.html", pages["failures.html"], "RuntimeError: broken backend", "fn (test_misc.py:10755)", "No restarts.")
		for name, page := range pages {
			if strings.HasPrefix(name, "units/") && !contains(page, "Compiling fn failed: RuntimeError: broken backend (in backend)") {
				t.Errorf("%s: unit headline lacks the raised exception", name)
			}
		}
	})
	t.Run("comp_metrics", func(t *testing.T) {
		pages := checkSite(t, render(t, analyze(t, testcorpus.File(t, "tlparse-inputs", "comp_metrics.log")), Options{}))
		breaks := breakRowRE.FindString(pages["index.html"])
		// Two breaks with the same reason, told apart by their user code.
		wantAll(t, "graph breaks", breaks, "fn (test_misc.py:9549)", "torch_dynamo_resume_in_fn_at_9551 (test_misc.py:9551)")
		if strings.Contains(breaks, `<td class="mono">-</td>`) {
			t.Errorf("a graph break without user code:\n%s", breaks)
		}
		fr := pages["failures.html"]
		if n := strings.Count(fr, "skip function graph_break"); n != 2 {
			t.Errorf("failures.html: %d restarts, want 2 (tlparse's failures_and_restarts)", n)
		}
	})
	t.Run("cache_hit_miss", func(t *testing.T) {
		pages := checkSite(t, render(t, analyze(t, testcorpus.File(t, "tlparse-inputs", "cache_hit_miss.log")), Options{}))
		index := pages["index.html"]
		wantAll(t, "index", index, ">[1/0]#2</a>", ">[1/0]#3</a>", ">[0/0]#2</a>", "differs from [1/0]#2 on ")
		found := false
		for name, page := range pages {
			found = found || strings.HasSuffix(name, "unit_1_0_r2.html") && strings.Contains(page, "<title>[1/0]#2 on")
		}
		if !found {
			t.Error("no unit page titled [1/0]#2")
		}
	})
	t.Run("multi_rank_logs", func(t *testing.T) {
		pages := checkSite(t, render(t, analyze(t, testcorpus.Dir(t, "tlparse-inputs/multi_rank_logs")), Options{}))
		nav := `<nav class="ranks" aria-label="ranks"><strong>all inputs</strong><a href="units/rank_0/index.html">rank 0</a><a href="units/rank_1/index.html">rank 1</a>`
		wantAll(t, "index", pages["index.html"], nav)
		r1 := pages["units/rank_1/index.html"]
		wantAll(t, "rank 1 landing page", r1, `<strong>rank 1</strong>`, `<a href="../../index.html">all inputs</a>`, `href="../../units/rank_1/unit_0_14.html"`, "15 units")
		if strings.Contains(r1, `href="../rank_3/`) || strings.Contains(r1, "broken backend") {
			t.Error("rank 1's landing page shows other ranks' units or failures")
		}
		wantAll(t, "rank 0 landing page", pages["units/rank_0/index.html"], "RuntimeError: broken backend", "Diverging compilation IDs")
		wantAll(t, "unit page", pages["units/rank_3/unit_0_0.html"], `<strong>rank 3</strong>`)
	})
	t.Run("export", func(t *testing.T) {
		pages := checkSite(t, render(t, analyze(t, testcorpus.File(t, "tlparse-inputs", "export.log")), Options{}))
		index := pages["index.html"]
		if strings.Contains(index, "No compile units in") {
			t.Error(`export.log reads as "No compile units"`)
		}
		wantAll(t, "index", index, "Draft export: 1 issue found during export", "Export report", "Data Dependent Error",
			"Eq((((-u0)//3)) + 5, 0) → False", "forward (test_draft_export.py:279)", "Exported program:")
		wantAll(t, "shapes.html", pages["shapes.html"], `id="guard_added"`, "(((-u0)//3)) + 5 >= 0", `id="create_unbacked_symbol"`, "u0")
	})
	t.Run("provenance", func(t *testing.T) {
		pages := checkSite(t, render(t, analyze(t, testcorpus.File(t, "tlparse-inputs", "inductor_provenance_extended_log.txt")), Options{}))
		pv := pages["provenance.html"]
		// tlparse's test_provenance_stack_trace_readable: the traces are
		// readable, newlines decoded.
		wantAll(t, "provenance.html", pv, "triton_poi_fused_addmm_gelu_2", "mul_3, mul_1", "gelu, addmm", "line 1\n  foo()")
		if strings.Contains(pv, `line 1\n`) {
			t.Error(`provenance.html shows a literal \n`)
		}
		wantAll(t, "index", pages["index.html"], "Inductor provenance", `href="provenance.html#g-`)
	})
}
