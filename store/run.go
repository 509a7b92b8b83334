// Package store keeps every watched boot (a Run) in an embedded SQLite
// database: the command, the environment asked for and the environment each
// process really got, the phase timeline, silences with their stack
// captures, the outcome and the findings. `bringup runs` reads it back to
// list, show, compare and tabulate runs.
package store

import (
	"time"

	"github.com/bringup-tool/bringup/record"
)

// Schema is the JSON schema name of one run.
const Schema = "bringup.run/v1"

// Outcomes of a run.
const (
	OutcomeRunning     = "running" // still being watched, or the watcher died
	OutcomeReady       = "ready"
	OutcomeFailed      = "failed"
	OutcomeHung        = "hung"
	OutcomeTimeout     = "timeout"
	OutcomeExited      = "exited"
	OutcomeInterrupted = "interrupted"
	// OutcomeLost: the watcher ended without recording an outcome (it was
	// killed, or the machine went down); found and marked by the next
	// bringup that opened the store.
	OutcomeLost = "lost"
)

// Run is one boot as recorded. Its JSON form is bringup.run/v1; fields are
// added, never renamed.
type Run struct {
	Schema   string            `json:"schema"`
	ID       int64             `json:"id"`
	Command  []string          `json:"command"`
	Cwd      string            `json:"cwd,omitempty"`
	Dir      string            `json:"dir"` // run directory: logs, stack captures, run.json
	Env      map[string]string `json:"env"` // requested with --env / --env-file
	EnvCheck []EnvCheck        `json:"env_check"`
	// EnvSeen is, for every process of the boot whose environment was read,
	// the requested variables as that process got them (absent: missing).
	EnvSeen []EnvSeen `json:"env_seen"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	Outcome string    `json:"outcome"`
	// ExitCode is the boot's exit status; nil when it was killed by a
	// signal or had not exited when the run ended (--then keep stops it).
	ExitCode *int              `json:"exit_code"`
	Signal   string            `json:"signal,omitempty"`
	Reason   string            `json:"reason,omitempty"` // one line: why the outcome is what it is
	Silences []Silence         `json:"silences"`
	Timeline []Phase           `json:"timeline"`
	Findings []record.Finding  `json:"findings"`
	Verdict  string            `json:"verdict,omitempty"`
	Logs     []string          `json:"logs"`
	Versions map[string]string `json:"versions,omitempty"`
	// Patches is the patch series state recorded with --patches, as the
	// patchset package reports it.
	Patches *PatchState `json:"patches,omitempty"`
	Lines   int64       `json:"lines"` // output lines saved
	Bytes   int64       `json:"bytes"` // output bytes saved
	// CPU is what watching cost next to what the boot used (rusage).
	CPU *CPU `json:"cpu,omitempty"`

	// Updated is when the watcher last saved the run; a lost run ended at
	// the latest then, as far as anyone knows.
	Updated time.Time `json:"updated,omitzero"`
	// Watcher identifies the bringup process that watched the boot, so a
	// later bringup can tell a live watcher from a dead one.
	Watcher *Watcher `json:"watcher,omitempty"`
	// Procs is the boot's live processes at the last save (at most
	// MaxProcs): what a lost run may have left running.
	Procs []BootProc `json:"procs,omitempty"`
	// Output is what happened to the boot's output besides what was saved
	// (Lines, Bytes): what it printed, a write error, the terminal copy.
	Output *Output `json:"output,omitempty"`
	// Survivors are the processes of a lost run's boot found still running
	// (and whether they were stopped).
	Survivors []BootProc `json:"survivors,omitempty"`
	// Stop says who stopped the boot and when: what it printed after that
	// is the stop's doing (a SIGTERM handler's traceback), not a failure of
	// the boot.
	Stop *Stop `json:"stop,omitempty"`
	// Probe is what watch --probe recorded: the reports' findings and the
	// processes that did not load the probe.
	Probe *Probe `json:"probe,omitempty"`
}

// Probe is the exception probe's part of a run (watch --probe).
type Probe struct {
	Spec      string           `json:"spec"`
	Dir       string           `json:"dir"`    // RUN_DIR/probe
	Loaded    int              `json:"loaded"` // processes that loaded it
	NotLoaded []ProbeMissing   `json:"not_loaded,omitempty"`
	Problems  []string         `json:"problems,omitempty"` // report files that could not be read
	Findings  []record.Finding `json:"findings"`
}

// ProbeMissing is a Python process of the boot that did not load the probe.
type ProbeMissing struct {
	PID     int    `json:"pid"`
	Process string `json:"process"`
	Reason  string `json:"reason"`
}

// Stop is the moment the watcher started stopping the boot.
type Stop struct {
	// By is StopByWatch (ready, hung, timeout, --env-strict, what was left
	// after the boot's main process ended) or StopByUser (Ctrl-C, SIGTERM
	// or SIGHUP to bringup).
	By     string    `json:"by"`
	Signal string    `json:"signal,omitempty"` // the signal the user sent bringup ("interrupt")
	At     time.Time `json:"at"`
	// Line is how many lines the boot had printed by then: output.log's
	// later lines came after the stop.
	Line int64 `json:"line"`
	// LastOutput is when the boot last printed before the stop.
	LastOutput time.Time `json:"last_output,omitzero"`
	// After are the failures the boot printed after the stop ("KeyboardInterrupt:
	// terminated (output.log:42)"): recorded as the stop's, never as findings.
	After []string `json:"after,omitempty"`
}

// Who stopped a boot.
const (
	StopByWatch = "watch"
	StopByUser  = "user"
)

// MaxProcs bounds Run.Procs.
const MaxProcs = 1024

// Watcher is the identity of the watching bringup process: a pid is the
// same process only with the same start time on the same boot of the same
// host, seen from the same pid namespace.
type Watcher struct {
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"` // field 22 of /proc/PID/stat
	BootID     string `json:"boot_id"`     // /proc/sys/kernel/random/boot_id
	Host       string `json:"host"`
	PIDNS      string `json:"pid_ns,omitempty"` // /proc/self/ns/pid link text
	Guardian   int    `json:"guardian_pid,omitempty"`
	// GuardianStartTicks tells the guardian from a process that got its
	// pid later.
	GuardianStartTicks uint64 `json:"guardian_start_ticks,omitempty"`
	// PGID and BootStartTicks are the boot's process group and its main
	// process's start time: a process in the group started no earlier is
	// the boot's.
	PGID           int    `json:"pgid,omitempty"`
	BootStartTicks uint64 `json:"boot_start_ticks,omitempty"`
}

