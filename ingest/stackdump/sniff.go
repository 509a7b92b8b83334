package stackdump

import (
	"bytes"
	"regexp"
)

// Each sniff pattern is a dialect's header (dialects.go), the parser's
// own, anchored at the start of the text it is given. Sniff runs one only
// on a line that begins with the header's literal words, so an input that
// holds none of them costs one pass over its lines and no regex.
var (
	sniffPyspyRE   = regexp.MustCompile(`^(?:` + pyspyProcessHead + ` |` + pyspyThreadHead + ` ` + pyspyStateHead + `)`)
	sniffFHRE      = regexp.MustCompile(`^` + fhHead)
	sniffDebugRE   = regexp.MustCompile(`^` + debugServerHead + ` `)
	sniffPystackRE = regexp.MustCompile(`^` + pystackHead)
)

// The literal words each header begins with (the fixed start of the
// patterns in dialects.go).
var (
	litDebug      = []byte("=== Rank ")
	litPystack    = []byte("Traceback for thread ")
	litFHCurrent  = []byte("Current thread 0x")
	litFHThread   = []byte("Thread 0x")
	litPyspyProc  = []byte("Process ")
	litPyspyThrd  = []byte("Thread ")
	litPyspyAfter = []byte("| ") // py-spy lines behind a launcher's "name | " prefix
)

// Sniff scores, named once. A file that is a dump scores above what the
// engine-log reader gives text that holds a dump's header
// (enginelog.ScoreHoldsDump), so this parser wins it; an engine log that
// merely contains a dump (an SGLang watchdog record) scores below what
// the engine-log reader gives a log with engine headers
// (enginelog.ScoreEngine), so that reader keeps it. TestSniffScoresRank
// checks both.
const (
	ScoreOwnJSON     = 100 // bringup's own stacks --json
	ScoreDebugServer = 95  // PyTorch debug-server sections
	ScorePyspyJSON   = 90  // py-spy dump --json
	ScorePystack     = 85
	ScoreDump        = 80 // faulthandler or py-spy text
	// ScoreWatchdogDump: py-spy text behind SGLang's "Pyspy dump for PID".
	ScoreWatchdogDump = 60
	// ScoreWatchdog: SGLang's watchdog line without py-spy's headers.
	ScoreWatchdog = 50
	ScoreFatal    = 40 // a "Fatal Python error" and no dump header
)

// Sniff says how sure it is that an input is a stack dump (the scores
// above).
func Sniff(path string, head []byte) int {
	return score(head, scanHeads(head))
}

// score ranks a head by the dialect headers found on its lines and the
// literals that need no line.
func score(head []byte, h heads) int {
	switch {
	case bytes.Contains(head, []byte(`"schema": "bringup.stacks/`)) || bytes.Contains(head, []byte(`"schema":"bringup.stacks/`)):
		return ScoreOwnJSON
	case h.debug:
		return ScoreDebugServer
	case bytes.Contains(head, []byte(`"os_thread_id"`)) && bytes.Contains(head, []byte(`"frames"`)):
		return ScorePyspyJSON
	case h.pystack:
		return ScorePystack
	case h.fh:
		return ScoreDump
	case h.pyspy:
		if bytes.Contains(head, []byte(sglangDumpHead)) {
			return ScoreWatchdogDump
		}
		return ScoreDump
	case bytes.Contains(head, []byte(sglangDumpHead)):
		return ScoreWatchdog
	case bytes.Contains(head, []byte(fatalHead)):
		return ScoreFatal
	}
	return 0
}

// heads says which dialects' headers begin some line of a head.
type heads struct{ debug, pystack, fh, pyspy bool }

// scanHeads looks at each line once: a few prefix compares at its start
// and, for py-spy, after each launcher "| " in it; a regex only where the
// literal words are there.
func scanHeads(head []byte) heads {
	var h heads
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		if !h.debug && bytes.HasPrefix(line, litDebug) && sniffDebugRE.Match(line) {
			h.debug = true
			return h // the highest score a line can give
		}
		if !h.pystack && bytes.HasPrefix(line, litPystack) && sniffPystackRE.Match(line) {
			h.pystack = true
		}
		if !h.fh && (bytes.HasPrefix(line, litFHThread) || bytes.HasPrefix(line, litFHCurrent)) && sniffFHRE.Match(line) {
			h.fh = true
		}
		if !h.pyspy {
			h.pyspy = pyspyHeadIn(line)
		}
	}
	return h
}

// pyspyHeadIn: a py-spy header at the start of the line or right after
// any "| " in it (what `^(?:.*\| )?` allowed).
func pyspyHeadIn(line []byte) bool {
	for at := line; ; {
		if (bytes.HasPrefix(at, litPyspyProc) || bytes.HasPrefix(at, litPyspyThrd)) && sniffPyspyRE.Match(at) {
			return true
		}
		i := bytes.Index(at, litPyspyAfter)
		if i < 0 {
			return false
		}
		at = at[i+len(litPyspyAfter):]
	}
}
