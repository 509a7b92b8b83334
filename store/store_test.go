package store

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/record"
)

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "runs.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func sampleRun(outcome string, env map[string]string) *Run {
	code := 1
	return &Run{
		Command:  []string{"python3", "boot.py", "--tp", "2"},
		Dir:      "/tmp/run",
		Env:      env,
		Started:  time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC),
		Ended:    time.Date(2026, 11, 29, 23, 1, 30, 0, time.UTC),
		Outcome:  outcome,
		ExitCode: &code,
		EnvSeen:  []EnvSeen{{PID: 41, Process: "launcher", Env: map[string]string{"VLLM_USE_AOT_COMPILE": "0"}}, {PID: 42, Rank: "TP1", Process: "python3 worker.py", Env: map[string]string{"X": "0"}}},
		EnvCheck: []EnvCheck{{PID: 42, Rank: "TP1", Process: "python3 worker.py", Missing: []string{"VLLM_USE_AOT_COMPILE"},
			Different: map[string]EnvDiff{"X": {Want: "1", Got: "0"}}}},
		Silences: []Silence{{At: time.Date(2026, 11, 29, 23, 1, 0, 0, time.UTC), Seconds: 5, StacksPath: "/tmp/run/stacks-1.json"}},
		Timeline: []Phase{{Rank: "TP0", Name: "dynamo", Seconds: 1.5}, {Rank: "TP1", Name: "dynamo", Seconds: 2.5}, {Rank: "TP0", Name: "inductor", Seconds: 3, Open: true}},
		Findings: []record.Finding{{Rule: "silent-cold-compile", Title: "t", Severity: record.SeverityError, Count: 2,
			Evidence: []record.Evidence{{Path: "output.log", Line: 3, Text: "x"}}}},
		Logs: []string{"/tmp/run/output.log"},
	}
}

