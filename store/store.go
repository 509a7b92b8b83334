package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the embedded SQLite driver, registered as "sqlite"
)

// EnvVar names the environment variable that locates the store.
const EnvVar = "BRINGUP_STORE"

// busyTimeout is how long a writer waits for another bringup holding the
// database before it gives up with a "locked" message.
const busyTimeout = 5 * time.Second

// schemaVersion is PRAGMA user_version of the layout below; bump it with a
// migration when the layout changes.
const schemaVersion = 4

// migrations[v] takes a store from layout v to v+1.
var migrations = map[int]string{
	1: `ALTER TABLE runs ADD COLUMN cpu TEXT NOT NULL DEFAULT 'null'`,
	2: `ALTER TABLE runs ADD COLUMN env_seen TEXT NOT NULL DEFAULT '[]'`,
	3: `ALTER TABLE runs ADD COLUMN extra TEXT NOT NULL DEFAULT '{}'`,
}

// Nested lists are kept as JSON in the run's row: a run is written and read
// whole, and one row per run keeps every update a single statement. The
// requested environment gets its own table because `runs matrix` groups by it.
// Fields added to Run after layout 3 live together in the extra column
// (runExtra), so adding one needs no new column.
const schemaSQL = `
CREATE TABLE IF NOT EXISTS runs (
	id        INTEGER PRIMARY KEY AUTOINCREMENT,
	started   TEXT NOT NULL,
	ended     TEXT NOT NULL DEFAULT '',
	command   TEXT NOT NULL,
	cwd       TEXT NOT NULL DEFAULT '',
	dir       TEXT NOT NULL DEFAULT '',
	outcome   TEXT NOT NULL,
	exit_code INTEGER,
	signal    TEXT NOT NULL DEFAULT '',
	reason    TEXT NOT NULL DEFAULT '',
	verdict   TEXT NOT NULL DEFAULT '',
	env_check TEXT NOT NULL DEFAULT '[]',
	silences  TEXT NOT NULL DEFAULT '[]',
	timeline  TEXT NOT NULL DEFAULT '[]',
	findings  TEXT NOT NULL DEFAULT '[]',
	logs      TEXT NOT NULL DEFAULT '[]',
	versions  TEXT NOT NULL DEFAULT '{}',
	patches   TEXT NOT NULL DEFAULT 'null',
	lines     INTEGER NOT NULL DEFAULT 0,
	bytes     INTEGER NOT NULL DEFAULT 0,
	cpu       TEXT NOT NULL DEFAULT 'null',
	env_seen  TEXT NOT NULL DEFAULT '[]',
	extra     TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS run_env (
	run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	key    TEXT NOT NULL,
	value  TEXT NOT NULL,
	PRIMARY KEY (run_id, key)
);
`

// Store is an open run store.
type Store struct {
	db   *sql.DB
	path string
}

// DefaultPath is where the store lives when neither --store nor
// BRINGUP_STORE says: $XDG_STATE_HOME/bringup/runs.db, else
// ~/.local/state/bringup/runs.db.
func DefaultPath() (string, error) {
	if p := os.Getenv(EnvVar); p != "" {
		return p, nil
	}
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot find a home directory for the run store (%v): set %s or pass --store", err, EnvVar)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "bringup", "runs.db"), nil
}

// Resolve picks the store path: the flag when set, else DefaultPath; the
// path is made absolute, as every path recorded with a run is.
func Resolve(flag string) (string, error) {
	p := flag
	if p == "" {
		var err error
		if p, err = DefaultPath(); err != nil {
			return "", err
		}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("run store %s: %v", p, err)
	}
	return abs, nil
}

// Open opens (creating when absent) the store at path. A locked or corrupt
// database gives an error that says so and how to get past it; Open never
// rewrites a file that is not a bringup store.
func Open(path string) (*Store, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("run store %s: %v", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// BEGIN IMMEDIATE: a writer takes the lock up front, so two writers wait
	// on the busy timeout instead of failing on a lock upgrade.
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, describe(path, err)
	}
	// One connection: SQLite serialises writers anyway, and one connection
	// keeps the pragmas and WAL mode in force for every statement.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, path: path}
	if err := s.init(); err != nil {
		db.Close()
		return nil, describe(path, err)
	}
	return s, nil
}

