// Package stackdump reads Python stack dumps that already exist: py-spy
// text (with --native, --locals and --subprocesses) and --json, faulthandler
// (including 3.14 thread names and the 100-frame cap), pystack, PyTorch
// debug-server multi-rank files, bringup's own bringup.stacks/v1 JSON, and
// any of these embedded in engine logs (SGLang watchdog records, vLLM,
// torchrun, docker compose and kubectl prefixes).
//
// The reader is a line state machine that tolerates garbage: a line it does
// not understand ends the current thread, is counted with its location, and
// reading goes on. Output of several processes interleaved inside lines on
// one stream cannot be split; it is detected and reported with the fix.
package stackdump

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/input"
	"github.com/bringup-tool/bringup/record"
)

// FormatName is the name of stack-dump inputs among diagnose's kinds.
const FormatName = "stackdump"

// Result is what one input held.
type Result struct {
	Path      string
	Processes []*record.Process
	// Warnings are lines that were skipped, with their location.
	Warnings []record.Warning
	// Interleaved is set when output of several processes is mixed inside
	// lines (concurrent faulthandler writes on one stderr): such text
	// cannot be split reliably and is not guessed at.
	Interleaved *record.Warning
	Lines       int
}

// maxPending bounds a frame line joined from wrapped pieces.
const maxPending = 64 << 10

// MaxLine is the longest physical line kept; longer lines are cut with a
// warning (a demangled C++ frame is about 1 KB, so this is generous).
const MaxLine = 1 << 20

// ParseFile reads one dump file: a regular file only (a FIFO or a device
// is refused, see input.Open).
func ParseFile(path string) (*Result, error) {
	f, err := input.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads a dump from r; path names it in locations. The error is for
// failing to read, and for an input that is not text at all (binary data,
// UTF-16: input.NotText of its first 64 KiB), which is not read on; bad
// content becomes Warnings.
func Parse(r io.Reader, path string) (*Result, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if head, _ := br.Peek(64 << 10); len(head) > 0 {
		if what := input.NotText(head); what != "" {
			return newParser(path).res, &input.NotTextError{Path: path, What: what, Want: "a stack dump"}
		}
	}
	return parseLines(br, path)
}

// parseLines runs the line reader over all of br, text or not.
func parseLines(br *bufio.Reader, path string) (*Result, error) {
	p := newParser(path)
	var long []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			p.finish()
			return p.res, fmt.Errorf("%s: %w", path, err)
		}
		if isPrefix || long != nil {
			if len(long) < MaxLine {
				long = append(long, chunk...)
			}
			if isPrefix {
				continue
			}
			chunk, long = long, nil
			if len(chunk) >= MaxLine {
				p.warn(p.lineNo+1, "line longer than %d bytes cut", MaxLine)
				chunk = chunk[:MaxLine]
			}
		}
		p.line(string(chunk))
	}
	p.finish()
	return p.res, nil
}