func TestSaveGetRoundTrip(t *testing.T) {
	s, _ := openTemp(t)
	r := sampleRun(OutcomeRunning, map[string]string{"VLLM_USE_AOT_COMPILE": "0", "EMPTY": ""})
	r.Outcome = OutcomeRunning
	if err := s.Save(r); err != nil {
		t.Fatal(err)
	}
	if r.ID != 1 {
		t.Fatalf("first run got id %d, want 1", r.ID)
	}
	// An update replaces the row and the environment.
	r.Outcome = OutcomeHung
	r.Env = map[string]string{"VLLM_USE_AOT_COMPILE": "1"}
	if err := s.Save(r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get("1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Outcome != OutcomeHung || got.Env["VLLM_USE_AOT_COMPILE"] != "1" || len(got.Env) != 1 {
		t.Errorf("got outcome %q env %v", got.Outcome, got.Env)
	}
	if got.ExitCode == nil || *got.ExitCode != 1 || !got.Started.Equal(r.Started) || !got.Ended.Equal(r.Ended) {
		t.Errorf("exit/started/ended not kept: %+v", got)
	}
	if len(got.EnvSeen) != 2 || got.EnvSeen[0].Env["VLLM_USE_AOT_COMPILE"] != "0" || got.EnvSeen[1].Rank != "TP1" {
		t.Errorf("env seen not kept: %+v", got.EnvSeen)
	}
	if len(got.EnvCheck) != 1 || got.EnvCheck[0].Missing[0] != "VLLM_USE_AOT_COMPILE" || got.EnvCheck[0].Different["X"].Got != "0" {
		t.Errorf("env check not kept: %+v", got.EnvCheck)
	}
	if len(got.Timeline) != 3 || !got.Timeline[2].Open || len(got.Findings) != 1 || got.Findings[0].Evidence[0].Line != 3 {
		t.Errorf("timeline/findings not kept: %+v %+v", got.Timeline, got.Findings)
	}
	if got.Schema != Schema {
		t.Errorf("schema %q", got.Schema)
	}
}

func TestLastListAndBadRefs(t *testing.T) {
	s, _ := openTemp(t)
	for i := 0; i < 3; i++ {
		if err := s.Save(sampleRun(OutcomeReady, nil)); err != nil {
			t.Fatal(err)
		}
	}
	last, err := s.Get("last")
	if err != nil || last.ID != 3 {
		t.Fatalf("last = %v, %v", last, err)
	}
	runs, err := s.List(2)
	if err != nil || len(runs) != 2 || runs[0].ID != 3 || runs[1].ID != 2 {
		t.Fatalf("List(2) = %v, %v", runs, err)
	}
	if _, err := s.Get("99"); !errors.Is(err, ErrNoRun) {
		t.Errorf("Get(99) err = %v, want ErrNoRun", err)
	}
	if _, err := s.Get("yesterday"); err == nil || !strings.Contains(err.Error(), "not a run id") {
		t.Errorf("Get(yesterday) err = %v", err)
	}
	// An update of a run that is not there must fail, not insert.
	ghost := sampleRun(OutcomeReady, nil)
	ghost.ID = 77
	if err := s.Save(ghost); err == nil {
		t.Error("saving an unknown id succeeded")
	}
}

func TestEmptyStoreLast(t *testing.T) {
	s, _ := openTemp(t)
	if _, err := s.Get("last"); !errors.Is(err, ErrNoRun) {
		t.Errorf("Get(last) on empty store: %v", err)
	}
}

func TestMatrixCounts(t *testing.T) {
	var runs []*Run
	id := int64(0)
	add := func(outcome string, env map[string]string) {
		id++
		r := sampleRun(outcome, env)
		r.ID = id
		runs = append(runs, r)
	}
	for i := 0; i < 5; i++ {
		add(OutcomeHung, map[string]string{"FULLGRAPH": "0", "AOT": "0"})
	}
	for i := 0; i < 3; i++ {
		add(OutcomeReady, map[string]string{"FULLGRAPH": "1", "AOT": "0"})
	}
	add(OutcomeFailed, map[string]string{"FULLGRAPH": "1", "AOT": "0"})
	add(OutcomeFailed, map[string]string{"AOT": "1"})
	m := BuildMatrix(runs, []string{"FULLGRAPH", "AOT"})
	if len(m.Rows) != 3 {
		t.Fatalf("rows = %+v", m.Rows)
	}
	want := map[string]string{
		"(unset) 1": "failed 1/1",
		"0 0":       "hung 5/5",
		"1 0":       "ready 3/4, failed 1/4",
	}
	for _, row := range m.Rows {
		k := strings.Join(row.Values, " ")
		if got := row.Summary(); got != want[k] {
			t.Errorf("row %q: %q, want %q", k, got, want[k])
		}
	}
}

func TestCompare(t *testing.T) {
	a := sampleRun(OutcomeHung, map[string]string{"AOT": "0", "SAME": "x"})
	b := sampleRun(OutcomeReady, map[string]string{"AOT": "1", "SAME": "x"})
	a.ID, b.ID = 1, 2
	b.Timeline = []Phase{{Rank: "TP0", Name: "dynamo", Seconds: 1}}
	b.Findings = nil
	c := Compare([]*Run{a, b})
	if len(c.Settings) != 1 || c.Settings[0].Name != "AOT" || c.Settings[0].Values[1] != "1" {
		t.Errorf("settings = %+v", c.Settings)
	}
	if !c.Outcome.Differ || !strings.HasPrefix(c.Outcome.Values[0], "hung") {
		t.Errorf("outcome = %+v", c.Outcome)
	}
	var dyn, ind *CompareRow
	for i := range c.Phases {
		switch c.Phases[i].Name {
		case "dynamo":
			dyn = &c.Phases[i]
		case "inductor":
			ind = &c.Phases[i]
		}
	}
	if dyn == nil || dyn.Values[0] != "2.5s" || dyn.Values[1] != "1.0s" {
		t.Errorf("dynamo row = %+v", dyn)
	}
	if ind == nil || ind.Values[0] != "3.0s (open)" || ind.Values[1] != "-" {
		t.Errorf("inductor row = %+v", ind)
	}
	if len(c.Findings) != 1 || c.Findings[0].Values[0] != "error ×2" || c.Findings[0].Values[1] != "-" {
		t.Errorf("findings = %+v", c.Findings)
	}
}

func TestCorruptStoreIsNotTouched(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	junk := bytes.Repeat([]byte("this is not sqlite\n"), 300)
	if err := os.WriteFile(path, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path)
	if err == nil || !strings.Contains(err.Error(), "corrupt or not a database") || !strings.Contains(err.Error(), "--store") {
		t.Fatalf("Open(junk) err = %v", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, junk) {
		t.Error("Open rewrote a file that is not a database")
	}
}

func TestForeignDatabaseRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE invoices (id INTEGER)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "not a bringup run store") {
		t.Fatalf("Open(foreign db) err = %v", err)
	}
}

