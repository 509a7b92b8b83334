package diagnose

import (
	"regexp"
	"strings"

	"github.com/bringup-tool/bringup/analyze/timeline"
	"github.com/bringup-tool/bringup/record"
)

// PyTorch's symbolic-shapes errors end in "Caused by: (FILE:LINE in FUNC)",
// the frame where the guard or the data-dependent expression was
// evaluated, its path short: relative to the torch package for torch's own
// files ("_inductor/output_code.py:141 in complex_memory_overlap"). That
// frame says the phase when the error's own frames are not in the log (a
// traceback logged as a warning, an excerpt of the message).

var causedByRe = regexp.MustCompile(`Caused by: \(([^():\s]+\.py):(\d+) in ([\w<>.]+)\)`)

// causedByPhase is the phase of the frame a "Caused by:" line names, and
// why; "" when there is none or the frame table does not know it.
func causedByPhase(text string) (string, string) {
	if !strings.Contains(text, "Caused by: (") {
		return "", ""
	}
	m := causedByRe.FindStringSubmatch(text)
	if m == nil {
		return "", ""
	}
	file := m[1]
	if first, _, _ := strings.Cut(file, "/"); strings.HasPrefix(first, "_") && strings.Contains(file, "/") || first == "fx" {
		file = "torch/" + file // torch's own module, printed relative to the package
	}
	f := record.Frame{File: file, Line: atoi(m[2]), Func: m[3]}
	p, why := timeline.PhaseOfFrames(record.Stack{f})
	if p == "" {
		return "", ""
	}
	return p, "the error's \"Caused by:\" frame " + why
}
