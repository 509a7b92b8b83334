package watch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/diagnose"
	"github.com/bringup-tool/bringup/report"
	"github.com/bringup-tool/bringup/report/diagnosis"
	"github.com/bringup-tool/bringup/store"
)

// Held-out hangs (issue #15): a real boot that hangs, run under watch
// with --silence 3s --on-silence stop, whose run directory is then given
// to diagnose, which must say what watch said: one verdict from the same
// evidence (run.json's stop, the stack captures, the log's timeline).

// hungAt runs a fake boot of workers TP workers under watch until it is
// stopped as hung, the silence doubled until every worker had reached its
// hang before the stop (a loaded machine starts Python slowly).
func hungAt(t *testing.T, name string, workers int) (*bootResult, time.Duration) {
	t.Helper()
	py := needPython(t)
	silence := 3 * time.Second
	for ; ; silence *= 2 {
		r := boot(t, t.Context(), Config{
			Command:   []string{py, script(name)},
			Silence:   silence,
			OnSilence: "stop",
			Timeout:   90 * time.Second,
			Capture:   StacksCapture(2, 300*time.Millisecond, report.Style{}),
			Diagnose:  PipelineDiagnose(nil, report.Style{}),
		})
		if bytes.Count(readLog(t, r.run), []byte("Cache the graph for dynamic shape")) == workers || silence >= 24*time.Second {
			return r, silence
		}
		t.Logf("the boot was not at its hang after --silence %s: again with twice as long", silence)
	}
}

// whereOf is the part of a hang verdict that says where the workers are.
func whereOf(t *testing.T, verdict string) string {
	t.Helper()
	_, where, ok := strings.Cut(verdict, ": ")
	if !ok {
		t.Fatalf("verdict %q says nothing of where the workers are", verdict)
	}
	return where
}

