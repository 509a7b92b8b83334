// Package record is bringup's shared vocabulary: the Sources it reads, the
// Records it parses out of them, the Ranks those records belong to, and the
// Frames and Stacks of Python processes. Every other package speaks in these
// types; none of them decides anything.
package record

import (
	"fmt"
	"strconv"
	"time"
)

// Kind says what a Record was parsed from. Log lines are the only kind:
// a TORCH_TRACE envelope is a torchtrace.Event and a stack-dump thread a
// Thread.
type Kind uint8

const (
	KindLogLine Kind = iota // an engine/launcher/PyTorch log line with its continuation lines
)

func (k Kind) String() string {
	switch k {
	case KindLogLine:
		return "log"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Level is a log level as the producer printed it, normalised to upper case
// full words (ERROR, WARNING, INFO, DEBUG, CRITICAL). Empty when unknown.
type Level string

const (
	LevelCritical Level = "CRITICAL"
	LevelError    Level = "ERROR"
	LevelWarning  Level = "WARNING"
	LevelInfo     Level = "INFO"
	LevelDebug    Level = "DEBUG"
)

// Record is one parsed unit of a source.
type Record struct {
	Source  string // path of the input, "-" for stdin
	Line    int    // 1-based first physical line
	EndLine int    // 1-based last physical line (== Line for a single line)
	Kind    Kind
	Rank    Rank
	// Time is the producer's timestamp; zero when the line carries none.
	// vLLM prints no year: such times carry year 0.
	Time    time.Time
	Level   Level
	Emitter string // the emitting source as printed, e.g. "multiproc_executor.py:815"
	// Labels are the peeled outer prefixes (collector, container, Ray actor)
	// kept for display; Rank holds what was understood of them.
	Labels []string
	// Text is the body with every prefix peeled; continuation lines are
	// joined with "\n".
	Text string
	// Repeat is how many times a collector says the line was repeated
	// (Ray's "[repeated 30x across cluster]"); 0 when not said.
	Repeat int
}

// Location is where a record or a piece of evidence sits: "path:line".
func (r Record) Location() string { return fmt.Sprintf("%s:%d", r.Source, r.Line) }

// Rank is the worker identity a record belongs to, as far as the input
// tells it. Unknown indices are -1; an unknown pid is 0.
type Rank struct {
	Role   string // process role as printed: Worker, EngineCore, APIServer, scheduler, RayWorkerWrapper …
	DP     int
	PP     int
	TP     int
	EP     int
	Global int // torchrun / launcher rank ("[rank3]:", "[default3]:", "rank=3")
	PID    int
}

// NoRank is the zero identity: nothing known.
var NoRank = Rank{DP: -1, PP: -1, TP: -1, EP: -1, Global: -1}

// Known reports whether anything at all is known about the identity.
func (r Rank) Known() bool {
	return r.Role != "" || r.DP >= 0 || r.PP >= 0 || r.TP >= 0 || r.EP >= 0 || r.Global >= 0 || r.PID > 0
}

// Key is the rank's identity without the pid and role, e.g. "DP0 TP3",
// "rank 2"; empty when no index is known. Records of one worker share a key
// across restarts, which is what de-duplication by rank needs.
func (r Rank) Key() string {
	// Built with strconv into one buffer: Key is on the hot path of every
	// caller that names a record's rank (tracebacks, fatal lines, advice).
	var b [48]byte
	k := b[:0]
	part := func(name string, n int) {
		if n < 0 {
			return
		}
		if len(k) > 0 {
			k = append(k, ' ')
		}
		k = append(k, name...)
		k = strconv.AppendInt(k, int64(n), 10)
	}
	part("DP", r.DP)
	part("PP", r.PP)
	part("TP", r.TP)
	part("EP", r.EP)
	part("rank", r.Global)
	return string(k)
}

// String is the rank as a person reads it: "TP3", "EngineCore DP0",
// "rank2", "pid 4242", or "" when nothing is known.
func (r Rank) String() string {
	k := r.Key()
	switch {
	case k != "" && r.Role != "" && r.TP < 0 && r.Global < 0:
		return r.Role + " " + k
	case k != "":
		return k
	case r.Role != "" && r.PID > 0:
		return r.Role + " pid " + strconv.Itoa(r.PID)
	case r.Role != "":
		return r.Role
	case r.PID > 0:
		return "pid " + strconv.Itoa(r.PID)
	}
	return ""
}

// Frame is one Python (or native) frame.
type Frame struct {
	Func   string `json:"func"` // qualified where known (Class.method)
	File   string `json:"file"`
	Line   int    `json:"line"`
	Native bool   `json:"native,omitempty"`
}

func (f Frame) String() string {
	if f.Line > 0 {
		return fmt.Sprintf("%s (%s:%d)", f.Func, f.File, f.Line)
	}
	return fmt.Sprintf("%s (%s)", f.Func, f.File)
}

// Stack is a list of frames, innermost first, as py-spy and faulthandler
// print them.
type Stack []Frame
