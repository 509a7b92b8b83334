package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bringup-tool/bringup/patchset"
	"github.com/bringup-tool/bringup/report/patchtext"
)

func init() { register(newPatchCmd) }

func newPatchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "patch",
		Short: "Hash-pinned patch series for files inside pinned images: status, apply, revert, new, refresh, overlay, rebase",
		Long: `patch manages a series of patches to installed Python packages (a directory of
patch files, ordered by an optional quilt-style "series" file). Each patch
pins the sha256 of every target before and after, so bringup applies it only
to the exact file it was written for — zero fuzz, all or nothing, crash-safe —
and can tell applied, not applied and drifted files apart at a glance.

--root is the directory the targets are relative to: the site-packages of the
image (python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])').`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return Usagef("unknown patch command %q (see 'bringup patch --help')", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(newPatchStatusCmd(), newPatchApplyCmd(false), newPatchApplyCmd(true), newPatchNewCmd(),
		newPatchRefreshCmd(), newPatchOverlayCmd(), newPatchRebaseCmd())
	return cmd
}

func needRoot(root string) error {
	if root == "" {
		return Usagef("--root is required: the site-packages directory the patch targets are relative to")
	}
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return Usagef("--root %s is not a directory (give the image's site-packages directory)", root)
	}
	return nil
}

// rootAndSeries checks --root (and --out, when outMissing says why it
// is needed) and loads the series the arguments name.
func rootAndSeries(root, out, outMissing string, args []string) (*patchset.Series, error) {
	if err := needRoot(root); err != nil {
		return nil, err
	}
	if outMissing != "" && out == "" {
		return nil, Usagef("%s", outMissing)
	}
	return loadSeries(args)
}

// loadSeries reads the patches named on the command line, or ./patches.
func loadSeries(args []string) (*patchset.Series, error) {
	if len(args) == 0 {
		if st, err := os.Stat("patches"); err == nil && st.IsDir() {
			args = []string{"patches"}
		} else {
			return nil, Usagef("name the patches: a directory (with an optional series file) or patch files; ./patches does not exist")
		}
	}
	s, err := patchset.Load(args)
	if err != nil {
		return nil, Usagef("%v (check the path)", err)
	}
	return s, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newPatchStatusCmd() *cobra.Command {
	var root string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status --root DIR [DIR|PATCH...]",
		Short: "Show which patches are applied, not applied, drifted or missing",
		Long: `status hashes every target and reports, per patch and target: base (not
applied), patched (applied), drifted (neither hash: when a wheel's RECORD
under the root lists the file, it says which version the file matches) or
missing. An apply or revert interrupted by a crash is finished first, from
its journal in the root — only when every path it names is inside the root
with no symlink on the way, and every file has the journal's hashes; a
journal that fails that is reported (exit 1) and never acted on. Nothing
below the root is read through a symlink.

Exit status: 0 consistent, 1 something drifted, missing, half applied or
unreadable, 2 could not run.`,
		Example: `  bringup patch status --root /usr/local/lib/python3.12/site-packages patches/
  bringup patch status --root $SITE --json patches/ | jq '.patches[].targets[].state'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := rootAndSeries(root, "", "", args)
			if err != nil {
				return err
			}
			// A journal that does not check out is not acted on; the
			// report below names it (and exits 1), as it does a drift.
			recovered, err := patchset.Recover(root)
			var je *patchset.JournalError
			if err != nil && !errors.As(err, &je) {
				return Usagef("%v", err)
			}
			r, err := patchset.Status(root, s)
			if err != nil {
				return Usagef("%v", err)
			}
			if recovered != "" {
				r.Journal = recovered
			}
			if asJSON {
				err = writeJSON(cmd.OutOrStdout(), r)
			} else {
				err = patchtext.WriteText(cmd.OutOrStdout(), r, style(cmd))
			}
			if err != nil {
				return err
			}
			if !r.Consistent() {
				return FoundErrors
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "site-packages directory the targets are relative to")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print JSON ("schema": "bringup.patches/v1")`)
	return cmd
}

