package watch

import (
	"context"
	"time"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/stacks"
	"github.com/bringup-tool/bringup/store"
)

// The supervisor decides nothing about log text, stacks or failures itself:
// it feeds output lines to a Tracker, hands pids to a Capture and the
// finished run to a Diagnose. pipeline.go wires them to the timeline
// analyzer, the stacks package and the diagnose pipeline.

// Tracker follows the boot's output as it is printed.
type Tracker interface {
	// Write takes whole output lines as the boot printed them (raw bytes,
	// each ending in '\n'); data is reused afterwards. Called from one
	// goroutine at a time.
	Write(lines []byte)
	// Flush says the output has paused: a record held open waiting for
	// continuation lines is complete.
	Flush()
	// Finish says the boot is over: phases still open are closed as
	// unfinished or failed.
	Finish()
	// Ready reports whether an engine printed its ready line, and that line.
	Ready() (bool, string)
	// Phases is the timeline so far, one entry per rank and phase; a phase
	// still running is Open.
	Phases() []store.Phase
	// Rank is the rank a pid logged as (from its process prefix), "" when
	// unknown; Identity is all that prefix said of it (role, indices).
	Rank(pid int) string
	Identity(pid int) record.Rank
	// Versions are the versions the boot printed (vllm, torch, python …).
	Versions() map[string]string
}

// CaptureResult is one live stack capture of the boot's Python processes.
type CaptureResult struct {
	Path      string           // file in the run directory holding the capture (JSON)
	Text      string           // buckets and findings as a person reads them
	Findings  []record.Finding // what the stacks analysis concluded
	Processes int              // Python processes captured
	// Where is the headline: where the workers are (helpers, the API
	// server and launchers are never counted among them).
	Where stacks.Where
}

// CaptureRequest says what to capture and what the watcher knows about it.
type CaptureRequest struct {
	PIDs []int  // every live process of the boot; non-Python ones are skipped
	Dir  string // the run directory
	Name string // file name stem: "silence-1", "timeout"
	// Rank is what a pid's log prefix said of it (record.NoRank when
	// nothing): live captures of processes without a telling process
	// title get their rank and role from it.
	Rank     func(pid int) record.Rank
	Versions map[string]string // versions the boot printed (torch gates rules)
	// Snapshots, when set, overrides the configured number of snapshots
	// (one on Ctrl-C: where the boot was, at once).
	Snapshots int
}

// Capture takes several snapshots of the stacks of the boot's Python
// processes, writes them into the run directory and analyses them.
type Capture func(ctx context.Context, req CaptureRequest) (*CaptureResult, error)

// Diagnosis is what the diagnose pipeline concluded about a run's logs.
type Diagnosis struct {
	Verdict  string // one line, first thing printed
	Text     string // the full report as a person reads it
	Findings []record.Finding
}

// Diagnose runs the same pipeline as `bringup diagnose` over a finished
// run's logs (run.Logs) and judges its findings with what watch saw: its
// stack captures, the stop (run.Stop) and when each line arrived.
type Diagnose func(ctx context.Context, run *store.Run, ev Evidence) (*Diagnosis, error)

// Evidence is what the watcher knows of a run beyond its log.
type Evidence struct {
	// Captures are the stack captures of the run, oldest first.
	Captures []*CaptureResult
	// Arrived says when line n of output.log was printed (zero: unknown).
	Arrived func(n int) time.Time
}
