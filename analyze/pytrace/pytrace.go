// Package pytrace finds Python tracebacks in a stream of log records: per
// rank, so that ranks printing at the same time (TP=8 workers interleaving
// line by line) each get their own; with chains ("The above exception was
// the direct cause…", "During handling…"), caret lines, "[Previous line
// repeated N more times]", Dynamo's "from user code:" section and
// exception groups. Root names the first real error behind the wrappers.
package pytrace

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/bringup-tool/bringup/litscan"
	"github.com/bringup-tool/bringup/record"
)

// Exception is one exception of a chain.
type Exception struct {
	Type     string       `json:"type"`
	Message  string       `json:"message"`
	Frames   record.Stack `json:"frames"`              // innermost first
	UserCode record.Stack `json:"user_code,omitempty"` // Dynamo's "from user code:" section, innermost first
	// Relation is how the NEXT exception in the chain relates to this one:
	// "cause" ("The above exception was the direct cause…"), "context"
	// ("During handling…"), "group" (the next ones are members of this
	// exception group), or "".
	Relation string `json:"relation,omitempty"`
	Line     int    `json:"line"` // line of the "Type: message" line in the source; 0 when absent
	// Code is the source line printed under each frame (same index as
	// Frames), "" where none was printed.
	Code []string `json:"code,omitempty"`
	// Repeated is, per frame (same index as Frames), N of a following
	// "[Previous line repeated N more times]"; nil when no frame repeats.
	Repeated []int `json:"repeated,omitempty"`
	// FromSource: the exception line was cut off and Type and Message are
	// read from the `raise …(…)` source line of the innermost frame.
	FromSource bool `json:"from_source,omitempty"`
	// Reported: an engine line reported the error in its own words
	// ("… failed with error: …"); Type is "Error" and Message the line.
	Reported bool `json:"reported,omitempty"`
	// TypeRead says where Type was read from when the exception line
	// itself was not printed ("Dynamo's message form": see dynamoTitle).
	TypeRead string `json:"type_read,omitempty"`
}

// Traceback is one printed traceback with its chain.
type Traceback struct {
	Source  string      `json:"source"`
	Line    int         `json:"line"`
	EndLine int         `json:"end_line"`
	Rank    record.Rank `json:"rank"`
	Chain   []Exception `json:"chain"` // in printed order; the last one is what was finally raised
	// Truncated is set when the text ends before an exception line (a
	// pasted excerpt, a killed process) or starts mid-traceback.
	Truncated bool `json:"truncated,omitempty"`
	// Frameless is set for an exception printed without a traceback: an
	// exception line on its own ("RuntimeError: …", also after a
	// "… raised:" line), a one-liner that names it ("Scheduler hit an
	// exception: ValueError: …"), or a faulthandler report ("Fatal Python
	// error: Segmentation fault", whose frames are kept).
	Frameless bool `json:"frameless,omitempty"`
	// Level is the log level of the record the traceback started in, ""
	// when the line carried none.
	Level record.Level `json:"level,omitempty"`
	// Ignored: Python printed it under "Exception ignored in: …" (an
	// exception in __del__, a callback or a thread's cleanup): the program
	// went on.
	Ignored bool `json:"ignored,omitempty"`
	// Head is the line the traceback started on, trimmed and clipped to
	// maxHead bytes: its header line, or the exception line of one printed
	// without frames; "" when it starts at a frame (its header cut off).
	// For one cut before its exception line, the log's own words for it
	// ("Scheduler hit an exception: Traceback (most recent call last):"
	// names who reported it).
	Head string `json:"head,omitempty"`
	// Ending is the line in which the process said, just before the
	// exception, that an exception ends it ("Caught an exception,
	// terminating children"; see endingWords), "" when none did. Level is
	// then error: what the process logged at a lower level killed it.
	Ending string `json:"ending,omitempty"`
	// Before is the line logged at error level right before the header,
	// on the same stream, clipped to maxHead: logging's exception() prints
	// its message there and the traceback after it (vLLM's engine prints
	// the exception's own text: "ERROR … engine.py:387] not enough values
	// to unpack"). For a traceback cut before its exception line it is
	// the log's words for the error; "" when there is none.
	Before string `json:"before,omitempty"`
}

// maxHead bounds Traceback.Head.
const maxHead = 200

// Final is the exception that was finally raised (the last printed).
func (t Traceback) Final() Exception {
	if len(t.Chain) == 0 {
		return Exception{}
	}
	return t.Chain[len(t.Chain)-1]
}

// Root is the first root error, not a wrapper that re-raised it: the first
// exception in printed order that is not a wrapper (an exception group
// stands for its first member), where a wrapper whose
// message names the inner error (BackendCompilerFailed "raised:",
// InductorError "<Type>: <msg>", SGLang "Capture cuda graph failed: …")
// stands for that inner error.
func (t Traceback) Root() Exception {
	for _, e := range t.Chain {
		if e.Type == "" || e.Relation == "group" {
			continue
		}
		if in, ok := Unwrap(e); ok {
			e = in
		}
		if !IsWrapper(e) {
			return e
		}
	}
	for _, e := range t.Chain {
		if e.Type != "" {
			if in, ok := Unwrap(e); ok {
				return in
			}
			return e
		}
	}
	if len(t.Chain) > 0 {
		return t.Chain[0]
	}
	return Exception{}
}

// rustCauses heads the causes of a Rust program's error chain.
const rustCauses = "Caused by:"

// wrapperTypes are exception types that only carry another error.
var wrapperTypes = []string{"BackendCompilerFailed", "InductorError"}

// wrapperMessages mark exceptions raised only to report an earlier failure
// (../shared/reference/signatures.md §2).
var wrapperMessages = []string{
	"WorkerProc hit an exception",
	"WorkerProc failed to start",
	"EngineCore failed to start",
	"Engine core initialization failed",
	"Capture cuda graph failed",
	"Capture CUDA graph failed",
	"Capture Prefill cuda graph failed",
	"Scheduler hit an exception",
	"please check the stack trace above for the root cause", // vLLM collective_rpc re-raise
	"See root cause above",
	// torch's wrapper of a device backend's import error, printed after it.
	"Failed to load the backend extension",
	// torch elastic's RendezvousConnectionError: the store's own error (the
	// c10d socket's timeout) is logged before it.
	"See inner exception for details",
	// ATOM's engine-core manager when a data-parallel rank's process went
	// away during start-up: that rank's own error is the failure.
	"Received unexpected SHUTDOWN signal from",
}

// launcherErrors are the errors TGI's launcher ends with when its shards
// or its webserver failed ("Error: ShardCannotStart"): the shard's own
// error is logged before it. Only the whole first line of the message
// counts (a traceback's message may run on into the line).
var launcherErrors = map[string]bool{"ShardCannotStart": true, "ShardFailed": true, "WebserverFailed": true}

// IsWrapper reports whether e only wraps another error.
func IsWrapper(e Exception) bool {
	if first, _, _ := strings.Cut(e.Message, "\n"); e.Type == "Error" && launcherErrors[strings.TrimSpace(first)] {
		return true
	}
	short := shortType(e.Type)
	for _, w := range wrapperTypes {
		if short == w {
			return true
		}
	}
	for _, m := range wrapperMessages {
		if strings.Contains(e.Message, m) {
			return true
		}
	}
	return false
}

// Unwrap returns the inner error a wrapper's message names, with the
// wrapper's frames and location.
func Unwrap(e Exception) (Exception, bool) {
	msg := e.Message
	var inner string
	switch short := shortType(e.Type); {
	case short == "BackendCompilerFailed":
		// "backend='inductor' raised:\nAssertionError: …" or older
		// "inductor raised AssertionError: …".
		if k := strings.Index(msg, "raised:"); k >= 0 {
			inner = strings.TrimLeft(msg[k+len("raised:"):], " \n")
		} else if k := strings.Index(msg, " raised "); k >= 0 {
			inner = msg[k+len(" raised "):]
		}
	case short == "InductorError":
		inner = msg
	case e.Type == "Error" && strings.Contains(msg, "\n"+rustCauses):
		// A Rust error chain: its innermost cause, the last one listed
		// ("    1: grpc request error: … tcp connect error: Connection
		// refused (os error 111)").
		causes := msg[strings.Index(msg, "\n"+rustCauses)+1+len(rustCauses):]
		first, last := "", ""
		for _, l := range strings.Split(causes, "\n") {
			t := strings.TrimSpace(l)
			if k := strings.Index(t, ": "); k > 0 && strings.Trim(t[:k], "0123456789") == "" {
				last = t[k+2:]
			} else if first == "" {
				first = t // one cause is printed without a number
			}
		}
		if last == "" {
			last = first
		}
		if last == "" {
			return Exception{}, false
		}
		out := e
		out.Message = last
		return out, true
	case short == "CompilationError" && strings.Contains(e.Type, "triton"):
		// Triton's "at 1:0:", the kernel's source, a caret, then the
		// cause's repr on the last line: ValueError("type fp8e4nv not
		// supported in this architecture. …").
		m := strings.TrimRight(msg, "\n ")
		inner = strings.TrimSpace(m[strings.LastIndexByte(m, '\n')+1:])
	default:
		for _, m := range []string{"Capture cuda graph failed: ", "Capture CUDA graph failed: ", "Capture Prefill cuda graph failed: "} {
			if k := strings.Index(msg, m); k >= 0 {
				inner = msg[k+len(m):]
			}
		}
	}
	if inner == "" {
		return Exception{}, false
	}
	first, rest, _ := strings.Cut(inner, "\n")
	typ, m, ok := exceptionLine(first)
	if !ok {
		return Exception{}, false
	}
	if rest != "" && m != "" {
		m += "\n" + rest
	} else if rest != "" {
		m = rest
	}
	out := e
	out.Type, out.Message, out.Relation = typ, strings.TrimRight(m, "\n "), ""
	return out, true
}

