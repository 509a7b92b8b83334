package patchset

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/bringup-tool/bringup/patchset/beneath"
	"github.com/bringup-tool/bringup/patchset/udiff"
)

// Options for Apply and Revert.
type Options struct {
	// Force applies to a drifted target when every hunk still matches
	// exactly at its stated line (no offsets, no fuzz). The patched hash
	// will not match; the report says so loudly.
	Force bool
	// NoVerify allows targets whose header has no hashes; they are applied
	// when the diff applies exactly.
	NoVerify bool
	// DryRun computes everything and writes nothing.
	DryRun bool
}

// Outcome is the result of Apply or Revert.
type Outcome struct {
	*Report
	// Refused lists why nothing was written; empty when the change went
	// through (or there was nothing to do).
	Refused []string `json:"refused,omitempty"`
	// Changed lists the files written, relative to the root.
	Changed []string `json:"changed"`
	// Loud warnings (--force on a drifted file).
	Forced []string `json:"forced,omitempty"`

	acts  []action
	final map[string][]byte      // every target's content after the change
	modes map[string]fs.FileMode // and its mode
}

type action struct {
	patch int
	rel   string
	what  string
}

// Apply applies the active patches of s to the files under root, in series
// order, all or nothing: every target must be at its base hash (or already
// patched, which is skipped), every hunk must match exactly, and every
// result must have its patched hash before any file is written.
func Apply(root string, s *Series, opt Options) (*Outcome, error) {
	return run(root, s, opt, false)
}

// Revert undoes the patches of s that are applied, in reverse order, with
// the same guarantees: byte-exact, hash-verified, all or nothing.
func Revert(root string, s *Series, opt Options) (*Outcome, error) {
	return run(root, s, opt, true)
}

func run(root string, s *Series, opt Options, reverse bool) (*Outcome, error) {
	unlock, err := lockRoot(root)
	if err != nil {
		return nil, err
	}
	defer unlock()
	recovered, err := recoverLocked(root)
	if err != nil {
		return nil, err
	}
	out, cs, err := plan(root, s, opt, reverse)
	if err != nil {
		return nil, err
	}
	op := "apply"
	if reverse {
		op = "revert"
	}
	if !opt.DryRun && len(cs) > 0 {
		if err := commit(root, op, cs); err != nil {
			return nil, err
		}
		for _, c := range cs {
			out.Changed = append(out.Changed, c.rel)
		}
		// Report the tree as it is now, keeping what was done.
		acts := out.acts
		ev2, err := evaluate(root, s)
		if err != nil {
			return nil, err
		}
		out.Report = ev2.report
		out.acts = acts
	}
	out.finishActions(opt, reverse)
	if recovered != "" {
		out.Report.Journal = recovered
	}
	out.Report.OK = out.Report.Consistent() && len(out.Refused) == 0
	return out, nil
}

