package cli

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// Inputs that hang or lie, and outputs that write where they should not
// (issue 11, items 5 and 6), as a user meets them: through the commands.

// hangGuard is how long a command may take here before it is called
// blocked. It is no speed bound: each of these ends in milliseconds, and
// without the fixes they never end at all.
const hangGuard = 2 * time.Minute

// runEnds runs bringup and fails the test when it has not ended within
// hangGuard (a FIFO open, a read of /dev/zero); unblock, when set, is
// called then to let the stuck command go.
func runEnds(t *testing.T, unblock func(), args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code      int
		out, errs string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := runCLI(args...)
		done <- result{code, out, errs}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.errs
	case <-time.After(hangGuard):
		if unblock != nil {
			unblock()
		}
		t.Fatalf("bringup %s did not end within %s: it is blocked on its input", strings.Join(args, " "), hangGuard)
		return 0, "", ""
	}
}

// fifo makes a named pipe and returns its path and a function that opens
// and closes its write end, which lets a reader blocked on it go on.
func fifo(t *testing.T, dir, name string) (string, func()) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return p, func() {
		if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
}

// withStdin makes f the process's standard input for the test.
func withStdin(t *testing.T, f *os.File) {
	t.Helper()
	old := os.Stdin
	os.Stdin = f
	t.Cleanup(func() { os.Stdin = old })
}

// oneLineReason checks that stderr names path and says why.
func oneLineReason(t *testing.T, what, errs, path, why string) {
	t.Helper()
	if !strings.Contains(errs, path) || !strings.Contains(errs, why) {
		t.Errorf("%s: stderr does not say %q about %s:\n%s", what, why, path, errs)
	}
}

// `bringup stacks DIR` blocked forever on a FIFO inside DIR: it is
// passed over, and the dump beside it is read.
func TestStacksDirWithFIFO(t *testing.T) {
	dump := testcorpus.File(t, "stackdumps", "accelerate-issue-3104-deepspeed-pyspy.txt")
	dir := t.TempDir()
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a_dump.txt"), b, 0o644)
	_, unblock := fifo(t, dir, "b_fifo")
	code, out, errs := runEnds(t, unblock, "stacks", dir)
	if code == ExitUsage || !strings.HasPrefix(out, "verdict:") || strings.Contains(errs, "b_fifo") {
		t.Errorf("exit %d, stderr %q, out:\n%s", code, errs, out)
	}
}

// A FIFO or a character device named on the command line is refused with
// one line, by every command, instead of blocking or reading forever.
func TestNamedFIFOAndDevicesRefused(t *testing.T) {
	dir := t.TempDir()
	p, unblock := fifo(t, dir, "pipe")
	for _, c := range []struct {
		args []string
		path string
		why  string
	}{
		{[]string{"trace", p}, p, "named pipe (FIFO), not a regular file"},
		{[]string{"stacks", p}, p, "named pipe (FIFO), not a regular file"},
		{[]string{"diagnose", p}, p, "named pipe (FIFO), not a regular file"},
		{[]string{"trace", "/dev/zero"}, "/dev/zero", "character device, not a regular file"},
		{[]string{"stacks", "/dev/zero"}, "/dev/zero", "character device, not a regular file"},
		{[]string{"trace", "/dev/null"}, "/dev/null", "character device, not a regular file"},
	} {
		code, out, errs := runEnds(t, unblock, c.args...)
		if code != ExitUsage || out != "" {
			t.Errorf("%v: exit %d (want 2), stdout %q", c.args, code, out)
		}
		oneLineReason(t, strings.Join(c.args, " "), errs, c.path, c.why)
	}
}

// `stacks - </dev/zero` read forever: stdin is sniffed (binary) and
// capped.
func TestStacksStdinDevZero(t *testing.T) {
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip(err)
	}
	defer zero.Close()
	withStdin(t, zero)
	code, out, errs := runEnds(t, nil, "stacks", "-")
	if code != ExitUsage || out != "" {
		t.Errorf("exit %d (want 2), stdout %q", code, out)
	}
	oneLineReason(t, "stacks - </dev/zero", errs, "-", "binary data, not a stack dump")
}

// Standard input past the cap is not read on, and the cut is said.
func TestStacksStdinCapSaid(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 256 MiB through a pipe")
	}
	dump := testcorpus.File(t, "stackdumps", "accelerate-issue-3104-deepspeed-pyspy.txt")
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		// The dump, then log lines without end: only the cap stops it.
		w.Write(b)
		line := bytes.Repeat([]byte("INFO 05-05 12:00:01 [engine.py:1] an ordinary log line, nothing to see here\n"), 1<<10)
		for {
			if _, err := w.Write(line); err != nil {
				w.Close()
				return
			}
		}
	}()
	withStdin(t, r)
	code, out, errs := runEnds(t, nil, "stacks", "-")
	if code == ExitUsage || !strings.HasPrefix(out, "verdict:") {
		t.Errorf("exit %d, stderr %q, out:\n%s", code, errs, out)
	}
	oneLineReason(t, "endless stdin", errs, "standard input", "only the first 256 MiB were read")
}

