package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// A healthy trace exits 0 with an OK verdict first; a failed compile exits
// 1 with the failure, its file:line and the rule's finding.
func TestTraceVerdictAndExitCodes(t *testing.T) {
	code, out, errs := runCLI("trace", testcorpus.File(t, "tlparse-inputs", "simple.log"))
	if code != ExitOK || !strings.HasPrefix(out, "OK: 1 compile(s), none failed") {
		t.Errorf("simple.log: exit %d, stderr %q, out:\n%s", code, errs, out)
	}
	code, out, _ = runCLI("trace", testcorpus.File(t, "tlparse-inputs", "comp_failure.log"))
	// The whole failure: the exception that was raised first, the phase
	// that raised it (a custom backend, not Dynamo), what wrapped it, the
	// user code, and every line of the reason; the finding's evidence
	// carries the chain too, not just "backend='broken_backend' raised:".
	if code != ExitFindings || !strings.HasPrefix(out, "PROBLEM: 1 compile(s) failed") ||
		!strings.Contains(out, "[0/0] RuntimeError: broken backend (backend)\n      ← BackendCompilerFailed: backend='broken_backend' raised:") ||
		!strings.Contains(out, "user code: fn (") || !strings.Contains(out, "test_misc.py:10755)") ||
		!strings.Contains(out, "      RuntimeError: broken backend\n") ||
		!strings.Contains(out, "comp_failure.log:145 [0/0] RuntimeError: broken backend ← BackendCompilerFailed") ||
		!strings.Contains(out, "comp_failure.log:145") || !strings.Contains(out, "trace-compile-failed") {
		t.Errorf("comp_failure.log: exit %d, out:\n%s", code, out)
	}
	// No colour when not on a terminal.
	if strings.Contains(out, "\x1b[") {
		t.Error("ANSI escapes in piped output")
	}
}

// The multi-rank folder: divergence in the summary like tlparse's landing
// page, with rank groups.
func TestTraceMultiRankText(t *testing.T) {
	_, out, _ := runCLI("trace", testcorpus.Dir(t, "tlparse-inputs/multi_rank_schedule"))
	for _, want := range []string{"Divergence across ranks", "collective_schedule", "Ranks: 0, 2", "Ranks: 1", "trace-collectives-diverge"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// --json writes the bringup.trace/v1 document with the required fields.
func TestTraceJSON(t *testing.T) {
	dir := testcorpus.Dir(t, "tlparse-inputs/multi_rank_logs")
	outFile := filepath.Join(t.TempDir(), "trace.json")
	code, stdout, errs := runCLI("trace", "--json", "-o", outFile, dir)
	if code != ExitFindings || stdout != "" {
		t.Fatalf("exit %d (stderr %q), stdout %q", code, errs, stdout)
	}
	b, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema   string `json:"schema"`
		Ranks    []map[string]any
		Compiles []struct {
			Rank           int      `json:"rank"`
			ID             string   `json:"id"`
			Status         string   `json:"status"`
			FailType       string   `json:"fail_type"`
			FailReason     string   `json:"fail_reason"`
			GraphBreaks    *int     `json:"graph_breaks"`
			RestartReasons []string `json:"restart_reasons"`
			Seconds        map[string]any
		}
		GraphBreaks []any `json:"graph_breaks"`
		Recompiles  []any
		Cache       []struct {
			Rank      int    `json:"rank"`
			CompileID string `json:"compile_id"`
			Kind      string `json:"kind"`
			Outcome   string `json:"outcome"`
		}
		OpenPhases []any `json:"open_phases"`
		Divergence []struct {
			Kind string `json:"kind"`
		}
		Counts map[string]struct {
			Records        int            `json:"records"`
			Events         map[string]int `json:"events"`
			CompileIDs     []string       `json:"compile_ids"`
			ChromiumEvents int            `json:"chromium_events"`
			PIDs           []int          `json:"pids"`
		}
		Findings []struct{ Rule string }
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "bringup.trace/v1" || len(doc.Ranks) != 4 || len(doc.Compiles) != 24 || doc.GraphBreaks == nil || doc.OpenPhases == nil || len(doc.Recompiles) != 20 {
		t.Errorf("schema %q ranks %d compiles %d recompiles %d", doc.Schema, len(doc.Ranks), len(doc.Compiles), len(doc.Recompiles))
	}
	c := doc.Compiles[0]
	if c.Rank != 0 || c.ID != "0/0" || c.Status != "failed" || c.FailType != "BackendCompilerFailed" || c.GraphBreaks == nil || c.RestartReasons == nil || c.Seconds["total"] == nil {
		t.Errorf("first compile %+v", c)
	}
	if len(doc.Cache) != 44 || doc.Cache[0].Kind != "fx_graph" || doc.Cache[0].Outcome != "hit" {
		t.Errorf("cache %d entries, first %+v", len(doc.Cache), doc.Cache[0])
	}
	r1 := doc.Counts[filepath.Join(dir, "dedicated_log_torch_trace_rank_1.log")]
	if r1.ChromiumEvents != 544 || len(r1.CompileIDs) != 15 || r1.Events["str"] == 0 || len(r1.PIDs) != 1 {
		t.Errorf("rank 1 counts %+v", r1)
	}
	if len(doc.Findings) == 0 || doc.Findings[0].Rule != "trace-compile-failed" {
		t.Errorf("findings %+v", doc.Findings)
	}
}

func TestTraceUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {t.TempDir()}, {filepath.Join(t.TempDir(), "missing.log")}} {
		code, _, errs := runCLI(append([]string{"trace"}, args...)...)
		if code != ExitUsage || !strings.HasPrefix(errs, "bringup: ") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	_, _, errs := runCLI("trace", t.TempDir())
	if !strings.Contains(errs, "no TORCH_TRACE files") {
		t.Errorf("empty dir: %q", errs)
	}
}

// --html and --perfetto write their outputs.
func TestTraceHTMLAndPerfetto(t *testing.T) {
	dir := t.TempDir()
	pf := filepath.Join(dir, "trace.json")
	code, _, errs := runCLI("trace", "--html", filepath.Join(dir, "html"), "--perfetto", pf, testcorpus.File(t, "tlparse-inputs", "chromium_events.log"))
	if code != ExitFindings {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "html", "index.html")); err != nil {
		t.Error(err)
	}
	b, err := os.ReadFile(pf)
	if err != nil || !json.Valid(b) {
		t.Errorf("perfetto output: %v", err)
	}
}
