package diagnose

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func run(t testing.TB, paths ...string) *Diagnosis {
	t.Helper()
	d, err := Run(paths, Options{})
	if err != nil {
		t.Fatalf("Run(%v): %v", paths, err)
	}
	return d
}

func finding(d *Diagnosis, rule string) *record.Finding {
	for i := range d.Findings {
		if d.Findings[i].Rule == rule {
			return &d.Findings[i]
		}
	}
	return nil
}

func ruleIDs(d *Diagnosis) []string {
	var out []string
	for _, f := range d.Findings {
		out = append(out, f.Rule+"/"+string(f.Severity))
	}
	return out
}

// TestEngineLogCorpus checks every file of the real engine-log corpus gets
// the diagnosis its MANIFEST.md records: rule, ranks and evidence line.
func TestEngineLogCorpus(t *testing.T) {
	cases := []struct {
		file, rule string
		ranks      []string
		line       int
		failed     bool
	}{
		{"vllm-issue-18851.log", "compile-cache-corrupt", []string{"rank1"}, 8, true},
		{"vllm-issue-30905.log", "autotune-block-failed", []string{"DP0 TP7"}, 6, true},
		{"vllm-issue-15598.log", "cudagraph-capture-oom", []string{"RayWorkerWrapper pid 1861983"}, 1, true},
		{"vllm-issue-21858.log", "inductor-caches-force-disabled", []string{}, 1, true},
		{"sglang-issue-1117.log", "jit-toolchain-missing", []string{}, 1, true},
		{"pytorch-issue-120774.log", "implicit-fallback-logged", []string{"rank0"}, 1, false},
	}
	dir := testcorpus.Dir(t, "engine-logs")
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.file] = true
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join(dir, c.file)
			d := run(t, path)
			f := finding(d, c.rule)
			if f == nil {
				t.Fatalf("no %s finding; got %v", c.rule, ruleIDs(d))
			}
			if strings.Join(f.Ranks, ",") != strings.Join(c.ranks, ",") {
				t.Errorf("ranks %q, want %q", f.Ranks, c.ranks)
			}
			if len(f.Evidence) == 0 || f.Evidence[0].Line != c.line || f.Evidence[0].Path != path {
				t.Errorf("evidence %+v, want %s:%d", f.Evidence, path, c.line)
			}
			if d.HasErrors() != c.failed {
				t.Errorf("HasErrors = %v, want %v (%v)", d.HasErrors(), c.failed, ruleIDs(d))
			}
			if d.Findings[0].Severity == record.SeverityError && d.Status != "failed" {
				t.Errorf("status %q with an error finding", d.Status)
			}
		})
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") && !seen[e.Name()] {
			t.Errorf("corpus file %s has no expectation here", e.Name())
		}
	}
}

// The MANIFEST says 18851 is wrapped in BackendCompilerFailed: the root
// error must be the inner AssertionError.
func TestRootErrorIsUnwrapped(t *testing.T) {
	d := run(t, testcorpus.File(t, "engine-logs", "vllm-issue-18851.log"))
	if len(d.Errors) != 1 || d.Errors[0].Exception != "AssertionError" || d.Errors[0].Line != 8 || d.Errors[0].Rank != "rank1" || d.Errors[0].PID != 191128 {
		t.Fatalf("errors %+v", d.Errors)
	}
	if !slices.Contains(d.Errors[0].Rules, "compile-cache-corrupt") {
		t.Errorf("error not linked to its rule: %v", d.Errors[0].Rules)
	}
}

