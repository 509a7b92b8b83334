package patchset

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/bringup-tool/bringup/patchset/beneath"
	"github.com/bringup-tool/bringup/patchset/udiff"
	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

func seedPath(t testing.TB) string {
	return filepath.Join(testcorpus.Shared(t), "seeds", "000_9ec8939dfa491181.txt")
}

func TestSeedPatchParses(t *testing.T) {
	p, err := ParseFile(seedPath(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Targets) != 1 {
		t.Fatalf("targets: %d", len(p.Targets))
	}
	tg := p.Targets[0]
	if tg.Path != "vllm/compilation/wrapper.py" ||
		tg.BaseSHA256 != "969961dca41c78385212e985cfc0c57ef067f4a2d7490c73c658c600a1b95cac" ||
		tg.PatchedSHA256 != "732363bb1a1367772f13c60a655c678e7e2e9e56186677b14238f5e84cac31b3" {
		t.Fatalf("target: %+v", tg)
	}
	if p.Status != "wip" || !p.Active() || !strings.HasPrefix(p.StatusText, "WIP") {
		t.Fatalf("status %q (%q)", p.Status, p.StatusText)
	}
	if !strings.HasPrefix(p.Description, "glm53-compile-03-fullgraph-optout.patch") {
		t.Fatalf("description %q", p.Description)
	}
	knobs := map[string]EnvKnob{}
	for _, k := range p.Env {
		knobs[k.Source+":"+k.Name] = k
	}
	if k := knobs["header:VLLM_COMPILE_FULLGRAPH"]; k.Value != "0" {
		t.Errorf("header knob VLLM_COMPILE_FULLGRAPH=0 not found: %+v", p.Env)
	}
	if k := knobs["header:VLLM_USE_AOT_COMPILE"]; k.Value != "0" {
		t.Errorf("header knob VLLM_USE_AOT_COMPILE=0 not found: %+v", p.Env)
	}
	if k := knobs["diff:VLLM_COMPILE_FULLGRAPH"]; k.Value != "1" {
		t.Errorf("the diff reads VLLM_COMPILE_FULLGRAPH with default 1: %+v", p.Env)
	}
	hs := tg.Diff.Hunks
	if len(hs) != 2 || hs[0].OldStart != 19 || hs[0].NewLines != 15 || hs[1].OldStart != 146 {
		t.Fatalf("hunks: %+v", hs)
	}
	// The file ends without a newline; its last line still reads as a whole line.
	last := hs[1].Lines[len(hs[1].Lines)-1]
	if last.Op != ' ' || last.Text != "                options=options,\n" {
		t.Fatalf("last line %q", last.Text)
	}
	if len(p.Warnings) != 0 {
		t.Fatalf("warnings on the seed: %v", p.Warnings)
	}
}

var (
	stdlibOnce sync.Once
	stdlibDir  string
	stdlibErr  error
)

// stdlib returns the source of a real module from the local CPython.
func stdlib(t testing.TB, rel string) []byte {
	t.Helper()
	stdlibOnce.Do(func() {
		py, err := exec.LookPath("python3")
		if err != nil {
			stdlibErr = err
			return
		}
		out, err := exec.Command(py, "-c", "import sysconfig;print(sysconfig.get_paths()['stdlib'])").Output()
		stdlibDir, stdlibErr = strings.TrimSpace(string(out)), err
	})
	if stdlibErr != nil {
		t.Skipf("python3 is needed: the round trips use real stdlib files (%v)", stdlibErr)
	}
	data, err := os.ReadFile(filepath.Join(stdlibDir, rel))
	if err != nil {
		t.Skipf("stdlib file %s: %v", rel, err)
	}
	return data
}

// tree is a fake site-packages with real Python files.
type tree struct {
	root, patches string
	orig, edited  map[string][]byte
}

func lines(b []byte) []string { return udiff.SplitLines(b) }

// editInsert inserts text after line n; editReplace swaps the first line
// containing old; editDelete drops lines [a, b).
func editInsert(b []byte, n int, text string) []byte {
	l := lines(b)
	return []byte(strings.Join(l[:n], "") + text + strings.Join(l[n:], ""))
}

func editReplace(t *testing.T, b []byte, old, nw string) []byte {
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("edit: %q not found", old)
	}
	return bytes.Replace(b, []byte(old), []byte(nw), 1)
}

func editDelete(b []byte, a, z int) []byte {
	l := lines(b)
	return []byte(strings.Join(l[:a], "") + strings.Join(l[z:], ""))
}

func newTree(t *testing.T) *tree {
	t.Helper()
	tr := &tree{root: filepath.Join(t.TempDir(), "site-packages"), patches: filepath.Join(t.TempDir(), "patches"),
		orig: map[string][]byte{}, edited: map[string][]byte{}}
	for _, d := range []string{tr.root, tr.patches} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tr.put(t, "fakepkg/__init__.py", []byte(""))
	tr.put(t, "fakepkg/decoder.py", stdlib(t, "json/decoder.py"))
	tr.put(t, "fakepkg/encoder.py", stdlib(t, "json/encoder.py"))
	tr.put(t, "fakepkg/textwrap.py", stdlib(t, "textwrap.py"))
	return tr
}

