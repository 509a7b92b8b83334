package pytrace

import (
	"testing"

	"github.com/bringup-tool/bringup/record"
)

// feedLines feeds one record per line, numbered from 1, on one rank.
func feedLines(lines ...string) []Traceback {
	x := NewExtractor()
	for i, l := range lines {
		x.Add(record.Record{Source: "s", Line: i + 1, EndLine: i + 1, Rank: record.NoRank, Text: l})
	}
	return x.Finish()
}

// A build log quotes a Python traceback's tail under its own "error:"
// line: the frame ends that frameless message and the exception after it
// is a traceback of its own, with the frame.
func TestFrameEndsFramelessMessage(t *testing.T) {
	tbs := feedLines(
		"error: builder for 'x.drv' failed with exit code 1;",
		"       last 25 log lines:",
		`  File "/site-packages/triton/runtime/cache.py", line 115, in put`,
		"    f.write(data)",
		"OSError: [Errno 28] No space left on device",
	)
	if len(tbs) != 2 {
		t.Fatalf("%d tracebacks, want the error: line and the OSError: %+v", len(tbs), tbs)
	}
	if r := tbs[0].Root(); !tbs[0].Frameless || r.Message != "builder for 'x.drv' failed with exit code 1;\n       last 25 log lines:" {
		t.Errorf("first: %+v", tbs[0])
	}
	r := tbs[1].Root()
	if r.Type != "OSError" || r.Line != 5 || len(r.Frames) != 1 || r.Frames[0].Func != "put" || r.Code[0] != "f.write(data)" {
		t.Errorf("second: %+v", tbs[1])
	}
}