var (
	// SGLang logger header: only on the first line of a record.
	sglangHeaderRE = regexp.MustCompile(`^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?((?: [A-Z]+\d+)*)\] ?`)
	pyspyProcessRE = regexp.MustCompile(`^` + pyspyProcessHead + ` ?(.*?)\s*$`)
	pyspyPythonRE  = regexp.MustCompile(`^Python v(\S+) \((.*)\)\s*$`)
	pyspyParentRE  = regexp.MustCompile(`^Parent Process (\d+): ?(.*?)\s*$`)
	pyspyThreadRE  = regexp.MustCompile(`^` + pyspyThreadHead + `(?: ` + pyspyStateHead + `)?(?:: "(.*)")?\s*$`)
	pyspyRuleRE    = regexp.MustCompile(`^-{10,}\s*$`)
	pyspyCmdRE     = regexp.MustCompile(`py-spy\s+dump\b.*--pid[ =](\d+)`)

	fhHeaderRE = regexp.MustCompile(`^` + fhHead + `\s*$`)
	fhStackRE  = regexp.MustCompile(`^Stack \(most recent call first\):\s*$`)
	fhFrameRE  = regexp.MustCompile(`^  File (?:"(.*)"|\?\?\?), line (\d+|\?\?\?) in (.*?)\s*$`)
	fhFatalRE  = regexp.MustCompile(`^` + fatalHead + `(.*)$`)
	fhTimeout  = regexp.MustCompile(`^Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!\s*$`)

	debugServerRE = regexp.MustCompile(`^` + debugServerHead + ` ?(.*?) ===\s*$`)
	sglangDumpRE  = regexp.MustCompile(sglangDumpHead + ` (\d+)`)
	sglangFailRE  = regexp.MustCompile(`Pyspy failed to dump PID (\d+)\. ?(.*)$`)

	pystackThreadRE = regexp.MustCompile(`^` + pystackHead + `([^)]*)\) \[([^\]]*)\] \(most recent call last\):\s*$`)
	pystackFrameRE  = regexp.MustCompile(`^\s+\((Python|C)\) File "(.*)", line (\d+), in (.*?)\s*$`)
	pystackEmptyRE  = regexp.MustCompile(`^The frame stack for thread (\d+) is empty`)

	tbHeaderRE = regexp.MustCompile(`^\s*Traceback \(most recent call last\):\s*$`)
	tbFrameRE  = regexp.MustCompile(`^\s*File "(.*)", line (\d+), in (.+?)\s*$`)
	caretRE    = regexp.MustCompile(`^\s*[~^]+\s*$`)
)

type mode uint8

const (
	modeNone mode = iota
	modePyspy
	modeFaulthandler
	modePystack
	modeCStack    // faulthandler's C stack section: skipped
	modeTraceback // a Python traceback: outermost first, like pystack
)

// stream is the reader state of one producer. Line-interleaved output of
// several processes (each line prefixed by its process) gets one stream
// per prefix, so it is read as if each had its own file.
type stream struct {
	proc   *record.Process
	thread int // index into proc.Threads, -1 when none
	mode   mode
	// inCmdline: between a py-spy "Process" line and its "Python v" line,
	// where a terminal-wrapped command line continues.
	inCmdline bool
	// pending is a frame line that did not end in ")": it may continue on
	// the next physical line.
	pending     string
	pendingLine int
	// next* describe the dump announced by a surrounding record (SGLang
	// "Pyspy dump for PID n", a debug-server section, a shell prompt).
	nextPID  int
	nextRank record.Rank
	// lastRank is the rank of the last line that carried one.
	lastRank record.Rank
}

type parser struct {
	path    string
	res     *Result
	lineNo  int
	streams map[string]*stream
	peeler  enginelog.LinePeeler
	json    *jsonAccum
	// interleave signs; suspect is a damaged line not yet counted (the
	// input's last line, if nothing follows it: cut, not interleaved).
	badFH       int
	suspect     string
	suspectLine int
	cutThread   *record.Thread // the thread the suspect line was in
}

func newParser(path string) *parser {
	return &parser{
		path:    path,
		res:     &Result{Path: path},
		streams: map[string]*stream{},
	}
}

func (p *parser) warn(line int, format string, a ...any) {
	const maxWarnings = 200
	if len(p.res.Warnings) == maxWarnings {
		p.res.Warnings = append(p.res.Warnings, record.Warning{Path: p.path, Line: line, Reason: "more warnings not shown"})
	}
	if len(p.res.Warnings) > maxWarnings {
		return
	}
	p.res.Warnings = append(p.res.Warnings, record.Warning{Path: p.path, Line: line, Reason: fmt.Sprintf(format, a...)})
}

func (p *parser) stream(key string) *stream {
	s := p.streams[key]
	if s == nil {
		s = &stream{thread: -1, nextRank: record.NoRank, lastRank: record.NoRank}
		p.streams[key] = s
	}
	return s
}

