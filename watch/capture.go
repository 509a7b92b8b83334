package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bringup-tool/bringup/pyproc"
	"github.com/bringup-tool/bringup/record"
)

type liveThread struct {
	TID    int          `json:"tid"`
	Name   string       `json:"name,omitempty"`
	Main   bool         `json:"main,omitempty"`
	Frames record.Stack `json:"frames"`
}

type liveProcess struct {
	PID      int          `json:"pid"`
	Name     string       `json:"name"`
	Python   string       `json:"python"`
	Source   string       `json:"source"`
	Snapshot int          `json:"snapshot"`
	Threads  []liveThread `json:"threads"`
}

// PyprocCapture takes snapshots of every Python process among pids with
// pyproc, writes them under dir as <name>.stacks.json (the processes part
// of bringup.stacks/v1), and lists each main thread's innermost frame.
func PyprocCapture(snapshots int, interval time.Duration) Capture {
	if snapshots < 1 {
		snapshots = 1
	}
	return func(ctx context.Context, pids []int, dir, name string) (*CaptureResult, error) {
		var all []liveProcess
		var skipped []string
		python := map[int]bool{}
		for s := 0; s < snapshots && ctx.Err() == nil; s++ {
			if s > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(interval):
				}
			}
			for _, pid := range pids {
				p, err := pyproc.Capture(pid)
				if err != nil {
					if s == 0 && !errors.Is(err, pyproc.ErrNotPython) && !errors.Is(err, pyproc.ErrNoProcess) {
						skipped = append(skipped, err.Error())
					}
					continue
				}
				python[pid] = true
				pr := liveProcess{PID: pid, Name: strings.Join(p.Cmdline, " "), Python: p.Python, Source: "live", Snapshot: s}
				for _, th := range p.Threads {
					pr.Threads = append(pr.Threads, liveThread{TID: th.TID, Name: th.Name, Main: th.Main, Frames: th.Frames})
				}
				all = append(all, pr)
			}
		}
		if len(python) == 0 {
			msg := "no Python process could be captured"
			if len(skipped) > 0 {
				msg += ": " + skipped[0]
			}
			return nil, errors.New(msg)
		}
		path := filepath.Join(dir, name+".stacks.json")
		b, err := json.MarshalIndent(map[string]any{"schema": "bringup.stacks/v1", "processes": all}, "", " ")
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return nil, err
		}
		return &CaptureResult{Path: path, Text: summarise(all, skipped), Processes: len(python)}, nil
	}
}

// summarise lists, for the last snapshot of each process, its main
// thread's innermost frame and depth.
func summarise(procs []liveProcess, skipped []string) string {
	last := map[int]liveProcess{}
	for _, p := range procs {
		last[p.PID] = p
	}
	pids := make([]int, 0, len(last))
	for pid := range last {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	var b strings.Builder
	for _, pid := range pids {
		for _, th := range last[pid].Threads {
			if th.Main && len(th.Frames) > 0 {
				fmt.Fprintf(&b, "  pid %d: %s, %d frames deep\n", pid, th.Frames[0], len(th.Frames))
			}
		}
	}
	for _, s := range skipped {
		fmt.Fprintf(&b, "  not captured: %s\n", s)
	}
	return b.String()
}
