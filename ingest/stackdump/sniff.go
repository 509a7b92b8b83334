package stackdump

import (
	"bytes"
	"regexp"
)

// Each sniff pattern finds a line that starts with a dialect's header
// (dialects.go), the parser's own.
var (
	sniffPyspyRE   = regexp.MustCompile(`(?m)^(?:.*\| )?(?:` + pyspyProcessHead + ` |` + pyspyThreadHead + ` ` + pyspyStateHead + `)`)
	sniffFHRE      = regexp.MustCompile(`(?m)^` + fhHead)
	sniffDebugRE   = regexp.MustCompile(`(?m)^` + debugServerHead + ` `)
	sniffPystackRE = regexp.MustCompile(`(?m)^` + pystackHead)
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
	switch {
	case bytes.Contains(head, []byte(`"schema": "bringup.stacks/`)) || bytes.Contains(head, []byte(`"schema":"bringup.stacks/`)):
		return ScoreOwnJSON
	case sniffDebugRE.Match(head):
		return ScoreDebugServer
	case bytes.Contains(head, []byte(`"os_thread_id"`)) && bytes.Contains(head, []byte(`"frames"`)):
		return ScorePyspyJSON
	case sniffPystackRE.Match(head):
		return ScorePystack
	case sniffFHRE.Match(head):
		return ScoreDump
	case sniffPyspyRE.Match(head):
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
