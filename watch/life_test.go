package watch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bringup-tool/bringup/store"
)

// floodThenSleep prints n lines of 129 bytes, then is silent for a minute.
func floodThenSleep(n int) string {
	return fmt.Sprintf("import sys, time\nfor i in range(%d):\n    sys.stdout.write('line %%07d %s\\n' %% i)\nsys.stdout.flush()\ntime.sleep(60)\n", n, strings.Repeat("x", 115))
}

// A terminal nobody reads holds up neither the log nor the clock: the
// log gets every line at once, --timeout and --silence fire when they
// should, and the lines the terminal could not take are counted. Before,
// the tee wrote the terminal first: output.log stayed empty and the
// timers waited behind the blocked write.
func TestUndrainedTerminal(t *testing.T) {
	py := needPython(t)
	const n = 40000 // 5 MB: far more than the pipe and the terminal buffer hold
	for _, mode := range []string{"timeout", "silence"} {
		t.Run(mode, func(t *testing.T) {
			r, w, err := os.Pipe() // the terminal: nobody reads r
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			// Should watch wait for the terminal after all, this lets it go
			// (and the test fails) instead of hanging.
			var stalled sync.Once
			held := false
			watchdog := time.AfterFunc(45*time.Second, func() { stalled.Do(func() { held = true; r.Close() }) })
			defer watchdog.Stop()
			cfg := Config{Command: []string{py, "-c", floodThenSleep(n)}, Stdout: w, TerminalBuffer: 256 << 10}
			want := store.OutcomeTimeout
			if mode == "timeout" {
				cfg.Timeout = 3 * time.Second
			} else {
				cfg.Silence, cfg.OnSilence, cfg.Timeout = 2*time.Second, "stop", 40*time.Second
				want = store.OutcomeHung
			}
			res := boot(t, t.Context(), cfg)
			watchdog.Stop()
			run := res.run
			if held {
				t.Fatalf("watch was held up by the terminal for 45 s (outcome %s)", run.Outcome)
			}
			if run.Outcome != want {
				t.Errorf("outcome %q (%s), want %q", run.Outcome, run.Reason, want)
			}
			// The boot sleeps for a minute after its output: an outcome well
			// before that is the timer's, not the boot's end. The bound is
			// generous; it is about the terminal not holding the clock (it
			// took 14 s for a 3 s --timeout), not about speed.
			if d := run.Duration(); d > 30*time.Second {
				t.Errorf("the run took %s", d)
			}
			log := readLog(t, run)
			if got := bytes.Count(log, []byte{'\n'}); got != n || run.Lines != n || run.Bytes != int64(len(log)) {
				t.Errorf("output.log has %d lines (%d bytes), run says %d lines %d bytes, the boot printed %d", got, len(log), run.Lines, run.Bytes, n)
			}
			if run.Output == nil || run.Output.TerminalDropped <= 0 || run.Output.TerminalDropped > n || run.Output.Error != "" {
				t.Errorf("output record %+v: want the terminal's dropped lines counted and no error", run.Output)
			}
			msgs := res.msgs.String()
			if strings.Count(msgs, "not keeping up") != 1 || !strings.Contains(msgs, fmt.Sprintf("%d lines of the boot's output were left out", run.Output.TerminalDropped)) {
				t.Errorf("messages do not say once that the terminal fell behind, and how much:\n%s", msgs)
			}
		})
	}
}

// A terminal whose reader goes away (| head -3) stops getting the boot's
// stdout; the boot, the log and the supervision go on, and the user is
// told once.
func TestClosedTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var got []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		br := bufio.NewReader(r)
		for len(got) < 3 {
			line, err := br.ReadString('\n')
			if err != nil {
				break
			}
			got = append(got, line)
		}
		r.Close()
	}()
	const n = 20000
	res := boot(t, t.Context(), Config{Command: []string{"sh", "-c", fmt.Sprintf("i=0; while [ $i -lt %d ]; do echo line $i; i=$((i+1)); done; sleep 0.5; echo last", n)}, Stdout: w})
	<-done
	run := res.run
	if len(got) != 3 || got[0] != "line 0\n" {
		t.Errorf("the terminal read %q", got)
	}
	if run.Outcome != store.OutcomeExited || run.Lines != n+1 {
		t.Errorf("outcome %s, %d lines saved, want exited with %d", run.Outcome, run.Lines, n+1)
	}
	if log := readLog(t, run); !bytes.HasSuffix(log, []byte("line 19999\nlast\n")) {
		t.Errorf("output.log ends %q", log[max(0, len(log)-40):])
	}
	if len(run.Procs) != 0 {
		t.Errorf("the final record lists processes still running: %+v", run.Procs)
	}
	if run.Output == nil || len(run.Output.TerminalClosed) != 1 || !strings.HasPrefix(run.Output.TerminalClosed[0], "stdout: ") {
		t.Errorf("terminal_closed %+v", run.Output)
	}
	if c := strings.Count(res.msgs.String(), "the terminal copy of the boot's stdout stopped (broken pipe"); c != 1 {
		t.Errorf("told %d times that stdout closed:\n%s", c, res.msgs.String())
	}
}

