package stacks

import (
	"fmt"
	"strings"
)

// Verdict is the one line a person reads first.
func (a *Analysis) Verdict() string {
	var parts []string
	if len(a.Findings) > 0 {
		f := a.Findings[0]
		parts = append(parts, fmt.Sprintf("%s: %s", f.Rule, f.Title))
	}
	var prim []*Bucket
	primThreads := 0
	for _, b := range a.Buckets {
		if b.Primary {
			prim = append(prim, b)
			for _, m := range b.Threads {
				if m.Primary {
					primThreads++
				}
			}
		}
	}
	// Launchers: processes that are the parent of other captured ones
	// (known for live captures). When every worker's primary thread is in
	// one bucket, that is the verdict, not "N processes in M stacks".
	cur, launch := map[int]bool{}, map[int]bool{}
	for _, p := range a.Current {
		cur[p.PID] = true
	}
	for _, p := range a.Current {
		if p.PPID > 0 && cur[p.PPID] {
			launch[p.PPID] = true
		}
	}
	// As for outliers: where ranks are known, unranked helpers (the
	// resource tracker) are not workers.
	anyRank := false
	for _, b := range prim {
		for _, m := range b.Threads {
			if m.Primary && !launch[m.PID] && m.Rank != "" {
				anyRank = true
			}
		}
	}
	var wb *Bucket
	workers, split := 0, false
	var launchAt []string
	for _, b := range prim {
		for _, m := range b.Threads {
			if !m.Primary {
				continue
			}
			if launch[m.PID] {
				launchAt = append(launchAt, fmt.Sprintf("pid %d in bucket #%d", m.PID, b.ID))
				continue
			}
			if anyRank && m.Rank == "" {
				continue
			}
			workers++
			if wb == nil {
				wb = b
			} else if wb != b {
				split = true
			}
		}
	}
	switch {
	case len(a.Current) == 0:
		parts = append(parts, "no stacks found")
	case primThreads > 1 && len(prim) == 1:
		who := fmt.Sprintf("%d/%d processes", primThreads, primThreads)
		if a.RankTotal > 1 {
			who = fmt.Sprintf("%d/%d ranks", len(prim[0].Ranks), a.RankTotal)
		}
		parts = append(parts, fmt.Sprintf("%s share one stack (%s level), bucket #%d", who, a.Level, prim[0].ID))
	case len(launch) > 0 && workers > 1 && !split && len(launchAt) > 0:
		parts = append(parts, fmt.Sprintf("%d/%d workers share one stack (%s level), bucket #%d; launcher %s", workers, workers, a.Level, wb.ID, strings.Join(launchAt, ", ")))
	case len(a.Outliers) > 0:
		var who []string
		for _, o := range a.Outliers {
			if o.Rank != "" {
				who = append(who, o.Rank)
			} else {
				who = append(who, fmt.Sprintf("pid %d", o.PID))
			}
		}
		parts = append(parts, fmt.Sprintf("outlier %s: %s", strings.Join(who, ", "), a.Outliers[0].Why))
	case primThreads == 1 && len(a.Current) == 1:
		for _, m := range prim[0].Threads {
			if m.Primary && len(prim[0].Frames) > 0 {
				f := prim[0].Frames[0]
				parts = append(parts, fmt.Sprintf("main thread of pid %d in %s (%s)", m.PID, f.Func, f.File))
			}
		}
	case primThreads > 1:
		parts = append(parts, fmt.Sprintf("%d processes in %d different stacks (%s level)", primThreads, len(prim), a.Level))
	}
	for _, p := range a.Progress {
		if p.Verdict != "progressing" {
			parts = append(parts, fmt.Sprintf("%s across %d snapshots", p.Verdict, p.Snapshots))
			break
		}
	}
	return strings.Join(parts, "; ")
}