func (p *parser) line(raw string) {
	p.lineNo++
	p.res.Lines++
	if p.json != nil {
		if p.json.add(raw) {
			p.flushJSON()
		}
		return
	}
	if p.suspectLine > 0 && strings.TrimSpace(raw) != "" {
		p.commitSuspect()
	}
	pl := peel(&p.peeler, raw)
	s := p.stream(pl.stream)
	if pl.tagged {
		s.lastRank = mergeRank(s.lastRank, pl.rank)
	}
	body := pl.body
	trimmed := strings.TrimSpace(body)

	// A JSON document (py-spy --json, bringup.stacks/v1) starts at a line
	// that opens an array or object outside any dump.
	if s.thread < 0 && s.pending == "" && (trimmed == "[" || trimmed == "{" || strings.HasPrefix(trimmed, "[{") || strings.HasPrefix(trimmed, `{"`)) {
		p.json = &jsonAccum{start: p.lineNo, stream: s}
		if p.json.add(trimmed) {
			p.flushJSON()
		}
		return
	}

	// Fast path: a py-spy frame line inside a py-spy thread.
	if s.mode == modePyspy && s.pending == "" && s.thread >= 0 && len(body) > 4 && body[4] != ' ' && body[4] != '\t' && strings.HasPrefix(body, "    ") {
		if f, ok := parsePyspyFrame(body[4:]); ok {
			th := &s.proc.Threads[s.thread]
			th.Frames = append(th.Frames, f)
			return
		}
	}

	p.checkInterleave(body)

	// A wrapped frame line continues on this line unless this line is
	// something else we recognise.
	if s.pending != "" {
		if !pl.record && !strings.HasPrefix(body, "    ") && trimmed != "" && !p.isHeader(trimmed) {
			s.pending += body
			if !p.tryPending(s) && len(s.pending) > maxPending {
				p.dropPending(s) // not a wrapped frame after all
			}
			return
		}
		if isCaret(body) || strings.Contains(body, `File "`) && tbFrameRE.MatchString(body) {
			s.pending = "" // it was a traceback's source line, not a frame
		}
		p.dropPending(s)
	}

	switch {
	case trimmed == "":
		// A blank line ends a faulthandler thread and the pystack source
		// context; inside a py-spy thread (docker compose prints prefixed
		// blank lines mid-thread) it changes nothing.
		if s.mode == modeFaulthandler || s.mode == modeCStack {
			s.thread = -1
			if s.mode == modeCStack {
				s.mode = modeFaulthandler
			}
		}
		return
	}

	if s.mode == modeCStack {
		if strings.HasPrefix(body, "  ") {
			return
		}
		s.mode = modeFaulthandler
	}

	if p.launcherLine(s, &pl, body, trimmed) ||
		p.pyspyHeaderLine(s, body) ||
		p.faulthandlerHead(s, body, trimmed) ||
		p.pystackLine(s, body, trimmed) ||
		p.tracebackLine(s, body) ||
		p.pyspyThreadLine(s, body) {
		return
	}

	// Anything else: a log line between dumps, a shell prompt, garbage.
	// It ends the current thread but not the dump.
	if s.thread >= 0 || s.mode != modeNone {
		if s.thread >= 0 {
			s.thread = -1
		}
	}
}

// launcherLine: the lines that announce a dump: a debug-server section,
// SGLang's watchdog ("Pyspy dump for PID", or its failure), a py-spy
// command line.
func (p *parser) launcherLine(s *stream, pl *peeled, body, trimmed string) bool {
	if m := matchIf(strings.HasPrefix(trimmed, "=== Rank "), debugServerRE, trimmed); m != nil {
		p.endProcess(s)
		r := record.NoRank
		r.Global, _ = strconv.Atoi(m[1])
		s.nextRank = r
		s.nextPID = 0
		p.newProcess(s, 0, "")
		s.proc.Name = m[2]
		return true
	}
	hasPyspy := strings.Contains(body, "Pyspy ")
	if m := matchIf(hasPyspy, sglangFailRE, body); m != nil {
		p.warn(p.lineNo, "the engine's py-spy could not dump pid %s: %s", m[1], m[2])
		return true
	}
	if m := matchIf(hasPyspy, sglangDumpRE, body); m != nil && !strings.HasPrefix(body, " ") {
		p.endProcess(s)
		s.nextPID, _ = strconv.Atoi(m[1])
		s.nextRank = pl.rank
		if !pl.tagged {
			s.nextRank = s.lastRank
		}
		return true
	}
	if m := matchIf(strings.Contains(body, "py-spy"), pyspyCmdRE, body); m != nil && !strings.HasPrefix(body, "    ") {
		p.endProcess(s)
		s.nextPID, _ = strconv.Atoi(m[1])
		return true
	}
	return false
}