// plan computes, in memory, what Apply or Revert would write: the changes
// (all verified) or the reasons to refuse. files holds every target's
// final content.
func plan(root string, s *Series, opt Options, reverse bool) (*Outcome, []change, error) {
	op := "apply"
	if reverse {
		op = "revert"
	}
	ev, err := evaluate(root, s)
	if err != nil {
		return nil, nil, err
	}
	out := &Outcome{Report: ev.report, Changed: []string{}, final: map[string][]byte{}, modes: map[string]fs.FileMode{}}
	if ev.report.pending {
		out.Refused = append(out.Refused, ev.report.Journal)
	}
	for _, pr := range ev.report.Patches {
		if pr.State == "invalid" {
			out.Refused = append(out.Refused, pr.Error)
		}
	}
	var acts []action
	var cs []change
	for _, rel := range ev.order {
		f := ev.files[rel]
		// The patches on this file, in the order they are to be undone or done.
		var ls []link
		for i, p := range s.Patches {
			t := p.Target(rel)
			if t == nil {
				continue
			}
			// Inactive patches are never applied; revert still undoes one
			// that is in the tree.
			if p.Active() || (reverse && findTarget(&ev.report.Patches[i], rel).State == StatePatched) {
				ls = append(ls, link{i, t})
			}
		}
		if reverse {
			for a, b := 0, len(ls)-1; a < b; a, b = a+1, b-1 {
				ls[a], ls[b] = ls[b], ls[a]
			}
		}
		c := f.data
		for _, l := range ls {
			p := s.Patches[l.patch]
			tr := findTarget(&ev.report.Patches[l.patch], rel)
			refuse := func(format string, a ...any) {
				out.Refused = append(out.Refused, fmt.Sprintf("%s: %s: ", p.Name, rel)+fmt.Sprintf(format, a...))
			}
			want, done := tr.BaseSHA256, StatePatched
			diff := l.target.Diff
			if reverse {
				want, done = tr.PatchedSHA256, StateBase
				diff = udiff.Reverse(diff)
			}
			switch {
			case f.err != nil && errors.Is(f.err, beneath.ErrSymlink):
				refuse("%s; %s", linkReason(f.err), symlinkFix)
				continue
			case tr.State == StateMissing:
				refuse("missing: %s", tr.Detail)
				continue
			case tr.State == done:
				what := "already applied"
				if reverse {
					what = "not applied"
				}
				acts = append(acts, action{l.patch, rel, what})
				continue
			case !tr.Verified && !opt.NoVerify:
				refuse("the header has no Base-SHA256/Patched-SHA256, so the %s cannot be verified: pass --no-verify, or pin it with 'bringup patch refresh'", op)
				continue
			case tr.State == StateDrifted && !opt.Force:
				refuse("drifted (sha256 %s is neither the base nor the patched hash): %s; refusing to %s (try 'bringup patch rebase', or --force)", short(f.sha), tr.Detail, op)
				continue
			}
			if f.mode.Perm()&0o222 == 0 {
				refuse("the target is read-only (mode %04o); make it writable (chmod u+w) if it really should change", f.mode.Perm())
				continue
			}
			forced := tr.State == StateDrifted
			if !forced && want != "" && sha(c) != want {
				if reverse {
					refuse("a later patch on this file is still applied (sha256 %s); revert it first", short(sha(c)))
				} else {
					refuse("an earlier patch on this file is not applied (sha256 %s is not the base %s); apply the series in order", short(sha(c)), short(want))
				}
				continue
			}
			res, err := udiff.Apply(c, diff, udiff.Options{})
			if err != nil {
				refuse("%v", err)
				continue
			}
			goal := tr.PatchedSHA256
			if reverse {
				goal = tr.BaseSHA256
			}
			if got := sha(res.Content); goal != "" && got != goal {
				if !forced {
					refuse("the %s gives sha256 %s, not the pinned %s: the patch's diff and hashes disagree (run 'bringup patch refresh')", op, short(got), short(goal))
					continue
				}
			}
			if forced {
				out.Forced = append(out.Forced, fmt.Sprintf("%s: %s was drifted (sha256 %s); --force %s it anyway: the result (sha256 %s) is NOT the pinned %s and was never tested", p.Name, rel, short(f.sha), map[bool]string{false: "applied", true: "reverted"}[reverse], short(sha(res.Content)), short(goal)))
			}
			c = res.Content
			what := "applied"
			if reverse {
				what = "reverted"
			}
			if forced {
				what += " (forced)"
			}
			acts = append(acts, action{l.patch, rel, what})
		}
		if f.exists {
			out.final[rel] = c
			out.modes[rel] = f.mode
		}
		if f.exists && sha(c) != f.sha {
			if f.pycache != nil {
				out.Refused = append(out.Refused, fmt.Sprintf("%s: %s, so its stale bytecode cannot be removed without following it; bringup never follows a symlink below --root: replace the link with a real directory (or remove it)", rel, linkReason(f.pycache)))
				continue
			}
			cs = append(cs, change{rel: rel, from: f.sha, data: c, mode: f.mode, uid: f.uid, gid: f.gid})
		}
	}
	if len(out.Refused) > 0 {
		acts = nil
		cs = nil
	}
	out.acts = acts
	return out, cs, nil
}

func (out *Outcome) finishActions(opt Options, reverse bool) {
	for _, a := range out.acts {
		pr := &out.Report.Patches[a.patch]
		findTarget(pr, a.rel).Action = a.what
	}
	for i := range out.Report.Patches {
		pr := &out.Report.Patches[i]
		if !pr.Active && !reverse && pr.State != "invalid" {
			pr.Action = "skipped: status " + pr.Status
			continue
		}
		pr.Action = patchAction(pr, len(out.Refused) > 0, opt.DryRun)
	}
}

func patchAction(pr *PatchReport, refused, dry bool) string {
	if refused {
		return "not changed (refused)"
	}
	seen := map[string]bool{}
	for _, t := range pr.Targets {
		seen[t.Action] = true
	}
	prefix := ""
	if dry {
		prefix = "would be "
	}
	switch {
	case seen["applied (forced)"] || seen["reverted (forced)"]:
		return prefix + "forced"
	case seen["applied"]:
		return prefix + "applied"
	case seen["reverted"]:
		return prefix + "reverted"
	case seen["already applied"]:
		return "skipped: already applied"
	case seen["not applied"]:
		return "skipped: not applied"
	}
	return ""
}

func findTarget(pr *PatchReport, rel string) *TargetReport {
	for i := range pr.Targets {
		if pr.Targets[i].Path == rel {
			return &pr.Targets[i]
		}
	}
	return &TargetReport{}
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}