// exceptionLine parses "pkg.Type: message" or "Type" at column 0.
func exceptionLine(s string) (typ, msg string, ok bool) {
	if s == "" {
		return "", "", false
	}
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (i > 0 && (c >= '0' && c <= '9' || c == '.')) {
			i++
			continue
		}
		// A C++ exception's qualified type ("tensorrt_llm::common::TllmException: …").
		if c == ':' && i > 0 && i+2 < len(s) && s[i+1] == ':' && (s[i+2] == '_' || s[i+2] >= 'A' && s[i+2] <= 'Z' || s[i+2] >= 'a' && s[i+2] <= 'z') {
			i += 2
			continue
		}
		break
	}
	if i == 0 || s[i-1] == '.' {
		return "", "", false
	}
	// An exception's repr ("ValueError(\"type fp8e4nv not supported …\")"),
	// as Triton prints its cause and an engine logs an error it caught.
	if i+2 < len(s) && s[i] == '(' && (s[i+1] == '"' || s[i+1] == '\'') && s[len(s)-1] == ')' && s[len(s)-2] == s[i+1] && fatalType(s[:i]) {
		return s[:i], s[i+2 : len(s)-2], true
	}
	// Ray's "ray.exceptions.RayTaskError(ValueError): …" names the
	// remote exception's class in parentheses.
	if i < len(s) && s[i] == '(' && looksLikeExceptionType(s[:i]) {
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] == '.' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		if j > i+1 && j < len(s) && s[j] == ')' {
			i = j + 1
		}
	}
	typ = s[:i]
	switch {
	case i == len(s):
		// A bare name is an exception line only if it looks like one.
		if !looksLikeExceptionType(typ) {
			return "", "", false
		}
		return typ, "", true
	case s[i] == ':' && (i+1 == len(s) || s[i+1] == ' '):
		if !looksLikeExceptionType(typ) && !strings.Contains(typ, ".") {
			return "", "", false
		}
		return typ, strings.TrimPrefix(s[i+1:], " "), true
	}
	return "", "", false
}

// shortType is a type's name without its module or namespace
// ("torch._dynamo.exc.Unsupported" → "Unsupported",
// "tensorrt_llm::common::TllmException" → "TllmException").
func shortType(t string) string {
	return t[max(strings.LastIndexByte(t, '.'), strings.LastIndexByte(t, ':'))+1:]
}

// remoteless is typ without the remote class Ray names after it:
// "ray.exceptions.RayTaskError(ValueError)" → "ray.exceptions.RayTaskError".
func remoteless(typ string) string {
	if k := strings.IndexByte(typ, '('); k > 0 && typ[len(typ)-1] == ')' {
		return typ[:k]
	}
	return typ
}

// looksLikeExceptionType: Python exception classes end in Error, Exception,
// Warning, Interrupt, Exit, Failed… or are dotted (torch._dynamo.exc.Unsupported).
func looksLikeExceptionType(t string) bool {
	t = remoteless(t)
	short := shortType(t)
	if short == "" || !(short[0] >= 'A' && short[0] <= 'Z') {
		return false
	}
	for _, s := range []string{"Error", "Exception", "Warning", "Interrupt", "Exit", "Failed", "Iteration",
		"Unsupported", "Violation", "Group", "Missing", "NotFound", "Timeout"} {
		if strings.HasSuffix(short, s) {
			return true
		}
	}
	// A paste that lower-cased a letter ("Attributeerror").
	if l := strings.ToLower(short); strings.HasSuffix(l, "error") || strings.HasSuffix(l, "exception") {
		return true
	}
	return strings.Contains(t, ".")
}

type state uint8

const (
	stIdle state = iota
	stFrames
	stMessage
	stUserCode
	stChainWait
	stNative // a faulthandler report: "Fatal Python error: …" and its thread stacks
)

// identity is what makes two records one log call: vLLM logs a
// traceback with the same header on every line, so lines with another
// header belong to something else.
type identity struct {
	emitter string
	level   record.Level
	sec     int64
	headed  bool
}

func identityOf(r *record.Record) identity {
	id := identity{emitter: r.Emitter, level: r.Level}
	if !r.Time.IsZero() {
		id.sec = r.Time.Unix()
		id.headed = true
	}
	if r.Emitter != "" || r.Level != "" {
		id.headed = true
	}
	return id
}

type streamKey struct {
	source string
	rank   record.Rank
}

// stream is the traceback state of one rank in one source.
type stream struct {
	state   state
	tb      *Traceback
	cur     *Exception
	id      identity
	inGroup bool
	members int // exception-group members seen
	// message under construction
	msg       []string
	msgClosed bool
	bare      bool // the exception line is its type alone (exceptionAt)
	// loggedBy, loggedLevel: the warning line right before the traceback,
	// whose exc_info it is if it starts in the logger's module (finish).
	loggedBy    string
	loggedLevel record.Level
	lastLine    int
	codeFor     int // index in cur.Frames whose source line may follow, -1 none
	// frameless: the exception line came without frames; its message
	// ends at a blank line or after maxFramelessLines.
	frameless bool
	blanks    int // blank lines in a row in a frameless message
	// wrapped: the start of a `File "…` line the paste wrapped before its
	// `", line N`; the next line completes it.
	wrapped string
	// nativeDone: the faulthandler report's crashing thread ended;
	// nativeCur: its "Current thread" header was seen (faulthandler lists
	// the threads newest first, so the crashing one need not be first).
	nativeDone, nativeCur bool
	// header: the traceback began with its "Traceback (most recent call
	// last):" line.
	header bool
	// flat: the last frame was printed at column 0 (see addFrame).
	flat bool
	// ipy: the exception's traceback is IPython's (see ipythonHeader).
	ipy bool
	// report: the traceback began at an engine's report line whose
	// message was to follow ("Scheduler hit an exception:"), and nothing
	// of it has yet (see reportHeader).
	report bool
	// source: the traceback began at a source line that raises, with no
	// frame before it (see cutToSource); what it raises is the error if
	// no exception line follows.
	source string
	// stackPrint: the frames that follow are a stack printed for
	// information (see stackIntro), not a traceback.
	stackPrint bool
	// title, titleN: the last idle line that may be the first line of
	// Dynamo's message (see dynamoTitle), and its line number.
	title       string
	titleN      int
	titleIndent string // the title line's indent (a paste's), before the Explanation's own
	// frameIndent: the indent of the last frame line; a paste that
	// indented the whole traceback puts its exception line below it
	// but not at column 0.
	frameIndent int
}

// stackIntro reports whether a line introduces a stack printed for
// information, whose frames are no traceback: Dynamo's graph-break and
// cudagraph-skip reports ("Graph break: … from user code at:", "skipping
// cudagraphs due to cpu device (arg2_1). Found from :", "User code
// traceback:") and Python logging's stack_info ("Stack (most recent call
// last):").
func endsStackIntro(text string) bool {
	t := strings.TrimRight(text, " \t")
	if !strings.HasSuffix(t, ":") {
		return false
	}
	return stackIntro(t[strings.LastIndexByte(t, '\n')+1:])
}

func stackIntro(t string) bool {
	t = strings.TrimRight(t, " \t")
	if !strings.HasSuffix(t, ":") {
		return false
	}
	return strings.HasSuffix(t, "from user code at:") || strings.HasSuffix(t, "Found from :") || strings.HasSuffix(t, "Found from:") ||
		strings.HasSuffix(t, "User code traceback:") || t == "Stack (most recent call last):"
}

// maxFramelessLines bounds the message of an exception printed without
// frames (a "… raised:" line and the inner error, an InductorError's IR).
const maxFramelessLines = 24

// tracebackStart: a record that opens no traceback stream holds this or
// `File "`, or none of the lines feed would act on. A strided scan of
// 8-byte windows instead of a byte search that stops at every 'T'.
var tracebackStart = litscan.New([]string{"Traceback (most recent call last)"})

// Extractor finds tracebacks in records fed in order.
type Extractor struct {
	streams map[streamKey]*stream
	prevErr prevLine // see notePrev
	out     []Traceback
	order   map[string]int // source -> first-seen order
	lastSrc string         // the source last noted in order
	noted   bool           // lastSrc is set
	// Dropped counts tracebacks not kept because MaxTracebacks was
	// reached, of those fed (a caller may stop feeding once Full).
	Dropped int
	// ignored: where a stream last printed "Exception ignored in" (the
	// traceback after it is marked Ignored).
	ignored map[streamKey]int
	// ending: where a stream last said, in a record logged below error,
	// that an exception ends it (see endingWords).
	ending map[streamKey]endingLine
	// frameHint is the frame count of the exception last given frames:
	// the first capacity of the next one's (a crash loop repeats one
	// traceback).
	frameHint int
	// spare are frame buffers of tracebacks already finished, for the
	// next ones: a kept traceback got copies of its own (detach), a
	// dropped one needs them no more.
	spare []frameBuf
	bufs  []frameBuf // finish's scratch
}

// frameBuf is the Frames and Code of one exception, to be reused.
type frameBuf struct {
	frames record.Stack
	code   []string
}

// maxSpare bounds the spare frame buffers (an exception chain or a few
// streams' worth), maxSpareCap the size of one kept.
const (
	maxSpare    = 16
	maxSpareCap = 256
)

// recycle keeps the frame buffers of tb's exceptions in x.spare.
func (x *Extractor) recycle(bufs []frameBuf) {
	for _, b := range bufs {
		if cap(b.frames) == 0 || cap(b.frames) > maxSpareCap || len(x.spare) >= maxSpare {
			continue
		}
		clear(b.frames[:cap(b.frames)]) // what they point to may go
		clear(b.code[:cap(b.code)])
		x.spare = append(x.spare, frameBuf{b.frames[:0], b.code[:0]})
	}
}

// endingWords are how a process says, in a line of its own logged at
// any level, that an exception it caught ends it ("Caught an exception,
// terminating children"): an exception it logs within endingLines after
// is fatal, whatever level it was logged at.
var endingWords = []string{"Caught an exception", "caught an exception", "terminating due to", "shutting down due to", "exiting due to an"}

// endingLines: how soon after its ending line a process logs the
// exception the line announced.
const endingLines = 3

type endingLine struct {
	line int
	text string
}

