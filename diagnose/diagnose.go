// Package diagnose is the pipeline behind `bringup diagnose`: inputs (files,
// directories, stdin) are sniffed by kind, engine logs are parsed into
// records and analysed (tracebacks, startup timeline, versions), other kinds
// go to the analyzer registered for them, and every resulting Subject is
// matched against the rules knowledge base. The result is a Diagnosis model
// that renderers print; nothing here formats output.
package diagnose

import (
	"strings"
	"time"

	"github.com/bringup-tool/bringup/record"
)

// Schema is the JSON schema id of a Diagnosis.
const Schema = "bringup.diagnosis/v1"

// Diagnosis is everything diagnose concluded about a set of inputs.
type Diagnosis struct {
	Schema string `json:"schema"`
	// Status is "failed" (an error-level finding), "warnings" or "ok".
	Status string `json:"status"`
	// Verdict is one sentence: what failed, on which ranks, in which phase.
	Verdict string `json:"verdict"`
	// Root, RaisedIn and PhaseWhy are the top finding's: the concrete
	// error, where it was raised, and why its phase is what the verdict
	// says; empty when not known.
	Root     string            `json:"root,omitempty"`
	RaisedIn string            `json:"raised_in,omitempty"`
	PhaseWhy string            `json:"phase_why,omitempty"`
	Inputs   []Input           `json:"inputs"`
	Versions map[string]string `json:"versions"`
	Findings []record.Finding  `json:"findings"`
	Errors   []Error           `json:"errors"`
	// Timeline is every startup phase of every rank; its wire shape is
	// report/diagnosis.Phase (the schema names the phase "phase").
	Timeline []record.Phase `json:"-"`
	Gaps     []Gap          `json:"gaps"`
	// Facts holds what registered analyzers of other kinds report about
	// their inputs, keyed by path.
	Facts map[string]any `json:"facts,omitempty"`
	// Hang is the outcome of a boot that hung, timed out or was
	// interrupted (hang.Hung …) when the verdict is the hang's
	// (hang.Verdict, the one watch forms): from a run directory's run.json,
	// or "hung" for a log that ends inside a phase with stack dumps given
	// beside it. The run failed, as watch's did (exit status 1).
	Hang string `json:"hang,omitempty"`

	// hangLine is the hang's verdict, which verdict() gives while set.
	hangLine string
}

// Input is one file (or stdin) that was read, or could not be.
type Input struct {
	Path    string `json:"path"`
	Kind    string `json:"kind"` // ingest format name; "" when not recognised
	Bytes   int64  `json:"bytes"`
	Records int64  `json:"records"`
	Skipped int64  `json:"skipped"`
	// SkipSamples locate the first skipped lines.
	SkipSamples []record.Skip `json:"skip_samples,omitempty"`
	// Error says why the input was not (fully) used; empty when it was.
	Error string `json:"error,omitempty"`
}

// Error is a root exception (wrappers unwrapped), once per distinct error
// with every rank that raised it.
type Error struct {
	Rank      string         `json:"rank"`
	PID       int            `json:"pid,omitempty"`
	Ranks     []string       `json:"ranks"`
	Count     int            `json:"count"`
	Exception string         `json:"exception"`
	Message   string         `json:"message"`
	Frames    []record.Frame `json:"frames"`
	Path      string         `json:"path"`
	Line      int            `json:"line"`
	// Rules are the findings that explain this error.
	Rules []string `json:"rules"`
}

// Gap is a long silent stretch of a log.
type Gap struct {
	Path    string    `json:"path"`
	Line    int       `json:"line"`
	Start   time.Time `json:"start"`
	Seconds float64   `json:"seconds"`
}

// HasErrors reports whether an error-level finding was made or the run
// hung, timed out or was interrupted (Hang): the exit status 1 of
// diagnose, the same as watch's for that run.
func (d *Diagnosis) HasErrors() bool {
	return record.HasError(d.Findings) || d.Hang != ""
}

// Note is the input's problem as one line that starts with its location:
// "path: reason", or the reason alone when it already names the path
// ("path:12: …").
func (in Input) Note() string {
	if strings.HasPrefix(in.Error, in.Path+":") {
		return in.Error
	}
	return in.Path + ": " + in.Error
}