func (s *Store) init() error {
	var mode string
	if err := s.db.QueryRow("PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return err
	}
	var version int
	if err := s.db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	if version > schemaVersion {
		return fmt.Errorf("store layout version %d is newer than this bringup knows (%d): upgrade bringup", version, schemaVersion)
	}
	if version == schemaVersion {
		return nil
	}
	// A non-empty database without our version is someone else's file.
	var n int
	if err := s.db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		var ours int
		s.db.QueryRow("SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN ('runs','run_env')").Scan(&ours)
		if ours != 2 || version == 0 {
			return errNotOurs
		}
	}
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if version == 0 {
		if _, err := tx.Exec(schemaSQL); err != nil {
			return err
		}
	} else {
		for v := version; v < schemaVersion; v++ {
			if _, err := tx.Exec(migrations[v]); err != nil {
				return fmt.Errorf("upgrading the store layout from version %d: %v", v, err)
			}
		}
	}
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA user_version=%d", schemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
}

var errNotOurs = errors.New("the file is an SQLite database but not a bringup run store")

// sqlite result codes used to explain failures (primary codes, low byte).
const (
	sqliteBusy    = 5
	sqliteLocked  = 6
	sqliteCorrupt = 11
	sqliteNotADB  = 26
)

// describe turns a driver error into one line that names the store and
// what to do.
func describe(path string, err error) error {
	if err == nil {
		return nil
	}
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch coded.Code() & 0xff {
		case sqliteBusy, sqliteLocked:
			return fmt.Errorf("run store %s is locked by another process (waited %s): retry when it finishes, or pass --store / set %s to use another file", path, busyTimeout, EnvVar)
		case sqliteCorrupt, sqliteNotADB:
			return fmt.Errorf("run store %s is corrupt or not a database (%v): move it aside (it is left untouched) or pass --store / set %s", path, err, EnvVar)
		}
	}
	if errors.Is(err, errNotOurs) {
		return fmt.Errorf("run store %s: %v; pass --store / set %s to use another file", path, err, EnvVar)
	}
	return fmt.Errorf("run store %s: %v", path, err)
}

// Path is the database file (absolute).
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Save writes the whole run in one transaction: inserts it when r.ID is 0
// (setting r.ID), else replaces the stored row. A failure leaves the stored
// run as it was.
func (s *Store) Save(r *Run) error {
	if err := s.save(r, ""); err != nil {
		return describe(s.path, err)
	}
	return nil
}

// SaveIf replaces the stored run r.ID only while its stored outcome is
// still outcome, in one transaction; it reports whether it did. Two
// bringups that find the same lost run do not both record it.
func (s *Store) SaveIf(r *Run, outcome string) (bool, error) {
	if r.ID == 0 {
		return false, fmt.Errorf("SaveIf: the run has no id")
	}
	err := s.save(r, outcome)
	if errors.Is(err, errNotSaved) {
		return false, nil
	}
	if err != nil {
		return false, describe(s.path, err)
	}
	return true, nil
}

var errNotSaved = errors.New("the stored run changed")