// noteEnding keeps the last line of rec, a record logged below error,
// that holds one of endingWords; it reports whether there was one.
func (x *Extractor) noteEnding(k streamKey, rec *record.Record) bool {
	found := false
	n := rec.Line
	for text := rec.Text; ; n++ {
		line, rest, more := strings.Cut(text, "\n")
		for _, w := range endingWords {
			if strings.Contains(line, w) {
				if x.ending == nil {
					x.ending = map[streamKey]endingLine{}
				}
				x.ending[k] = endingLine{n, strings.Clone(clipHead(strings.TrimSpace(line)))}
				found = true
				break
			}
		}
		if !more {
			break
		}
		text = rest
	}
	return found
}

// endedBy: rec, logged below error, follows closely on a line of its
// stream that said an exception ends the process; the line.
func (x *Extractor) endedBy(k streamKey, rec *record.Record) (string, bool) {
	e, ok := x.ending[k]
	if !ok {
		return "", false
	}
	if d := rec.Line - e.line; d <= 0 || d > endingLines {
		if d > endingLines {
			delete(x.ending, k)
		}
		return "", false
	}
	return e.text, true
}

func (x *Extractor) noteIgnoredAt(rec *record.Record, n int) {
	if x.ignored == nil {
		x.ignored = map[streamKey]int{}
	}
	x.ignored[streamKey{rec.Source, rec.Rank}] = n
}

func (x *Extractor) noteIgnored(k streamKey, rec *record.Record) {
	if x.ignored == nil {
		x.ignored = map[streamKey]int{}
	}
	n := rec.Line
	for text := rec.Text; ; n++ {
		line, rest, more := strings.Cut(text, "\n")
		if strings.Contains(line, ignoredWords) {
			x.ignored[k] = n
		}
		if !more {
			break
		}
		text = rest
	}
}

const (
	// MaxTracebacks bounds memory on huge logs; later ones are counted in
	// Dropped.
	MaxTracebacks = 20000
	maxFrames     = 2000
	maxMsgLines   = 200
	maxChain      = 64
)

// prevLine is the last line fed while no traceback was open, when its
// record was logged at error level or above (Traceback.Before).
type prevLine struct {
	key   streamKey
	line  int
	text  string       // trimmed, clipped, copied
	level record.Level // error or critical; warning or info for a line that says the program went on
	// emitter: a warning or info line's logger ("torch._inductor.codecache",
	// "codecache.py:649"), whose exc_info traceback starts in its module
	// (loggedBy); went: the line says the program went on (wentOn).
	emitter string
	went    bool
}

// notePrev keeps t, line n of rec, as the error line a traceback that
// starts on the next line may follow.
func (x *Extractor) notePrev(rec *record.Record, t string, n int) {
	if t == "" {
		return
	}
	switch rec.Level {
	case record.LevelError, record.LevelCritical:
	case record.LevelWarning, record.LevelInfo:
		// A warning that says the program went on without what failed
		// ("Encountered an exception in …, assuming every input is
		// mutated"), its traceback printed next (exc_info): the
		// traceback is the warning's. Without such words, the
		// traceback is the warning's when it starts in the logger's
		// own module (loggedBy).
		went := wentOn.Any(t)
		if !went && rec.Emitter == "" {
			return
		}
		x.prevErr = prevLine{key: streamKey{rec.Source, rec.Rank}, line: n, text: "-", level: rec.Level, emitter: rec.Emitter, went: went}
		return
	default:
		return
	}
	x.prevErr = prevLine{key: streamKey{rec.Source, rec.Rank}, line: n, text: strings.Clone(clipHead(t)), level: rec.Level}
}

// loggedBy reports whether a traceback whose outermost frame is f was
// printed by a logger named emitter with exc_info: a caught exception's
// traceback starts in the function that caught it, in the logger's
// module ("torch._inductor.codecache" and torch/_inductor/codecache.py,
// vLLM's "codecache.py:649" and …/codecache.py). A crash's traceback
// starts at the program's entry instead.
func loggedBy(emitter string, f record.Frame) bool {
	var suffix string
	if k := strings.Index(emitter, ".py:"); k > 0 {
		suffix = emitter[:k+3]
	} else if emitter != "" && !strings.ContainsAny(emitter, " /:") {
		suffix = strings.ReplaceAll(emitter, ".", "/") + ".py"
	}
	if suffix == "" || !strings.HasSuffix(f.File, suffix) {
		return false
	}
	n := len(f.File) - len(suffix)
	return n == 0 || f.File[n-1] == '/'
}

// wentOn: words with which a warning says the program carried on past
// the error it reports.
var wentOn = litscan.New([]string{"assuming ", "falling back", "fall back to", "ignoring it", "skipping it", "will retry", "retrying", "continuing without", "continuing with"})

// NewExtractor returns an empty Extractor.
func NewExtractor() *Extractor {
	return &Extractor{streams: map[streamKey]*stream{}, order: map[string]int{}}
}

// GateLiterals returns literals such that a record holding none of them
// opens no traceback: Skip may then be called instead of Add. The caller
// must not modify the slice.
func GateLiterals() []string { return gateWords }

var gateWords = append(append([]string{`File "`, "Traceback (most recent call last)", "Fatal Python error", ignoredWords, dynamoExplanation[1:]}, midPhrases...), endingWords...)

// ignoredWords start the line Python prints before a traceback it ignored.
const ignoredWords = "Exception ignored in"

// midPhrases are the one-liner phrases that name an exception in the
// middle of a line (see framelessLine); every other exception printed
// without a traceback starts its line, which LeadsException tells.
var midPhrases = []string{"hit an exception", "failed with error", "raised an exception", "Exception in worker", "Error in model execution"}

// LeadsException reports whether a line's body (prefixes peeled) may
// start an exception printed without a traceback: an exception type and
// ':' ("RuntimeError: …", "torch._dynamo.exc.Unsupported: …"), a
// faulthandler report, or a word that introduces one ("CRASH:", "ERROR:",
// pytest's "FAILED … - "), after a margin ("-->", "  -> "). It reads only
// the first bytes, for a parser's per-line stage; GateLiterals covers the
// rest.
func LeadsException(body []byte) bool {
	if len(body) == 0 {
		return false
	}
	return leadsException(unsafe.String(&body[0], len(body)))
}

func leadsException(body string) bool {
	i := elision(body)
	for i < len(body) && i < 12 && (body[i] == ' ' || body[i] == '\t' || strings.IndexByte("-=>#*", body[i]) >= 0) {
		i++
	}
	b := body[i:]
	if len(b) < 4 {
		return false
	}
	switch b[0] {
	case 'V', 'A':
		for _, w := range pydanticErrors {
			if strings.HasPrefix(b, w.lead) {
				return true
			}
		}
	case 'a':
		return strings.HasPrefix(b, "assert ") // pytest's report (framelessLine)
	case 'C', 'E', 'F', 'e':
		for _, w := range introducers {
			if strings.HasPrefix(b, w) {
				return true
			}
		}
		if errorDoing(b) {
			return true
		}
	}
	k := 0
	for k < len(b) && k < 120 {
		if c := b[k]; c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || k > 0 && c >= '0' && c <= '9' {
			k++
		} else if c == ':' && k > 0 && k+2 < len(b) && b[k+1] == ':' && b[k+2] != ' ' {
			k += 2 // a C++ namespace (exceptionLine)
		} else {
			break
		}
	}
	t := b[:k]
	// An exception's repr, "ValueError(\"…\")" (exceptionLine).
	if k+1 < len(b) && b[k] == '(' && (b[k+1] == '"' || b[k+1] == '\'') {
		return fatalType(t)
	}
	// Ray's "ray.exceptions.RayTaskError(ValueError): …" (exceptionLine).
	if k < len(b) && b[k] == '(' {
		if e := strings.IndexByte(b[k:min(len(b), k+80)], ')'); e > 0 && k+e+1 < len(b) {
			k += e + 1
		}
	}
	if len(t) == 0 || k >= len(b) || b[k] != ':' || !(b[0] >= 'A' && b[0] <= 'Z' || b[0] >= 'a' && b[0] <= 'z' || b[0] == '_') {
		return false
	}
	// (Also a type whose start an excerpt cut off, "untimeError:": the
	// reader decides.)
	l := strings.ToLower(t)
	return fatalType(t) || strings.HasSuffix(l, "error") || strings.HasSuffix(l, "exception")
}

// pydanticErrors are how pydantic prints an exception a validator raised,
// one line per error under "ValidationError: N validation error(s) for
// Model" (vLLM's config classes are pydantic dataclasses): "Value error,
// msg [type=value_error, …]". An excerpt may hold that line alone.
var pydanticErrors = []struct{ lead, typ string }{
	{"Value error, ", "ValueError"},
	{"Assertion failed, ", "AssertionError"},
}

// pydanticLine reads a line of pydanticErrors: the type it stands for and
// the message without pydantic's "[type=…]" tail.
func pydanticLine(line string) (typ, msg string, ok bool) {
	t := strings.TrimSpace(line)
	for _, w := range pydanticErrors {
		if m, ok := strings.CutPrefix(t, w.lead); ok && strings.TrimSpace(m) != "" {
			if k := strings.LastIndex(m, " [type="); k > 0 {
				m = m[:k]
			}
			return w.typ, strings.TrimSpace(m), true
		}
	}
	return "", "", false
}

// introducers start a line that names an exception after them.
var introducers = []string{"CRASH:", "ERROR:", "Error:", "error:", "FATAL:", "FAILED ", "ERROR ", "Fatal Python error"}

// Add feeds one record; call it for every record in order.
func (x *Extractor) Add(rec record.Record) { x.Feed(&rec) }

// Skip stands for Add of a record that holds none of GateLiterals, whose
// text the caller has not built: it reports true when Add would have done
// nothing with it. When it reports false (a traceback of the record's rank
// is open, so the record may continue it), the caller must call Add or
// Feed with the record's text.
func (x *Extractor) Skip(rec *record.Record) bool {
	if rec.Source != x.lastSrc || !x.noted {
		x.noteSource(rec.Source)
	}
	return len(x.streams) == 0 || x.streams[streamKey{rec.Source, rec.Rank}] == nil
}

