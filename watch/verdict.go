package watch

import (
	"github.com/bringup-tool/bringup/stacks"
	"github.com/bringup-tool/bringup/stacks/hang"
	"github.com/bringup-tool/bringup/store"
)

// hangVerdict is the verdict of a run watch stopped while it hung, timed
// out or was interrupted, from the stacks it captured last (hang.Verdict:
// diagnose forms the same from the run directory); "" for other outcomes.
func hangVerdict(run *store.Run, w *stacks.Where) string {
	r := hang.Run{Outcome: run.Outcome, Duration: run.Duration(), Phases: run.Timeline, Where: w}
	if st := run.Stop; st != nil {
		r.LastOutput, r.At = st.LastOutput, st.At
	}
	return hang.Verdict(r)
}