// The terminal copy leaves out whole lines only, in order, and counts
// them: what the terminal shows plus what was dropped is what the boot
// printed, however the output was chunked.
func TestTerminalDropsWholeLines(t *testing.T) {
	gate := make(chan struct{})
	term := &gatedWriter{gate: gate}
	tc := newTermCopy(term, nil, nil, nil, 1000)
	const n = 5000
	var all bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&all, "line %05d\n", i)
	}
	data := all.Bytes()
	// Chunks that cut lines anywhere.
	for off, k := 0, 1; off < len(data); k = k*7%97 + 1 {
		end := min(off+k, len(data))
		tc.boot(0, data[off:end])
		off = end
	}
	close(gate)
	tc.close(2 * time.Second)
	shown := term.buf.String()
	if !strings.HasSuffix(shown, "\n") {
		t.Fatalf("the terminal copy ends inside a line: %q", shown[max(0, len(shown)-20):])
	}
	lines := strings.Split(strings.TrimSuffix(shown, "\n"), "\n")
	last := -1
	cut := 0
	for _, l := range lines {
		var i int
		if _, err := fmt.Sscanf(l, "line %05d", &i); err != nil || len(l) != 10 {
			// A line cut where dropping started ends early, once.
			cut++
			continue
		}
		if i <= last {
			t.Fatalf("line %q after line %d", l, last)
		}
		last = i
	}
	if cut > 1 {
		t.Errorf("%d cut lines in the terminal copy", cut)
	}
	if got := int64(len(lines)-cut) + tc.dropped(); got != n {
		t.Errorf("shown %d + dropped %d = %d, want %d", len(lines)-cut, tc.dropped(), got, n)
	}
	if tc.dropped() == 0 {
		t.Error("nothing was dropped: the bound was not exercised")
	}
}

type gatedWriter struct {
	gate chan struct{}
	buf  bytes.Buffer
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	<-g.gate
	return g.buf.Write(p)
}

// mountTmpfs mounts a tmpfs of size on a new directory, or skips t.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root: the full-disk test is skipped")
	}
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): the full-disk test is skipped", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	return mnt
}