func TestExampleAOTGraphBreak(t *testing.T) {
	d := run(t, "../examples/aot-graph-break")
	if d.Findings[0].Rule != "aot-compile-graph-break" || d.Status != "failed" {
		t.Fatalf("first finding %v", ruleIDs(d))
	}
	f := d.Findings[0]
	for _, r := range []string{"DP0 TP0", "DP0 TP1", "DP0 TP2", "DP0 TP3"} {
		if !slices.Contains(f.Ranks, r) {
			t.Errorf("rank %s missing from %v", r, f.Ranks)
		}
	}
	if !strings.Contains(strings.Join(f.Remedy, "\n"), "VLLM_USE_AOT_COMPILE=0") || !strings.Contains(strings.Join(f.Remedy, "\n"), "fullgraph") {
		t.Errorf("remedy must name VLLM_USE_AOT_COMPILE=0 and the fullgraph opt-out: %q", f.Remedy)
	}
	if f.Evidence[0].Line != 66 || !strings.HasPrefix(f.Evidence[0].Text, "RuntimeError: Graph breaks are not supported") {
		t.Errorf("evidence %+v", f.Evidence[0])
	}
	if finding(d, "unrecognised-exception") != nil {
		t.Error("the EngineCore/APIServer wrappers were reported as unexplained errors")
	}
	if len(d.Errors) != 1 || d.Errors[0].Count != 4 || len(d.Errors[0].Ranks) != 4 {
		t.Errorf("want one root error raised on 4 ranks, got %+v", d.Errors)
	}
	if d.Versions["torch"] != "2.11.0+rocm10.0" {
		t.Errorf("torch version %q", d.Versions["torch"])
	}
}

func TestExampleInlinedKeyError(t *testing.T) {
	d := run(t, "../examples/inlined-keyerror")
	f := finding(d, "inlined-callee-def-line")
	if f == nil || d.Findings[0].Rule != "inlined-callee-def-line" {
		t.Fatalf("findings %v", ruleIDs(d))
	}
	if len(f.Ranks) != 4 || f.Evidence[0].Text != "KeyError: 'in_proj_qkvbfg_a'  (innermost frame with source: /opt/vllm/vllm/model_executor/models/glm5next/model.py:456 `def forward(`)" || f.Evidence[0].Line != 90 {
		t.Errorf("finding %+v", f)
	}
	if !strings.Contains(strings.Join(f.Remedy, "\n"), "TORCHDYNAMO_VERBOSE=1") {
		t.Errorf("remedy must say how to get the real frame: %q", f.Remedy)
	}
	e := d.Errors[0]
	if e.Exception != "KeyError" || len(e.Frames) == 0 || e.Frames[0].Line != 456 || e.Frames[0].Func != "forward" {
		t.Errorf("root error %+v", e)
	}
}

func TestExampleInductorHang(t *testing.T) {
	d := run(t, "../examples/inductor-hang")
	if d.Findings[0].Rule != "implicit-fallback-format-hang" || len(d.Findings[0].Ranks) != 4 {
		t.Fatalf("findings %v", ruleIDs(d))
	}
	if finding(d, "startup-stuck") != nil {
		t.Error("the catch-all startup-stuck must give way to the specific rule")
	}
	// The log alone only guesses the hang's stack signature: a warning
	// whose first remedy says what to capture (ConfirmByStacks).
	if f := d.Findings[0]; f.Severity != record.SeverityWarning || len(f.Remedy) == 0 || f.Remedy[0] != CaptureRemedy {
		t.Errorf("severity %s, remedy %q", f.Severity, f.Remedy)
	}
	if d.Status != "warnings" || !strings.Contains(d.Verdict, "warning in phase inductor on DP0 TP0, DP0 TP1, DP0 TP2, DP0 TP3") {
		t.Errorf("status %q verdict %q", d.Status, d.Verdict)
	}
}