// Full reports whether MaxTracebacks tracebacks are kept: Finish will
// return those, whatever is fed from now on (which only counts in
// Dropped), so a caller may stop feeding records.
func (x *Extractor) Full() bool { return len(x.out) >= MaxTracebacks }

// Idle reports whether Skip would report true for every record of
// source without reading it: no traceback is open, and source was seen
// before. A caller can test it once and pass over records untouched.
func (x *Extractor) Idle(source string) bool {
	return len(x.streams) == 0 && x.noted && x.lastSrc == source
}

func (x *Extractor) noteSource(src string) {
	if _, ok := x.order[src]; !ok {
		x.order[src] = len(x.order)
	}
	x.lastSrc, x.noted = src, true
}

// Feed is Add without copying the record; the Extractor keeps no pointer
// to rec.
func (x *Extractor) Feed(rec *record.Record) {
	if rec.Source != x.lastSrc || !x.noted {
		x.noteSource(rec.Source)
	}
	k := streamKey{rec.Source, rec.Rank}
	s := x.streams[k]
	ending := ""
	switch rec.Level {
	case record.LevelWarning, record.LevelInfo, record.LevelDebug:
		if x.ending != nil {
			if e, ok := x.endedBy(k, rec); ok {
				// Logged below error, but the process said the exception
				// ends it: read as an error.
				up := *rec
				up.Level = record.LevelError
				rec, ending = &up, e
			}
		}
		if s == nil && ending == "" && x.noteEnding(k, rec) {
			return
		}
	}
	if s == nil {
		// Cheap test first: most records hold no traceback at all.
		if !strings.Contains(rec.Text, `File "`) && !tracebackStart.Any(rec.Text) && !mayStartFrameless(rec) &&
			!(rec.Line == 1 && (strings.Contains(rec.Text, `", line `) || cutToSource(rec.Text))) && !endsStackIntro(rec.Text) {
			if strings.Contains(rec.Text, ignoredWords) {
				x.noteIgnored(k, rec)
			}
			last := rec.Text[strings.LastIndexByte(rec.Text, '\n')+1:]
			x.notePrev(rec, strings.TrimSpace(last), rec.EndLine)
			return
		}
		s = &stream{codeFor: -1}
		x.streams[k] = s
	}
	nOut := len(x.out)
	id := identityOf(rec)
	text := rec.Text
	n := rec.Line
	for {
		line, rest, more := strings.Cut(text, "\n")
		line = stripMargin(line)
		if twoFrames(line) {
			// A traceback whose newlines the paste lost: one frame a line again.
			for _, l := range unflatten(line) {
				x.feed(s, rec, id, l, n)
			}
		} else if k := gluedFrame(line); k > 0 {
			// A source line with the next frame glued on: two lines again,
			// at the line's own indent.
			in := line[:len(line)-len(trimIndent(line))]
			x.feed(s, rec, id, strings.TrimRight(line[:k], " "), n)
			x.feed(s, rec, id, in+line[k:], n)
		} else {
			x.feed(s, rec, id, line, n)
		}
		if !more {
			break
		}
		text = rest
		n++
	}
	if ending != "" {
		for i := nOut; i < len(x.out); i++ {
			x.out[i].Ending = ending
		}
		if s.tb != nil && s.tb.Ending == "" && s.tb.Line >= rec.Line {
			s.tb.Ending = ending
		}
	}
	if s.state == stIdle && !s.stackPrint {
		delete(x.streams, k)
	}
}

// Finish closes open tracebacks and returns everything found, in source
// order (sources in the order first seen, then by line).
func (x *Extractor) Finish() []Traceback {
	for _, s := range x.streams {
		x.finish(s)
	}
	x.streams = map[streamKey]*stream{}
	out := x.out
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Source != out[j].Source {
			return x.order[out[i].Source] < x.order[out[j].Source]
		}
		return out[i].Line < out[j].Line
	})
	return out
}

// stripGroupMargin removes an exception-group margin ("  | ", "  + ") and
// reports separator lines ("+-+---- 1 ----").
func stripGroupMargin(line string) (string, bool) {
	t := strings.TrimLeft(line, " ")
	for {
		switch {
		case strings.HasPrefix(t, "+-") || strings.HasPrefix(t, "+---"):
			return "", true
		case strings.HasPrefix(t, "| ") || t == "|":
			t = strings.TrimPrefix(strings.TrimPrefix(t, "|"), " ")
			if !strings.HasPrefix(strings.TrimLeft(t, " "), "|") {
				return t, false
			}
			t = strings.TrimLeft(t, " ")
		case strings.HasPrefix(t, "+ "):
			return t[2:], false
		default:
			return t, false
		}
	}
}

func isTracebackStart(t string) (start, group bool) {
	return isTracebackStartTrimmed(strings.TrimSpace(t))
}

// isTracebackStartTrimmed is isTracebackStart of a line already trimmed.
func isTracebackStartTrimmed(t string) (start, group bool) {
	const tb, gtb = "Traceback (most recent call last):", "Exception Group Traceback (most recent call last):"
	switch {
	case strings.HasPrefix(t, gtb):
		return true, true
	case strings.HasPrefix(t, tb):
		return true, false
	case strings.HasSuffix(t, tb):
		// SGLang: "Scheduler hit an exception: Traceback (most recent call last):"
		return true, strings.HasSuffix(t, gtb)
	case strings.HasSuffix(t, tb[:len(tb)-1]):
		_, ok := ipythonHeader(t)
		return ok, false
	}
	return false, false
}

// parseFrame parses `File "x.py", line 10, in func` (any indentation).
func parseFrame(line string) (record.Frame, bool) {
	t := trimIndent(line)
	if !strings.HasPrefix(t, `File "`) {
		return record.Frame{}, false
	}
	t = t[len(`File "`):]
	q := strings.Index(t, `", line `)
	if q < 0 {
		return record.Frame{}, false
	}
	f := record.Frame{File: t[:q]}
	t = t[q+len(`", line `):]
	end := 0
	for end < len(t) && t[end] >= '0' && t[end] <= '9' {
		end++
	}
	if end == 0 {
		return record.Frame{}, false
	}
	f.Line, _ = strconv.Atoi(t[:end])
	t = t[end:]
	if strings.HasPrefix(t, ", in ") {
		f.Func = strings.TrimSpace(t[len(", in "):])
	} else if strings.TrimSpace(t) != "" {
		return record.Frame{}, false
	}
	return f, true
}

// parseAtFrame parses the frame form loggers and summaries print under
// an exception line, "  at torch/_inductor/utils.py:3442 copy_misaligned_inputs":
// indented, a .py file, its line, the function.
func parseAtFrame(line string) (record.Frame, bool) {
	t := trimIndent(line)
	if len(t) == len(line) || !strings.HasPrefix(t, "at ") {
		return record.Frame{}, false
	}
	file, fn, ok := strings.Cut(t[len("at "):], " ")
	k := strings.LastIndexByte(file, ':')
	if !ok || k < 0 || !strings.HasSuffix(file[:k], ".py") {
		return record.Frame{}, false
	}
	n, err := strconv.Atoi(file[k+1:])
	if err != nil || n <= 0 || fn == "" {
		return record.Frame{}, false
	}
	for i := 0; i < len(fn); i++ {
		if c := fn[i]; !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return record.Frame{}, false
		}
	}
	return record.Frame{File: file[:k], Line: n, Func: fn}, true
}

func isCaret(t string) bool {
	t = strings.TrimSpace(t)
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; c != '^' && c != '~' && c != ' ' {
			return false
		}
	}
	return true
}

// repeatedN parses "[Previous line repeated 996 more times]".
func repeatedN(t string) (int, bool) {
	t = strings.TrimSpace(t)
	const pre, suf = "[Previous line repeated ", " more times]"
	if !strings.HasPrefix(t, pre) || !strings.HasSuffix(t, suf) {
		return 0, false
	}
	n, err := strconv.Atoi(t[len(pre) : len(t)-len(suf)])
	return n, err == nil
}

const (
	causeMarker   = "The above exception was the direct cause of the following exception:"
	contextMarker = "During handling of the above exception, another exception occurred:"
)

func isFooter(t string) bool {
	return strings.HasPrefix(t, "Set TORCHDYNAMO_VERBOSE=1") || strings.HasPrefix(t, `Set TORCH_LOGS="+dynamo"`) ||
		strings.HasPrefix(t, "Use tlparse to see full graph")
}

// mayStartFrameless: the record may hold an exception printed without a
// traceback (see Frameless); a record logged as a warning, info or debug
// line does not start one.
func mayStartFrameless(rec *record.Record) bool {
	switch rec.Level {
	case record.LevelWarning, record.LevelInfo, record.LevelDebug:
		return false
	}
	for text := rec.Text; text != ""; {
		line, rest, _ := strings.Cut(text, "\n")
		if leadsException(line) {
			return true
		}
		text = rest
	}
	for _, w := range midPhrases {
		if strings.Contains(rec.Text, w) {
			return true
		}
	}
	return strings.Contains(rec.Text, dynamoExplanation)
}

// dynamoExplanation is the second line of Dynamo's structured message.
const dynamoExplanation = "\n  Explanation: "

// fatalType: an exception type that is an error (not a warning or an
// iteration signal) as an exception line without frames shows it.
func fatalType(typ string) bool {
	typ = remoteless(typ)
	short := shortType(typ)
	if short == "" || short[0] < 'A' || short[0] > 'Z' {
		return false
	}
	// A class of a module of exceptions ("torch._dynamo.exc.FailOnRecompileLimitHit",
	// "ray.exceptions.RayActorError"), whatever its name ends in.
	for _, m := range []string{".exc.", ".exceptions.", ".errors."} {
		if strings.Contains(typ, m) {
			return true
		}
	}
	for _, s := range []string{"Error", "Exception", "Failed", "Unsupported", "Timeout", "NotFound", "Missing", "Violation"} {
		if strings.HasSuffix(short, s) {
			return true
		}
	}
	l := strings.ToLower(short)
	return strings.HasSuffix(l, "error") || strings.HasSuffix(l, "exception")
}

