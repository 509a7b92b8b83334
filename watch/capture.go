package watch

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/report"
	reportstacks "github.com/bringup-tool/bringup/report/stacks"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/stacks"
	"github.com/bringup-tool/bringup/stacks/live"
)

// StacksCapture captures with the stacks package (pyproc, py-spy as the
// fallback), takes snapshots interval apart, analyses them as `bringup
// stacks` does (buckets, shared path, outliers, stuck vs slow, the stack
// rules of the knowledge base) and writes <name>.stacks.json
// (bringup.stacks/v1) into the run directory.
func StacksCapture(snapshots int, interval time.Duration, style report.Style) Capture {
	return func(ctx context.Context, req CaptureRequest) (*CaptureResult, error) {
		n := snapshots
		if req.Snapshots > 0 {
			n = req.Snapshots
		}
		res, err := live.CaptureTree(req.PIDs, n, interval)
		if err != nil && (res == nil || len(res.Processes) == 0) {
			return nil, fmt.Errorf("no Python process of the boot could be captured: %v", err)
		}
		for _, p := range res.Processes {
			if p.Rank == "" && req.Rank != nil {
				adoptRank(p, req.Rank(p.PID))
			}
		}
		a, text := analyzeCaptured(res.Processes, req)
		if err := reportstacks.Text(text, a, reportstacks.TextOptions{Style: style, MaxFrames: 30}); err != nil {
			return nil, err
		}
		for _, f := range res.Failures {
			fmt.Fprintf(text, "not captured: %v\n", f)
		}
		path := filepath.Join(req.Dir, req.Name+".stacks.json")
		var doc bytes.Buffer
		if err := reportstacks.JSON(&doc, a); err != nil {
			return nil, err
		}
		// Atomically, and never through a symlink placed in the directory.
		if err := writeFileIn(req.Dir, req.Name+".stacks.json", doc.Bytes()); err != nil {
			return nil, err
		}
		return &CaptureResult{Path: path, Text: text.String(), Findings: a.Findings, Processes: len(a.Current), Where: a.Where}, nil
	}
}

// analyzeCaptured analyses a capture as `bringup stacks` does, with the
// stack rules of the knowledge base gated by the versions the processes
// and the boot's log say; the text it returns starts with a note when the
// knowledge base did not load.
func analyzeCaptured(procs []*record.Process, req CaptureRequest) (*stacks.Analysis, *bytes.Buffer) {
	v := stacks.Versions(procs)
	for k, x := range req.Versions {
		if _, ok := v[k]; !ok {
			v[k] = x
		}
	}
	opt := stacks.Options{Level: stacks.DefaultLevel}
	var text bytes.Buffer
	set, err := rules.Builtin()
	if err == nil {
		opt.Conclude = stacks.Conclude(set, rules.Versions(v))
	} else {
		fmt.Fprintf(&text, "the knowledge base did not load (%v): stacks shown without findings\n", err)
	}
	return stacks.Analyze(procs, opt), &text
}

// adoptRank gives a live process what its log prefix said of it: the
// role word always (an API server or engine core logs as one), the rank
// only for a process that is not a coordinator (the engine core's "DP0"
// is its data-parallel index, not a rank among the workers).
func adoptRank(p *record.Process, r record.Rank) {
	if !r.Known() {
		return
	}
	if r.Role != "" && p.RankInfo.Role == "" {
		p.RankInfo.Role = r.Role
	}
	switch r.Role {
	case "APIServer", "EngineCore":
		return
	}
	if k := r.Key(); k != "" {
		p.RankInfo = r
		p.Rank = k
	}
}
