package stackdump

// The header of each stack-dump dialect, written once: the parser anchors
// it to a whole line and adds the fields that follow (stackdump.go), and
// Sniff looks for a line that starts with it (sniff.go).
const (
	// py-spy text: "Process 123: python -m x" and
	// "Thread 0x7F01 (idle): "MainThread"".
	pyspyProcessHead = `Process (\d+):`
	pyspyThreadHead  = `Thread (0x[0-9A-Fa-f]+|\d+)`
	pyspyStateHead   = `\((idle|active|active\+gil|gil)\)`
	// faulthandler: "Thread 0x7f01 [name] (most recent call first):".
	fhHead = `(Current thread|Thread) 0x([0-9A-Fa-f]+)(?: \[(.*)\])? \(most recent call first\):`
	// PyTorch's debug server: "=== Rank 3: … ===".
	debugServerHead = `=== Rank (\d+):`
	// pystack: "Traceback for thread 12 (python) [] (most recent call last):".
	pystackHead = `Traceback for thread (\d+) \(`
	// SGLang's watchdog: "Pyspy dump for PID 123" before py-spy's output.
	sglangDumpHead = "Pyspy dump for PID"
	// faulthandler's fatal-error line.
	fatalHead = "Fatal Python error: "
)
