package enginelog

import (
	"strings"
	"testing"
)

// TestPasteWrap: a paste hard-wrapped at a width is joined back where a
// line of that width goes on in a line that cannot start a record; an
// empty line after a joined one keeps the lines after it at their
// numbers; records that start at the width's boundary are not joined.
func TestPasteWrap(t *testing.T) {
	orig := []string{
		"Traceback (most recent call last):",
		`  File "/usr/lib/python3.12/site-packages/vllm/model_executor/model_loader/default_loader.py", line 268, in load_weights`,
		"    loaded = model.load_weights(self.get_all_weights(model_config, model))",
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB. GPU 0 has a total capacity of 79.19 GiB of which 611.06 MiB is free.",
	}
	var wrapped []string
	for _, l := range orig {
		for len(l) > 80 {
			wrapped = append(wrapped, l[:80])
			l = l[80:]
		}
		wrapped = append(wrapped, l)
	}
	in := strings.Join(wrapped, "\n") + "\n"
	got, fix := depaste(t, in)
	if fix.Wrap != 80 {
		t.Fatalf("wrap not seen: %+v", fix)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != len(wrapped) {
		t.Fatalf("lines %d -> %d", len(wrapped), len(lines))
	}
	var joined []string
	for _, l := range lines {
		if l != "" {
			joined = append(joined, l)
		}
	}
	if strings.Join(joined, "\n") != strings.Join(orig, "\n") {
		t.Errorf("not joined back:\n%s", got)
	}

	// Equal longest lines, each followed by a record: an engine's own log.
	const rec = "(EngineCore_DP0 pid=1) INFO 11-29 21:05:14 [core.py:700] Loading weights took 12.3 seconds now"
	log := strings.Repeat(rec+"\n"+"(EngineCore_DP0 pid=1) INFO 11-29 21:05:15 [core.py:701] ok\n", 3)
	if _, fix := depaste(t, log); fix.Wrap != 0 {
		t.Errorf("an engine log taken for a wrapped paste: %+v", fix)
	}
	// A tool's records of one kind, as long as each other: not a wrap.
	ptx := "ptxas /var/tmp/compile-ptx-src-ce8fce, line 77; error   : Feature '.bf16' requires .target sm_80 or higher\n" +
		"ptxas /var/tmp/compile-ptx-src-ce8fce, line 78; error   : Feature '.bf16' requires .target sm_80 or higher\n" +
		"ptxas /var/tmp/compile-ptx-src-ce8fce, line 79; error   : Feature '.bf16' requires .target sm_80 or higher\n" +
		"ptxas fatal   : Ptx assembly aborted due to errors\n"
	if got, fix := depaste(t, ptx); fix.Wrap != 0 || got != ptx {
		t.Errorf("records of one tool joined: %+v\n%s", fix, got)
	}
	// A line of the width followed by an exception line or a frame is
	// not joined to it.
	wl := func(c string) string { return strings.Repeat(c, 80) }
	in = wl("a") + "\nrest of a\n" + wl("b") + "\nrest of b\n" + wl("c") + "\nRuntimeError: boom\n" + wl("d") + "\n  File \"a.py\", line 1, in f\n"
	got, fix = depaste(t, in)
	if fix.Wrap != 80 || !strings.Contains(got, wl("a")+"rest of a\n\n") ||
		!strings.Contains(got, wl("c")+"\nRuntimeError: boom\n") || !strings.Contains(got, wl("d")+"\n  File \"a.py\"") {
		t.Errorf("a record joined to a wrapped line:\n%s", got)
	}
}
