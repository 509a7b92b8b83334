package stackdump

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bringup-tool/bringup/testsupport/testcorpus"
)

// BenchmarkParseEngineLog reads a 20 MB SGLang log in which every rank's
// watchdog py-spy dump appears every 12,800 log lines (the shape of a
// hung job's log): throughput is dominated by lines that are not dumps.
func BenchmarkParseEngineLog(b *testing.B) {
	var dumps [8][]byte
	for r := range dumps {
		d, err := os.ReadFile(filepath.Join(testcorpus.Root(), "stacks", "testdata", "seed004-snap1", fmt.Sprintf("worker_TP%d.txt", r)))
		if err != nil {
			b.Skip(err)
		}
		dumps[r] = d
	}
	var buf bytes.Buffer
	for n := 0; buf.Len() < 20<<20; n++ {
		for r := 0; r < 8; r++ {
			line := fmt.Sprintf("[2025-10-29 11:25:58 TP%d] Decode batch. #running-req: 12, #token: 52113, token usage: 0.41, cuda graph: True, gen throughput (token/s): 812.44, #queue-req: 0\n", r)
			for i := 0; i < 400; i++ {
				buf.WriteString(line)
			}
		}
		if n%4 == 0 {
			for r := 0; r < 8; r++ {
				fmt.Fprintf(&buf, "[2025-10-29 11:30:58 TP%d] Pyspy dump for PID %d:\n", r, 31416+7*r)
				buf.Write(dumps[r])
			}
		}
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := Parse(bytes.NewReader(data), "log")
		if err != nil || len(res.Processes) == 0 {
			b.Fatal(err)
		}
	}
}