// logAndStacks copies a run's output.log and its stack capture into a
// directory of their own (no run.json), as a user hands them over.
func logAndStacks(t *testing.T, run *store.Run) []string {
	t.Helper()
	dir := t.TempDir()
	var out []string
	for _, name := range []string{"output.log", "silence-1.stacks.json"} {
		b, err := os.ReadFile(filepath.Join(run.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// openPhasesOf is the diagnosis's timeline as its JSON has it (the
// contract other tools read): each unfinished phase with its length and
// what its length runs to.
func openPhasesOf(t *testing.T, d *diagnose.Diagnosis) []map[string]any {
	t.Helper()
	var b bytes.Buffer
	if err := diagnosis.WriteJSON(&b, d); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Timeline []map[string]any `json:"timeline"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, p := range doc.Timeline {
		if p["status"] == "unfinished" {
			out = append(out, p)
		}
	}
	return out
}

// A boot that hangs in the user's own code (no stack signature): watch
// says "STUCK 3.7 s in phase inductor: 2/2 ranks in …sleepy.py
// wait_for_peer_config …, 2 snapshots identical"; diagnose RUN_DIR says
// the same, fails (exit 1, as watch), and its open phase is as long as
// watch's, not "0 s". Given only the log and the stacks, diagnose names
// the same place, silent since the log's last line, and the open phase
// runs to that line, saying so.
func TestDiagnoseRunDirNamesTheHang(t *testing.T) {
	r, silence := hungAt(t, "sleepy.py", 2)
	run := r.run
	if run.Outcome != store.OutcomeHung {
		t.Fatalf("outcome %q, want hung", run.Outcome)
	}
	if !strings.HasPrefix(run.Verdict, "STUCK ") || !strings.Contains(run.Verdict, " in phase inductor: 2/2 ranks in ") ||
		!strings.Contains(run.Verdict, "sleepy.py wait_for_peer_config (bucket #1), 2 snapshots identical") {
		t.Fatalf("watch's verdict %q", run.Verdict)
	}
	d := runDirDiagnosis(t, run, nil, []string{"implicit-fallback-format-hang", "inductor-implicit-fallback-operator-str", "unrecognised-exception"})
	if d.Verdict != run.Verdict {
		t.Errorf("diagnose RUN_DIR verdict\n %q\nwatch's\n %q", d.Verdict, run.Verdict)
	}
	if d.Status != "failed" || !d.HasErrors() {
		t.Errorf("diagnose RUN_DIR status %q, failing %v: want failed, exit status 1 as watch's", d.Status, d.HasErrors())
	}
	// Each rank's open phase as long as run.json has it (watch measured
	// it until the stop), at least the silence.
	inductor := map[string]float64{}
	for _, p := range run.Timeline {
		if p.Name == "inductor" && p.Open {
			inductor[fmt.Sprint(p.Rank, ":", p.Line)] = p.Seconds
		}
	}
	open := openPhasesOf(t, d)
	if len(open) != 2 || len(inductor) != 2 {
		t.Fatalf("open phases: diagnose %v, run.json %v", open, inductor)
	}
	for _, p := range open {
		sec, _ := p["seconds"].(float64)
		want, ok := inductor[fmt.Sprint(p["rank"], ":", p["line"])]
		if p["phase"] != "inductor" || !ok || sec < silence.Seconds()-1 || sec > want+0.01 || sec < want-0.01 {
			t.Errorf("diagnose RUN_DIR open phase %v: want inductor, as long as run.json has it (%v; the silence was %v)", p, inductor, silence)
		}
		if p["until"] != "stop" {
			t.Errorf("open phase %v: want until \"stop\" (the run's end)", p)
		}
	}

	// The log and the stacks without run.json.
	d2, err := diagnose.Run(logAndStacks(t, run), diagnose.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "STUCK in phase inductor, silent since the log's last line ("; !strings.HasPrefix(d2.Verdict, want) ||
		!strings.HasSuffix(d2.Verdict, ": "+whereOf(t, run.Verdict)) {
		t.Errorf("log and stacks: verdict %q\nwant %q…: %s", d2.Verdict, want, whereOf(t, run.Verdict))
	}
	if d2.Status != "failed" || !d2.HasErrors() {
		t.Errorf("log and stacks: status %q, failing %v", d2.Status, d2.HasErrors())
	}
	for _, p := range openPhasesOf(t, d2) {
		if p["until"] != "last line" {
			t.Errorf("log and stacks: open phase %v: want until \"last line\" (the log's last timestamp)", p)
		}
	}
}

// A collective hang: ranks 0, 1 and 3 wait in all_reduce for rank 2,
// which is in the user's code. watch names rank 2 as the one the others
// wait for; diagnose RUN_DIR says the same and fails, and so does
// diagnose of the log and stacks alone — not "warning in phase runtime
// … nccl-collective-wait", exit 0.
func TestDiagnoseRunDirNamesTheRankOthersWaitFor(t *testing.T) {
	r, _ := hungAt(t, "collhang.py", 4)
	run := r.run
	if run.Outcome != store.OutcomeHung {
		t.Fatalf("outcome %q, want hung", run.Outcome)
	}
	for _, want := range []string{"3/4 ranks in ", "distributed_c10d.py all_reduce", "rank 2 (pid ", "collhang.py load_late_shard", "the others wait for it"} {
		if !strings.HasPrefix(run.Verdict, "STUCK ") || !strings.Contains(run.Verdict, want) {
			t.Fatalf("watch's verdict %q: want STUCK …%s…", run.Verdict, want)
		}
	}
	d := runDirDiagnosis(t, run, nil, []string{"implicit-fallback-format-hang", "unrecognised-exception"})
	if d.Verdict != run.Verdict {
		t.Errorf("diagnose RUN_DIR verdict\n %q\nwatch's\n %q", d.Verdict, run.Verdict)
	}
	if d.Status != "failed" || !d.HasErrors() {
		t.Errorf("diagnose RUN_DIR status %q, failing %v", d.Status, d.HasErrors())
	}
	d2, err := diagnose.Run(logAndStacks(t, run), diagnose.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d2.Verdict, "STUCK ") || !strings.HasSuffix(d2.Verdict, ": "+whereOf(t, run.Verdict)) {
		t.Errorf("log and stacks: verdict %q\nwant STUCK …: %s", d2.Verdict, whereOf(t, run.Verdict))
	}
	if d2.Status != "failed" || !d2.HasErrors() {
		t.Errorf("log and stacks: status %q, failing %v", d2.Status, d2.HasErrors())
	}
}
