package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bringup-tool/bringup/cluster"
	"github.com/bringup-tool/bringup/report"
	reportcluster "github.com/bringup-tool/bringup/report/cluster"
	reportstacks "github.com/bringup-tool/bringup/report/stacks"
)

// ClusterJob says which nodes a cluster capture reaches: the backend for
// the boot whose processes are pids (watch --srun JOBID: always the same
// job; --srun auto: the job of the boot's srun, found when the capture is
// taken), a few words for the headline ("srun job 42") and a note for the
// report ("" or how the job was found).
type ClusterJob func(ctx context.Context, pids []int) (b cluster.Backend, about, note string, err error)

// ClusterCapture is the silence (and timeout, interrupt) capture of a boot
// whose ranks run on the nodes of a cluster job: the stacks of every node
// come through the cluster fan-out (one launcher per node, each with
// o.Deadline, at most o.Parallel at once), merged into one analysis as
// `bringup stacks --srun` makes it, its report (with the nodes' section)
// printed and <name>.stacks.json (bringup.stacks/v1 with the cluster
// object) written into the run directory. The headline names the nodes,
// so the verdict names the hang across them. A node that did not answer is
// in the report and the headline; no node answering is an error.
func ClusterCapture(job ClusterJob, o cluster.Options, style report.Style) Capture {
	return func(ctx context.Context, req CaptureRequest) (*CaptureResult, error) {
		b, about, note, err := job(ctx, req.PIDs)
		if err != nil {
			return nil, err
		}
		targets, err := cluster.Discover(ctx, b.Kind(), o.Deadline, b.Discover)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", about, err)
		}
		m := cluster.Merge(b.Kind(), cluster.Gather(ctx, b, targets, o))
		if len(m.Processes) == 0 {
			return nil, fmt.Errorf("%s: no Python process could be read on any node: %s", about, nodeReasons(m))
		}
		a, text := analyzeCaptured(m.Processes, req)
		if err := reportcluster.Text(text, m, a, reportstacks.TextOptions{Style: style, MaxFrames: 30}); err != nil {
			return nil, err
		}
		var doc bytes.Buffer
		if err := reportcluster.JSON(&doc, m, a); err != nil {
			return nil, err
		}
		if err := writeFileIn(req.Dir, req.Name+".stacks.json", doc.Bytes()); err != nil {
			return nil, err
		}
		if note != "" {
			fmt.Fprintln(text, note)
		}
		// The report and the file are stacks --srun's; the headline the
		// verdict takes names the nodes too.
		where := a.Where
		where.Text += acrossNodes(m, about)
		return &CaptureResult{Path: filepath.Join(req.Dir, req.Name+".stacks.json"), Text: text.String(),
			Findings: a.Findings, Processes: len(a.Current), Where: where}, nil
	}
}

// acrossNodes is what the headline adds: the nodes the ranks were
// gathered from, those that did not answer and the ranks missing.
func acrossNodes(m *cluster.Merged, about string) string {
	var ok, not []string
	for _, r := range m.Nodes {
		if r.Status == cluster.StatusOK {
			ok = append(ok, r.Name)
		} else {
			not = append(not, r.Name+" "+string(r.Status))
		}
	}
	s := fmt.Sprintf("; across %d node(s) of %s: %s", len(ok), about, strings.Join(ok, ","))
	if len(not) > 0 {
		s += "; not answered: " + strings.Join(not, ", ")
	}
	if len(m.Missing.Ranks) > 0 {
		s += fmt.Sprintf("; missing ranks %v", m.Missing.Ranks)
	}
	return s
}

// nodeReasons is why each node gave nothing, on one line.
func nodeReasons(m *cluster.Merged) string {
	var parts []string
	for _, r := range m.Nodes {
		p := r.Name + " " + string(r.Status)
		switch {
		case r.Detail != "":
			p += " (" + r.Detail + ")"
		case r.Doc != nil:
			p += fmt.Sprintf(" (no Python process of the job: %d in scope)", r.Doc.Scope.Python)
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "the job lists no node"
	}
	return strings.Join(parts, "; ")
}

// SrunJob is the ClusterJob of watch --srun: job is JOBID[.STEP], or ""
// to find the job of the boot's srun with cluster.FindSrunJob (before is
// cluster.SessionJobs at the start); delivery is how bringup gets onto the
// nodes. The job found first is kept for the later captures.
func SrunJob(job string, delivery *cluster.Delivery, before map[string]bool) ClusterJob {
	var found *cluster.Srun
	var note string
	return func(ctx context.Context, pids []int) (cluster.Backend, string, string, error) {
		if found == nil && job != "" {
			j, step, err := cluster.ParseJob(job)
			if err != nil {
				return nil, "", "", err
			}
			found = &cluster.Srun{Job: j, Step: step, Delivery: delivery}
		}
		if found == nil {
			j, how, err := cluster.FindSrunJob(ctx, nil, pids, before)
			if err != nil {
				return nil, "", "", errors.New("watch --srun auto: " + err.Error())
			}
			found, note = &cluster.Srun{Job: j, Delivery: delivery}, fmt.Sprintf("job: %s, found from %s", j, how)
		}
		about := "srun job " + found.Job
		if found.Step != "" {
			about += "." + found.Step
		}
		return found, about, note, nil
	}
}