// stripMargin drops a margin a tool put before traceback lines ("-->"
// in aiter's build history, "=> ", "# "): up to four of "-=>#*" when a
// frame, a traceback header or a word follows.
func stripMargin(line string) string {
	if e := elision(line); e > 0 {
		// "... EngineDeadError: …": the paste marked lines it left out.
		if rest := strings.TrimLeft(line[e:], " "); rest != "" && (strings.HasPrefix(rest, `File "`) || rest[0] == '_' || rest[0] >= 'A' && rest[0] <= 'Z') {
			return rest
		}
		return line
	}
	k := 0
	for k < len(line) && k < 4 && strings.IndexByte("-=>#*", line[k]) >= 0 {
		k++
	}
	if k == 0 || k == len(line) {
		return line
	}
	rest := strings.TrimLeft(line[k:], " ")
	if rest == "" {
		return line
	}
	if c := rest[0]; strings.HasPrefix(rest, `File "`) || c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' {
		return line[k:]
	}
	return line
}

// elision is the length of an ellipsis that starts a line and a space
// after it ("... ", "… "), by which a paste marks the lines it left out;
// 0 when there is none.
func elision(line string) int {
	switch {
	case strings.HasPrefix(line, "... "):
		return 4
	case strings.HasPrefix(line, "\u2026 "):
		return len("\u2026 ")
	}
	return 0
}

// unflatten splits a line holding several frames (a paste that lost its
// newlines) into one line per frame and its source, and the exception
// line that follows the last one.
func unflatten(line string) []string {
	var out []string
	parts := strings.Split(line, `File "`)
	if head := strings.TrimSpace(parts[0]); head != "" {
		out = append(out, head)
	}
	for i, p := range parts[1:] {
		p = `File "` + p
		q := strings.Index(p, `", line `)
		in := strings.Index(p, ", in ")
		if q < 0 || in < q {
			out = append(out, "  "+strings.TrimSpace(p))
			continue
		}
		// The function name runs to the next space; the source after it.
		fn := p[in+len(", in "):]
		code := ""
		if sp := strings.IndexByte(fn, ' '); sp >= 0 {
			fn, code = fn[:sp], strings.TrimSpace(fn[sp+1:])
		}
		out = append(out, "  "+p[:in+len(", in ")]+fn)
		if code == "" {
			continue
		}
		if i == len(parts)-2 {
			// After the last frame's source: the exception line.
			if k := midException(code); k > 0 {
				out = append(out, "    "+strings.TrimSpace(code[:k]), code[k:])
				continue
			}
		}
		out = append(out, "    "+code)
	}
	return out
}

// midException finds an exception line that starts inside s (after a
// space): "Type: message" where Type looks like an exception and is not
// being raised there ("raise ValueError(" is code). It returns its offset
// or -1.
func midException(s string) int {
	for off := 0; off < len(s); {
		k := strings.Index(s[off:], ": ")
		if k < 0 {
			return -1
		}
		k += off
		st := k
		for st > 0 && (s[st-1] == '_' || s[st-1] == '.' || s[st-1] >= 'a' && s[st-1] <= 'z' || s[st-1] >= 'A' && s[st-1] <= 'Z' || s[st-1] >= '0' && s[st-1] <= '9') {
			st--
		}
		if st > 0 && s[st-1] == ' ' && st < k && fatalType(s[st:k]) {
			return st
		}
		off = k + 2
	}
	return -1
}

// oneLiners are phrases that name the exception they report on the same
// line: "Scheduler hit an exception: ValueError: …".
var oneLiners = []string{"hit an exception:", "failed to start:", "failed with error:", "raised an exception:",
	"raised:", "Exception in worker:", "Error in model execution:",
	"CRASH:", "ERROR:", "FATAL:", "Error:", "error:", " - "}

// errorDoing: a line that says in words what failed, "Error <doing> <what>
// [a few words]: <why>" (sgl-router's "Error starting router: argument
// 'worker_urls': …"): an error with no type of its own. Hydra's "Error
// executing job with overrides: […]" only heads the traceback of the
// error its job raised, which follows it: not one.
func errorDoing(line string) bool {
	rest, ok := strings.CutPrefix(line, "Error ")
	if !ok || strings.HasPrefix(rest, "executing job with overrides") {
		return false
	}
	head, why, ok := strings.Cut(rest, ": ")
	if !ok || strings.TrimSpace(why) == "" || len(head) > 60 {
		return false
	}
	words := strings.Fields(head)
	if len(words) < 2 || len(words) > 5 || !strings.HasSuffix(words[0], "ing") {
		return false
	}
	for _, w := range words {
		for i := 0; i < len(w); i++ {
			if c := w[i]; c < 'a' || c > 'z' {
				return false
			}
		}
	}
	return true
}

// reportPhrases are engine lines that report an error in their own words
// ("Piecewise CUDA Graph failed with error: Tensor match failed …"): the
// line stands for the error (Type "Error", Reported set) when no exception
// line follows the phrase.
var reportPhrases = []string{"failed with error:", "hit an exception:"}

// reportHeader: t, a trimmed line of rec, is an engine's report of an
// error whose text was to follow on the next lines ("[2025-10-04 02:29:36
// DP7 TP7] Scheduler hit an exception:" with the traceback after it): a
// report phrase that ends the line, logged at no level below error.
func reportHeader(rec *record.Record, t string) bool {
	switch rec.Level {
	case record.LevelWarning, record.LevelInfo, record.LevelDebug:
		return false
	}
	if len(t) == 0 || t[len(t)-1] != ':' {
		return false
	}
	for _, p := range reportPhrases {
		if strings.HasSuffix(t, p) && len(t) > len(p) {
			return true
		}
	}
	return false
}

// framelessLine returns the exception an exception line without frames,
// or a one-liner that names one, holds.
func framelessLine(rec *record.Record, line string) (typ, msg string, ok bool) {
	switch rec.Level {
	case record.LevelWarning, record.LevelInfo, record.LevelDebug:
		return "", "", false
	}
	if typ, msg, ok := exceptionLine(line); ok && (strings.IndexByte(line, ':') > 0 || strings.HasSuffix(line, "\")") || strings.HasSuffix(line, "')")) && fatalType(typ) {
		// (A name alone is too little; its repr, "ValueError(\"…\")", is not.)
		return typ, msg, true
	}
	if rec.Line == 1 {
		// The first line of an excerpt cut mid-word: "untimeError: …".
		if typ, msg, ok := cutExceptionLine(line); ok {
			return typ, msg, true
		}
	}
	if typ, msg, ok := pydanticLine(line); ok {
		return typ, msg, true
	}
	if rec.Level == record.LevelError && strings.HasPrefix(line, "assert ") && len(line) > len("assert x") {
		// pytest's report of a failed assert, its "E   assert 30 == 0"
		// (the assertion rewritten with the values it compared): an
		// AssertionError whose message is that line.
		return "AssertionError", line, true
	}
	for _, p := range oneLiners {
		k := strings.Index(line, p)
		if k < 0 {
			continue
		}
		if p == " - " && !strings.HasPrefix(line, "FAILED ") && !strings.HasPrefix(line, "ERROR ") {
			continue // pytest's summary: "FAILED test_x.py::test - Type: message"
		}
		rest := strings.TrimLeft(line[k+len(p):], " ")
		if typ, msg, ok := exceptionLine(rest); ok && strings.IndexByte(rest, ':') > 0 && fatalType(typ) {
			return typ, msg, true
		}
	}
	if errorDoing(line) {
		return "Error", strings.TrimSpace(line), true
	}
	for _, p := range reportPhrases {
		if k := strings.Index(line, p); k > 0 {
			if rest := strings.TrimSpace(line[k+len(p):]); rest != "" && !strings.HasPrefix(rest, "Traceback") {
				return "Error", strings.TrimSpace(line), true
			}
		}
	}
	return "", "", false
}

// raisedBy reads `raise Type("message…` (a source line under a frame).
// cutToSource: text starts as a frame's source line that raises (an
// indented raise or assert), as an excerpt cut down to a traceback's last
// source line does.
func cutToSource(text string) bool {
	if !strings.HasPrefix(text, "    ") {
		return false
	}
	t := strings.TrimLeft(text, " ")
	return strings.HasPrefix(t, "raise ") || strings.HasPrefix(t, "assert ")
}

func raisedBy(code string) (typ, msg string, ok bool) {
	c := strings.TrimSpace(code)
	if strings.HasPrefix(c, "assert ") {
		// `assert cond, "message"`: an AssertionError with that message
		// (a message that is not a plain string literal is not read).
		k := strings.Index(c, ", ")
		if k < 0 {
			return "AssertionError", "", true
		}
		m := strings.TrimLeft(c[k+2:], "fbr")
		if len(m) >= 2 && (m[0] == '"' || m[0] == '\'') && m[len(m)-1] == m[0] && strings.IndexByte(m[1:len(m)-1], m[0]) < 0 {
			return "AssertionError", m[1 : len(m)-1], true
		}
		return "AssertionError", "", true
	}
	if !strings.HasPrefix(c, "raise ") {
		return "", "", false
	}
	c = c[len("raise "):]
	k := strings.IndexByte(c, '(')
	if k <= 0 || !looksLikeExceptionType(c[:k]) {
		return "", "", false
	}
	typ, rest := c[:k], c[k+1:]
	rest = strings.TrimLeft(rest, "fbr")
	if rest != "" && (rest[0] == '"' || rest[0] == '\'') {
		q := rest[0]
		rest = rest[1:]
		if e := strings.IndexByte(rest, q); e >= 0 {
			rest = rest[:e]
		}
		return typ, strings.TrimSpace(rest), true
	}
	return typ, "", true
}