func TestLockedStoreSaysSo(t *testing.T) {
	s, path := openTemp(t)
	if err := s.Save(sampleRun(OutcomeReady, nil)); err != nil {
		t.Fatal(err)
	}
	// Another connection holds the write lock for longer than the busy
	// timeout: the write must fail with a "locked" message and leave the
	// stored runs intact.
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(100)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = s.Save(sampleRun(OutcomeFailed, nil))
	if err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("Save under lock err = %v", err)
	}
	if waited := time.Since(start); waited < busyTimeout/2 {
		t.Errorf("gave up after %v, before the busy timeout", waited)
	}
	if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	runs, err := s.List(0)
	if err != nil || len(runs) != 1 || runs[0].Outcome != OutcomeReady {
		t.Fatalf("after lock: %v, %v", runs, err)
	}
	if err := s.Save(sampleRun(OutcomeFailed, nil)); err != nil {
		t.Fatalf("Save after the lock is released: %v", err)
	}
}

func TestConcurrentWritersFromTwoHandles(t *testing.T) {
	s1, path := openTemp(t)
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for _, s := range []*Store{s1, s2} {
		wg.Add(1)
		go func(s *Store) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				r := sampleRun(OutcomeReady, map[string]string{"I": "x"})
				if err := s.Save(r); err != nil {
					errs <- err
				}
				r.Outcome = OutcomeFailed
				if err := s.Save(r); err != nil {
					errs <- err
				}
			}
		}(s)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	runs, err := s1.List(0)
	if err != nil || len(runs) != 40 {
		t.Fatalf("List: %d runs, %v", len(runs), err)
	}
	var mode string
	s1.db.QueryRow("PRAGMA journal_mode").Scan(&mode)
	if mode != "wal" {
		t.Errorf("journal_mode %q, want wal", mode)
	}
	var check string
	s1.db.QueryRow("PRAGMA integrity_check").Scan(&check)
	if check != "ok" {
		t.Errorf("integrity_check: %s", check)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv(EnvVar, "/x/y.db")
	if p, _ := DefaultPath(); p != "/x/y.db" {
		t.Errorf("with %s: %q", EnvVar, p)
	}
	t.Setenv(EnvVar, "")
	t.Setenv("XDG_STATE_HOME", "/state")
	if p, _ := DefaultPath(); p != "/state/bringup/runs.db" {
		t.Errorf("with XDG_STATE_HOME: %q", p)
	}
	if p, _ := Resolve("/flag.db"); p != "/flag.db" {
		t.Errorf("Resolve(flag) = %q", p)
	}
}