func (s *Store) save(r *Run, cond string) error {
	if r.Outcome == "" {
		r.Outcome = OutcomeRunning
	}
	cols := map[string]any{}
	enc := func(name string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s: %v", name, err)
		}
		cols[name] = string(b)
		return nil
	}
	for name, v := range map[string]any{
		"command": nonNil(r.Command), "env_check": nonNil(r.EnvCheck), "silences": nonNil(r.Silences),
		"timeline": nonNil(r.Timeline), "findings": nonNil(r.Findings), "logs": nonNil(r.Logs),
		"versions": r.Versions, "patches": r.Patches, "cpu": r.CPU, "env_seen": nonNil(r.EnvSeen),
		"extra": extraOf(r),
	} {
		if err := enc(name, v); err != nil {
			return err
		}
	}
	if r.Versions == nil {
		cols["versions"] = "{}"
	}
	var exit any
	if r.ExitCode != nil {
		exit = *r.ExitCode
	}
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if cond != "" && r.ID != 0 {
		var now string
		if err := tx.QueryRow(`SELECT outcome FROM runs WHERE id=?`, r.ID).Scan(&now); err != nil {
			return err
		}
		if now != cond {
			return errNotSaved
		}
	}
	args := []any{
		fmtTime(r.Started), fmtTime(r.Ended), cols["command"], r.Cwd, r.Dir, r.Outcome, exit, r.Signal,
		r.Reason, r.Verdict, cols["env_check"], cols["silences"], cols["timeline"], cols["findings"],
		cols["logs"], cols["versions"], cols["patches"], r.Lines, r.Bytes, cols["cpu"], cols["env_seen"], cols["extra"],
	}
	if r.ID == 0 {
		res, err := tx.Exec(`INSERT INTO runs (started, ended, command, cwd, dir, outcome, exit_code, signal,
			reason, verdict, env_check, silences, timeline, findings, logs, versions, patches, lines, bytes, cpu, env_seen, extra)
			VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, args...)
		if err != nil {
			return err
		}
		if r.ID, err = res.LastInsertId(); err != nil {
			return err
		}
	} else {
		res, err := tx.Exec(`UPDATE runs SET started=?, ended=?, command=?, cwd=?, dir=?, outcome=?, exit_code=?,
			signal=?, reason=?, verdict=?, env_check=?, silences=?, timeline=?, findings=?, logs=?, versions=?,
			patches=?, lines=?, bytes=?, cpu=?, env_seen=?, extra=? WHERE id=?`, append(args, r.ID)...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("run %d is not in the store", r.ID)
		}
		if _, err := tx.Exec(`DELETE FROM run_env WHERE run_id=?`, r.ID); err != nil {
			return err
		}
	}
	for k, v := range r.Env {
		if _, err := tx.Exec(`INSERT INTO run_env (run_id, key, value) VALUES (?,?,?)`, r.ID, k, v); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		r.ID = 0
		return err
	}
	return nil
}

// nonNil makes empty lists encode as [] rather than null.
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

const selectRun = `SELECT id, started, ended, command, cwd, dir, outcome, exit_code, signal, reason, verdict,
	env_check, silences, timeline, findings, logs, versions, patches, lines, bytes, cpu, env_seen, extra FROM runs`

type scanner interface{ Scan(...any) error }

func scanRun(sc scanner) (*Run, error) {
	r := &Run{Schema: Schema}
	var started, ended, command, envCheck, silences, timeline, findings, logs, versions, patches, cpu, envSeen, extra string
	var exit sql.NullInt64
	if err := sc.Scan(&r.ID, &started, &ended, &command, &r.Cwd, &r.Dir, &r.Outcome, &exit, &r.Signal,
		&r.Reason, &r.Verdict, &envCheck, &silences, &timeline, &findings, &logs, &versions, &patches,
		&r.Lines, &r.Bytes, &cpu, &envSeen, &extra); err != nil {
		return nil, err
	}
	r.Started, r.Ended = parseTime(started), parseTime(ended)
	if exit.Valid {
		c := int(exit.Int64)
		r.ExitCode = &c
	}
	for _, f := range []struct {
		name string
		src  string
		dst  any
	}{
		{"command", command, &r.Command}, {"env_check", envCheck, &r.EnvCheck}, {"silences", silences, &r.Silences},
		{"timeline", timeline, &r.Timeline}, {"findings", findings, &r.Findings}, {"logs", logs, &r.Logs},
		{"versions", versions, &r.Versions}, {"patches", patches, &r.Patches}, {"cpu", cpu, &r.CPU},
		{"env_seen", envSeen, &r.EnvSeen}, {"extra", extra, (*runExtra)(r)},
	} {
		if err := json.Unmarshal([]byte(f.src), f.dst); err != nil {
			return nil, fmt.Errorf("run %d: stored %s does not decode: %v", r.ID, f.name, err)
		}
	}
	r.Env = map[string]string{}
	r.Command, r.EnvCheck, r.Silences = nonNil(r.Command), nonNil(r.EnvCheck), nonNil(r.Silences)
	r.Timeline, r.Findings, r.Logs = nonNil(r.Timeline), nonNil(r.Findings), nonNil(r.Logs)
	r.EnvSeen = nonNil(r.EnvSeen)
	return r, nil
}

func (s *Store) loadEnv(runs []*Run) error {
	if len(runs) == 0 {
		return nil
	}
	byID := map[int64]*Run{}
	for _, r := range runs {
		byID[r.ID] = r
	}
	rows, err := s.db.Query(`SELECT run_id, key, value FROM run_env`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var k, v string
		if err := rows.Scan(&id, &k, &v); err != nil {
			return err
		}
		if r := byID[id]; r != nil {
			r.Env[k] = v
		}
	}
	return rows.Err()
}

// ErrNoRun is returned when a reference names no stored run.
var ErrNoRun = errors.New("no such run")

// Get returns the run named by ref: a run id, or "last" for the newest.
func (s *Store) Get(ref string) (*Run, error) {
	var row *sql.Row
	switch ref = strings.TrimSpace(ref); {
	case ref == "last" || ref == "latest":
		row = s.db.QueryRow(selectRun + ` ORDER BY id DESC LIMIT 1`)
	default:
		id, err := strconv.ParseInt(strings.TrimPrefix(ref, "#"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a run id: give a number from 'bringup runs list' or 'last'", ref)
		}
		row = s.db.QueryRow(selectRun+` WHERE id=?`, id)
	}
	r, err := scanRun(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w %q in %s (see 'bringup runs list')", ErrNoRun, ref, s.path)
	}
	if err != nil {
		return nil, describe(s.path, err)
	}
	if err := s.loadEnv([]*Run{r}); err != nil {
		return nil, describe(s.path, err)
	}
	return r, nil
}

// List returns the newest runs first; limit <= 0 means all.
func (s *Store) List(limit int) ([]*Run, error) {
	q := selectRun + ` ORDER BY id DESC`
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	return s.query(q)
}

// Unfinished returns the runs still marked running and the lost runs that
// left processes running, oldest first: what a bringup checks when it
// opens the store.
func (s *Store) Unfinished() ([]*Run, error) {
	return s.query(selectRun+` WHERE outcome=? OR (outcome=? AND EXISTS (SELECT 1 FROM json_each(runs.extra, '$.survivors')
		WHERE json_extract(value, '$.state')=?)) ORDER BY id`, OutcomeRunning, OutcomeLost, SurvivorRunning)
}

func (s *Store) query(q string, args ...any) ([]*Run, error) {
	rows, err := s.db.Query(q, args...)
	if err != nil {
		return nil, describe(s.path, err)
	}
	defer rows.Close()
	var runs []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, describe(s.path, err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, describe(s.path, err)
	}
	if err := s.loadEnv(runs); err != nil {
		return nil, describe(s.path, err)
	}
	return runs, nil
}

// runExtra is how the fields added to Run after layout 3 are kept: one
// JSON object in the extra column. Its UnmarshalJSON fills only those
// fields of the Run it points at.
type runExtra Run

type extraFields struct {
	Updated   time.Time  `json:"updated,omitzero"`
	Watcher   *Watcher   `json:"watcher,omitempty"`
	Procs     []BootProc `json:"procs,omitempty"`
	Output    *Output    `json:"output,omitempty"`
	Survivors []BootProc `json:"survivors,omitempty"`
	Stop      *Stop      `json:"stop,omitempty"`
}

func extraOf(r *Run) extraFields {
	return extraFields{Updated: r.Updated, Watcher: r.Watcher, Procs: r.Procs, Output: r.Output, Survivors: r.Survivors, Stop: r.Stop}
}

func (e *runExtra) UnmarshalJSON(b []byte) error {
	var f extraFields
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	e.Updated, e.Watcher, e.Procs, e.Output, e.Survivors, e.Stop = f.Updated, f.Watcher, f.Procs, f.Output, f.Survivors, f.Stop
	return nil
}
