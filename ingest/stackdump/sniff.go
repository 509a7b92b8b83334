package stackdump

import (
	"bytes"
	"regexp"
)

var (
	sniffPyspyRE   = regexp.MustCompile(`(?m)^(?:.*\| )?(?:Process \d+: |Thread (?:0x[0-9A-Fa-f]+|\d+) \((?:idle|active|active\+gil|gil)\))`)
	sniffFHRE      = regexp.MustCompile(`(?m)^(?:Current thread|Thread) 0x[0-9a-fA-F]+(?: \[.*\])? \(most recent call first\):`)
	sniffDebugRE   = regexp.MustCompile(`(?m)^=== Rank \d+: `)
	sniffPystackRE = regexp.MustCompile(`(?m)^Traceback for thread \d+ \(`)
)

// Sniff says how sure it is that an input is a stack dump. Engine logs
// that merely contain a dump (an SGLang watchdog record) score lower than
// a file that is a dump, so the engine-log reader keeps them when both
// claim an input.
func Sniff(path string, head []byte) int {
	switch {
	case bytes.Contains(head, []byte(`"schema": "bringup.stacks/`)) || bytes.Contains(head, []byte(`"schema":"bringup.stacks/`)):
		return 100
	case sniffDebugRE.Match(head):
		return 95
	case bytes.Contains(head, []byte(`"os_thread_id"`)) && bytes.Contains(head, []byte(`"frames"`)):
		return 90
	case sniffPystackRE.Match(head):
		return 85
	case sniffFHRE.Match(head):
		return 80
	case sniffPyspyRE.Match(head):
		if bytes.Contains(head, []byte("Pyspy dump for PID")) {
			return 60
		}
		return 80
	case bytes.Contains(head, []byte("Pyspy dump for PID")):
		return 50
	case bytes.Contains(head, []byte("Fatal Python error: ")):
		return 40
	}
	return 0
}
