package watch

import (
	"context"

	"github.com/bringup-tool/bringup/record"
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
	// unknown.
	Rank(pid int) string
	// Versions are the versions the boot printed (vllm, torch, python …).
	Versions() map[string]string
}

// CaptureResult is one live stack capture of the boot's Python processes.
type CaptureResult struct {
	Path      string           // file in the run directory holding the capture (JSON)
	Text      string           // buckets and findings as a person reads them
	Findings  []record.Finding // what the stacks analysis concluded
	Processes int              // Python processes captured
}

// CaptureRequest says what to capture and what the watcher knows about it.
type CaptureRequest struct {
	PIDs []int  // every live process of the boot; non-Python ones are skipped
	Dir  string // the run directory
	Name string // file name stem: "silence-1", "timeout"
	// Rank is the rank a pid logged as ("" when unknown): live captures of
	// processes without a telling process title get their rank from it.
	Rank     func(pid int) string
	Versions map[string]string // versions the boot printed (torch gates rules)
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
// run's logs (run.Logs) and stack captures.
type Diagnose func(ctx context.Context, run *store.Run) (*Diagnosis, error)