// utf16LE is s in UTF-16 little endian, without a byte-order mark (as a
// Windows tool may save a log).
func utf16LE(s string) []byte {
	var b bytes.Buffer
	for _, u := range utf16.Encode([]rune(s)) {
		binary.Write(&b, binary.LittleEndian, u)
	}
	return b.Bytes()
}

// `trace` printed "OK: 0 compile(s)" and exited 0 on inputs that hold no
// trace at all; it exits 2 and says why, for each.
func TestTraceNoTraceExits2(t *testing.T) {
	dir := t.TempDir()
	simple, err := os.ReadFile(testcorpus.File(t, "tlparse-inputs", "simple.log"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	random := make([]byte, 1<<16)
	rand.New(rand.NewSource(11)).Read(random)
	cases := []struct{ path, why string }{
		{write("empty.log", nil), "empty file"},
		{testcorpus.File(t, "engine-logs", "vllm-issue-15598.log"), "none of them a TORCH_TRACE record"},
		{write("utf16.log", utf16LE(string(simple))), "UTF-16 text"},
		{write("bom16.log", append([]byte{0xff, 0xfe}, utf16LE(string(simple))...)), "UTF-16 text"},
		{write("random.bin", random), "binary data"},
		// Unreadable: reading /proc/self/mem from offset 0 fails (EIO),
		// for root too.
		{"/proc/self/mem", "input/output error"},
	}
	if os.Geteuid() != 0 {
		p := write("noperm.log", simple)
		os.Chmod(p, 0)
		cases = append(cases, struct{ path, why string }{p, "permission denied"})
	}
	for _, c := range cases {
		code, out, errs := runEnds(t, nil, "trace", c.path)
		if code != ExitUsage || out != "" {
			t.Errorf("trace %s: exit %d (want 2), stdout:\n%s", c.path, code, out)
		}
		oneLineReason(t, "trace "+c.path, errs, c.path, c.why)
		if !strings.Contains(errs, "no TORCH_TRACE record read") {
			t.Errorf("trace %s: stderr lacks the verdict line:\n%s", c.path, errs)
		}
	}
	// One good input among bad ones is a run: the bad one is a note.
	code, out, _ := runCLI("trace", testcorpus.File(t, "tlparse-inputs", "simple.log"), filepath.Join(dir, "empty.log"))
	if code != ExitOK || !strings.Contains(out, "empty.log (empty.log): empty file") {
		t.Errorf("good + empty: exit %d, out:\n%s", code, out)
	}
}

// `trace x.log.gz` read the compressed bytes as text ("OK: 0 compiles");
// it reads it decompressed, as diagnose does: the same summary as the
// plain file, payloads fetched from it for the HTML report, and a gzipped
// rank file found in a directory.
func TestTraceReadsGzip(t *testing.T) {
	src := testcorpus.File(t, "tlparse-inputs", "comp_failure.log")
	dir := t.TempDir()
	gz := filepath.Join(dir, "comp_failure.log.gz")
	testcorpus.GzipCopy(t, src, gz)
	plainCode, plain, _ := runCLI("trace", src)
	code, out, errs := runCLI("trace", gz)
	if code != plainCode || code != ExitFindings {
		t.Fatalf("exit %d (plain %d), stderr %q", code, plainCode, errs)
	}
	if strings.ReplaceAll(strings.ReplaceAll(out, gz, src), "comp_failure.log.gz", "comp_failure.log") != plain {
		t.Errorf("gzipped summary differs from the plain one:\n%s\n--- plain:\n%s", out, plain)
	}
	html := filepath.Join(dir, "report")
	if code, _, errs := runCLI("trace", "--html", html, gz); code != ExitFindings {
		t.Fatalf("--html: exit %d, stderr %q", code, errs)
	}
	pages, _ := filepath.Glob(filepath.Join(html, "units", "*", "unit_0_0.html"))
	if len(pages) != 1 {
		t.Fatalf("unit pages %v", pages)
	}
	page, _ := os.ReadFile(pages[0])
	// The dynamo_start stack and the failure's metadata come from the
	// trace through payload references into the decompressed stream.
	if !bytes.Contains(page, []byte("test_graph_break_compilation_metrics_on_failure")) || bytes.Contains(page, []byte("is not a payload line")) || bytes.Contains(page, []byte("not an envelope")) {
		t.Errorf("unit page from the .gz lacks its payloads:\n%.2000s", page)
	}

	ranks := filepath.Join(dir, "ranks")
	os.Mkdir(ranks, 0o755)
	testcorpus.GzipCopy(t, src, filepath.Join(ranks, "dedicated_log_torch_trace_rank_3_abc.log.gz"))
	code, out, errs = runCLI("trace", "--json", ranks)
	if code != ExitFindings || !strings.Contains(out, `"rank":3`) || !strings.Contains(out, `"status":"failed"`) {
		t.Errorf("directory with a gzipped rank file: exit %d, stderr %q, out:\n%.1500s", code, errs, out)
	}
}

// `trace` printed a trace's escape sequences raw (a terminal title set, the
// screen cleared); every text it prints is cleaned, like diagnose's and
// stacks'.
func TestTraceStripsEscapeSequences(t *testing.T) {
	b, err := os.ReadFile(testcorpus.File(t, "tlparse-inputs", "comp_failure.log"))
	if err != nil {
		t.Fatal(err)
	}
	// JSON escapes in the compile's failure reason decode to ESC and BEL.
	evil := bytes.Replace(b, []byte("RuntimeError: broken backend"), []byte(`RuntimeError: broken\u001b]0;PWNED\u0007\u001b[2J backend\u0008\u009b2J`), 1)
	if bytes.Equal(evil, b) {
		t.Fatal("the failure reason is not in comp_failure.log any more")
	}
	dir := t.TempDir()
	// A file name can carry them too.
	name := "trace\x1b]0;NAMED\x07.log"
	if err := os.WriteFile(filepath.Join(dir, name), evil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "notes\x1b[2J.txt"), []byte("not a trace\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "dedicated_log_torch_trace_rank_0.log"), evil, 0o644)
	code, out, errs := runCLI("trace", dir)
	if code != ExitFindings {
		t.Fatalf("exit %d, stderr %q, out:\n%s", code, errs, out)
	}
	for _, s := range []string{out, errs} {
		for _, bad := range []string{"\x1b", "\x07", "\x08", "\u009b", "PWNED"} {
			if strings.Contains(s, bad) {
				t.Errorf("output carries %q:\n%q", bad, s)
			}
		}
	}
	if !strings.Contains(out, "RuntimeError: broken backend") {
		t.Errorf("the failure reason was lost with its escapes:\n%s", out)
	}
}

// `trace --html DIR` followed a symbolic link already in DIR and wrote its
// target; the report is built beside DIR and put in its place, so the link
// goes with the old report, and nothing of the old report stays.
func TestTraceHTMLDoesNotFollowLinksInDir(t *testing.T) {
	src := testcorpus.File(t, "tlparse-inputs", "comp_failure.log")
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.txt")
	os.WriteFile(victim, []byte("precious\n"), 0o644)
	report := filepath.Join(dir, "report")
	if code, _, errs := runCLI("trace", "--html", report, src); code != ExitFindings {
		t.Fatalf("first report: exit %d, stderr %q", code, errs)
	}
	// Someone who can write into the report plants links to the victim
	// where the next report writes, and an old page that must not stay.
	os.Remove(filepath.Join(report, "index.html"))
	os.Symlink(victim, filepath.Join(report, "index.html"))
	os.Remove(filepath.Join(report, "assets", "report.css"))
	os.Symlink(victim, filepath.Join(report, "assets", "report.css"))
	pages, _ := filepath.Glob(filepath.Join(report, "units", "*", "unit_0_0.html"))
	if len(pages) != 1 {
		t.Fatalf("unit pages %v", pages)
	}
	os.Remove(pages[0])
	os.Symlink(victim, pages[0])
	stale := filepath.Join(filepath.Dir(pages[0]), "unit_9_9.html")
	os.WriteFile(stale, []byte("an old run's page"), 0o644)

	if code, _, errs := runCLI("trace", "--html", report, src); code != ExitFindings {
		t.Fatalf("second report: exit %d, stderr %q", code, errs)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	for _, p := range []string{filepath.Join(report, "index.html"), filepath.Join(report, "assets", "report.css"), pages[0]} {
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v, want the new report's regular file", p, err)
		}
	}
	if _, err := os.Lstat(stale); err == nil {
		t.Error("an old unit page stayed in the new report")
	}
	if idx, _ := os.ReadFile(filepath.Join(report, "index.html")); !bytes.Contains(idx, []byte("BackendCompilerFailed")) {
		t.Error("the new index lacks the failure")
	}
	noTemporaries(t, dir)

	// A directory of other files given by mistake is not swept away, and
	// DIR as a symbolic link is refused (the report would land elsewhere).
	mine := filepath.Join(dir, "mine")
	os.Mkdir(mine, 0o755)
	os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("mine\n"), 0o644)
	if code, _, errs := runCLI("trace", "--html", mine, src); code != ExitUsage || !strings.Contains(errs, "notes.txt") {
		t.Errorf("--html over a directory of other files: exit %d, stderr %q", code, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(mine, "notes.txt")); string(b) != "mine\n" {
		t.Error("the user's file was touched")
	}
	link := filepath.Join(dir, "link")
	os.Symlink(mine, link)
	if code, _, errs := runCLI("trace", "--html", link, src); code != ExitUsage || !strings.Contains(errs, "symbolic link") {
		t.Errorf("--html through a link: exit %d, stderr %q", code, errs)
	}
	noTemporaries(t, dir)
}

// noTemporaries fails when a temporary of bringup's is left in dir.
func noTemporaries(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".bringup-") {
			t.Errorf("temporary %s left in %s", e.Name(), dir)
		}
	}
}

// -o FILE and --perfetto FILE wrote through a link at FILE; the new file
// is renamed over the link instead, and the link's target keeps its bytes.
// A device is written to as it is.
func TestOutputFilesDoNotFollowLinks(t *testing.T) {
	src := testcorpus.File(t, "tlparse-inputs", "comp_failure.log")
	dump := testcorpus.File(t, "stackdumps", "accelerate-issue-3104-deepspeed-pyspy.txt")
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.txt")
	os.WriteFile(victim, []byte("precious\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"trace", "-o", "OUT", src}, "PROBLEM: 1 compile(s) failed"},
		{[]string{"trace", "--perfetto", "OUT", src}, `"traceEvents"`},
		{[]string{"stacks", "-o", "OUT", dump}, "verdict:"},
		{[]string{"diagnose", "-o", "OUT", src}, ""},
	} {
		out := filepath.Join(dir, "out-"+c.args[0]+c.args[1])
		os.Symlink(victim, out)
		args := append([]string(nil), c.args...)
		for i := range args {
			if args[i] == "OUT" {
				args[i] = out
			}
		}
		code, _, errs := runCLI(args...)
		if code == ExitUsage {
			t.Errorf("%v: exit 2, stderr %q", args, errs)
			continue
		}
		if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
			t.Fatalf("%v wrote through the link: victim now %.200q", args, b)
		}
		fi, err := os.Lstat(out)
		b, _ := os.ReadFile(out)
		if err != nil || !fi.Mode().IsRegular() || !strings.Contains(string(b), c.want) {
			t.Errorf("%v: %s is %v (%v), content %.200q", args, out, fi.Mode(), err, b)
		}
	}
	noTemporaries(t, dir)
	if code, _, errs := runCLI("trace", "-o", "/dev/null", src); code != ExitFindings {
		t.Errorf("-o /dev/null: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := runCLI("trace", "-o", dir, src); code != ExitUsage || !strings.Contains(errs, "directory") {
		t.Errorf("-o DIR: exit %d, stderr %q", code, errs)
	}
}

// Dumps are written by the dumped program too: escapes that the log
// peeler does not see (JSON-escaped ones in a saved py-spy or bringup
// JSON, lone control characters) are cleaned from what stacks prints, in
// text and folded output.
func TestStacksStripsEscapeSequences(t *testing.T) {
	p := filepath.Join(t.TempDir(), "saved.json")
	os.WriteFile(p, []byte(`{"schema": "bringup.stacks/v1", "processes": [{"pid": 7, "rank": "TP2", "name": "VLLM::Worker_TP2\u001b]0;PWNED\u0007", "python": "3.12.1", "source": "live",
  "threads": [{"tid": 7, "name": "Main\u001b]0;PWNED\u0007Thread", "main": true, "frames": [{"func": "evil\u001b[2J\u0008", "file": "torch/_inductor/ir\u009b2J.py", "line": 1}]}]}], "buckets": []}
`), 0o644)
	for _, args := range [][]string{{"stacks", p}, {"stacks", "--collapsed", p}} {
		code, out, errs := runCLI(args...)
		if code == ExitUsage || !strings.Contains(out, "evil") {
			t.Fatalf("%v: exit %d, stderr %q, out %q", args, code, errs, out)
		}
		for _, bad := range []string{"\x1b", "\x07", "\x08", "\u009b", "PWNED"} {
			if strings.Contains(out+errs, bad) {
				t.Errorf("%v: output carries %q:\n%q", args, bad, out)
			}
		}
	}
}