func newPatchApplyCmd(reverse bool) *cobra.Command {
	var root string
	var asJSON bool
	var opt patchset.Options
	verb, use := "apply", "Apply a patch series: only onto files at their base sha256, all or nothing"
	long := `apply applies the active patches in series order. A target must be exactly
its Base-SHA256 (or already patched: reported and skipped); every hunk must
match exactly (zero fuzz); every result must have its Patched-SHA256 — all
checked in memory before anything is written. Files are then replaced
atomically under a journal in the root, so a crash mid-series is completed or
undone on the next call, file modes are kept, and stale __pycache__ bytecode
of each changed file is deleted. A target reached through a symlink (the
file, or a directory on the way) is refused: bringup never writes through
one. A journal it could not have written is never acted on (exit 2, with
the fix).

Exit status: 0 applied (or nothing to do), 1 refused (drift, conflict,
missing file), 2 could not run.`
	if reverse {
		verb, use = "revert", "Undo applied patches, byte-exact, with the same guarantees as apply"
		long = `revert undoes the applied patches in reverse series order. A target must be
exactly its Patched-SHA256; reversing the diff must give its Base-SHA256.
Same journal, atomicity and bytecode cleanup as apply.

Exit status: 0 reverted (or nothing to do), 1 refused, 2 could not run.`
	}
	cmd := &cobra.Command{
		Use:     verb + " --root DIR [--force] [--no-verify] [--dry-run] [DIR|PATCH...]",
		Short:   use,
		Long:    long,
		Example: fmt.Sprintf("  bringup patch %s --root /usr/local/lib/python3.12/site-packages patches/", verb),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := rootAndSeries(root, "", "", args)
			if err != nil {
				return err
			}
			var out *patchset.Outcome
			if reverse {
				out, err = patchset.Revert(root, s, opt)
			} else {
				out, err = patchset.Apply(root, s, opt)
			}
			if err != nil {
				return Usagef("%v", err)
			}
			st := style(cmd)
			stderr := cmd.ErrOrStderr()
			for _, f := range out.Forced {
				fmt.Fprintf(stderr, "%s %s\n", st.Red(st.Bold("WARNING --force:")), f)
			}
			if asJSON {
				err = writeJSON(cmd.OutOrStdout(), out)
			} else {
				w := cmd.OutOrStdout()
				if len(out.Refused) > 0 {
					fmt.Fprintf(w, "%s nothing was changed:\n", st.Red(st.Bold(verb+" refused;")))
					for _, r := range out.Refused {
						fmt.Fprintf(w, "  %s\n", r)
					}
					fmt.Fprintln(w)
				} else if opt.DryRun {
					fmt.Fprintf(w, "%s: every check passed; nothing written\n\n", st.Bold("dry run"))
				} else if len(out.Changed) > 0 {
					fmt.Fprintf(w, "%s %s\n\n", st.Green(verb+":"), strings.Join(out.Changed, ", "))
				} else {
					fmt.Fprintf(w, "%s: nothing to do\n\n", verb)
				}
				err = patchtext.WriteText(w, out.Report, st)
			}
			if err != nil {
				return err
			}
			if len(out.Refused) > 0 {
				return FoundErrors
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "site-packages directory the targets are relative to")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print JSON ("schema": "bringup.patches/v1", plus changed[], refused[], forced[])`)
	cmd.Flags().BoolVar(&opt.Force, "force", false, "also change drifted files when every hunk still matches exactly (loud warning; the result is untested)")
	cmd.Flags().BoolVar(&opt.NoVerify, "no-verify", false, "allow patches whose header has no sha256 pins")
	cmd.Flags().BoolVar(&opt.DryRun, "dry-run", false, "check everything, write nothing")
	return cmd
}

func newPatchNewCmd() *cobra.Command {
	var root, target, out, gitDiff, desc, status string
	var envs []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "new --root DIR (--target REL [ORIGINAL] EDITED | --git-diff FILE) [-o FILE]",
		Short: "Write a hash-pinned patch from an original and an edited file, or from a git diff",
		Long: `new diffs ORIGINAL against EDITED (3 lines of context) and writes a patch
whose header pins both sha256, the target path (--target, relative to
--root), the package that owns it (from its RECORD) and any env knobs. With
one file, ORIGINAL is the target under --root. With --git-diff, the originals
are read under --root and the diff applied exactly. The patch is verified
(applies exactly, reverses exactly) before it is written.`,
		Example: `  bringup patch new --root $SITE --target vllm/compilation/wrapper.py \
      --env 'VLLM_COMPILE_FULLGRAPH=1  (0 disables fullgraph)' -o patches/03.patch wrapper.py.orig wrapper.py
  bringup patch new --root $SITE --git-diff fix.diff -o patches/04.patch`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := needRoot(root); err != nil {
				return err
			}
			if asJSON && out == "" {
				return Usagef("--json needs -o FILE: without it the patch itself goes to stdout")
			}
			var changes []patchset.FileChange
			switch {
			case gitDiff != "":
				if len(args) > 0 || target != "" {
					return Usagef("--git-diff takes no --target and no files: the diff names its files")
				}
				data, err := os.ReadFile(gitDiff)
				if err != nil {
					return Usagef("--git-diff: %v", err)
				}
				changes, err = patchset.FromGitDiff(root, data)
				if err != nil {
					return Usagef("--git-diff %s: %v", gitDiff, err)
				}
			default:
				if target == "" || len(args) < 1 || len(args) > 2 {
					return Usagef("give --target REL and EDITED (or ORIGINAL EDITED), or --git-diff FILE")
				}
				onDisk, diskErr := patchset.ReadTarget(root, target)
				var orig []byte
				if len(args) == 2 {
					var err error
					if orig, err = os.ReadFile(args[0]); err != nil {
						return Usagef("ORIGINAL: %v", err)
					}
					if diskErr == nil && string(onDisk) != string(orig) {
						fmt.Fprintf(cmd.ErrOrStderr(), "bringup: warning: %s under --root differs from ORIGINAL; the patch pins ORIGINAL as its base\n", target)
					}
				} else {
					if diskErr != nil {
						return Usagef("%s under --root: %v (pass ORIGINAL explicitly)", target, diskErr)
					}
					orig = onDisk
				}
				edited, err := os.ReadFile(args[len(args)-1])
				if err != nil {
					return Usagef("EDITED: %v", err)
				}
				changes = []patchset.FileChange{{Path: target, Original: orig, Edited: edited}}
			}
			pkg, warns := patchset.PackageOf(root, changes[0].Path)
			for _, w := range warns {
				fmt.Fprintf(cmd.ErrOrStderr(), "bringup: warning: %s\n", w)
			}
			h := patchset.Header{Status: status, Description: desc, Package: pkg}
			for _, e := range envs {
				k, ok := patchset.ParseEnvKnob(e)
				if !ok {
					return Usagef("--env %q: give NAME=DEFAULT  (what it means)", e)
				}
				h.Env = append(h.Env, k)
			}
			text, err := patchset.New(h, changes)
			if err != nil {
				return Usagef("%v", err)
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(text)
				return err
			}
			if err := patchset.WritePatch(out, text); err != nil {
				return Usagef("-o %s: %v", out, err)
			}
			return reportFile(cmd, root, out, asJSON, "wrote")
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "site-packages directory the target is relative to")
	cmd.Flags().StringVar(&target, "target", "", "target path relative to --root")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the patch here (default stdout)")
	cmd.Flags().StringVar(&gitDiff, "git-diff", "", "build the patch from this git diff (paths relative to --root)")
	cmd.Flags().StringVar(&desc, "description", "", "Description: field (first line is the summary)")
	cmd.Flags().StringVar(&status, "status", "active", "Status: active, disabled, upstreamed or dropped")
	cmd.Flags().StringArrayVar(&envs, "env", nil, "Env: knob the patch introduces, 'NAME=DEFAULT  (meaning)' (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print the new patch's status as JSON ("schema": "bringup.patches/v1")`)
	return cmd
}