// pyspyHeaderLine: py-spy's process header (Process, Python, the wrapped
// command line, Parent Process) and the rule between dumps.
func (p *parser) pyspyHeaderLine(s *stream, body string) bool {
	// py-spy headers.
	if m := matchIf(strings.HasPrefix(body, "Process "), pyspyProcessRE, body); m != nil {
		p.endProcess(s)
		pid, _ := strconv.Atoi(m[1])
		p.newProcess(s, pid, m[2])
		s.inCmdline = true
		s.mode = modePyspy
		return true
	}
	if m := matchIf(strings.HasPrefix(body, "Python v"), pyspyPythonRE, body); m != nil {
		if s.proc == nil || len(s.proc.Threads) > 0 || s.proc.Python != "" {
			// An excerpt that starts at the Python line (its Process line
			// was cut).
			p.endProcess(s)
			p.newProcess(s, 0, "")
		}
		s.proc.Python = m[1]
		if s.proc.Name == "" {
			s.proc.Name = m[2]
		}
		s.inCmdline = false
		s.mode = modePyspy
		return true
	}
	if s.inCmdline && s.proc != nil && !strings.HasPrefix(body, "Thread ") {
		// py-spy's command line, wrapped by the terminal.
		s.proc.Name += strings.TrimRight(body, " ")
		p.rankFromTitle(s.proc)
		return true
	}
	if m := matchIf(strings.HasPrefix(body, "Parent Process "), pyspyParentRE, body); m != nil && s.proc != nil {
		s.proc.PPID, _ = strconv.Atoi(m[1])
		return true
	}
	if strings.HasPrefix(body, "----------") && pyspyRuleRE.MatchString(body) {
		p.endProcess(s)
		return true
	}
	return false
}

// faulthandlerHead: faulthandler's thread headers, fatal errors, timeouts,
// C stacks and frames.
func (p *parser) faulthandlerHead(s *stream, body, trimmed string) bool {
	// faulthandler.
	if m := matchIf(strings.HasPrefix(body, "Thread 0x") || strings.HasPrefix(body, "Current thread 0x"), fhHeaderRE, body); m != nil {
		if s.proc == nil || s.mode == modePyspy || s.mode == modePystack || p.hasThreadIdent(s.proc, m[2]) {
			p.endProcess(s)
			p.newProcess(s, 0, "")
		}
		s.mode = modeFaulthandler
		id, _ := strconv.ParseUint(m[2], 16, 64)
		t := record.Thread{TID: id, Ident: "0x" + strings.ToLower(m[2]), Name: m[3], Line: p.lineNo}
		if m[1] == "Current thread" {
			t.State = "current"
		}
		p.addThread(s, t)
		return true
	}
	if strings.HasPrefix(body, "Stack (") && fhStackRE.MatchString(body) {
		if s.proc == nil || s.mode != modeFaulthandler || len(s.proc.Threads) > 0 {
			p.endProcess(s)
			p.newProcess(s, 0, "")
		}
		s.mode = modeFaulthandler
		p.addThread(s, record.Thread{State: "current", Line: p.lineNo})
		return true
	}
	if strings.HasPrefix(body, fatalHead) {
		p.endProcess(s)
		s.mode = modeFaulthandler
		return true
	}
	if strings.HasPrefix(body, "Timeout (") && fhTimeout.MatchString(body) {
		p.endProcess(s)
		s.mode = modeFaulthandler
		return true
	}
	if strings.HasSuffix(trimmed, "C stack trace (most recent call first):") {
		s.mode = modeCStack
		s.thread = -1
		return true
	}
	if s.mode == modeFaulthandler && strings.HasPrefix(body, "  ") {
		p.faulthandlerLine(s, body)
		return true
	}
	if s.mode == modeNone && s.thread < 0 && strings.HasPrefix(body, "  File ") && fhFrameRE.MatchString(body) {
		// faulthandler frames with no thread header before them (an
		// excerpt that starts below it, a header lost to a cut): a thread
		// of unknown id, read like the rest.
		p.newProcess(s, 0, "")
		s.mode = modeFaulthandler
		p.warn(p.lineNo, "faulthandler frames without a thread header: read as a thread of unknown id")
		p.addThread(s, record.Thread{Line: p.lineNo})
		p.faulthandlerLine(s, body)
		return true
	}
	return false
}