// cutExceptionLine reads an exception line whose type lost its start
// ("untimeError: CUDA error: …", "rror: …"): a lower-case word ending in
// error or exception, then ": ".
func cutExceptionLine(line string) (typ, msg string, ok bool) {
	k := strings.Index(line, ": ")
	if k <= 0 {
		return "", "", false
	}
	t := line[:k]
	for i := 0; i < len(t); i++ {
		if c := t[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return "", "", false
		}
	}
	l := strings.ToLower(t)
	if !strings.HasSuffix(l, "error") && !strings.HasSuffix(l, "exception") {
		return "", "", false
	}
	return t, line[k+2:], true
}

// trimIndent is strings.TrimLeft(line, " \t") without building the
// cutset on every call (it runs on every line of a traceback).
func trimIndent(line string) string {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	return line[i:]
}

// parseNativeFrame parses faulthandler's `File "x.py", line 10 in func`.
func parseNativeFrame(line string) (record.Frame, bool) {
	t := trimIndent(line)
	if !strings.HasPrefix(t, `File "`) {
		return record.Frame{}, false
	}
	q := strings.Index(t, `", line `)
	if q < 0 {
		return record.Frame{}, false
	}
	f := record.Frame{File: t[len(`File "`):q]}
	t = t[q+len(`", line `):]
	end := 0
	for end < len(t) && t[end] >= '0' && t[end] <= '9' {
		end++
	}
	f.Line, _ = strconv.Atoi(t[:end])
	t = t[end:]
	if !strings.HasPrefix(t, " in ") {
		return record.Frame{}, false
	}
	f.Func = strings.TrimSpace(t[len(" in "):])
	return f, true
}

func (x *Extractor) start(s *stream, l *fedLine, headless bool) {
	rec, n := l.rec, l.n
	head := l.t
	if headless {
		head = ""
	}
	head = clipHead(head)
	s.tb = &Traceback{Source: rec.Source, Line: n, EndLine: n, Rank: rec.Rank, Truncated: headless, Level: rec.Level, Head: head}
	if at, ok := x.ignored[streamKey{rec.Source, rec.Rank}]; ok && n-at >= 0 && n-at <= 2 {
		s.tb.Ignored = true
	}
	s.frameless, s.wrapped, s.nativeDone, s.nativeCur, s.header, s.blanks, s.report = false, "", false, false, !headless, 0, false
	s.frameIndent = 0
	s.id = l.id
	s.source = ""
	s.state = stFrames
	s.inGroup = false
	s.members = 0
	x.newException(s)
	x.noteIPython(s, l)
}

// clipHead clips a line to maxHead bytes, not inside a UTF-8 sequence.
func clipHead(head string) string {
	if len(head) > maxHead {
		cut := maxHead
		for cut > 0 && head[cut]&0xC0 == 0x80 {
			cut--
		}
		head = head[:cut]
	}
	return head
}

// noteIPython: an exception of the chain starts at l; when l is an
// IPython header, its type is the exception's (until its exception line
// says more) and IPython's frame forms are read.
func (x *Extractor) noteIPython(s *stream, l *fedLine) {
	typ, ok := ipythonHeader(l.t)
	s.ipy = ok
	if ok {
		s.cur.Type = typ
	}
}

func (x *Extractor) newException(s *stream) {
	if s.cur != nil && len(s.cur.Frames) > 0 {
		x.frameHint = len(s.cur.Frames)
	}
	if len(s.tb.Chain) >= maxChain {
		s.tb.Chain = s.tb.Chain[:maxChain-1]
	}
	s.tb.Chain = append(s.tb.Chain, Exception{})
	s.cur = &s.tb.Chain[len(s.tb.Chain)-1]
	s.msg = s.msg[:0]
	s.msgClosed = false
	s.codeFor = -1
}

// groupHeader is what every line opening an exception group holds.
const groupHeader = "Exception Group Traceback"

// mayOpenGroup is strings.Contains(line, groupHeader), cheaper on the
// lines too short to hold it and on those without its 'G' (most lines).
func mayOpenGroup(line string) bool {
	return len(line) >= len(groupHeader) && strings.IndexByte(line, 'G') >= 0 && strings.Contains(line, groupHeader)
}

// barAfterSpaces: the line's first byte after its leading spaces is '|'
// (strings.HasPrefix(strings.TrimLeft(line, " "), "|")).
func barAfterSpaces(line string) bool {
	for i := 0; i < len(line); i++ {
		if line[i] != ' ' {
			return line[i] == '|'
		}
	}
	return false
}

// twoFrames: the line holds `File "` at least twice (strings.Count >= 2,
// stopping at the second).
func twoFrames(line string) bool {
	const file = `File "`
	i := strings.Index(line, file)
	return i >= 0 && strings.Contains(line[i+len(file):], file)
}

// gluedFrame is the offset of a frame line that starts inside line after a
// space, when line itself is no frame (a frame's source line and the next
// frame, "inputs = self.f( [rank0]: File \"…\", line 233, in f", the
// newline and the prefix's own line lost); 0 when there is none.
func gluedFrame(line string) int {
	const file = ` File "`
	i := strings.Index(line, file)
	if i <= 0 || strings.TrimSpace(line[:i]) == "" || !strings.Contains(line[i:], `", line `) {
		return 0
	}
	if _, ok := parseFrame(line[i+1:]); !ok {
		return 0
	}
	return i + 1
}

// fedLine is one line fed to a stream, with what feed's handlers share.
type fedLine struct {
	rec            *record.Record
	id             identity
	raw            string // as fed
	line           string // without an exception group's margin
	t              string // line trimmed
	n              int
	tbStart, group bool // isTracebackStart(line)
}

// feed moves s on by one line: the handler of s's state reads it.
func (x *Extractor) feed(s *stream, rec *record.Record, id identity, line string, n int) {
	raw := line
	if s.inGroup || mayOpenGroup(line) || (s.state != stIdle && barAfterSpaces(line)) {
		var sep bool
		line, sep = stripGroupMargin(line)
		if sep {
			return
		}
	}
	l := fedLine{rec: rec, id: id, raw: raw, line: line, t: strings.TrimSpace(line), n: n}
	l.tbStart, l.group = isTracebackStartTrimmed(l.t)
	switch s.state {
	case stIdle:
		x.feedIdle(s, &l)
		return
	case stNative:
		x.feedNative(s, &l)
		return
	case stChainWait:
		x.feedChainWait(s, &l)
		return
	}
	if x.feedLink(s, &l) {
		return
	}
	switch s.state {
	case stFrames:
		x.feedFrames(s, &l)
	case stUserCode:
		x.feedUserCode(s, &l)
	case stMessage:
		x.feedMessage(s, &l)
	}
}

// feedIdle: outside a traceback, a line that starts one (a header, a
// frame whose header was cut off, a fatal error, an exception line
// without frames), or notes an ignored exception.
func (x *Extractor) feedIdle(s *stream, l *fedLine) {
	if strings.Contains(l.line, ignoredWords) {
		x.noteIgnoredAt(l.rec, l.n)
		return
	}
	if l.tbStart {
		s.stackPrint = false
		x.start(s, l, false)
		s.inGroup = l.group
		if p := &x.prevErr; p.key == (streamKey{l.rec.Source, l.rec.Rank}) && p.line == l.n-1 && p.text != "" && l.t == "Traceback (most recent call last):" {
			switch {
			case p.level == record.LevelError || p.level == record.LevelCritical:
				s.tb.Before = p.text
			case s.tb.Level != "":
			case p.went:
				s.tb.Level = p.level // the warning's exc_info
			default:
				s.loggedBy, s.loggedLevel = p.emitter, p.level // decided at finish
			}
		}
		return
	}
	x.notePrev(l.rec, l.t, l.n)
	if s.stackPrint {
		// Its frames and their source lines (indented) are read past.
		if _, ok := parseFrame(l.line); ok || l.t != "" && (l.raw[0] == ' ' || l.raw[0] == '\t') {
			return
		}
		s.stackPrint = false
	}
	if stackIntro(l.t) {
		s.stackPrint = true
		return
	}
	if f, ok := parseFrame(l.line); ok && (strings.HasPrefix(l.raw, " ") || f.Func != "") {
		// A traceback whose header was cut off (pasted excerpts); a
		// frame at column 0 only when it is whole.
		x.start(s, l, true)
		x.addFrame(s, f, l)
		return
	}
	if l.rec.Line == 1 && l.n == 1 {
		// The excerpt's first line is a frame cut before its path's end
		// ("target_model/base.py\", line 240, in save_split").
		if k := strings.Index(l.t, `", line `); k > 0 && !strings.ContainsAny(l.t[:k], "\" ") && strings.HasSuffix(l.t[:k], ".py") {
			if f, ok := parseFrame(`File "` + l.t); ok && f.Func != "" {
				x.start(s, l, true)
				x.addFrame(s, f, l)
				return
			}
		}
	}
	if l.rec.Line == 1 && l.n == 1 && cutToSource(l.line) {
		// The excerpt is a traceback cut down to its last source line,
		// a raise or an assert: what it raises is the error.
		if _, _, ok := raisedBy(l.t); ok {
			x.start(s, l, true)
			s.tb.Head = clipHead(l.t)
			s.source, s.lastLine = l.t, l.n
			return
		}
	}
	if strings.HasPrefix(l.t, "Fatal Python error: ") {
		x.start(s, l, false)
		s.tb.Frameless = true
		s.cur.Type, s.cur.Message, s.cur.Line = "Fatal Python error", strings.TrimSpace(l.t[len("Fatal Python error: "):]), l.n
		s.state = stNative
		return
	}
	if reportHeader(l.rec, l.t) {
		// The report's traceback follows (or the excerpt ends here: the
		// header alone is kept, a traceback cut before its exception line).
		x.start(s, l, false)
		s.report = true
		return
	}
	if s.title != "" && s.titleN == l.n-1 && strings.HasPrefix(l.raw, s.titleIndent+"  Explanation: ") {
		// Dynamo's message printed without its exception line (an app
		// that shows str(e)): "Unsupported method call", then
		// "  Explanation: …", "  Hint: …". Only an Unsupported (a graph
		// break where none may happen) is printed so.
		title := s.title
		x.start(s, l, false)
		s.tb.Line, s.tb.Head = s.titleN, clipHead(title)
		s.tb.Frameless, s.frameless = true, true
		s.cur.Type, s.cur.Line, s.cur.TypeRead = "torch._dynamo.exc.Unsupported", s.titleN, "Dynamo's message form"
		s.msg = append(s.msg[:0], title, l.line)
		s.state = stMessage
		s.lastLine = l.n
		s.title = ""
		return
	}
	if in := len(l.raw) - len(strings.TrimLeft(l.raw, " \t")); dynamoTitle(l.raw[in:], l.rec.Line == 1 && l.n == 1) {
		s.title, s.titleN, s.titleIndent = l.t, l.n, l.raw[:in]
		if l.rec.Line == 1 && l.n == 1 {
			s.titleIndent = "" // a cut first line may start at a blank
		}
	}
	if typ, msg, ok := framelessLine(l.rec, l.line); ok {
		x.start(s, l, false)
		s.tb.Frameless, s.frameless = true, true
		s.cur.Type, s.cur.Line = typ, l.n
		s.cur.Reported = typ == "Error" && msg == strings.TrimSpace(l.line)
		s.msg = append(s.msg[:0], msg)
		s.state = stMessage
		s.lastLine = l.n
	}
	return
}