// BootProc is one process of the boot.
type BootProc struct {
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
	Process    string `json:"process,omitempty"` // command line, shortened
	// State of a survivor: SurvivorRunning when last looked at,
	// SurvivorStopped (by bringup --stop-lost) or SurvivorGone (ended by
	// itself since).
	State string `json:"state,omitempty"`
}

// Survivor states.
const (
	SurvivorRunning = "running"
	SurvivorStopped = "stopped"
	SurvivorGone    = "gone"
)

// Output is what happened to the boot's output. Run.Lines and Run.Bytes
// are what reached output.log; Lines and Bytes here are what the boot
// printed.
type Output struct {
	Lines int64 `json:"lines"`
	Bytes int64 `json:"bytes"`
	// Error says where output.log stops short and why: "output incomplete
	// at line N: <error>".
	Error string `json:"error,omitempty"`
	// RunJSONError: run.json could not be written in the run directory
	// (this record, in the store, is the run's only record).
	RunJSONError string `json:"run_json_error,omitempty"`
	// TerminalDropped is the number of lines left out of the terminal copy
	// because the terminal did not keep up (output.log has them).
	TerminalDropped int64 `json:"terminal_dropped,omitempty"`
	// TerminalClosed names a terminal stream that stopped taking output
	// ("stdout: write: broken pipe"); the boot went on.
	TerminalClosed []string `json:"terminal_closed,omitempty"`
}

// CPU is user+system CPU time of the watcher and of the boot's processes
// (those reaped while watching), in seconds.
type CPU struct {
	WatchSeconds float64 `json:"watch_s"`
	BootSeconds  float64 `json:"boot_s"`
}

// EnvCheck is one process whose environment did not carry what was
// requested.
type EnvCheck struct {
	PID       int                `json:"pid"`
	Rank      string             `json:"rank,omitempty"`
	Process   string             `json:"process"` // command line, shortened
	Missing   []string           `json:"missing"`
	Different map[string]EnvDiff `json:"different"`
	At        time.Time          `json:"at"`
}

// EnvSeen is what one process got of the requested variables.
type EnvSeen struct {
	PID     int               `json:"pid"`
	Rank    string            `json:"rank,omitempty"`
	Process string            `json:"process"`
	Env     map[string]string `json:"env"`
}

// EnvDiff is a variable that reached a process with another value.
type EnvDiff struct {
	Want string `json:"want"`
	Got  string `json:"got"`
}

// Silence is one stretch without output that triggered a stack capture.
type Silence struct {
	At         time.Time `json:"at"`
	Seconds    float64   `json:"seconds"`
	StacksPath string    `json:"stacks_path,omitempty"`
	GPUBusy    string    `json:"gpu,omitempty"` // GPU utilisation seen, when a tool exists
	Summary    string    `json:"summary,omitempty"`
}

// Phase is one stretch of startup on one rank, the pipeline's one phase
// type; a stored run's timeline is its JSON (Path and EndLine left empty:
// the phases of a run are read from its output.log).
type Phase = record.Phase

// OpenSeconds is how long an open phase (opened, never closed) lasted: in
// a run watch stopped (Stop), the length it measured from the line that
// opened the phase to the stop; else at least from its start to the end
// of the run, when its start lies within
// the run (ok). The phase's own Seconds, as far as the log tells, often
// reads 0 with second-resolution log stamps; a start outside the run (a
// log clock in another zone) gives ok false.
func (r *Run) OpenSeconds(p Phase) (float64, bool) {
	if p.Open && r.Stop != nil && p.Seconds > 0 {
		// Watch measured it: from the line that opened it to the stop.
		return p.Seconds, true
	}
	if !p.Open || p.Start.IsZero() || r.Ended.IsZero() || !r.Ended.After(p.Start) || r.Ended.Sub(p.Start) > r.Duration()+time.Minute {
		return 0, false
	}
	return r.Ended.Sub(p.Start).Seconds(), true
}

// PatchState is a patch series' state when the run started.
type PatchState struct {
	Dir     string `json:"dir"`
	State   string `json:"state"` // as patchset names it, e.g. "applied"
	OK      bool   `json:"ok"`
	Summary string `json:"summary,omitempty"`
}

// Incomplete reports whether output.log lacks some of the boot's output.
func (r *Run) Incomplete() bool { return r.Output != nil && r.Output.Error != "" }

// Done reports whether the run has ended.
func (r *Run) Done() bool { return r.Outcome != OutcomeRunning && r.Outcome != "" }

// Duration is how long the run lasted (until now when still running).
func (r *Run) Duration() time.Duration {
	if r.Ended.IsZero() {
		return time.Since(r.Started)
	}
	return r.Ended.Sub(r.Started)
}