// pystackLine: pystack's thread headers, frames and the context it
// prints around them.
func (p *parser) pystackLine(s *stream, body, trimmed string) bool {
	// pystack.
	if m := matchIf(strings.HasPrefix(body, "Traceback for thread "), pystackThreadRE, body); m != nil {
		if s.proc == nil || s.mode != modePystack {
			p.endProcess(s)
			p.newProcess(s, 0, "")
		}
		s.mode = modePystack
		tid, _ := strconv.ParseUint(m[1], 10, 64)
		t := record.Thread{TID: tid, State: pystackState(m[3]), Line: p.lineNo}
		if s.proc.Name == "" {
			s.proc.Name = m[2]
		}
		p.addThread(s, t)
		return true
	}
	if strings.HasPrefix(body, "The frame stack for thread ") {
		s.thread = -1
		return true
	}
	if s.mode == modePystack && s.thread >= 0 {
		if m := pystackFrameRE.FindStringSubmatch(body); m != nil {
			ln, _ := strconv.Atoi(m[3])
			f := record.Frame{Func: m[4], File: m[2], Line: ln}
			if m[1] == "C" {
				f.Native = true
				if i := strings.LastIndex(f.Func, " ("); i > 0 && strings.HasSuffix(f.Func, ")") {
					f.Func = f.Func[:i]
				}
			}
			th := &s.proc.Threads[s.thread]
			th.Frames = append(th.Frames, f)
			return true
		}
		if strings.HasPrefix(body, "    ") || strings.HasPrefix(strings.TrimSpace(body), "* -") || strings.HasPrefix(trimmed, "In the main interpreter") || strings.HasPrefix(trimmed, "In interpreter") {
			return true // source context, locals, merge notes
		}
	}
	return false
}

// tracebackLine: a Python traceback's header, frames, source lines and
// exception line.
func (p *parser) tracebackLine(s *stream, body string) bool {
	// Python tracebacks (outermost first), e.g. a compile failure logged by
	// a worker: one thread of the rank's process.
	if strings.Contains(body, "Traceback (most recent call last):") && tbHeaderRE.MatchString(body) {
		if s.proc == nil || s.mode != modeTraceback {
			p.endProcess(s)
			p.newProcess(s, 0, "")
		}
		s.mode = modeTraceback
		p.addThread(s, record.Thread{State: "traceback", Line: p.lineNo})
		return true
	}
	if m := matchIf(strings.Contains(body, `File "`), tbFrameRE, body); m != nil && (s.mode == modeTraceback || s.mode == modeNone) {
		if s.mode != modeTraceback {
			p.endProcess(s)
			p.newProcess(s, 0, "")
			s.mode = modeTraceback
		}
		if s.thread < 0 {
			// The excerpt starts mid-traceback.
			p.addThread(s, record.Thread{State: "traceback", Truncated: true, Line: p.lineNo})
		}
		ln, _ := strconv.Atoi(m[2])
		th := &s.proc.Threads[s.thread]
		th.Frames = append(th.Frames, record.Frame{Func: m[3], File: m[1], Line: ln})
		return true
	}
	if s.mode == modeTraceback {
		if strings.HasPrefix(body, "    ") || isCaret(body) {
			return true // source line or carets
		}
		s.thread = -1 // the exception line ends the traceback
		return true
	}
	if s.mode == modeNone && s.thread < 0 && isCaret(body) {
		return true
	}
	return false
}

