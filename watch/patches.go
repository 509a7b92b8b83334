package watch

import (
	"fmt"
	"strings"

	"github.com/bringup-tool/bringup/patchset"
	"github.com/bringup-tool/bringup/store"
)

// CheckPatches reads the patch series in dir against root (the
// site-packages the targets are relative to) with patchset.SeriesStatus.
// It returns the state to record with the run and, when the series is not
// in an expected state (a target drifted or missing, a patch half applied,
// an interrupted apply), the problems that must stop the boot.
func CheckPatches(root, dir string) (*store.PatchState, []string, error) {
	r, err := patchset.SeriesStatus(root, dir)
	if err != nil {
		return nil, nil, err
	}
	var states []string
	for _, p := range r.Patches {
		states = append(states, fmt.Sprintf("%s %s", p.Name, p.State))
	}
	ps := &store.PatchState{Dir: dir, State: r.Verdict(), OK: r.Consistent(), Summary: strings.Join(states, ", ")}
	return ps, r.Problems(), nil
}