// On a full disk the record says what reached the disk, run.json ends up
// final, and no temp file is left. Before, the run claimed 40,000 lines /
// 5,160,000 bytes saved when the file held 8,096 lines, run.json stayed at
// its start-time version and a 0-byte .run.json.tmp was left.
func TestFullRunDirectory(t *testing.T) {
	py := needPython(t)
	mnt := mountTmpfs(t, "1m")
	const n = 40000
	dir := filepath.Join(mnt, "run")
	res := boot(t, t.Context(), Config{Command: []string{py, "-c", floodThenSleep(n) + "\n"}, Dir: dir, Silence: 2 * time.Second, OnSilence: "stop", Timeout: 60 * time.Second})
	run := res.run
	log, err := os.ReadFile(filepath.Join(dir, "output.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := int64(bytes.Count(log, []byte{'\n'}))
	if lines >= n {
		t.Fatalf("the 1 MB disk took all %d lines", lines)
	}
	if run.Lines != lines || run.Bytes != int64(len(log)) {
		t.Errorf("run says %d lines, %d bytes saved; output.log holds %d lines, %d bytes", run.Lines, run.Bytes, lines, len(log))
	}
	wantErr := fmt.Sprintf("output incomplete at line %d: no space left on device", lines+1)
	if run.Output == nil || run.Output.Error != wantErr || run.Output.Lines != n {
		t.Errorf("output record %+v, want error %q and %d lines printed", run.Output, wantErr, n)
	}
	// run.json on disk is the final record.
	var onDisk store.Run
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil || json.Unmarshal(b, &onDisk) != nil {
		t.Fatalf("run.json: %v\n%s", err, b)
	}
	if onDisk.ID != run.ID || onDisk.Outcome != store.OutcomeHung || onDisk.Lines != lines || onDisk.Output == nil || onDisk.Output.Error != wantErr || onDisk.Ended.IsZero() {
		t.Errorf("run.json is not the final record: id %d outcome %s lines %d output %+v", onDisk.ID, onDisk.Outcome, onDisk.Lines, onDisk.Output)
	}
	if got, err := res.st.Get(fmt.Sprint(run.ID)); err != nil || got.Lines != lines || got.Output == nil || got.Output.Error != wantErr {
		t.Errorf("stored run: %+v %v", got, err)
	}
	if names := dirNames(t, dir); strings.Join(names, " ") != "output.log run.json" {
		t.Errorf("run directory holds %v, want only output.log and run.json", names)
	}
	msgs := res.msgs.String()
	if !strings.Contains(msgs, fmt.Sprintf("incomplete: output.log holds %d of the %d lines the boot printed (%s)", lines, n, wantErr)) || strings.Contains(msgs, "still written") {
		t.Errorf("messages:\n%s", msgs)
	}
}

// The store next to its runs on the same full disk (watch's default
// layout): whatever failed, every message about where the run is saved is
// true.
func TestFullStoreDisk(t *testing.T) {
	py := needPython(t)
	mnt := mountTmpfs(t, "1m")
	st, err := store.Open(filepath.Join(mnt, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res := boot(t, t.Context(), Config{Command: []string{py, "-c", floodThenSleep(40000)}, Store: st, RunsDir: filepath.Join(mnt, "runs"),
		Silence: 2 * time.Second, OnSilence: "stop", Timeout: 60 * time.Second})
	run, msgs := res.run, res.msgs.String()
	var onDisk store.Run
	b, jerr := os.ReadFile(filepath.Join(run.Dir, "run.json"))
	if jerr == nil {
		jerr = json.Unmarshal(b, &onDisk)
	}
	jsonFinal := jerr == nil && onDisk.Outcome == store.OutcomeHung && onDisk.Output != nil && onDisk.Output.Error != ""
	stored, serr := st.Get(fmt.Sprint(run.ID))
	storeFinal := serr == nil && stored.Outcome == store.OutcomeHung && stored.Output != nil && stored.Output.Error != ""
	t.Logf("run.json final %v, store final %v", jsonFinal, storeFinal)
	if !jsonFinal && !storeFinal {
		t.Errorf("the final record is nowhere: run.json %v, store %v", jerr, serr)
	}
	if strings.Contains(msgs, "still written") {
		t.Errorf("a message claims what is not so:\n%s", msgs)
	}
	if strings.Contains(msgs, "not recorded in the store (run.json in") && !jsonFinal {
		t.Errorf("said run.json keeps the run, but it is not final:\n%s", msgs)
	}
	if !storeFinal && !strings.Contains(msgs, "not recorded in the store") {
		t.Errorf("the store lacks the final run and nothing said so:\n%s", msgs)
	}
	if !jsonFinal && !strings.Contains(msgs, "run.json cannot be written") {
		t.Errorf("run.json is not final and nothing said so:\n%s", msgs)
	}
	for _, name := range dirNames(t, run.Dir) {
		if name != "output.log" && name != "run.json" {
			t.Errorf("left in the run directory: %s", name)
		}
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// Files bringup writes into a directory the user gave never follow a
// symlink placed there: run.json is replaced (not written through), an
// output.log already there stops the run before the boot, and a run.json
// that cannot be written leaves the store as the record, said so.
func TestRunDirSymlinks(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "precious.txt")
	os.WriteFile(victim, []byte("precious\n"), 0o644)

	dir := t.TempDir()
	os.Symlink(victim, filepath.Join(dir, "run.json"))
	res := boot(t, t.Context(), Config{Command: []string{"sh", "-c", "echo hello"}, Dir: dir})
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "run.json")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("run.json is not a regular file: %v %v", fi, err)
	}
	if res.run.Outcome != store.OutcomeExited {
		t.Errorf("outcome %s", res.run.Outcome)
	}

	dir = t.TempDir()
	os.Symlink(victim, filepath.Join(dir, "output.log"))
	marker := filepath.Join(t.TempDir(), "booted")
	_, err := Run(t.Context(), Config{Command: []string{"touch", marker}, Dir: dir, NoGuardian: true})
	if err == nil || !strings.Contains(err.Error(), "already holds an output.log") {
		t.Errorf("an output.log symlink in --run-dir: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the boot ran")
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the symlink's target was written: %q", b)
	}

	// run.json is a directory: it cannot be written; the store has it all.
	dir = t.TempDir()
	os.Mkdir(filepath.Join(dir, "run.json"), 0o755)
	res = boot(t, t.Context(), Config{Command: []string{"sh", "-c", "echo hello"}, Dir: dir})
	got, err := res.st.Get("last")
	if err != nil || got.Outcome != store.OutcomeExited || got.Output == nil || got.Output.RunJSONError == "" {
		t.Errorf("stored run %+v %v: want the final run with run.json's error", got, err)
	}
	if !strings.Contains(res.msgs.String(), "run.json cannot be written in "+dir) || !strings.Contains(res.msgs.String(), "the store keeps the run") {
		t.Errorf("messages:\n%s", res.msgs.String())
	}
	for _, name := range dirNames(t, dir) {
		if strings.HasSuffix(name, ".tmp") {
			t.Errorf("temp file left: %s", name)
		}
	}
}

func TestWriteFileInReplacesSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "v")
	os.WriteFile(victim, []byte("v"), 0o644)
	os.Symlink(victim, filepath.Join(dir, "silence-1.stacks.json"))
	if err := writeFileIn(dir, "silence-1.stacks.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "v" {
		t.Errorf("victim %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "silence-1.stacks.json")); string(b) != "{}" {
		t.Errorf("file %q", b)
	}
	for _, bad := range []string{"", ".", "..", "a/b", "../x"} {
		if err := writeFileIn(dir, bad, nil); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	d, err := openRunDir(filepath.Join(dir, "new"), true)
	if err != nil {
		t.Fatal(err)
	}
	d.close()
	if _, err := openRunDir(filepath.Join(dir, "new"), true); !errors.Is(err, fs.ErrExist) {
		t.Errorf("an existing run directory opened exclusively: %v", err)
	}
	// What a killed bringup leaves is recognised; nothing else is touched.
	for _, n := range []string{reserveName, ".run.json.0123abcd.tmp", "keep.tmp", ".run.json.tmp.x", "output.log"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	cleanLeftovers(dir)
	names := strings.Join(dirNames(t, dir), " ")
	if names != ".run.json.tmp.x keep.tmp new output.log silence-1.stacks.json" {
		t.Errorf("after cleaning: %s", names)
	}
}

// The store is data: a lost run whose recorded directory is not its own
// (no run.json of that run there) has nothing written or removed there.
func TestLostRunForeignDirectoryUntouched(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	foreign := t.TempDir()
	keep := map[string]string{"run.json": `{"id": 99}`, reserveName: "x", ".run.json.0123abcd.tmp": "y", "output.log": "a\nb\n"}
	for n, c := range keep {
		os.WriteFile(filepath.Join(foreign, n), []byte(c), 0o644)
	}
	fifo := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(fifo, "run.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	me := selfIdentity()
	dead := me
	dead.PID, dead.StartTicks = 1, 1 // pid 1 with another start time: that watcher is gone
	if alive(1, 1) {
		t.Skip("pid 1 started at clock tick 1 here: no dead watcher to record")
	}
	for _, dir := range []string{foreign, fifo} {
		r := &store.Run{Command: []string{"x"}, Dir: dir, Started: time.Now(), Outcome: store.OutcomeRunning, Watcher: &dead}
		if err := st.Save(r); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan []Lost)
	go func() { ls, _ := CheckRuns(st, CheckOptions{}); done <- ls }()
	var ls []Lost
	select {
	case ls = <-done:
	case <-time.After(20 * time.Second):
		os.Remove(filepath.Join(fifo, "run.json"))
		t.Fatal("CheckRuns blocked on a FIFO in a recorded directory")
	}
	if len(ls) != 2 || !ls[0].Marked || !ls[1].Marked {
		t.Fatalf("lost: %+v", ls)
	}
	for n, c := range keep {
		if b, err := os.ReadFile(filepath.Join(foreign, n)); err != nil || string(b) != c {
			t.Errorf("%s in the foreign directory changed: %q %v", n, b, err)
		}
	}
	if got, _ := st.Get("1"); got.Outcome != store.OutcomeLost || got.Lines != 0 {
		t.Errorf("lost run %+v: lines counted from a directory not its own", got)
	}
}
