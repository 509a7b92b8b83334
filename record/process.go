package record

// The stack model: what ingest/stackdump and live captures build, and
// stacks analyses.

// Source says where a process's stacks came from.
const (
	SourceFile = "file" // a dump file (py-spy, faulthandler, pystack, a log)
	SourceLive = "live" // captured now from a running process
)

// Process is one Python process as one dump shows it.
type Process struct {
	PID int `json:"pid"`
	// Rank is the worker identity as a person reads it ("TP3", "rank2",
	// "PP2 TP1"); empty when unknown.
	Rank string `json:"rank"`
	// RankInfo is what was understood of the rank; not serialised (Rank is).
	RankInfo Rank   `json:"-"`
	Name     string `json:"name"` // process title or command line
	// Role says what the process is when it is not a worker (RoleLabel
	// spells it out): a helper such as multiprocessing's resource
	// tracker, or an engine's API server or engine core. Analyze fills
	// it in from the name, the rank's role word and the main thread's
	// frames when the producer did not.
	Role   string `json:"role,omitempty"`
	Python string `json:"python"` // "3.12.3"; empty when unknown
	Source string `json:"source"` // SourceFile or SourceLive
	PPID   int    `json:"ppid,omitempty"`
	// Path and Line locate the dump (or its first line) in its input.
	Path string `json:"path,omitempty"`
	Line int    `json:"line,omitempty"`
	// CapturedBy is the command that captured a live process bringup's
	// own reader could not read ("py-spy dump --nonblocking --pid N").
	CapturedBy string `json:"captured_by,omitempty"`
	// Snapshot numbers repeated dumps of the same process, from 0 in the
	// order they were taken (or read).
	Snapshot int      `json:"snapshot,omitempty"`
	Threads  []Thread `json:"threads"`
}

// Thread is one thread of one process.
type Thread struct {
	// TID is the thread id as the dump printed it: the OS thread id for
	// py-spy on Linux and for live captures, the pthread id for
	// faulthandler and old py-spy (then Ident holds its hex spelling).
	TID   uint64 `json:"tid"`
	Ident string `json:"ident,omitempty"`
	Name  string `json:"name,omitempty"`
	// State is the dumper's word: idle, active, active+gil, gil, current
	// (faulthandler's "Current thread"); empty when not printed.
	State string `json:"state,omitempty"`
	// Main marks the process's main thread when the dump says so.
	Main bool `json:"main,omitempty"`
	// Frames are innermost first.
	Frames Stack `json:"frames"`
	// Truncated means the root side of the stack is missing (faulthandler's
	// 100-frame cap, or an excerpt that starts mid-thread), so only the
	// innermost frames can be aligned.
	Truncated bool `json:"truncated,omitempty"`
	// Partial means the leaf side is unconfirmed: a live capture read a
	// thread that kept running, so Frames holds only the outer frames two
	// reads agreed on and the innermost frame is not where it is now.
	Partial bool `json:"partial,omitempty"`
	// Line is the 1-based line of the thread's header in Process.Path.
	Line int `json:"line,omitempty"`
}

// Warning is the stack model's name for a Skip: a dump's input that could
// not be understood, with its location. Its v1 JSON ("message" for the
// reason, "path" always present) is report/stacks' wire shape.
type Warning = Skip

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