// dynamoTitle: a line (its indent removed) that may be the first line of
// Dynamo's structured message (its graph break's title, "Unsupported
// method call", "Attempted to call function marked as skipped"): a
// capital first (any letter on an excerpt's first line, which may be cut
// mid-word), no ": " and short.
func dynamoTitle(t string, first bool) bool {
	if len(t) < 4 || len(t) > 120 || strings.Contains(t, ": ") || strings.HasSuffix(t, ":") {
		return false
	}
	return t[0] >= 'A' && t[0] <= 'Z' || first && t[0] >= 'a' && t[0] <= 'z'
}

// feedNative: the frames of a faulthandler report after "Fatal Python
// error".
func (x *Extractor) feedNative(s *stream, l *fedLine) {
	if l.id != s.id && s.id.headed {
		x.finish(s)
		x.feed(s, l.rec, l.id, l.raw, l.n)
		return
	}
	switch {
	case l.t == "" || l.t == "<no Python frame>" || strings.HasPrefix(l.t, "Stack (most recent call first)"):
	case strings.HasSuffix(l.t, "(most recent call first):"):
		switch {
		case strings.HasPrefix(l.t, "Current thread") && !s.nativeCur:
			// The thread that crashed: its frames, not another's before it.
			s.cur.Frames, s.cur.Code = s.cur.Frames[:0], s.cur.Code[:0]
			s.nativeDone, s.nativeCur = false, true
		case len(s.cur.Frames) > 0:
			s.nativeDone = true // only the thread that crashed
		}
	default:
		if f, ok := parseNativeFrame(l.line); ok {
			if !s.nativeDone {
				x.addFrame(s, f, l)
			}
			return
		}
		if strings.HasPrefix(l.t, "Extension modules:") || strings.HasPrefix(l.t, "Thread 0x") {
			s.tb.EndLine = l.n
			return
		}
		x.finish(s)
		x.feed(s, l.rec, l.id, l.raw, l.n)
	}
	return
}

// feedChainWait: after "The above exception was the direct cause …",
// the next traceback of the chain.
func (x *Extractor) feedChainWait(s *stream, l *fedLine) {
	if l.tbStart {
		x.newException(s)
		x.noteIPython(s, l)
		s.state = stFrames
		s.inGroup = s.inGroup || l.group
		s.lastLine = l.n
		return
	}
	if l.t == "" || l.id != s.id {
		return
	}
	if s.frameless {
		// The next exception of a chain of exceptions printed without
		// frames.
		if typ, msg, ok := framelessLine(l.rec, l.line); ok {
			x.newException(s)
			s.cur.Type, s.cur.Line = typ, l.n
			s.msg = append(s.msg[:0], msg)
			s.msgClosed = false
			s.blanks = 0
			s.state = stMessage
			s.tb.EndLine, s.lastLine = l.n, l.n
			return
		}
	}
	x.finish(s)
	x.feed(s, l.rec, l.id, l.raw, l.n)
	return
}

// feedLink handles, inside a traceback, a line that starts another one
// (an exception group's member, or a new traceback) or links the chain
// ("direct cause", "during handling"); it reports whether it did.
func (x *Extractor) feedLink(s *stream, l *fedLine) bool {
	if l.tbStart {
		if s.state == stMessage && s.inGroup && len(s.tb.Chain) > 0 {
			// A member of an exception group: only the group itself says
			// "group"; members follow one another without a relation.
			if s.members == 0 {
				s.cur.Relation = "group"
			}
			s.members++
			x.closeMessage(s)
			x.newException(s)
			s.state = stFrames
			s.lastLine = l.n
			return true
		}
		if s.report && len(s.tb.Chain) == 1 && len(s.cur.Frames) == 0 && s.cur.Type == "" {
			// The traceback of the report line before it: one traceback,
			// headed by the report's words.
			head := s.tb.Head
			x.start(s, l, false)
			s.tb.Head = head
		} else {
			x.finish(s)
			x.start(s, l, false)
		}
		s.inGroup = l.group
		return true
	}
	if l.t == causeMarker || l.t == contextMarker {
		if s.state == stFrames {
			s.tb.Truncated = true
		}
		x.closeMessage(s)
		if l.t == causeMarker {
			s.cur.Relation = "cause"
		} else {
			s.cur.Relation = "context"
		}
		s.state = stChainWait
		s.lastLine = l.n
		return true
	}
	return false
}

// feedFrames: the frames of a traceback, up to its exception line.
func (x *Extractor) feedFrames(s *stream, l *fedLine) {
	if l.id != s.id && s.id.headed {
		// Another log call of the same process printed meanwhile.
		return
	}
	if s.ipy && x.feedIPython(s, l) {
		return
	}
	if s.wrapped != "" {
		joined := s.wrapped + l.t
		s.wrapped = ""
		if f, ok := parseFrame(joined); ok {
			x.addFrame(s, f, l)
			return
		}
	}
	if f, ok := parseFrame(l.line); ok {
		s.frameIndent = len(l.line) - len(trimIndent(l.line))
		x.addFrame(s, f, l)
		return
	}
	if strings.HasPrefix(l.t, `File "`) && !strings.Contains(l.t, `", line `) {
		s.wrapped = l.t // wrapped by the paste: the next line completes it
		return
	}
	if isCaret(l.line) || l.t == "" || (strings.HasPrefix(l.t, "...<") && strings.HasSuffix(l.t, "lines>...")) {
		return
	}
	if k, ok := repeatedN(l.line); ok {
		if nf := len(s.cur.Frames); nf > 0 {
			if s.cur.Repeated == nil {
				s.cur.Repeated = make([]int, nf)
			}
			for len(s.cur.Repeated) < nf {
				s.cur.Repeated = append(s.cur.Repeated, 0)
			}
			s.cur.Repeated[nf-1] = k
		}
		return
	}
	if in := len(l.line) - len(trimIndent(l.line)); in > 0 && in < s.frameIndent && s.frameIndent >= 3 {
		// The whole traceback indented by the paste (frames at 4, source
		// at 6, or a tab before Python's own indent): its exception line
		// is at 2 (at the tab).
		if typ, msg, ok := exceptionLine(l.t); ok {
			s.exceptionAt(typ, msg, l.t, l.n)
			return
		}
	}
	if l.line[0] == ' ' || l.line[0] == '\t' {
		if s.codeFor >= 0 && s.codeFor < len(s.cur.Frames) {
			s.cur.Code[s.codeFor] = l.t
			s.codeFor = -1
		}
		return
	}
	if typ, msg, ok := exceptionLine(l.line); ok {
		s.exceptionAt(typ, msg, l.line, l.n)
		return
	}
	if s.flat && s.codeFor >= 0 && s.codeFor < len(s.cur.Frames) {
		// The source line of a frame whose indent was lost.
		s.cur.Code[s.codeFor] = l.t
		s.codeFor = -1
		return
	}
	// Something else at column 0: the traceback was cut off here.
	if s.id.headed && l.id == s.id || !s.id.headed && !l.id.headed {
		s.tb.Truncated = true
		x.finish(s)
	}
	return
}

// exceptionAt: the traceback's exception line, at line n; its message
// follows. A type printed alone ("AssertionError", no colon) has none.
func (s *stream) exceptionAt(typ, msg, line string, n int) {
	s.bare = msg == "" && strings.TrimRight(line, " \t") == typ
	s.cur.Type = typ
	s.cur.Line = n
	s.msg = append(s.msg[:0], msg)
	s.state = stMessage
	s.lastLine = n
	s.tb.EndLine = n
}

// feedUserCode: Dynamo's "from user code:" frames; anything else goes
// back to the message.
func (x *Extractor) feedUserCode(s *stream, l *fedLine) {
	if l.id != s.id {
		x.finish(s)
		x.feed(s, l.rec, l.id, l.raw, l.n)
		return
	}
	if f, ok := parseFrame(l.line); ok {
		if len(s.cur.UserCode) < maxFrames {
			s.cur.UserCode = append(s.cur.UserCode, f)
		}
		s.tb.EndLine = l.n
		return
	}
	if isFooter(l.t) {
		s.state = stMessage
		s.tb.EndLine = l.n
		return
	}
	if l.t == "" || l.line[0] == ' ' || isCaret(l.line) {
		return
	}
	s.state = stMessage
	x.feedMessage(s, l)
}