// reportFile prints the state of one written patch against root.
func reportFile(cmd *cobra.Command, root, file string, asJSON bool, verb string) error {
	s, err := patchset.Load([]string{file})
	if err != nil {
		return Usagef("%v", err)
	}
	r, err := patchset.Status(root, s)
	if err != nil {
		return Usagef("%v", err)
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), r)
	}
	w := cmd.OutOrStdout()
	for _, p := range r.Patches {
		fmt.Fprintf(w, "%s %s\n", verb, p.Path)
		for _, t := range p.Targets {
			fmt.Fprintf(w, "  %s  base %s  patched %s  (the file under --root is %s)\n", t.Path, shortHash(t.BaseSHA256), shortHash(t.PatchedSHA256), t.State)
		}
	}
	return nil
}

// shortHash is "533c6dfd…8664": enough to tell hashes apart on one line
// (the patch header and 'patch status' carry them whole).
func shortHash(h string) string {
	if len(h) > 16 {
		return h[:8] + "…" + h[len(h)-4:]
	}
	return h
}

func newPatchRefreshCmd() *cobra.Command {
	var root string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "refresh --root DIR PATCH...",
		Short: "Recompute a patch's sha256 pins after its diff or its target was edited",
		Long: `refresh re-pins each PATCH: the file under --root must be one side of the diff
(the diff applies to it exactly, or its reverse does), and both hashes are
recomputed from it. The header is kept as written; only the hash values
change (structured Base-SHA256/Patched-SHA256 lines are added when missing).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := needRoot(root); err != nil {
				return err
			}
			for _, a := range args {
				p, err := patchset.ParseFile(a)
				if err != nil {
					return Usagef("%v", err)
				}
				text, notes, err := patchset.Refresh(root, p)
				if err != nil {
					return Usagef("%s: %v", a, err)
				}
				if err := patchset.WritePatch(a, text); err != nil {
					return Usagef("%s: %v", a, err)
				}
				for _, n := range notes {
					fmt.Fprintf(cmd.ErrOrStderr(), "bringup: %s: %s\n", a, n)
				}
				if err := reportFile(cmd, root, a, asJSON, "refreshed"); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "site-packages directory the targets are relative to")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print the refreshed patch's status as JSON ("schema": "bringup.patches/v1")`)
	return cmd
}