// pyspyThreadLine: py-spy's thread headers, frames (wrapped ones
// pending) and --locals.
func (p *parser) pyspyThreadLine(s *stream, body string) bool {
	// py-spy threads and frames.
	if m := matchIf(strings.HasPrefix(body, "Thread "), pyspyThreadRE, body); m != nil {
		p.pyspyThread(s, m)
		return true
	}
	if strings.HasPrefix(body, "    ") && len(body) > 4 && body[4] != ' ' && body[4] != '\t' {
		if s.mode == modePystack {
			return true
		}
		s.pending = strings.TrimRight(body[4:], " \t")
		s.pendingLine = p.lineNo
		p.tryPending(s) // else it may continue on the next line
		return true
	}
	if strings.HasPrefix(body, "        ") {
		t := strings.TrimSpace(body)
		if s.thread >= 0 && (t == "Arguments:" || t == "Locals:" || strings.HasPrefix(body, "            ")) {
			return true // py-spy --locals
		}
	}
	return false
}

// isHeader reports whether a line starts something of its own, so it is
// not the continuation of a wrapped frame line.
func (p *parser) isHeader(t string) bool {
	if !strings.HasPrefix(t, "Thread ") && !strings.HasPrefix(t, "Process ") && !strings.HasPrefix(t, "Python v") &&
		!strings.HasPrefix(t, "Current thread") && !strings.HasPrefix(t, "=== Rank") && !strings.Contains(t, "Pyspy dump") && !strings.HasPrefix(t, "[") {
		return false
	}
	return pyspyThreadRE.MatchString(t) || pyspyProcessRE.MatchString(t) || pyspyPythonRE.MatchString(t) ||
		fhHeaderRE.MatchString(t) || debugServerRE.MatchString(t) || sglangDumpRE.MatchString(t) ||
		strings.HasPrefix(t, "[") && sglangHeaderRE.MatchString(t)
}

// tryPending parses the pending frame line; it reports whether it did.
func (p *parser) tryPending(s *stream) bool {
	f, ok := parsePyspyFrame(s.pending)
	if !ok {
		return false
	}
	if s.thread < 0 {
		// Frames before any thread header: the excerpt starts mid-thread.
		if s.proc == nil {
			p.newProcess(s, 0, "")
		}
		s.mode = modePyspy
		p.addThread(s, record.Thread{Truncated: true, Line: s.pendingLine})
	}
	th := &s.proc.Threads[s.thread]
	th.Frames = append(th.Frames, f)
	s.pending = ""
	return true
}

