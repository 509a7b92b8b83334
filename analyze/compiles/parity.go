package compiles

import (
	"bufio"
	"io"
	"regexp"
	"strings"

	"github.com/bringup-tool/bringup/ingest/torchtrace"
)

// maxParityCode bounds the output code read back for the parity check.
const maxParityCode = 64 << 20

var c10dCallRE = regexp.MustCompile(`torch\.ops\._c10d_functional\.(\w+)\.default\(`)

// collectiveParity compares, for each graph with a collective schedule,
// the _c10d_functional calls in its generated code (comments stripped)
// with the schedule, as tlparse's collectives_parity.json does. The code
// is read back from the trace through its payload reference, one graph at
// a time, only for graphs that have a schedule.
func collectiveParity(res *Result) {
	for _, cs := range res.Collectives {
		var code *Artifact
		for i := range res.Artifacts {
			a := &res.Artifacts[i]
			if a.Kind == "inductor_output_code" && a.Path == cs.Path && a.Rank == cs.Rank && unitOf(a.CompileID) == unitOf(cs.CompileID) {
				code = a
			}
		}
		if code == nil || code.Length > maxParityCode {
			continue
		}
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(torchtrace.CopyPayload(pw, code.PayloadRef)) }()
		codeOps := map[string]int{}
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			if i := strings.IndexByte(line, '#'); i >= 0 {
				line = line[:i]
			}
			for _, m := range c10dCallRE.FindAllStringSubmatch(line, -1) {
				codeOps[m[1]]++
			}
		}
		pr.CloseWithError(io.ErrClosedPipe)
		if sc.Err() != nil {
			continue
		}
		schedOps := map[string]int{}
		for _, op := range cs.Ops {
			schedOps[shortOp(op)]++
		}
		offset, colls := 0, 0
		for op := range union(codeOps, schedOps) {
			if op == "wait_tensor" {
				continue
			}
			d := codeOps[op] - schedOps[op]
			if d < 0 {
				d = -d
			}
			offset += d
			colls += codeOps[op]
		}
		missing := colls - codeOps["wait_tensor"]
		if offset == 0 && missing <= 0 {
			continue
		}
		res.CollectiveParity = append(res.CollectiveParity, ParityIssue{Rank: cs.Rank, Path: cs.Path, CompileID: cs.CompileID,
			Offset: offset, MissingWaits: missing, CodeOps: codeOps, ScheduleOps: schedOps, Line: code.Line})
	}
}

func union(a, b map[string]int) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