func newPatchOverlayCmd() *cobra.Command {
	var root, out, ctrRoot string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "overlay --root DIR --out DIR2 [--container-root PATH] [DIR|PATCH...]",
		Short: "Write the patched files into a separate tree, leaving the image untouched",
		Long: `overlay computes the patched version of every target (same checks as apply)
and writes it under --out instead of the image: out/files/<target> to
bind-mount over the original, and out/pythonpath/, a mirror of each touched
package (symlinks to the originals plus the patched files) to put first on
PYTHONPATH. It prints both ways to use it.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := rootAndSeries(root, out, "--out DIR2 is required: where to write the overlay", args)
			if err != nil {
				return err
			}
			res, err := patchset.Overlay(root, s, out, ctrRoot)
			if err != nil {
				return Usagef("%v", err)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(w, res); err != nil {
					return err
				}
			} else if len(res.Refused) == 0 {
				st := style(cmd)
				files := "patched files"
				if len(res.Files) == 1 {
					files = "patched file"
				}
				fmt.Fprintf(w, "%s %d %s in %s (the image is untouched)\n\n", st.Green("overlay:"), len(res.Files), files, res.Out)
				fmt.Fprintf(w, "Python path (shadows the whole touched packages):\n  PYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH}\n\n", res.PythonPath)
				fmt.Fprintf(w, "docker / podman run:\n  %s\n\n", strings.Join(res.Docker, " \\\n  "))
				fmt.Fprintf(w, "apptainer exec/run:\n  %s\n", strings.Join(res.Apptainer, " \\\n  "))
				for _, n := range res.Notes {
					fmt.Fprintf(w, "\n%s %s\n", st.Yellow("note:"), n)
				}
			}
			if len(res.Refused) > 0 {
				if !asJSON {
					fmt.Fprintln(w, "overlay refused; nothing was written:")
					for _, r := range res.Refused {
						fmt.Fprintf(w, "  %s\n", r)
					}
				}
				return FoundErrors
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "site-packages directory the targets are relative to")
	cmd.Flags().StringVar(&out, "out", "", "directory to write the overlay into")
	cmd.Flags().StringVar(&ctrRoot, "container-root", "", "the root's path inside the container (default: --root)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print JSON ("schema": "bringup.patch-overlay/v1")`)
	return cmd
}

func newPatchRebaseCmd() *cobra.Command {
	var root, out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rebase --root NEWROOT --out DIR [DIR|PATCH...]",
		Short: "Try the series on an upgraded image (offsets only, no fuzz) and write candidate patches for review",
		Long: `rebase is for after an image upgrade: it tries each active patch on the files
under NEWROOT, letting hunks move (line offsets) but never relaxing context
(no fuzz), and writes a candidate patch with new pins into --out for each
patch that fits, plus a series file. It never writes under NEWROOT. Patches
that conflict, or whose changes are already upstream, are reported.

Exit status: 0 every patch has a candidate, 1 some did not, 2 could not run.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := rootAndSeries(root, out, "--out DIR is required: where to write the candidate patches", args)
			if err != nil {
				return err
			}
			res, err := patchset.Rebase(root, s, out)
			if err != nil {
				return Usagef("%v", err)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(w, res); err != nil {
					return err
				}
			} else {
				st := style(cmd)
				verdict := st.Green("every patch rebased")
				if !res.OK {
					verdict = st.Red(st.Bold("some patches need manual work"))
				}
				fmt.Fprintf(w, "%s; candidates in %s\n\n", verdict, res.Out)
				for _, p := range res.Patches {
					c := p.Candidate
					if c == "" {
						c = "no candidate"
					}
					fmt.Fprintf(w, "%s → %s\n", p.Path, c)
					for _, t := range p.Targets {
						line := fmt.Sprintf("  %s: %s", t.Path, t.Result)
						if len(t.Offsets) > 0 {
							line += fmt.Sprintf(" (hunk offsets %v)", t.Offsets)
						}
						if t.Detail != "" {
							line += " — " + t.Detail
						}
						fmt.Fprintln(w, line)
					}
				}
			}
			if !res.OK {
				return FoundErrors
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "site-packages directory of the new image")
	cmd.Flags().StringVar(&out, "out", "", "directory for the candidate patches")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print JSON ("schema": "bringup.patch-rebase/v1")`)
	return cmd
}
