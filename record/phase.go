package record

import "time"

// Phase is one stretch of startup on one rank (load, dynamo, inductor, a
// cache load or save, cudagraph capture, ready): the one phase type of
// the pipeline. The engine-log timeline finds them, watch keeps them in a
// run, diagnose reports them. Its JSON is the stored run's timeline entry
// (store); a document whose keys differ (bringup.diagnosis/v1 names the
// phase "phase" and always writes every key) has its own wire shape
// (report/diagnosis.Phase).
//
// A TORCH_TRACE's compile span (compiles.Span) is not one of these: it
// is a chromium span of one process in microseconds since the epoch
// (start_us, dur_us, its nesting depth and compile id), the evidence of
// a startup phase; compiles.PhaseOf names the startup phase a span
// belongs to.
type Phase struct {
	Rank   string `json:"rank,omitempty"`
	Name   string `json:"name"`
	Detail string `json:"detail,omitempty"` // shape or compile range of an Inductor phase
	// Status is PhaseDone, PhaseFailed or PhaseUnfinished.
	Status  string    `json:"status,omitempty"`
	Start   time.Time `json:"start,omitzero"`
	End     time.Time `json:"end,omitzero"`
	Seconds float64   `json:"seconds"`
	Open    bool      `json:"open,omitempty"` // opened and never closed
	// Line is the line the phase opened at (for a close-only marker, the
	// line that closed it; 0: unknown), in Path.
	Line int `json:"line,omitempty"`
	// Path is the input the phase was read from (empty where the
	// containing document names it, as a stored run's output.log).
	Path    string `json:"path,omitempty"`
	EndLine int    `json:"end_line,omitempty"` // the line that closed it
	// Until is what an unfinished phase's length runs to, where a
	// diagnosis knows it (diagnose.UntilStop: the run's stop, as watch
	// measured it; diagnose.UntilLastLine: the log's last timestamp);
	// empty in a stored run.
	Until string `json:"until,omitempty"`
}

// A phase's status.
const (
	PhaseDone       = "done"
	PhaseFailed     = "failed"     // opened, then an error on that rank before it closed
	PhaseUnfinished = "unfinished" // opened, never closed, no error seen
)