func (p *parser) dropPending(s *stream) {
	if s.pending == "" {
		return
	}
	p.warn(s.pendingLine, "frame line cut off, dropped: %q", clip(s.pending, 80))
	s.pending = ""
	if s.thread >= 0 {
		s.proc.Threads[s.thread].Truncated = true
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// parsePyspyFrame reads "func (file:line)" from the right: demangled C++
// names contain parentheses, so the location is the last " (" group.
func parsePyspyFrame(s string) (record.Frame, bool) {
	s = strings.TrimRight(s, " \t")
	if !strings.HasSuffix(s, ")") {
		return record.Frame{}, false
	}
	i := strings.LastIndex(s, " (")
	for i > 0 && strings.ContainsAny(s[i+2:len(s)-1], "()") {
		i = strings.LastIndex(s[:i], " (")
	}
	if i <= 0 {
		return record.Frame{}, false
	}
	fn, loc := s[:i], s[i+2:len(s)-1]
	if strings.ContainsAny(loc, "()") || !plausibleLocation(loc) {
		return record.Frame{}, false
	}
	f := record.Frame{Func: fn, File: loc}
	if j := strings.LastIndexByte(loc, ':'); j > 0 {
		if n, err := strconv.Atoi(loc[j+1:]); err == nil && n >= 0 {
			f.File, f.Line = loc[:j], n
		}
	}
	f.Native = isNative(f)
	return f, true
}

// plausibleLocation: a file, module or library name ("a/b.py:12",
// "libc.so.6", "?", "<frozen importlib._bootstrap>:241"), not the tail of
// a log message that happens to end in ")".
func plausibleLocation(loc string) bool {
	if loc == "" {
		return false
	}
	if strings.HasPrefix(loc, "<") {
		return true
	}
	return !strings.ContainsAny(loc, " =,\t")
}

// isNative tells a native frame (py-spy --native, pystack (C)) from a
// Python one: Python frames live in .py files or <pseudo-files>.
func isNative(f record.Frame) bool {
	if strings.HasPrefix(f.File, "<") || strings.HasSuffix(f.File, ".py") || strings.HasSuffix(f.File, ".pyx") || strings.HasSuffix(f.File, ".pyw") {
		return false
	}
	return true
}

func (p *parser) pyspyThread(s *stream, m []string) {
	var tid uint64
	ident := ""
	if strings.HasPrefix(m[1], "0x") {
		tid, _ = strconv.ParseUint(m[1][2:], 16, 64)
		ident = strings.ToLower(m[1])
	} else {
		tid, _ = strconv.ParseUint(m[1], 10, 64)
	}
	if s.proc == nil || s.mode != modePyspy || p.hasTID(s.proc, tid) {
		p.endProcess(s)
		p.newProcess(s, 0, "")
	}
	s.mode = modePyspy
	s.inCmdline = false
	t := record.Thread{TID: tid, Ident: ident, State: m[2], Name: m[3], Line: p.lineNo}
	if t.Name == "MainThread" {
		t.Main = true
		// On Linux py-spy prints the OS thread id, and a main thread's id
		// is its process id.
		if s.proc.PID == 0 && ident == "" {
			s.proc.PID = int(tid)
		}
	}
	if s.proc.PID > 0 && ident == "" && int(tid) == s.proc.PID {
		t.Main = true
	}
	p.addThread(s, t)
}

func (p *parser) faulthandlerLine(s *stream, body string) {
	t := strings.TrimSpace(body)
	m := fhFrameRE.FindStringSubmatch(body)
	if m == nil && t != "<no Python frame>" && t != "..." && t != "Garbage-collecting" {
		if p.suspectLine == p.lineNo {
			// Damaged: cut (when it is the last line) or interleaved,
			// which the next line decides; the frames below it are lost.
			if s.thread >= 0 {
				p.cutThread = &s.proc.Threads[s.thread]
			}
			return
		}
		p.warn(p.lineNo, "not a faulthandler frame line: %q", clip(t, 80))
		return
	}
	if s.thread < 0 {
		if s.proc == nil {
			p.newProcess(s, 0, "")
		}
		p.addThread(s, record.Thread{Truncated: true, Line: p.lineNo})
	}
	th := &s.proc.Threads[s.thread]
	switch {
	case t == "<no Python frame>":
	case t == "...":
		// faulthandler's 100-frame cap: the root side is lost.
		th.Truncated = true
	case t == "Garbage-collecting":
		if th.State == "" || th.State == "current" {
			th.State = "gc"
		}
	default:
		ln, _ := strconv.Atoi(m[2])
		file := m[1]
		if file == "" {
			file = "???"
		}
		th.Frames = append(th.Frames, record.Frame{Func: m[3], File: file, Line: ln})
	}
}

func pystackState(s string) string {
	switch {
	case strings.Contains(s, "Has the GIL"):
		return "active+gil"
	case strings.Contains(s, "Waiting for the GIL"), strings.Contains(s, "Dropping the GIL"):
		return "active"
	case strings.Contains(s, "Garbage collecting"):
		return "gc"
	}
	return ""
}

func (p *parser) hasTID(proc *record.Process, tid uint64) bool {
	for _, t := range proc.Threads {
		if t.TID == tid && !t.Truncated {
			return true
		}
	}
	return false
}

func (p *parser) hasThreadIdent(proc *record.Process, hex string) bool {
	id, _ := strconv.ParseUint(hex, 16, 64)
	for _, t := range proc.Threads {
		if t.Ident != "" && t.TID == id {
			return true
		}
	}
	return false
}

func (p *parser) addThread(s *stream, t record.Thread) {
	s.proc.Threads = append(s.proc.Threads, t)
	s.thread = len(s.proc.Threads) - 1
}

func (p *parser) newProcess(s *stream, pid int, name string) {
	if pid == 0 {
		pid = s.nextPID
	}
	proc := &record.Process{PID: pid, Name: name, Source: record.SourceFile, Path: p.path, Line: p.lineNo, RankInfo: record.NoRank}
	rank := s.nextRank
	if !rankKnown(rank) && s.nextPID == 0 {
		rank = s.lastRank
		if rank.PID > 0 && pid > 0 && rank.PID != pid {
			rank = record.NoRank
		}
	}
	proc.RankInfo = rank
	if proc.PID == 0 && rank.PID > 0 {
		proc.PID = rank.PID
	}
	p.rankFromTitle(proc)
	s.proc = proc
	s.thread = -1
	s.nextPID = 0
	s.nextRank = record.NoRank
	p.res.Processes = append(p.res.Processes, proc)
}

// rankFromTitle reads the rank from a process title such as
// "VLLM::Worker_TP3" or "sglang::scheduler_PP2_TP1"; a rank the
// surrounding record gave wins.
func (p *parser) rankFromTitle(proc *record.Process) {
	if rankKnown(proc.RankInfo) {
		proc.Rank = rankLabel(proc.RankInfo)
		return
	}
	if r := RankFromTitle(proc.Name); rankKnown(r) {
		proc.RankInfo = r
	}
	proc.Rank = rankLabel(proc.RankInfo)
}

func rankLabel(r record.Rank) string { return r.Key() }

func mergeRank(old, nw record.Rank) record.Rank {
	if rankKnown(nw) || nw.PID > 0 {
		return nw
	}
	return old
}

// endProcess closes the current process of a stream: pending lines are
// dropped with a warning, pystack threads are turned innermost first, and
// an empty process (a header with nothing after it) is kept only when it
// says something.
func (p *parser) endProcess(s *stream) {
	p.dropPending(s)
	if s.proc != nil && (s.mode == modePystack || s.mode == modeTraceback) {
		for i := range s.proc.Threads {
			fr := s.proc.Threads[i].Frames
			for a, b := 0, len(fr)-1; a < b; a, b = a+1, b-1 {
				fr[a], fr[b] = fr[b], fr[a]
			}
		}
	}
	s.proc = nil
	s.thread = -1
	s.mode = modeNone
	s.inCmdline = false
}

func (p *parser) finish() {
	if p.suspectLine > 0 {
		// The damaged line was the input's last: cut mid-line.
		p.warn(p.suspectLine, "last line cut off (input ends mid-line), dropped: %q", clip(strings.TrimSpace(p.suspect), 80))
		p.suspect, p.suspectLine = "", 0
		if p.cutThread != nil {
			p.cutThread.Truncated = true // its outer frames were never written
		}
	}
	if p.json != nil {
		p.warn(p.json.start, "JSON document not closed before end of input")
		p.json = nil
	}
	for _, s := range p.streams {
		if s.pending != "" {
			p.warn(s.pendingLine, "last frame line cut off (input ends mid-line), dropped: %q", clip(s.pending, 80))
			s.pending = ""
			if s.thread >= 0 {
				s.proc.Threads[s.thread].Truncated = true
			}
		}
		p.endProcess(s)
	}
	// Drop processes with neither threads nor identity, and number
	// repeated dumps of one pid as snapshots.
	var keep []*record.Process
	for _, proc := range p.res.Processes {
		if len(proc.Threads) == 0 && proc.PID == 0 && proc.Python == "" {
			continue
		}
		// Last resort for the rank: the file name ("dump_rank3.txt",
		// "worker_TP6.log"), when the file holds one process.
		if !rankKnown(proc.RankInfo) && len(p.res.Processes) == 1 {
			r := proc.RankInfo
			if record.ScanRankTokens(filepath.Base(p.path), &r) {
				proc.RankInfo = r
				proc.Rank = rankLabel(r)
			}
		}
		keep = append(keep, proc)
	}
	p.res.Processes = keep
	if p.badFH > 0 && p.res.Interleaved == nil {
		p.res.Interleaved = &record.Warning{Path: p.path, Line: 0, Reason: "faulthandler output looks interleaved"}
	}
}

// matchIf runs re only when a cheap test says it may match: most lines of
// a large log are neither headers nor frames.
func matchIf(maybe bool, re *regexp.Regexp, s string) []string {
	if !maybe {
		return nil
	}
	return re.FindStringSubmatch(s)
}

func isCaret(s string) bool {
	return strings.ContainsAny(s, "^~") && caretRE.MatchString(s)
}
