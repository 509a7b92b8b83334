package patchset

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bringup-tool/bringup/patchset/beneath"
	"github.com/bringup-tool/bringup/patchset/udiff"
)

// RebaseTarget is what happened to one target of one patch.
type RebaseTarget struct {
	Path          string `json:"path"`
	Result        string `json:"result"` // unchanged | already-applied | rebased | upstreamed | conflict | missing
	Detail        string `json:"detail,omitempty"`
	Offsets       []int  `json:"offsets,omitempty"`
	BaseSHA256    string `json:"base_sha256,omitempty"` // the new pins
	PatchedSHA256 string `json:"patched_sha256,omitempty"`
}

// RebasePatch is one patch of the rebased series.
type RebasePatch struct {
	Path      string         `json:"path"`
	Candidate string         `json:"candidate,omitempty"` // written for review; empty when not written
	Targets   []RebaseTarget `json:"targets"`
}

// RebaseResult is the outcome of Rebase.
type RebaseResult struct {
	Schema  string        `json:"schema"`
	Root    string        `json:"root"`
	Out     string        `json:"out"`
	Patches []RebasePatch `json:"patches"`
	OK      bool          `json:"ok"` // every active patch has a candidate
}

// Rebase tries the active patches of s on the files under newRoot (an
// upgraded image) allowing line offsets but no fuzz, and writes a
// candidate patch with new hashes for each patch that fits into out, with a
// series file. It never writes under newRoot.
func Rebase(newRoot string, s *Series, out string) (*RebaseResult, error) {
	if st, err := os.Stat(newRoot); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("root %s is not a directory (pass --root the new image's site-packages)", newRoot)
	}
	if s.Dir != "" {
		if a, _ := filepath.Abs(s.Dir); a != "" {
			if b, _ := filepath.Abs(out); a == b {
				return nil, errors.New("--out must not be the series directory: candidates are for review, not to overwrite the patches")
			}
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	rd, err := beneath.Open(newRoot)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	res := &RebaseResult{Schema: "bringup.patch-rebase/v1", Root: newRoot, Out: out, OK: true}
	why := map[string]error{}
	content := map[string][]byte{}
	missing := map[string]bool{}
	var series []string
	for _, p := range s.Patches {
		if !p.Active() {
			continue
		}
		rp := RebasePatch{Path: p.Path}
		pins := map[string][2]string{}
		var body strings.Builder
		ok := true
		for _, t := range p.Targets {
			rt := RebaseTarget{Path: t.Path}
			c, seen := content[t.Path]
			if !seen && !missing[t.Path] {
				data, err := readBelow(rd, t.Path)
				if err != nil {
					missing[t.Path] = true
					why[t.Path] = err
				} else {
					c = data
					content[t.Path] = c
				}
			}
			if missing[t.Path] {
				rt.Result, rt.Detail = "missing", "absent under the new root"
				if !errors.Is(why[t.Path], fs.ErrNotExist) {
					rt.Detail = fmt.Sprintf("not read under the new root: %v", why[t.Path])
				}
				rp.Targets = append(rp.Targets, rt)
				ok = false
				continue
			}
			before := c
			h := sha(c)
			switch {
			case t.Pinned() && h == t.BaseSHA256:
				rt.Result = "unchanged"
				after, err := udiff.Apply(c, t.Diff, udiff.Options{})
				if err != nil {
					rt.Result, rt.Detail, ok = "conflict", err.Error(), false
					break
				}
				c = after.Content
			case t.Pinned() && h == t.PatchedSHA256:
				rt.Result, rt.Detail = "already-applied", "the new root already has the patched file"
				before = nil
			default:
				if after, err := udiff.Apply(c, t.Diff, udiff.Options{MaxOffset: len(udiff.SplitLines(c))}); err == nil {
					rt.Result, rt.Offsets = "rebased", after.Offsets
					c = after.Content
				} else if _, rerr := udiff.Apply(c, udiff.Reverse(t.Diff), udiff.Options{MaxOffset: len(udiff.SplitLines(c))}); rerr == nil {
					rt.Result, rt.Detail, ok = "upstreamed", "the patched lines are already in the new file: mark the patch Status: upstreamed or drop it", false
				} else {
					_, exact := udiff.Apply(c, t.Diff, udiff.Options{})
					rt.Result, rt.Detail, ok = "conflict", exact.Error(), false
				}
			}
			content[t.Path] = c
			if rt.Result == "unchanged" || rt.Result == "rebased" {
				rt.BaseSHA256, rt.PatchedSHA256 = sha(before), sha(c)
				pins[t.Path] = [2]string{rt.BaseSHA256, rt.PatchedSHA256}
				body.WriteString(udiff.Format(udiff.Diff(t.Path, before, c)))
			} else if rt.Result == "already-applied" {
				rt.BaseSHA256, rt.PatchedSHA256 = t.BaseSHA256, t.PatchedSHA256
				pins[t.Path] = [2]string{t.BaseSHA256, t.PatchedSHA256}
				body.WriteString(udiff.Format(t.Diff))
			}
			rp.Targets = append(rp.Targets, rt)
		}
		if ok {
			cand := filepath.Join(out, p.Name)
			text := rewrite(p, pins, []byte(body.String()))
			if _, err := Parse(cand, text); err != nil {
				return nil, fmt.Errorf("internal check of the candidate for %s failed (please report): %w", p.Name, err)
			}
			if err := WritePatch(cand, text); err != nil {
				return nil, err
			}
			rp.Candidate = cand
			series = append(series, p.Name)
		} else {
			res.OK = false
		}
		res.Patches = append(res.Patches, rp)
	}
	if len(series) > 0 {
		if err := WritePatch(filepath.Join(out, "series"), []byte("# candidates written by 'bringup patch rebase': review before use\n"+strings.Join(series, "\n")+"\n")); err != nil {
			return nil, err
		}
	}
	return res, nil
}