// TestVerdictStuckOnlyWhenOpen: a finding is called STUCK only when its
// phase is still open on one of its ranks, failed on none, and no
// concrete error ended it; a crash stays FAILED.
func TestVerdictStuckOnlyWhenOpen(t *testing.T) {
	f := record.Finding{Rule: "r", Title: "t", Severity: record.SeverityError, Phase: "inductor", Ranks: []string{"TP0", "TP1"}}
	for _, c := range []struct {
		name     string
		timeline []record.Phase
		want     string
	}{
		{"open on one rank", []record.Phase{{Rank: "TP0", Name: "inductor", Status: "done"}, {Rank: "TP0", Name: "inductor", Status: "unfinished"}, {Rank: "TP1", Name: "inductor", Status: "done"}}, "STUCK in phase inductor on TP0, TP1 (still running when the log ends): t [r]"},
		{"failed on a rank", []record.Phase{{Rank: "TP0", Name: "inductor", Status: "unfinished"}, {Rank: "TP1", Name: "inductor", Status: "failed"}}, "FAILED in phase inductor on TP0, TP1: t [r]"},
		{"open only on another rank", []record.Phase{{Rank: "TP2", Name: "inductor", Status: "unfinished"}}, "FAILED in phase inductor on TP0, TP1: t [r]"},
		{"another phase open", []record.Phase{{Rank: "TP0", Name: "compile", Status: "unfinished"}}, "FAILED in phase inductor on TP0, TP1: t [r]"},
		{"no timeline", nil, "FAILED in phase inductor on TP0, TP1: t [r]"},
	} {
		d := &Diagnosis{Findings: []record.Finding{f}, Timeline: c.timeline}
		if status, v := verdict(d); status != "failed" || v != c.want {
			t.Errorf("%s: %q %q, want %q", c.name, status, v, c.want)
		}
	}
	// A concrete error raised in the open phase ended it: a crash, not a
	// hang (a scheduler's traceback cut before its exception line, inside
	// the cuda-graph capture its marker opened).
	f.Root = "Traceback: cut off before its exception line"
	d := &Diagnosis{Findings: []record.Finding{f}, Timeline: []record.Phase{{Rank: "TP0", Name: "inductor", Status: "unfinished"}}}
	if status, v := verdict(d); status != "failed" || v != "FAILED in phase inductor on TP0, TP1: t: "+f.Root+" [r]" {
		t.Errorf("an open phase with a concrete error: %q %q, want FAILED with the error", status, v)
	}
}

// TestHealthyBoot: no rule fires on a healthy multi-rank boot, so none of
// the knowledge base's signatures matches ordinary startup lines.
func TestHealthyBoot(t *testing.T) {
	d := run(t, "../examples/healthy")
	if len(d.Findings) != 0 || len(d.Errors) != 0 || d.Status != "ok" {
		t.Fatalf("healthy boot: findings %v errors %+v status %s", ruleIDs(d), d.Errors, d.Status)
	}
	done := 0
	for _, p := range d.Timeline {
		if p.Status != "done" {
			t.Errorf("phase %+v not done", p)
		}
		done++
	}
	if done == 0 {
		t.Error("no timeline")
	}
}

