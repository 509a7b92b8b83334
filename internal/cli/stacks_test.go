package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/internal/testcorpus"
)

func runStacks(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(append([]string{"stacks"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestStacksCommand(t *testing.T) {
	dir := filepath.Join(testcorpus.Root(), "stacks", "testdata", "seed004-snap1")
	code, out, errs := runStacks(t, dir)
	if code != ExitFindings {
		t.Fatalf("exit %d, want 1 (error-level finding); stderr %s", code, errs)
	}
	if !strings.HasPrefix(out, "verdict: inductor-implicit-fallback-operator-str") || !strings.Contains(out, "#1 · ranks 0-7 (8/8)") {
		t.Errorf("output:\n%s", out)
	}
	// A fixed torch: no error finding, exit 0.
	if code, _, _ := runStacks(t, "--torch", "2.13.1", dir); code != ExitOK {
		t.Errorf("--torch 2.13.1: exit %d", code)
	}
	code, out, _ = runStacks(t, "--json", dir)
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["schema"] != "bringup.stacks/v1" || code != ExitFindings {
		t.Errorf("--json: exit %d err %v schema %v", code, err, doc["schema"])
	}
	if code, _, errs := runStacks(t, "--level", "fuzzy", dir); code != ExitUsage || !strings.Contains(errs, "leaf-K") {
		t.Errorf("bad level: exit %d stderr %q", code, errs)
	}
	if code, _, errs := runStacks(t, "--json", "--collapsed", dir); code != ExitUsage || !strings.Contains(errs, "choose one") {
		t.Errorf("two formats: exit %d stderr %q", code, errs)
	}
	if code, _, errs := runStacks(t, "no/such/file"); code != ExitUsage || !strings.Contains(errs, "no/such/file") {
		t.Errorf("missing file: exit %d stderr %q", code, errs)
	}
}

func TestStacksInterleavedInputSaysHowToFix(t *testing.T) {
	p := testcorpus.File(t, "stackdumps", "sglang-issue-6763-faulthandler-interleaved.txt")
	code, _, errs := runStacks(t, p)
	if code != ExitUsage || !strings.Contains(errs, "interleaved") || !strings.Contains(errs, "faulthandler.enable(file=") {
		t.Errorf("exit %d stderr %q", code, errs)
	}
}

func TestStacksEveryCorpusFile(t *testing.T) {
	dir := testcorpus.Dir(t, "stackdumps")
	code, out, errs := runStacks(t, "--all", dir)
	// MANIFEST.md and the interleaved file contribute nothing; the rest is read.
	if code == ExitUsage || !strings.Contains(out, "bucket(s) at funcs level") {
		t.Fatalf("exit %d stderr %s\n%s", code, errs, out)
	}
	if !strings.Contains(out, "gloo-recv-wait") || !strings.Contains(out, "interleaved") {
		t.Errorf("corpus run misses the gloo finding or the interleave report:\n%s", out)
	}
}