// feedMessage: the exception's message lines, up to a footer, a new
// traceback or another log call.
func (x *Extractor) feedMessage(s *stream, l *fedLine) {
	if l.id != s.id && !(len(s.msg) == 1 && s.msg[0] == "" && l.t != "" && !s.msgClosed && !s.bare) {
		// (An exception line with an empty message takes the next
		// line as its message, whatever prints it: "ImportError: "
		// then the library's own report. A type alone has no message:
		// the next log call is not its.)
		x.finish(s)
		x.feed(s, l.rec, l.id, l.raw, l.n)
		return
	}
	if l.t == "from user code:" {
		x.closeMessage(s)
		s.state = stUserCode
		s.tb.EndLine = l.n
		return
	}
	if isFooter(l.t) {
		x.closeMessage(s)
		s.tb.EndLine = l.n
		return
	}
	if f, ok := parseFrame(l.line); ok && !s.msgClosed && (l.raw[0] == ' ' || l.raw[0] == '\t') &&
		(s.frameless || len(s.msg) > 0 && s.msg[len(s.msg)-1] == "") {
		// After a blank line, a frame starts a new (headless) traceback;
		// under an exception line without frames, any frame does: a
		// frame is never part of a message (a build log's "error:" line,
		// then the tail of the traceback it quotes).
		x.finish(s)
		x.start(s, l, true)
		x.addFrame(s, f, l)
		return
	}
	if s.frameless && (l.t == causeMarker || l.t == contextMarker) {
		// Chained to the exception printed next, itself without frames
		// (Dynamo's "Unsupported: …", then "The above exception was the
		// direct cause …", then "FailOnRecompileLimitHit: …").
		x.feedLink(s, l)
		return
	}
	if s.frameless {
		// Its message runs on over single blank lines while the lines
		// after them are indented (Dynamo's Explanation, Hint, docs
		// link); two blank lines, a line at column 0 after a blank
		// one, or too many lines end it.
		if f, ok := parseAtFrame(l.line); ok {
			// "  at FILE:LINE func" under the exception line, innermost
			// first (finish reverses the printed order of frames).
			if len(s.cur.Frames) < maxFrames {
				s.cur.Frames = slices.Insert(s.cur.Frames, 0, f)
				s.cur.Code = slices.Insert(s.cur.Code, 0, "")
			}
			s.blanks = 0
			s.tb.EndLine = l.n
			return
		}
		if l.t == rustCauses && len(s.msg) > 0 {
			// A Rust program's error chain (anyhow): "Error: …", a blank,
			// "Caused by:", then its causes indented and numbered.
			s.blanks = 0
			s.msg = append(s.msg, l.line)
			s.tb.EndLine = l.n
			return
		}
		switch {
		case l.t == "":
			// Two blank lines end it, unless Dynamo's "from user code:"
			// comes next (read above, before this switch): it prints
			// "Developer debug context: …", two blank lines, then it.
			s.blanks++
		case s.blanks >= 2 || len(s.msg) >= maxFramelessLines || s.blanks > 0 && l.raw[0] != ' ' && l.raw[0] != '\t':
			x.finish(s)
			x.feed(s, l.rec, l.id, l.raw, l.n)
			return
		default:
			s.blanks = 0
		}
	}
	if !s.msgClosed && len(s.msg) < maxMsgLines {
		s.msg = append(s.msg, l.line)
		if l.t != "" {
			s.tb.EndLine = l.n
		}
	}
}

func (x *Extractor) addFrame(s *stream, f record.Frame, l *fedLine) {
	n := l.n
	// A frame at column 0 lost its indent (a prefix a launcher put
	// before every line, Ray's "(Actor pid=N) ", ate it): its source
	// line comes at column 0 too.
	s.flat = l.line[0] != ' ' && l.line[0] != '\t'
	if s.cur.Frames == nil {
		if k := len(x.spare); k > 0 {
			b := x.spare[k-1]
			x.spare = x.spare[:k-1]
			s.cur.Frames, s.cur.Code = b.frames, b.code
		} else {
			c := min(max(x.frameHint, 16), 128)
			s.cur.Frames, s.cur.Code = make([]record.Frame, 0, c), make([]string, 0, c)
		}
	}
	if len(s.cur.Frames) < maxFrames {
		s.cur.Frames = append(s.cur.Frames, f)
		s.cur.Code = append(s.cur.Code, "")
		s.codeFor = len(s.cur.Frames) - 1
	}
	s.tb.EndLine = n
	s.lastLine = n
}

// closeMessage stores the message lines gathered so far on the current
// exception, without trailing blank lines.
func (x *Extractor) closeMessage(s *stream) {
	if s.msgClosed || s.cur == nil {
		return
	}
	s.msgClosed = true
	m := s.msg
	for len(m) > 0 && strings.TrimSpace(m[len(m)-1]) == "" {
		m = m[:len(m)-1]
	}
	if len(m) > 0 {
		s.cur.Message = strings.Join(m, "\n")
	}
	s.msg = s.msg[:0]
}

// finish completes the open traceback of s and returns s to idle.
func (x *Extractor) finish(s *stream) {
	if s.tb == nil {
		s.state = stIdle
		return
	}
	x.closeMessage(s)
	tb := s.tb
	if (s.state == stFrames || s.state == stChainWait) && !tb.Frameless {
		tb.Truncated = true
	}
	if s.loggedBy != "" {
		if tb.Level == "" && len(tb.Chain) > 0 {
			if fr := tb.Chain[0].Frames; len(fr) > 0 && loggedBy(s.loggedBy, fr[len(fr)-1]) {
				tb.Level = s.loggedLevel // the warning's exc_info
			}
		}
		s.loggedBy, s.loggedLevel = "", ""
	}
	// Drop an empty trailing exception (a chain marker with nothing after).
	if k := len(tb.Chain); k > 1 && tb.Chain[k-1].Type == "" && len(tb.Chain[k-1].Frames) == 0 {
		tb.Chain = tb.Chain[:k-1]
		tb.Chain[k-2].Relation = ""
	}
	if s.state == stNative {
		reverseFrames(s.cur) // printed innermost first: undo the reversal below
	}
	for i := range tb.Chain {
		e := &tb.Chain[i]
		reverseFrames(e)
		for l, r := 0, len(e.UserCode)-1; l < r; l, r = l+1, r-1 {
			e.UserCode[l], e.UserCode[r] = e.UserCode[r], e.UserCode[l]
		}
	}
	for i := range tb.Chain {
		// Cut before its exception line: the innermost frame's source may
		// say what was raised (`raise RuntimeError("Failed to find C compiler…`).
		if e := &tb.Chain[i]; e.Type == "" && len(e.Code) > 0 {
			if typ, msg, ok := raisedBy(e.Code[0]); ok {
				e.Type, e.Message, e.FromSource = typ, msg, true
			}
		} else if e.Type == "" && len(e.Frames) == 0 && i == 0 && s.source != "" {
			if typ, msg, ok := raisedBy(s.source); ok {
				e.Type, e.Message, e.FromSource, e.Line = typ, msg, true, tb.Line
			}
		}
	}
	s.source = ""
	s.tb, s.cur, s.state, s.inGroup, s.frameless, s.wrapped = nil, nil, stIdle, false, false, ""
	bufs := x.bufs[:0]
	for i := range tb.Chain {
		bufs = append(bufs, frameBuf{tb.Chain[i].Frames, tb.Chain[i].Code})
	}
	x.bufs = bufs
	defer x.recycle(bufs)
	if len(tb.Chain) == 0 || (len(tb.Chain) == 1 && tb.Chain[0].Type == "" && len(tb.Chain[0].Frames) == 0 && !s.header) {
		return // (a header alone is kept: the excerpt ends right after it)
	}
	if x.Full() {
		x.Dropped++
		return
	}
	detach(tb)
	x.out = append(x.out, *tb)
}

// detach gives a kept traceback strings and slices of its own: its
// frames' names and source lines point into the record texts they were
// read from, which a log of thousands of tracebacks (MaxTracebacks of a
// crash loop) would otherwise keep whole, with each frame slice's spare
// capacity. The strings go into one buffer per traceback.
func detach(tb *Traceback) {
	n := len(tb.Head)
	for i := range tb.Chain {
		e := &tb.Chain[i]
		n += len(e.Type) + len(e.Message) + len(e.Relation)
		for _, st := range []record.Stack{e.Frames, e.UserCode} {
			for _, f := range st {
				n += len(f.Func) + len(f.File)
			}
		}
		for _, c := range e.Code {
			n += len(c)
		}
	}
	var b strings.Builder
	b.Grow(n)
	var buf string
	copying := false
	// put appends s while the buffer is written and, on the second
	// pass, returns s's copy in the buffer.
	off := 0
	put := func(s string) string {
		if !copying {
			b.WriteString(s)
			return s
		}
		c := buf[off : off+len(s)]
		off += len(s)
		return c
	}
	for pass := 0; pass < 2; pass++ {
		tb.Head = put(tb.Head)
		for i := range tb.Chain {
			e := &tb.Chain[i]
			e.Type, e.Message, e.Relation = put(e.Type), put(e.Message), put(e.Relation)
			e.Frames, e.UserCode = detachStack(e.Frames, put, pass), detachStack(e.UserCode, put, pass)
			if pass == 1 && e.Code != nil {
				e.Code = append(make([]string, 0, len(e.Code)), e.Code...)
			}
			for k, c := range e.Code {
				e.Code[k] = put(c)
			}
			if pass == 1 && e.Repeated != nil {
				e.Repeated = append(make([]int, 0, len(e.Repeated)), e.Repeated...)
			}
		}
		buf, copying = b.String(), true
	}
}

// detachStack is detach for one stack: on the second pass a copy of st
// of its length, with its strings put into the buffer.
func detachStack(st record.Stack, put func(string) string, pass int) record.Stack {
	if pass == 1 && st != nil {
		st = append(make(record.Stack, 0, len(st)), st...)
	}
	for k := range st {
		st[k].Func, st[k].File = put(st[k].Func), put(st[k].File)
	}
	return st
}

// reverseFrames turns the printed outermost-first order into innermost
// first, keeping Code and Repeated aligned.
func reverseFrames(e *Exception) {
	for len(e.Repeated) > 0 && len(e.Repeated) < len(e.Frames) {
		e.Repeated = append(e.Repeated, 0)
	}
	for l, r := 0, len(e.Frames)-1; l < r; l, r = l+1, r-1 {
		e.Frames[l], e.Frames[r] = e.Frames[r], e.Frames[l]
		e.Code[l], e.Code[r] = e.Code[r], e.Code[l]
		if e.Repeated != nil {
			e.Repeated[l], e.Repeated[r] = e.Repeated[r], e.Repeated[l]
		}
	}
}
