package stackdump

import (
	"strings"

	"github.com/bringup-tool/bringup/record"
)

// InterleaveFix is what to do about interleaved output.
const InterleaveFix = `give each rank its own file, e.g. faulthandler.enable(file=open(f"fh.{rank}.log", "w")) or faulthandler.register(signal.SIGUSR1, file=..., all_threads=True), or capture live with 'bringup stacks --pid'`

// checkInterleave looks for the marks of several processes writing one
// stderr at once: faulthandler writes in many small write() calls, so
// concurrent processes mix inside lines ("Thread 0xFatal Python error: …").
// Such text cannot be split reliably, so it is reported, not guessed at.
func (p *parser) checkInterleave(body string) {
	bad := false
	if i := strings.Index(body, "Fatal Python error:"); i > 0 || strings.Count(body, "Fatal Python error:") > 1 {
		bad = true
	}
	if strings.Count(body, "Thread 0x") > 1 {
		bad = true
	}
	if strings.Contains(body, "(most recent call first):") && !fhHeaderRE.MatchString(body) && !fhStackRE.MatchString(body) &&
		!strings.HasSuffix(strings.TrimSpace(body), "C stack trace (most recent call first):") {
		bad = true
	}
	if strings.HasPrefix(body, "  File ") && !fhFrameRE.MatchString(body) && !pystackFrameRE.MatchString(body) && !strings.Contains(body, `", line `) {
		bad = true
	}
	if !bad {
		return
	}
	// A damaged line is held until the next one: the last line of an
	// input cut mid-write (a copy taken while the process was writing, a
	// paste) looks the same as a line two writers mixed, but one cut line
	// at the end is not interleaving.
	p.commitSuspect()
	p.suspect, p.suspectLine = body, p.lineNo
}

// commitSuspect counts the held damaged line as a sign of interleaving:
// another line followed it.
func (p *parser) commitSuspect() {
	if p.suspectLine == 0 {
		return
	}
	p.badFH++
	if p.res.Interleaved == nil {
		p.res.Interleaved = &record.Warning{
			Path:   p.path,
			Line:   p.suspectLine,
			Reason: "output of several processes is interleaved inside lines (concurrent faulthandler writes on one stream); it cannot be split reliably: " + InterleaveFix,
		}
	}
	p.suspect, p.suspectLine, p.cutThread = "", 0, nil
}