func TestVersionGateAppliesAfterStreaming(t *testing.T) {
	// torch is printed after the Inductor record: the gate must still apply.
	log := "[rank0]:I0227 20:02:12.576000 1397 torch/_inductor/graph.py:789] [0/0] Creating implicit fallback for:\n" +
		"[rank0]:I0227 20:02:12.576000 1397 torch/_inductor/graph.py:789] [0/0]   target: fb.bucketize.default\n" +
		"PyTorch version: 2.13.0+cu128\n"
	d, err := Run([]string{"-"}, Options{Stdin: strings.NewReader(log)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Versions["torch"] != "2.13.0+cu128" || finding(d, "implicit-fallback-logged") != nil {
		t.Errorf("rule gated on torch < 2.13 fired with torch %q", d.Versions["torch"])
	}
	// The same log with an older torch printed last fires it: the quiet
	// run above is the gate's doing, not a rule that never matched.
	old := strings.Replace(log, "2.13.0+cu128", "2.7.1+cu128", 1)
	if d, err = Run([]string{"-"}, Options{Stdin: strings.NewReader(old)}); err != nil {
		t.Fatal(err)
	}
	if finding(d, "implicit-fallback-logged") == nil {
		t.Errorf("rule gated on torch < 2.13 did not fire with torch %q: %v", d.Versions["torch"], ruleIDs(d))
	}
}

func TestDirectoryWithBadInputs(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(testcorpus.File(t, "engine-logs", "vllm-issue-30905.log"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/worker.log", data)
	write("b/core.bin", []byte{0x7f, 'E', 'L', 'F', 0, 0, 1, 2, 3})
	write("b/empty.log", nil)
	write(".git/HEAD", []byte("ref: refs/heads/main\n"))
	d := run(t, dir)
	byPath := map[string]Input{}
	for _, in := range d.Inputs {
		byPath[filepath.Base(in.Path)] = in
	}
	if len(d.Inputs) != 3 {
		t.Errorf("inputs %+v, want 3 (hidden directories skipped)", d.Inputs)
	}
	if in := byPath["core.bin"]; in.Error == "" || in.Kind != "" {
		t.Errorf("binary input %+v must be noted as not recognised", in)
	}
	if in := byPath["empty.log"]; in.Error == "" {
		t.Errorf("empty input %+v must be noted", in)
	}
	if in := byPath["worker.log"]; in.Kind != KindEngineLog || in.Records == 0 || in.Error != "" {
		t.Errorf("log input %+v", in)
	}
	if finding(d, "autotune-block-failed") == nil {
		t.Errorf("the readable log was not diagnosed: %v", ruleIDs(d))
	}
}

func TestNothingReadable(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x.bin"), []byte{0, 1, 2}, 0o644)
	if _, err := Run([]string{dir}, Options{}); err != ErrNoInput {
		t.Errorf("err %v, want ErrNoInput", err)
	}
	if _, err := Run([]string{filepath.Join(dir, "missing.log")}, Options{}); err == nil || !strings.Contains(err.Error(), "missing.log") {
		t.Errorf("a missing path must be an error naming it, got %v", err)
	}
}

func TestThousandsOfFiles(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 2000; i++ {
		sub := filepath.Join(dir, "rank"+itoa(i%64))
		os.MkdirAll(sub, 0o755)
		body := "(Worker_TP" + itoa(i%8) + " pid=" + itoa(1000+i) + ") INFO 05-28 18:58:32 [gpu_worker.py:298] Available KV cache memory: 18.36 GiB\n"
		if i == 1999 {
			body += "(Worker_TP7 pid=2999) ERROR 05-28 18:58:33 [core.py:1] AssertionError: VllmBackend can only be called once\n"
		}
		os.WriteFile(filepath.Join(sub, "f"+itoa(i)+".log"), []byte(body), 0o644)
	}
	d := run(t, dir)
	if len(d.Inputs) != 2000 {
		t.Errorf("%d inputs", len(d.Inputs))
	}
	if f := finding(d, "backend-called-twice"); f == nil || f.Ranks[0] != "TP7" {
		t.Errorf("findings %v", ruleIDs(d))
	}
}

func itoa(n int) string {
	var b []byte
	if n == 0 {
		return "0"
	}
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestStdin(t *testing.T) {
	data, err := os.ReadFile("../examples/aot-graph-break/vllm-serve.log")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Run([]string{"-"}, Options{Stdin: bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Inputs[0].Path != "-" || d.Findings[0].Rule != "aot-compile-graph-break" || d.Findings[0].Evidence[0].Path != "-" {
		t.Errorf("stdin: %+v %v", d.Inputs, ruleIDs(d))
	}
}

// FuzzDiagnose feeds arbitrary bytes through the whole pipeline: it must
// never panic, and every evidence line must lie inside the input.
func FuzzDiagnose(f *testing.F) {
	set, err := rules.Builtin()
	if err != nil {
		f.Fatal(err)
	}
	// The examples' interesting records: the 6 lines up to each evidence
	// line of their findings (tracebacks' ends). Small seeds keep the
	// fuzzer fast: minimizing a new input grown from an 8 KiB seed stalled
	// it for most of a minute.
	for _, dir := range []string{"../examples/aot-graph-break", "../examples/inlined-keyerror", "../examples/inductor-hang"} {
		log := filepath.Join(dir, "vllm-serve.log")
		b, err := os.ReadFile(log)
		d, derr := Run([]string{log}, Options{Rules: set})
		if err != nil || derr != nil {
			continue
		}
		lines := bytes.SplitAfter(b, []byte("\n"))
		for _, fd := range d.Findings {
			for _, ev := range fd.Evidence {
				if ev.Line >= 1 && ev.Line <= len(lines) {
					f.Add(bytes.Join(lines[max(0, ev.Line-6):ev.Line], nil))
				}
			}
		}
	}
	// The field corpus's small pastes: frameless errors, crash lines, quirks.
	if entries, err := filepath.Glob(filepath.Join("..", "corpus", "field", "*.log")); err == nil {
		for _, e := range entries {
			if b, err := os.ReadFile(e); err == nil && len(b) <= 4096 {
				f.Add(b)
			}
		}
	}
	if entries, err := filepath.Glob(filepath.Join(testcorpus.Root(), "..", "shared", "corpus", "engine-logs", "*.log")); err == nil {
		for _, e := range entries {
			if b, err := os.ReadFile(e); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Run([]string{"-"}, Options{Rules: set, Stdin: bytes.NewReader(data), Workers: 1})
		if err != nil && err != ErrNoInput {
			t.Fatal(err)
		}
		if len(d.Errors) > 0 && (!d.HasErrors() || d.Status != "failed") {
			t.Fatalf("the floor let an error through: %d errors, status %s, %v", len(d.Errors), d.Status, ruleIDs(d))
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, fd := range d.Findings {
			for _, ev := range fd.Evidence {
				if ev.Line < 1 || ev.Line > lines {
					t.Fatalf("%s: evidence line %d outside the input (%d lines)", fd.Rule, ev.Line, lines)
				}
			}
		}
	})
}

// When the traceback prints no source lines, a model file that exists on
// this machine is read to see whether the frame's line is a def line.
func TestDefLineFromLocalSource(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "mymodel.py")
	os.WriteFile(model, []byte("import torch\n\nclass Layer(torch.nn.Module):\n    def forward(self, x):\n        return self.table[x]\n"), 0o644)
	log := "(Worker_TP0 pid=11) ERROR 11-29 10:00:00 [multiproc_executor.py:815] WorkerProc hit an exception.\n" +
		"(Worker_TP0 pid=11) ERROR 11-29 10:00:00 [multiproc_executor.py:815] Traceback (most recent call last):\n" +
		"(Worker_TP0 pid=11) ERROR 11-29 10:00:00 [multiproc_executor.py:815]   File \"/x/torch/_dynamo/eval_frame.py\", line 841, in compile_wrapper\n" +
		"(Worker_TP0 pid=11) ERROR 11-29 10:00:00 [multiproc_executor.py:815]   File \"" + model + "\", line 4, in forward\n" +
		"(Worker_TP0 pid=11) ERROR 11-29 10:00:00 [multiproc_executor.py:815] KeyError: 'w_qkv'\n"
	d, err := Run([]string{"-"}, Options{Stdin: strings.NewReader(log)})
	if err != nil {
		t.Fatal(err)
	}
	if f := finding(d, "inlined-callee-def-line"); f == nil || !strings.Contains(f.Evidence[0].Text, "mymodel.py:4 `def forward(self, x):`") {
		t.Fatalf("findings %v %+v", ruleIDs(d), d.Findings)
	}
	// The same traceback when the file's line is not a def line.
	os.WriteFile(model, []byte("import torch\n\nclass Layer(torch.nn.Module):\n    x = self.table[x]\n"), 0o644)
	d, _ = Run([]string{"-"}, Options{Stdin: strings.NewReader(log)})
	if finding(d, "inlined-callee-def-line") != nil {
		t.Error("fired although the frame's line is not a def line")
	}
}

func TestSymlinkedDirectoryAndFile(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	os.MkdirAll(real, 0o755)
	data, _ := os.ReadFile("../examples/aot-graph-break/vllm-serve.log")
	os.WriteFile(filepath.Join(real, "a.log"), data, 0o644)
	os.Symlink(filepath.Join(real, "a.log"), filepath.Join(real, "b.log"))
	link := filepath.Join(dir, "logs")
	os.Symlink(real, link)
	d := run(t, link)
	if len(d.Inputs) != 2 || !strings.HasPrefix(d.Inputs[0].Path, link) || d.Findings[0].Rule != "aot-compile-graph-break" {
		t.Errorf("inputs %+v findings %v", d.Inputs, ruleIDs(d))
	}
}

func TestGzippedLog(t *testing.T) {
	data, err := os.ReadFile(testcorpus.File(t, "engine-logs", "vllm-issue-30905.log"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "worker.log.gz"), buf.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.log.gz"), buf.Bytes()[:30], 0o644)
	d := run(t, dir)
	f := finding(d, "autotune-block-failed")
	if f == nil || f.Evidence[0].Line != 6 || !strings.HasSuffix(f.Evidence[0].Path, "worker.log.gz") {
		t.Errorf("gzipped log: %v %+v", ruleIDs(d), f)
	}
	for _, in := range d.Inputs {
		if strings.HasSuffix(in.Path, "broken.log.gz") && in.Error == "" {
			t.Errorf("a truncated gzip file must be noted: %+v", in)
		}
	}
}

// An excerpt holding only the engine's re-raise still names the error it
// quotes; with the workers' tracebacks present, the engine is not a rank
// that failed (TestExampleAOTGraphBreak).
func TestOnlyWrapperExcerpt(t *testing.T) {
	data, err := os.ReadFile("../examples/aot-graph-break/vllm-serve.log")
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "(EngineCore_DP0 pid=4180) ERROR") {
			keep = append(keep, l)
		}
	}
	d, err := Run([]string{"-"}, Options{Stdin: strings.NewReader(strings.Join(keep, "\n") + "\n")})
	if err != nil {
		t.Fatal(err)
	}
	f := finding(d, "aot-compile-graph-break")
	if f == nil || strings.Join(f.Ranks, ",") != "EngineCore DP0" {
		t.Fatalf("findings %v %+v", ruleIDs(d), f)
	}
	full := run(t, "../examples/aot-graph-break")
	if slices.Contains(full.Findings[0].Ranks, "EngineCore DP0") {
		t.Errorf("engine counted as a failing rank: %v", full.Findings[0].Ranks)
	}
}

// TestDeterministic: the same input gives the same diagnosis on every run
// (phases opened on one line used to come out in map order).
func TestDeterministic(t *testing.T) {
	var first []byte
	for i := 0; i < 12; i++ {
		b, err := json.Marshal(run(t, "../examples/aot-graph-break", "../examples/inductor-hang"))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b
		} else if !bytes.Equal(b, first) {
			t.Fatalf("run %d differs from run 0", i)
		}
	}
}

// TestBatchCounts: logs of one line, of about one small first block, and
// of more blocks than the pipeline has (each returns to the parser after
// both consumers are done with it) are read to the end (a batch returned
// twice to the free list once deadlocked the pipeline).
func TestBatchCounts(t *testing.T) {
	dir := t.TempDir()
	// A line is 80 bytes; a full block 512 KiB; a batch 512 records.
	for _, n := range []int{1, 512, 513, 819, 820, 6553, 6554, 150001} {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "(Worker_TP%d pid=9) INFO 05-28 18:58:32 [gpu_worker.py:298] record %d\n", i%4, i)
		}
		p := filepath.Join(dir, fmt.Sprintf("n%d.log", n))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan *Diagnosis)
		go func() { done <- run(t, p) }()
		select {
		case d := <-done:
			if d.Inputs[0].Records != int64(n) {
				t.Errorf("%d records: read %d", n, d.Inputs[0].Records)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%d records: the pipeline did not finish", n)
		}
	}
}
