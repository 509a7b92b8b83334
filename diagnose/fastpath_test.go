package diagnose

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// bothWays runs diagnose on paths (or on stdin when data is not nil) with
// the literal gates (records no analyzer's literal is on skip the
// analyzers and get no Text) and with every record treated as interesting,
// the batches' texts poisoned on release both times, and returns both
// diagnoses as JSON.
func bothWays(t testing.TB, set *rules.Set, paths []string, data []byte) (fast, full []byte) {
	t.Helper()
	defer func(f, p bool) { forceAll, enginelog.PoisonReleased = f, p }(forceAll, enginelog.PoisonReleased)
	enginelog.PoisonReleased = true
	run := func(all bool) []byte {
		forceAll = all
		opt := Options{Rules: set}
		if data != nil {
			opt.Stdin, opt.Workers = bytes.NewReader(data), 1
		}
		d, err := Run(paths, opt)
		if err != nil && err != ErrNoInput {
			t.Fatal(err)
		}
		b, err := json.MarshalIndent(d, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return run(false), run(true)
}

// fastPathInputs: the built-in rules, and every corpus engine log and
// example log.
func fastPathInputs(t *testing.T) (*rules.Set, []string) {
	t.Helper()
	set, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(testcorpus.Dir(t, "engine-logs"), "*.log"))
	examples, _ := filepath.Glob("../examples/*/*.log")
	if len(logs) == 0 || len(examples) == 0 {
		t.Fatalf("no inputs: %d corpus logs, %d examples", len(logs), len(examples))
	}
	return set, append(logs, examples...)
}

// TestFastPathSameResult: the gated pipeline gives exactly the diagnosis
// of the one that shows every record to every analyzer, on every corpus
// engine log and example.
func TestFastPathSameResult(t *testing.T) {
	set, paths := fastPathInputs(t)
	for _, p := range paths {
		fast, full := bothWays(t, set, []string{p}, nil)
		if !bytes.Equal(fast, full) {
			t.Errorf("%s: the gated diagnosis differs from the full one:\n%s\nfull:\n%s", p, fast, full)
		}
		if !bytes.Contains(fast, []byte(`"findings"`)) {
			t.Fatalf("%s: no diagnosis: %s", p, fast)
		}
	}
}

// TestFastPathSameResultManyBlocks: the same on a log of many read
// blocks (every corpus engine log and example, again and again), where
// records and tracebacks run across block boundaries and the parser
// stitches blocks together.
func TestFastPathSameResultManyBlocks(t *testing.T) {
	set, paths := fastPathInputs(t)
	var one []byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		one = append(one, b...)
	}
	var in []byte
	for len(in) < 16<<20 {
		in = append(in, one...)
	}
	fast, full := bothWays(t, set, []string{"-"}, in)
	if !bytes.Equal(fast, full) {
		t.Errorf("the gated diagnosis differs from the full one:\n%.3000s\nfull:\n%.3000s", fast, full)
	}
}

// TestGateIsUsed: the built-in rules give a literal scan with no group
// forced on, so the test above compares two different paths.
func TestGateIsUsed(t *testing.T) {
	set, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	g := gateFor(set)
	if g.scan == nil || g.always != 0 || g.scan.All() != gAll {
		t.Fatalf("gate: scan %v, always %b, groups %b; want a scan of every group and none always", g.scan != nil, g.always, g.scan.All())
	}
	if gateFor(set) != g {
		t.Fatal("the gate of one rule set is compiled again")
	}
	if m := g.scan.Mask("Avg prompt throughput: 1532.4 tokens/s, Running: 64 reqs"); m != 0 {
		t.Fatalf("an ordinary line has mask %b", m)
	}
	for line, want := range map[string]uint64{
		`  File "/x.py", line 3, in f`:                gTraceback,
		"Traceback (most recent call last):":          gTraceback | gTimeline,
		"gpu_memory_utilization=0.9":                  gGPU,
		"Capturing CUDA graphs (decode, FULL): 100%|": gTimeline,
		"torch==2.7.1":                                gVersions,
	} {
		if m := g.scan.Mask(line); m&want != want {
			t.Errorf("Mask(%q) = %b, want bits %b", line, m, want)
		}
	}
}

// FuzzFastPath: on any input, the gated pipeline and the full one agree.
func FuzzFastPath(f *testing.F) {
	for _, dir := range []string{"../examples/aot-graph-break", "../examples/inlined-keyerror", "../examples/inductor-hang"} {
		if b, err := os.ReadFile(filepath.Join(dir, "vllm-serve.log")); err == nil {
			lines := bytes.SplitAfter(b, []byte("\n"))
			if len(lines) > 80 {
				lines = lines[len(lines)-80:]
			}
			f.Add(bytes.Join(lines, nil))
		}
	}
	if entries, err := filepath.Glob(filepath.Join(testcorpus.Root(), "..", "shared", "corpus", "engine-logs", "*.log")); err == nil {
		for _, e := range entries {
			if b, err := os.ReadFile(e); err == nil {
				f.Add(b)
			}
		}
	}
	set, err := rules.Builtin()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, full := bothWays(t, set, []string{"-"}, data)
		if !bytes.Equal(fast, full) {
			t.Fatalf("the gated diagnosis differs from the full one:\n%s\nfull:\n%s", fast, full)
		}
	})
}