func (tr *tree) put(t *testing.T, rel string, data []byte) {
	t.Helper()
	p := filepath.Join(tr.root, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tr.orig[rel] = data
}

func (tr *tree) read(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tr.root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writePatch generates a patch from originals to edits and saves it in the
// series directory.
func (tr *tree) writePatch(t *testing.T, name string, base map[string][]byte, edits map[string][]byte, env ...EnvKnob) string {
	t.Helper()
	var cs []FileChange
	for _, rel := range sortedKeys(edits) {
		cs = append(cs, FileChange{Path: rel, Original: base[rel], Edited: edits[rel]})
	}
	text, err := New(Header{Description: "test patch " + name, Env: env}, cs)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(tr.patches, name)
	if err := os.WriteFile(p, text, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func sortedKeys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

func (tr *tree) standardSeries(t *testing.T) {
	t.Helper()
	dec := tr.orig["fakepkg/decoder.py"]
	dec1 := editInsert(dec, 12, "import os\n_BRINGUP_KNOB = os.environ.get(\"BRINGUP_KNOB\", \"1\") == \"1\"\n")
	enc := tr.orig["fakepkg/encoder.py"]
	enc1 := editDelete(editReplace(t, enc, "INFINITY = float('inf')", "INFINITY = float('inf')  # patched"), 30, 33)
	tr.edited["fakepkg/decoder.py"] = dec1
	tr.edited["fakepkg/encoder.py"] = enc1
	// 01 touches two files; 02 changes decoder.py again on top of 01.
	tr.writePatch(t, "01-two-files.patch", tr.orig, map[string][]byte{"fakepkg/decoder.py": dec1, "fakepkg/encoder.py": enc1},
		EnvKnob{Name: "BRINGUP_KNOB", Value: "1", Note: "0 disables the patched path"})
	dec2 := editReplace(t, dec1, "class JSONDecoder(object):", "class JSONDecoder(object):  # second patch")
	tr.edited["fakepkg/decoder.py"] = dec2
	tr.writePatch(t, "02-on-top.patch", map[string][]byte{"fakepkg/decoder.py": dec1}, map[string][]byte{"fakepkg/decoder.py": dec2})
	tw := tr.orig["fakepkg/textwrap.py"]
	tw1 := editReplace(t, tw, "                 width=70,", "                 width=99,")
	tr.edited["fakepkg/textwrap.py"] = tw1
	tr.writePatch(t, "03-textwrap.patch", tr.orig, map[string][]byte{"fakepkg/textwrap.py": tw1})
	os.WriteFile(filepath.Join(tr.patches, "series"), []byte("# order matters\n01-two-files.patch\n02-on-top.patch -p1\n03-textwrap.patch\n"), 0o644)
}

func mustSeries(t *testing.T, dir string) *Series {
	t.Helper()
	s, err := LoadSeries(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Invalid) > 0 {
		t.Fatalf("invalid: %v", s.Invalid[0])
	}
	return s
}

func states(r *Report) string {
	var b strings.Builder
	for _, p := range r.Patches {
		fmt.Fprintf(&b, "%s=%s[", p.Name, p.State)
		for _, t := range p.Targets {
			fmt.Fprintf(&b, "%s:%s ", filepath.Base(t.Path), t.State)
		}
		b.WriteString("] ")
	}
	return strings.TrimSpace(b.String())
}

func TestRoundTripSeries(t *testing.T) {
	tr := newTree(t)
	tr.standardSeries(t)
	s := mustSeries(t, tr.patches)
	if len(s.Patches) != 3 || s.Patches[1].Name != "02-on-top.patch" {
		t.Fatalf("series order: %v", s.Patches)
	}
	r, err := Status(tr.root, s)
	if err != nil {
		t.Fatal(err)
	}
	want := "01-two-files.patch=not-applied[decoder.py:base encoder.py:base ] 02-on-top.patch=not-applied[decoder.py:base ] 03-textwrap.patch=not-applied[textwrap.py:base ]"
	if got := states(r); got != want || !r.Consistent() || r.AllApplied() {
		t.Fatalf("before apply:\n got %s\nwant %s", got, want)
	}
	out, err := Apply(tr.root, s, Options{})
	if err != nil || len(out.Refused) > 0 {
		t.Fatalf("apply: %v %v", err, out.Refused)
	}
	for rel, want := range tr.edited {
		if got := tr.read(t, rel); !bytes.Equal(got, want) {
			t.Fatalf("%s after apply differs from the edit", rel)
		}
	}
	if got := states(out.Report); !strings.Contains(got, "01-two-files.patch=applied") || !out.AllApplied() || !out.Consistent() {
		t.Fatalf("after apply: %s", got)
	}
	if out.Patches[0].Action != "applied" || out.Patches[0].Targets[0].Action != "applied" {
		t.Fatalf("actions: %+v", out.Patches[0])
	}
	if env := out.ActiveEnv(); len(env) == 0 || env[0].Name != "BRINGUP_KNOB" {
		t.Fatalf("active env: %+v", env)
	}
	// Applying again changes nothing and says so.
	again, err := Apply(tr.root, mustSeries(t, tr.patches), Options{})
	if err != nil || len(again.Changed) != 0 || again.Patches[0].Action != "skipped: already applied" {
		t.Fatalf("re-apply: %v %+v", err, again.Report)
	}
	// Revert: every file back byte for byte.
	rv, err := Revert(tr.root, mustSeries(t, tr.patches), Options{})
	if err != nil || len(rv.Refused) > 0 {
		t.Fatalf("revert: %v %v", err, rv.Refused)
	}
	for rel, want := range tr.orig {
		if got := tr.read(t, rel); !bytes.Equal(got, want) {
			t.Fatalf("%s after revert differs from the original", rel)
		}
	}
	r, _ = Status(tr.root, mustSeries(t, tr.patches))
	if got := states(r); got != strings.ReplaceAll(want, "not-applied", "not-applied") {
		t.Fatalf("after revert: %s", got)
	}
	if _, err := os.Stat(filepath.Join(tr.root, journalName)); !os.IsNotExist(err) {
		t.Fatalf("journal left behind: %v", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(tr.root, "fakepkg", ".*.tmp"))
	if len(leftovers) > 0 {
		t.Fatalf("temp files left: %v", leftovers)
	}
}

func TestPartialSeriesStatus(t *testing.T) {
	tr := newTree(t)
	tr.standardSeries(t)
	s := mustSeries(t, tr.patches)
	// Apply only 01: 02 (same file, on top) must read as not applied, not drifted.
	if _, err := Apply(tr.root, &Series{Patches: s.Patches[:1]}, Options{}); err != nil {
		t.Fatal(err)
	}
	r, _ := Status(tr.root, s)
	want := "01-two-files.patch=applied[decoder.py:patched encoder.py:patched ] 02-on-top.patch=not-applied[decoder.py:base ] 03-textwrap.patch=not-applied[textwrap.py:base ]"
	if got := states(r); got != want || !r.Consistent() {
		t.Fatalf("got %s\nwant %s\nproblems %v", got, want, r.Problems())
	}
	// Reverting 01 alone while 02 is on top must be refused.
	if _, err := Apply(tr.root, s, Options{}); err != nil {
		t.Fatal(err)
	}
	// (Alone, 01 does not know 02: the file reads as drifted for it.)
	out, err := Revert(tr.root, &Series{Patches: s.Patches[:1]}, Options{})
	if err != nil || len(out.Refused) == 0 || len(out.Changed) != 0 {
		t.Fatalf("revert under a later patch: %v %v", err, out.Refused)
	}
	if !bytes.Equal(tr.read(t, "fakepkg/decoder.py"), tr.edited["fakepkg/decoder.py"]) {
		t.Fatal("refused revert changed the file")
	}
}

func TestDriftedTargetRefused(t *testing.T) {
	tr := newTree(t)
	tr.standardSeries(t)
	// Upstream changed encoder.py: append a line. Nothing may be written,
	// not even decoder.py, which is still at its base.
	enc := append(append([]byte(nil), tr.orig["fakepkg/encoder.py"]...), "# upstream change\n"...)
	os.WriteFile(filepath.Join(tr.root, "fakepkg/encoder.py"), enc, 0o644)
	out, err := Apply(tr.root, mustSeries(t, tr.patches), Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg := strings.Join(out.Refused, "\n")
	if !strings.Contains(msg, "01-two-files.patch: fakepkg/encoder.py: drifted") || !strings.Contains(msg, "rebasable") {
		t.Fatalf("refusal: %q", msg)
	}
	if !bytes.Equal(tr.read(t, "fakepkg/decoder.py"), tr.orig["fakepkg/decoder.py"]) || len(out.Changed) != 0 {
		t.Fatal("a file was written although the series was refused")
	}
	if out.Consistent() || out.OK {
		t.Fatal("drift must make the report inconsistent")
	}
	// --force applies (every hunk still matches exactly) and warns loudly.
	out, err = Apply(tr.root, mustSeries(t, tr.patches), Options{Force: true})
	if err != nil || len(out.Refused) > 0 || len(out.Forced) != 1 || !strings.Contains(out.Forced[0], "NOT the pinned") {
		t.Fatalf("force: %v %v %v", err, out.Refused, out.Forced)
	}
}

// newerUpstream pins 03-textwrap.patch to fakepkg==1.0 and makes the
// image ship a newer textwrap.py, with an empty fakepkg-2.0.1.dist-info
// for the caller's RECORD; it returns the new file and that folder.
func (tr *tree) newerUpstream() (newer []byte, distInfo string) {
	pf := filepath.Join(tr.patches, "03-textwrap.patch")
	pb, _ := os.ReadFile(pf)
	os.WriteFile(pf, bytes.Replace(pb, []byte("# Status: active\n"), []byte("# Status: active\n# Package: fakepkg==1.0\n"), 1), 0o644)
	newer = append([]byte("# 2.0\n"), tr.orig["fakepkg/textwrap.py"]...)
	os.WriteFile(filepath.Join(tr.root, "fakepkg/textwrap.py"), newer, 0o644)
	distInfo = filepath.Join(tr.root, "fakepkg-2.0.1.dist-info")
	os.MkdirAll(distInfo, 0o755)
	return newer, distInfo
}

func TestRecordNamesUpstreamVersion(t *testing.T) {
	tr := newTree(t)
	tr.standardSeries(t)
	// The image ships a newer textwrap.py: RECORD lists its hash.
	newer, di := tr.newerUpstream()
	rec := fmt.Sprintf("fakepkg/textwrap.py,sha256=%s,%d\nfakepkg/__pycache__/textwrap.cpython-311.pyc,,\n", b64(sha(newer)), len(newer))
	os.WriteFile(filepath.Join(di, "RECORD"), []byte(rec), 0o644)
	r, _ := SeriesStatus(tr.root, tr.patches)
	tg := r.Patches[2].Targets[0]
	if tg.State != StateDrifted || tg.Upstream == nil || tg.Upstream.Dist != "fakepkg" || tg.Upstream.Version != "2.0.1" || !tg.Upstream.MatchesActual {
		t.Fatalf("target: %+v", tg)
	}
	if !strings.Contains(tg.Detail, "as fakepkg 2.0.1 ships it") || !strings.Contains(tg.Detail, "rebasable") ||
		!strings.HasPrefix(tg.Detail, "the patch was written for fakepkg==1.0, the root has fakepkg 2.0.1") {
		t.Fatalf("detail: %s", tg.Detail)
	}
}

// A damaged RECORD (a slice of pip's real one with rows broken) is used
// for what parses, and every lookup that depends on it says which RECORD
// and which lines; nothing of it is silently half-used.
func TestDamagedRecordIsNamedWithLines(t *testing.T) {
	real, err := os.ReadFile(filepath.Join("testdata", "pip-23.0.1.RECORD"))
	if err != nil {
		t.Fatal(err)
	}
	rows, bad := ParseRecord(real)
	if len(bad) != 0 || rows["pip/__init__.py"] != "e72ae879dcdcd9d28a6dcca70eb1d7f2f0682f1a94dbb2a616fbc799da9037dc" {
		t.Fatalf("real RECORD: bad lines %v, pip/__init__.py %q", bad, rows["pip/__init__.py"])
	}
	for _, c := range []struct {
		name, broken, want string
	}{
		// The target's own row is malformed: its shipped hash is unknown.
		{"own row", "fakepkg/textwrap.py,sha256=notbase64!,12\n",
			"fakepkg-2.0.1.dist-info/RECORD: malformed row at line 3 skipped; it names fakepkg/textwrap.py, so what the wheel shipped for that file is unknown"},
		// A quote left open swallows the rows after it, the target's among them.
		{"open quote", "pip/x.py,\"sha256=abc,1\n",
			"fakepkg-2.0.1.dist-info/RECORD: malformed row at line 3 skipped; it names fakepkg/textwrap.py"},
		// Another row is malformed: the target's row is used, the damage named.
		{"other row", "pip/x.py,sha256=AAAA,1\npip/y.py,sha256=x\"y,1\n",
			"fakepkg-2.0.1.dist-info/RECORD: 2 malformed rows at lines 3, 4 skipped; the row of fakepkg/textwrap.py parsed and was used, but this RECORD is damaged"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := newTree(t)
			tr.standardSeries(t)
			newer := append([]byte("# 2.0\n"), tr.orig["fakepkg/textwrap.py"]...)
			os.WriteFile(filepath.Join(tr.root, "fakepkg/textwrap.py"), newer, 0o644)
			di := filepath.Join(tr.root, "fakepkg-2.0.1.dist-info")
			os.MkdirAll(di, 0o755)
			lines := strings.SplitAfter(string(real), "\n")
			own := fmt.Sprintf("fakepkg/textwrap.py,sha256=%s,%d\n", b64(sha(newer)), len(newer))
			if c.name == "own row" {
				own = ""
			}
			rec := lines[0] + lines[1] + c.broken + own + strings.Join(lines[2:], "")
			os.WriteFile(filepath.Join(di, "RECORD"), []byte(rec), 0o644)
			r, err := SeriesStatus(tr.root, tr.patches)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(r.Warnings, "\n"); !strings.Contains(got, c.want) || len(r.Warnings) != 1 {
				t.Errorf("warnings:\n%s\nwant one: %s", got, c.want)
			}
			tg := r.Patches[2].Targets[0]
			if (c.name == "other row") != (tg.Upstream != nil && tg.Upstream.MatchesActual) {
				t.Errorf("upstream %+v", tg.Upstream)
			}
		})
	}
}

// A drifted target's explanation: one statement each (the text report
// prints one per line, report/patchtext).
func TestDriftExplanationStatements(t *testing.T) {
	tr := newTree(t)
	tr.standardSeries(t)
	newer, di := tr.newerUpstream()
	os.WriteFile(filepath.Join(di, "RECORD"), []byte(fmt.Sprintf("fakepkg/textwrap.py,sha256=%s,%d\n", b64(sha(newer)), len(newer))), 0o644)
	r, err := SeriesStatus(tr.root, tr.patches)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, p := range r.Patches {
		for _, tg := range p.Targets {
			if tg.State == StateDrifted {
				parts = append(parts, strings.Split(tg.Detail, "; ")...)
			}
		}
	}
	for _, want := range []string{
		"the patch was written for fakepkg==1.0, the root has fakepkg 2.0.1",
		"the file is as fakepkg 2.0.1 ships it (RECORD), not the base this patch was written against: the image changed",
		"try 'bringup patch rebase'",
		"rebasable: every hunk matches exactly at offsets [1]",
	} {
		if !slices.Contains(parts, want) {
			t.Errorf("explanation lacks the statement %q: %q", want, parts)
		}
	}
}

func TestCrashMidSeriesRollsForward(t *testing.T) {
	tr := newTree(t)
	tr.standardSeries(t)
	crashHook = func(i int) error {
		if i == 0 {
			return errors.New("simulated crash")
		}
		return nil
	}
	_, err := Apply(tr.root, mustSeries(t, tr.patches), Options{})
	crashHook = nil
	if err == nil || !strings.Contains(err.Error(), "simulated crash") {
		t.Fatalf("want the simulated crash, got %v", err)
	}
	// Mid-series: one file renamed, the others staged. Status says so.
	r, _ := Status(tr.root, mustSeries(t, tr.patches))
	if r.Consistent() || !strings.Contains(strings.Join(r.Problems(), "\n"), "interrupted apply") {
		t.Fatalf("status after crash: %v", r.Problems())
	}
	assertEachOriginalOrPatched(t, tr)
	// The next call finishes the series.
	out, err := Apply(tr.root, mustSeries(t, tr.patches), Options{})
	if err != nil || !strings.Contains(out.Journal, "completed an interrupted apply") {
		t.Fatalf("recovery: %v %+v", err, out.Report)
	}
	for rel, want := range tr.edited {
		if !bytes.Equal(tr.read(t, rel), want) {
			t.Fatalf("%s not fully patched after recovery", rel)
		}
	}
}

func TestCrashWhileStagingRollsBack(t *testing.T) {
	tr := newTree(t)
	tr.standardSeries(t)
	// A journal in "staging" with one staged copy, as a kill during staging leaves it.
	tmp := tempName("decoder.py")
	os.WriteFile(filepath.Join(tr.root, "fakepkg", tmp), []byte("half"), 0o600)
	j := &journal{Schema: journalSchema, Op: "apply", State: "staging", Entries: []journalEntry{
		{Path: "fakepkg/decoder.py", Temp: tmp, From: sha(tr.orig["fakepkg/decoder.py"]), To: sha(tr.edited["fakepkg/decoder.py"])},
		{Path: "fakepkg/encoder.py", Temp: tempName("encoder.py"), From: sha(tr.orig["fakepkg/encoder.py"]), To: sha(tr.edited["fakepkg/encoder.py"])}}}
	rd, err := beneath.Open(tr.root)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if err := writeJournal(rd, j); err != nil {
		t.Fatal(err)
	}
	msg, err := Recover(tr.root)
	if err != nil || !strings.Contains(msg, "rolled back") {
		t.Fatalf("%q %v", msg, err)
	}
	if _, err := os.Stat(filepath.Join(tr.root, "fakepkg", tmp)); !os.IsNotExist(err) {
		t.Fatal("staged copy not removed")
	}
	assertEachOriginalOrPatched(t, tr)
	if !bytes.Equal(tr.read(t, "fakepkg/decoder.py"), tr.orig["fakepkg/decoder.py"]) {
		t.Fatal("rollback changed a target")
	}
}

// assertEachOriginalOrPatched: every file is the original or the fully
// patched version of one of the stages in the series — never half written.
func assertEachOriginalOrPatched(t *testing.T, tr *tree) {
	t.Helper()
	s := mustSeries(t, tr.patches)
	ok := map[string]bool{}
	for _, p := range s.Patches {
		for _, tg := range p.Targets {
			ok[tg.Path+tg.BaseSHA256], ok[tg.Path+tg.PatchedSHA256] = true, true
		}
	}
	for rel := range tr.edited {
		if h := sha(tr.read(t, rel)); !ok[rel+h] {
			t.Fatalf("%s is half patched (sha256 %s)", rel, h)
		}
	}
}

// TestHelperApplyThenSIGKILL is not a test: the SIGKILL test runs it in a
// child process, which kills itself with SIGKILL after the first rename.
func TestHelperApplyThenSIGKILL(t *testing.T) {
	root, dir := os.Getenv("BRINGUP_PATCH_KILL_ROOT"), os.Getenv("BRINGUP_PATCH_KILL_DIR")
	if root == "" {
		t.Skip("helper process only")
	}
	crashHook = func(i int) error {
		if i == 0 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	}
	s, _ := LoadSeries(dir)
	Apply(root, s, Options{})
	t.Fatal("not killed")
}

func TestSIGKILLMidSeries(t *testing.T) {
	tr := newTree(t)
	tr.standardSeries(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperApplyThenSIGKILL$")
	cmd.Env = append(os.Environ(), "BRINGUP_PATCH_KILL_ROOT="+tr.root, "BRINGUP_PATCH_KILL_DIR="+tr.patches)
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper was not killed by SIGKILL: %v", err)
	}
	assertEachOriginalOrPatched(t, tr)
	patched := 0
	for rel, want := range tr.edited {
		if bytes.Equal(tr.read(t, rel), want) {
			patched++
		}
	}
	if patched == 0 || patched == len(tr.edited) {
		t.Fatalf("the kill should land mid-series: %d of %d files patched", patched, len(tr.edited))
	}
	out, err := Apply(tr.root, mustSeries(t, tr.patches), Options{})
	if err != nil || out.Journal == "" {
		t.Fatalf("recovery: %v %+v", err, out.Report)
	}
	for rel, want := range tr.edited {
		if !bytes.Equal(tr.read(t, rel), want) {
			t.Fatalf("%s not patched after recovery", rel)
		}
	}
}

func TestStaleBytecodeRemovedAndNewCodeRuns(t *testing.T) {
	tr := newTree(t)
	tr.standardSeries(t)
	py, _ := exec.LookPath("python3")
	// Precompile with unchecked-hash pycs, the kind that is never revalidated.
	c := exec.Command(py, "-m", "compileall", "-q", "--invalidation-mode", "unchecked-hash", filepath.Join(tr.root, "fakepkg"))
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("compileall: %v %s", err, out)
	}
	other, _ := filepath.Glob(filepath.Join(tr.root, "fakepkg/__pycache__/__init__.*.pyc"))
	if len(other) == 0 {
		t.Fatal("compileall wrote no pyc")
	}
	width := func() string {
		c := exec.Command(py, "-c", "import fakepkg.textwrap as w; print(w.TextWrapper().width)")
		c.Env = append(os.Environ(), "PYTHONPATH="+tr.root, "PYTHONDONTWRITEBYTECODE=1")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("python: %v %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if w := width(); w != "70" {
		t.Fatalf("before: width %s", w)
	}
	if _, err := Apply(tr.root, mustSeries(t, tr.patches), Options{}); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(tr.root, "fakepkg/__pycache__/textwrap.*.pyc")); len(left) != 0 {
		t.Fatalf("stale bytecode left: %v", left)
	}
	if _, err := os.Stat(other[0]); err != nil {
		t.Fatalf("unrelated bytecode removed: %v", err)
	}
	if w := width(); w != "99" {
		t.Fatalf("after apply python still runs the old code: width %s", w)
	}
}

func TestModePreservedAndReadOnlyOrSymlinkRefused(t *testing.T) {
	tr := newTree(t)
	tr.standardSeries(t)
	tw := filepath.Join(tr.root, "fakepkg/textwrap.py")
	os.Chmod(tw, 0o750)
	s := mustSeries(t, tr.patches)
	three := &Series{Patches: s.Patches[2:]}
	if _, err := Apply(tr.root, three, Options{}); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(tw); st.Mode().Perm() != 0o750 {
		t.Fatalf("mode %v, want 0750", st.Mode().Perm())
	}
	Revert(tr.root, three, Options{})
	os.Chmod(tw, 0o444)
	out, _ := Apply(tr.root, three, Options{})
	if len(out.Refused) == 0 || !strings.Contains(out.Refused[0], "read-only (mode 0444)") {
		t.Fatalf("read-only: %+v", out.Refused)
	}
	os.Chmod(tw, 0o644)
	// A symlinked target: the status reads through it, apply refuses.
	real := filepath.Join(t.TempDir(), "textwrap.py")
	os.WriteFile(real, tr.orig["fakepkg/textwrap.py"], 0o644)
	os.Remove(tw)
	os.Symlink(real, tw)
	out, _ = Apply(tr.root, three, Options{})
	if len(out.Refused) == 0 || !strings.Contains(out.Refused[0], "symlink") {
		t.Fatalf("symlink: %+v", out.Refused)
	}
	if b, _ := os.ReadFile(real); !bytes.Equal(b, tr.orig["fakepkg/textwrap.py"]) {
		t.Fatal("symlink destination changed")
	}
}

func TestCRLF(t *testing.T) {
	tr := newTree(t)
	crlf := bytes.ReplaceAll(tr.orig["fakepkg/textwrap.py"], []byte("\n"), []byte("\r\n"))
	tr.put(t, "fakepkg/crlf.py", crlf)
	edited := editReplace(t, crlf, "                 width=70,\r\n", "                 width=71,\r\n")
	tr.writePatch(t, "crlf.patch", tr.orig, map[string][]byte{"fakepkg/crlf.py": edited})
	out, err := Apply(tr.root, mustSeries(t, tr.patches), Options{})
	if err != nil || len(out.Refused) > 0 || !bytes.Equal(tr.read(t, "fakepkg/crlf.py"), edited) {
		t.Fatalf("CRLF round trip: %v %v", err, out.Refused)
	}
	// An LF patch on a CRLF file: drifted, and the reason names line endings.
	lf := tr.orig["fakepkg/textwrap.py"]
	tr.put(t, "fakepkg/textwrap.py", bytes.ReplaceAll(lf, []byte("\n"), []byte("\r\n")))
	tr.writePatch(t, "lf.patch", map[string][]byte{"fakepkg/textwrap.py": lf}, map[string][]byte{"fakepkg/textwrap.py": editReplace(t, lf, "                 width=70,", "                 width=72,")})
	r, _ := Status(tr.root, mustSeries(t, tr.patches))
	tg := r.Patches[1].Targets[0]
	if tg.State != StateDrifted || !strings.Contains(tg.Detail, "line endings differ: the file has CRLF, the patch LF") {
		t.Fatalf("%+v", tg)
	}
}

func TestHeaderWithoutHashes(t *testing.T) {
	tr := newTree(t)
	tw := tr.orig["fakepkg/textwrap.py"]
	d := udiff.Diff("fakepkg/textwrap.py", tw, editReplace(t, tw, "                 width=70,", "                 width=80,"))
	os.WriteFile(filepath.Join(tr.patches, "nohash.patch"), []byte("# Description: no pins\n#\n"+udiff.Format(d)), 0o644)
	s := mustSeries(t, tr.patches)
	if w := s.Patches[0].Warnings; len(w) != 1 || !strings.Contains(w[0].Reason, "no Base-SHA256") {
		t.Fatalf("warnings: %v", w)
	}
	out, _ := Apply(tr.root, s, Options{})
	if len(out.Refused) == 0 || !strings.Contains(out.Refused[0], "--no-verify") {
		t.Fatalf("refusal: %v", out.Refused)
	}
	out, err := Apply(tr.root, s, Options{NoVerify: true})
	if err != nil || len(out.Changed) != 1 {
		t.Fatalf("--no-verify: %v %v", err, out.Refused)
	}
	r, _ := Status(tr.root, s)
	if tg := r.Patches[0].Targets[0]; tg.State != StatePatched || tg.Verified {
		t.Fatalf("%+v", tg)
	}
	// refresh pins it, keeping the header text.
	text, _, err := Refresh(tr.root, s.Patches[0])
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse("refreshed", text)
	if err != nil || !p.Targets[0].Pinned() || len(p.Warnings) != 0 || !strings.HasPrefix(string(text), "# Description: no pins\n") {
		t.Fatalf("refresh: %v %+v\n%s", err, p, text)
	}
	if p.Targets[0].PatchedSHA256 != sha(tr.read(t, "fakepkg/textwrap.py")) || p.Targets[0].BaseSHA256 != sha(tw) {
		t.Fatal("refresh computed the wrong hashes")
	}
}

func TestRefreshFreeFormHeader(t *testing.T) {
	tr := newTree(t)
	tw := tr.orig["fakepkg/textwrap.py"]
	d := udiff.Diff("fakepkg/textwrap.py", tw, editReplace(t, tw, "                 width=70,", "                 width=80,"))
	hdr := "# my patch\n# TARGET: fakepkg/textwrap.py   (inside the image)\n#   base    sha256 " + strings.Repeat("a", 64) + "\n#   patched sha256 " + strings.Repeat("b", 64) + "\n# STATUS: WIP\n"
	p, err := Parse("free.patch", []byte(hdr+udiff.Format(d)))
	if err != nil {
		t.Fatal(err)
	}
	text, _, err := Refresh(tr.root, p)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(strings.Replace(hdr, strings.Repeat("a", 64), sha(tw), 1), strings.Repeat("b", 64), sha(editReplace(t, tw, "                 width=70,", "                 width=80,")), 1)
	if !strings.HasPrefix(string(text), want) {
		t.Fatalf("got\n%s", text)
	}
}

func TestRootMissingAndBadPatch(t *testing.T) {
	tr := newTree(t)
	tr.standardSeries(t)
	if _, err := SeriesStatus(filepath.Join(tr.root, "nope"), tr.patches); err == nil || !strings.Contains(err.Error(), "--root") {
		t.Fatalf("missing root: %v", err)
	}
	os.WriteFile(filepath.Join(tr.patches, "04-bad.patch"), []byte("# Target: fakepkg/x.py\n--- a/fakepkg/x.py\n+++ b/fakepkg/x.py\n@@ -1,3 +1,3 @@\n a\n-b\n"), 0o644)
	os.WriteFile(filepath.Join(tr.patches, "series"), []byte("01-two-files.patch\n02-on-top.patch\n03-textwrap.patch\n04-bad.patch\n"), 0o644)
	r, err := SeriesStatus(tr.root, tr.patches)
	if err != nil {
		t.Fatal(err)
	}
	last := r.Patches[len(r.Patches)-1]
	if last.State != "invalid" || !strings.Contains(last.Error, "04-bad.patch:6: hunk @@ -1,3 +1,3 @@ is cut short") || r.Consistent() {
		t.Fatalf("%+v", last)
	}
	if r.Patches[0].State != "not-applied" {
		t.Fatal("the rest of the series must still be read")
	}
	out, _ := Apply(tr.root, mustSeriesAllowInvalid(t, tr.patches), Options{})
	if len(out.Refused) == 0 || len(out.Changed) > 0 {
		t.Fatal("a series with an unreadable patch must not be applied")
	}
}

func mustSeriesAllowInvalid(t *testing.T, dir string) *Series {
	s, err := LoadSeries(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOverlay(t *testing.T) {
	tr := newTree(t)
	tr.standardSeries(t)
	py, _ := exec.LookPath("python3")
	if b, err := exec.Command(py, "-m", "compileall", "-q", "--invalidation-mode", "unchecked-hash", filepath.Join(tr.root, "fakepkg", "textwrap.py")).CombinedOutput(); err != nil {
		t.Fatalf("compileall: %v %s", err, b)
	}
	out := filepath.Join(t.TempDir(), "overlay")
	res, err := Overlay(tr.root, mustSeries(t, tr.patches), out, "/usr/lib/python3/site-packages")
	if err != nil || len(res.Refused) > 0 {
		t.Fatalf("%v %+v", err, res)
	}
	for rel, want := range tr.orig {
		if !bytes.Equal(tr.read(t, rel), want) {
			t.Fatalf("overlay touched the image: %s", rel)
		}
	}
	if len(res.Files) != 3 || len(res.Docker) != 3 || !strings.HasSuffix(res.Docker[0], ":/usr/lib/python3/site-packages/fakepkg/decoder.py:ro") {
		t.Fatalf("%+v", res)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "fakepkg/textwrap.py has unchecked-hash bytecode") {
		t.Fatalf("notes: %v", res.Notes)
	}
	for _, f := range res.Files {
		b, _ := os.ReadFile(f.Host)
		if !bytes.Equal(b, tr.edited[f.Path]) {
			t.Fatalf("overlay file %s is not the patched version", f.Path)
		}
	}
	// The PYTHONPATH mirror really shadows the package.
	c := exec.Command(py, "-c", "import fakepkg.textwrap as w, fakepkg.decoder; print(w.TextWrapper().width, fakepkg.decoder._BRINGUP_KNOB)")
	c.Env = append(os.Environ(), "PYTHONPATH="+res.PythonPath+":"+tr.root, "PYTHONDONTWRITEBYTECODE=1")
	got, err := c.CombinedOutput()
	if err != nil || strings.TrimSpace(string(got)) != "99 True" {
		t.Fatalf("python through the overlay: %v %s", err, got)
	}
}

func TestRebase(t *testing.T) {
	tr := newTree(t)
	tr.standardSeries(t)
	// The new image: textwrap.py gained 3 lines at the top, decoder.py
	// unchanged, encoder.py conflicts (a deleted line changed upstream).
	newRoot := filepath.Join(t.TempDir(), "new")
	for rel, b := range tr.orig {
		switch rel {
		case "fakepkg/textwrap.py":
			b = append([]byte("# one\n# two\n# three\n"), b...)
		case "fakepkg/encoder.py":
			l := lines(b)
			l[30] = "# upstream rewrote this line\n"
			b = []byte(strings.Join(l, ""))
		}
		os.MkdirAll(filepath.Dir(filepath.Join(newRoot, rel)), 0o755)
		os.WriteFile(filepath.Join(newRoot, rel), b, 0o644)
	}
	out := filepath.Join(t.TempDir(), "candidates")
	res, err := Rebase(newRoot, mustSeries(t, tr.patches), out)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]RebasePatch{}
	for _, p := range res.Patches {
		byName[filepath.Base(p.Path)] = p
	}
	if p := byName["03-textwrap.patch"]; p.Candidate == "" || p.Targets[0].Result != "rebased" || p.Targets[0].Offsets[0] != 3 {
		t.Fatalf("textwrap: %+v", p)
	}
	if p := byName["01-two-files.patch"]; p.Candidate != "" || p.Targets[1].Result != "conflict" || !strings.Contains(p.Targets[1].Detail, "hunk") {
		t.Fatalf("encoder: %+v", p)
	}
	if res.OK {
		t.Fatal("a conflict must make the rebase not OK")
	}
	// The candidate applies with its new pins to the new tree.
	cand, err := Load([]string{byName["03-textwrap.patch"].Candidate})
	if err != nil {
		t.Fatal(err)
	}
	ap, err := Apply(newRoot, cand, Options{})
	if err != nil || len(ap.Changed) != 1 {
		t.Fatalf("candidate apply: %v %v", err, ap.Refused)
	}
	if b, _ := os.ReadFile(filepath.Join(newRoot, "fakepkg/textwrap.py")); !bytes.Equal(b, append([]byte("# one\n# two\n# three\n"), tr.edited["fakepkg/textwrap.py"]...)) {
		t.Fatal("rebased result is not the patched new file")
	}
}

func b64(hexsum string) string {
	var raw []byte
	fmt.Sscanf(hexsum, "%x", &raw)
	return strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(base64Std(raw)), "=")
}

func TestConcurrentCommandRefused(t *testing.T) {
	tr := newTree(t)
	tr.standardSeries(t)
	unlock, err := lockRoot(tr.root)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(tr.root, mustSeries(t, tr.patches), Options{})
	unlock()
	if err == nil || !strings.Contains(err.Error(), "another bringup patch command") {
		t.Fatalf("got %v", err)
	}
	if out, err := Apply(tr.root, mustSeries(t, tr.patches), Options{}); err != nil || len(out.Changed) != 3 {
		t.Fatalf("after unlock: %v", err)
	}
}

func TestDescriptionContinuation(t *testing.T) {
	text := "# Description: short summary\n#  second line\n#  third line\n# Status: disabled\n#\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
	p, err := Parse("d.patch", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if p.Description != "short summary\nsecond line\nthird line" || p.Active() || p.Fields[0].Value != p.Description {
		t.Fatalf("%q active=%v %+v", p.Description, p.Active(), p.Fields)
	}
}

// TestBrokenHunkNamed: the base hash matches but a hunk's context does not
// (a hand-edited diff): status flags it, apply refuses naming the hunk,
// the patch line, the file line and both texts.
func TestBrokenHunkNamed(t *testing.T) {
	root := copyTree(t)
	text, _ := os.ReadFile(filepath.Join("testdata", "no-newline.patch"))
	bad := strings.Replace(string(text), " x = 1\n", " x = 100\n", 1)
	pf := filepath.Join(t.TempDir(), "bad.patch")
	os.WriteFile(pf, []byte(bad), 0o644)
	s, err := Load([]string{pf})
	if err != nil || len(s.Invalid) > 0 {
		t.Fatal(err, s.Invalid)
	}
	r, _ := Status(root, s)
	if r.Consistent() || !strings.Contains(r.Patches[0].Targets[0].Detail, "broken patch") {
		t.Fatalf("status: %+v", r.Patches[0].Targets[0])
	}
	out, err := Apply(root, s, Options{})
	if err != nil || len(out.Refused) != 1 {
		t.Fatalf("%v %v", err, out.Refused)
	}
	want := `bad.patch: pkg/b.py: hunk 1 (patch line 13) does not apply at line 1: expected "x = 100", found "x = 1"`
	if out.Refused[0] != want {
		t.Fatalf("got  %s\nwant %s", out.Refused[0], want)
	}
}

func TestInactivePatchSkipped(t *testing.T) {
	tr := newTree(t)
	tr.standardSeries(t)
	pf := filepath.Join(tr.patches, "03-textwrap.patch")
	b, _ := os.ReadFile(pf)
	os.WriteFile(pf, bytes.Replace(b, []byte("# Status: active"), []byte("# Status: disabled"), 1), 0o644)
	// And its target vanishes: an inactive patch's missing file is no problem.
	os.Remove(filepath.Join(tr.root, "fakepkg/textwrap.py"))
	out, err := Apply(tr.root, mustSeries(t, tr.patches), Options{})
	if err != nil || len(out.Refused) > 0 || len(out.Changed) != 2 {
		t.Fatalf("%v %v %v", err, out.Refused, out.Changed)
	}
	if p := out.Patches[2]; p.Active || p.Action != "skipped: status disabled" || !out.AllApplied() || !out.Consistent() {
		t.Fatalf("%+v problems %v", p, out.Problems())
	}
	if rv, err := Revert(tr.root, mustSeries(t, tr.patches), Options{}); err != nil || len(rv.Refused) > 0 || len(rv.Changed) != 2 {
		t.Fatalf("revert: %v %v", err, rv.Refused)
	}
}