// openOldLayout makes a store of an older layout (schemaSQL without the
// columns cols, PRAGMA user_version version) holding one run with
// outcome, and opens it, which upgrades it in place.
func openOldLayout(t *testing.T, cols string, version int, outcome string) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(schemaSQL, cols, "", 1)
	if old == schemaSQL {
		t.Fatalf("could not derive the layout-%d schema", version)
	}
	for _, q := range []string{old, fmt.Sprintf("PRAGMA user_version=%d", version),
		`INSERT INTO runs (started, command, outcome) VALUES ('2026-11-29T23:00:00Z', '["x"]', '` + outcome + `')`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A store written by the first layout (no cpu column) is upgraded in place
// and keeps its runs.
func TestUpgradeFromLayout1(t *testing.T) {
	s := openOldLayout(t, ",\n\tcpu       TEXT NOT NULL DEFAULT 'null',\n\tenv_seen  TEXT NOT NULL DEFAULT '[]',\n\textra     TEXT NOT NULL DEFAULT '{}'", 1, OutcomeHung)
	r, err := s.Get("last")
	if err != nil || r.Outcome != OutcomeHung || r.CPU != nil {
		t.Fatalf("old run after upgrade: %+v %v", r, err)
	}
	r.CPU = &CPU{WatchSeconds: 1, BootSeconds: 20}
	if err := s.Save(r); err != nil {
		t.Fatal(err)
	}
	if r, _ = s.Get("1"); r.CPU == nil || r.CPU.BootSeconds != 20 {
		t.Errorf("cpu not kept after upgrade: %+v", r.CPU)
	}
}

// An open phase of a watched run lasted until the run ended: compare shows
// that, not the 0 s its second-resolution log stamps give.
func TestCompareOpenPhaseUntilTheEnd(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 1, 39, 30, 0, time.UTC)
	a := sampleRun(OutcomeHung, nil)
	a.ID, a.Started, a.Ended = 1, t0, t0.Add(6500*time.Millisecond)
	a.Timeline = []Phase{{Rank: "TP0", Name: "inductor", Start: t0.Add(500 * time.Millisecond), End: t0.Add(500 * time.Millisecond), Open: true}}
	b := sampleRun(OutcomeHung, nil)
	b.ID, b.Started, b.Ended = 2, t0, t0.Add(6500*time.Millisecond)
	b.Timeline = []Phase{{Rank: "TP0", Name: "inductor", Start: t0.Add(-5 * time.Hour), Open: true}} // log clock in another zone
	c := Compare([]*Run{a, b})
	if len(c.Phases) != 1 || c.Phases[0].Values[0] != "6.0s (open)" || c.Phases[0].Values[1] != "0.0s (open)" {
		t.Errorf("phases %+v", c.Phases)
	}
}

// The fields added after layout 3 (watcher, processes, output, survivors)
// come back as saved.
func TestSaveGetAddedFields(t *testing.T) {
	s, _ := openTemp(t)
	r := sampleRun(OutcomeRunning, nil)
	r.Updated = time.Date(2026, 11, 29, 23, 0, 5, 0, time.UTC)
	r.Watcher = &Watcher{PID: 10, StartTicks: 99, BootID: "b", Host: "h", PIDNS: "pid:[1]", Guardian: 11, PGID: 12, BootStartTicks: 100}
	r.Procs = []BootProc{{PID: 12, StartTicks: 100, Process: "python3 boot.py"}}
	r.Output = &Output{Lines: 10, Bytes: 100, Error: "output incomplete at line 4: no space left on device", TerminalDropped: 3, TerminalClosed: []string{"stdout: broken pipe"}}
	r.Survivors = []BootProc{{PID: 12, StartTicks: 100, Process: "python3 boot.py", State: SurvivorRunning}}
	r.Stop = &Stop{By: StopByUser, Signal: "interrupt", At: time.Date(2026, 11, 29, 23, 0, 4, 0, time.UTC), Line: 41, After: []string{"KeyboardInterrupt (output.log:42)"}}
	if err := s.Save(r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get("last")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Updated.Equal(r.Updated) || *got.Watcher != *r.Watcher || len(got.Procs) != 1 || got.Procs[0] != r.Procs[0] ||
		got.Output.Error != r.Output.Error || got.Output.TerminalDropped != 3 || got.Output.TerminalClosed[0] != "stdout: broken pipe" ||
		len(got.Survivors) != 1 || got.Survivors[0] != r.Survivors[0] || !got.Incomplete() ||
		got.Stop == nil || got.Stop.By != StopByUser || got.Stop.Line != 41 || !got.Stop.At.Equal(r.Stop.At) || len(got.Stop.After) != 1 {
		t.Errorf("added fields after a round trip: %+v", got)
	}
}

// SaveIf writes only while the stored outcome is the one expected: two
// bringups that find the same lost run do not both record it.
func TestSaveIfAndUnfinished(t *testing.T) {
	s, _ := openTemp(t)
	running := sampleRun(OutcomeRunning, nil)
	done := sampleRun(OutcomeReady, nil)
	lostLeft := sampleRun(OutcomeLost, nil)
	lostLeft.Survivors = []BootProc{{PID: 5, State: SurvivorGone}, {PID: 6, State: SurvivorRunning}}
	lostClean := sampleRun(OutcomeLost, nil)
	lostClean.Survivors = []BootProc{{PID: 7, State: SurvivorStopped}}
	for _, r := range []*Run{running, done, lostLeft, lostClean} {
		if err := s.Save(r); err != nil {
			t.Fatal(err)
		}
	}
	un, err := s.Unfinished()
	if err != nil || len(un) != 2 || un[0].ID != running.ID || un[1].ID != lostLeft.ID {
		t.Fatalf("unfinished: %v %v", ids(un), err)
	}
	a, _ := s.Get(fmt.Sprint(running.ID))
	b, _ := s.Get(fmt.Sprint(running.ID))
	a.Outcome, a.Reason = OutcomeLost, "first"
	b.Outcome, b.Reason = OutcomeLost, "second"
	if ok, err := s.SaveIf(a, OutcomeRunning); !ok || err != nil {
		t.Fatalf("first SaveIf: %v %v", ok, err)
	}
	if ok, err := s.SaveIf(b, OutcomeRunning); ok || err != nil {
		t.Fatalf("second SaveIf wrote over the first: %v %v", ok, err)
	}
	if got, _ := s.Get(fmt.Sprint(running.ID)); got.Reason != "first" {
		t.Errorf("reason %q", got.Reason)
	}
	if _, err := s.SaveIf(&Run{}, OutcomeRunning); err == nil {
		t.Error("SaveIf of a run without an id")
	}
}

func ids(rs []*Run) []int64 {
	var out []int64
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// A store of layout 3 (before the extra column) is upgraded in place, its
// runs kept.
func TestUpgradeFromLayout3(t *testing.T) {
	s := openOldLayout(t, ",\n\textra     TEXT NOT NULL DEFAULT '{}'", 3, OutcomeRunning)
	r, err := s.Get("1")
	if err != nil || r.Outcome != OutcomeRunning || r.Watcher != nil || r.Output != nil {
		t.Fatalf("old run after upgrade: %+v %v", r, err)
	}
	r.Output = &Output{Lines: 2}
	if err := s.Save(r); err != nil {
		t.Fatal(err)
	}
	if r, _ = s.Get("1"); r.Output == nil || r.Output.Lines != 2 {
		t.Errorf("output not kept after upgrade: %+v", r.Output)
	}
}

// A relative store path is made absolute: the runs directory next to it,
// and every path recorded, are right from any directory.
func TestRelativeStorePathIsAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	p, err := Resolve("state/runs.db")
	if err != nil || p != filepath.Join(dir, "state", "runs.db") {
		t.Errorf("Resolve = %q, %v", p, err)
	}
	t.Setenv(EnvVar, "rel.db")
	if p, err := Resolve(""); err != nil || p != filepath.Join(dir, "rel.db") {
		t.Errorf("Resolve from $%s = %q, %v", EnvVar, p, err)
	}
	s, err := Open("state/runs.db")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Path() != filepath.Join(dir, "state", "runs.db") {
		t.Errorf("Path = %q", s.Path())
	}
}

// TestPhaseWireShape: a stored run's timeline entry keeps the keys, order
// and omissions it had before store.Phase became record.Phase, and old
// stored entries read back.
func TestPhaseWireShape(t *testing.T) {
	at := time.Date(2025, 10, 29, 11, 25, 58, 0, time.UTC)
	for _, c := range []struct {
		p    Phase
		want string
	}{
		{Phase{Rank: "TP0", Name: "inductor", Detail: "shape 8", Status: "unfinished", Start: at, End: at.Add(2 * time.Second), Seconds: 2, Open: true, Line: 41},
			`{"rank":"TP0","name":"inductor","detail":"shape 8","status":"unfinished","start":"2025-10-29T11:25:58Z","end":"2025-10-29T11:26:00Z","seconds":2,"open":true,"line":41}`},
		{Phase{Name: "load", Seconds: 0.5}, `{"name":"load","seconds":0.5}`},
	} {
		b, err := json.Marshal(c.p)
		if err != nil || string(b) != c.want {
			t.Errorf("%+v:\n got %s (%v)\nwant %s", c.p, b, err, c.want)
		}
		var back Phase
		if err := json.Unmarshal([]byte(c.want), &back); err != nil || back != c.p {
			t.Errorf("read back %+v (%v), want %+v", back, err, c.p)
		}
	}
}
