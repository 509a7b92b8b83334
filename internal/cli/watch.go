package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/report"
	reportruns "github.com/bringup-tool/bringup/report/runs"
	"github.com/bringup-tool/bringup/store"
	"github.com/bringup-tool/bringup/watch"
)

func init() { register(newWatchCmd) }

func newWatchCmd() *cobra.Command {
	var (
		envs      []string
		envFile   string
		envStrict bool
		silence   time.Duration
		onSilence string
		snapshots int
		snapEvery time.Duration
		timeout   time.Duration
		grace     time.Duration
		readyURL  string
		then      string
		storePath string
		runDir    string
		patches   string
		patchRoot string
		ruleFiles []string
		stopLost  bool
	)
	cmd := &cobra.Command{
		Use:   "watch [flags] -- CMD ARGS...",
		Short: "Run an engine boot under supervision: tee, env check, phases, silence → stacks, outcome, run store",
		Long: `watch runs CMD in its own process group and supervises the boot:

  - its stdout/stderr go to the terminal and, line for line, to output.log in
    the run directory (nothing is lost, also when the boot or bringup is killed);
  - a one-line status on a terminal: elapsed, seconds since the last output,
    the current startup phase of every rank (parsed live from the engine log);
  - --env/--env-file set variables for the boot, and the environment every
    descendant (engine core, each worker) really got is read from /proc and
    any process missing a variable or holding another value is reported at
    once (--env-strict stops the boot);
  - no output for --silence (and an idle GPU where nvidia-smi/rocm-smi/amd-smi
    exists): the stacks of every Python process are captured (several
    snapshots), saved in the run directory, bucketed and matched against the
    knowledge base; --on-silence stop ends the boot as hung;
  - ready when the engine prints its ready line (vLLM, SGLang, ATOM) or
    --ready-url answers 200; --then stop (default) ends the boot there;
  - --timeout captures stacks and stops the boot; Ctrl-C stops it. Stopping
    is SIGTERM to the group and to every descendant (also those that left the
    group), SIGKILL after --grace; nothing is left running;
  - a boot that did not come up is diagnosed like 'bringup diagnose' does;
  - every run is recorded in the run store (see 'bringup runs').

The terminal never holds the boot up: output goes to output.log first; a
terminal that does not keep up loses lines from its copy only (counted), and
one that goes away (| head) stops getting output while the boot goes on. If
bringup itself is killed, a guardian process stops the boot, and the next
bringup that opens the store marks the run lost.

Outcomes: ready, failed, hung, timeout, exited, interrupted.
Exit status: 0 ready (or exited cleanly), 1 failed/hung/timeout/interrupted or an
error-level finding, 2 could not run.`,
		Example: `  bringup watch --env VLLM_USE_AOT_COMPILE=0 --silence 3m -- vllm serve Qwen/Qwen3-0.6B -O3
  bringup watch --env-file knobs.env --env-strict --timeout 40m -- ./launch.sh
  bringup watch --on-silence stop --silence 10m --ready-url http://localhost:8000/health -- python -m sglang.launch_server ...`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return Usagef("watch needs a command after --, e.g. bringup watch -- vllm serve MODEL")
			}
			if onSilence != "dump" && onSilence != "stop" {
				return Usagef("--on-silence %q: use dump (keep watching) or stop", onSilence)
			}
			if then != "stop" && then != "keep" {
				return Usagef("--then %q: use stop or keep", then)
			}
			if silence < 0 || timeout < 0 || grace < 0 || snapEvery < 0 {
				return Usagef("durations must not be negative")
			}
			// A capture is at least one snapshot (like stacks --count); 0 is
			// refused rather than quietly taken as 1. To capture nothing, do not
			// watch for silence (--silence 0); --timeout still captures.
			if snapshots < 1 {
				return Usagef("--snapshots %d: a stack capture takes at least 1 snapshot (2+ tells stuck from slow); to never capture on silence use --silence 0", snapshots)
			}
			if snapshots > 1 && snapEvery == 0 {
				return Usagef("--snapshot-interval 0s: give a positive time between the %d stack snapshots (e.g. 1s)", snapshots)
			}
			// pollReady cannot report a URL it cannot GET (it runs beside the
			// boot), so one without http(s)://host would wait out --timeout.
			if readyURL != "" {
				if u, err := url.Parse(readyURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return Usagef("--ready-url %q: give a full URL such as http://localhost:8000/health", readyURL)
				}
			}
			env := map[string]string{}
			if envFile != "" {
				if err := readEnvFile(envFile, env); err != nil {
					return Usagef("--env-file: %v", err)
				}
			}
			for _, kv := range envs {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || !watch.ValidEnvName(k) {
					return Usagef("--env %q: use NAME=VALUE", kv)
				}
				env[k] = v
			}
			set, err := loadRules(ruleFiles...)
			if err != nil {
				return err
			}
			var patchState *store.PatchState
			if patches != "" {
				if patchRoot == "" {
					return Usagef("--patches needs --patch-root: the site-packages directory the patch targets are relative to")
				}
				ps, problems, err := watch.CheckPatches(patchRoot, patches)
				if err != nil {
					return Usagef("--patches %s: %v", patches, err)
				}
				if len(problems) > 0 {
					for _, p := range problems {
						fmt.Fprintf(cmd.ErrOrStderr(), "bringup watch: patch series: %s\n", p)
					}
					return Usagef("patch series %s is not in an expected state (%s): not booting; see 'bringup patch status --root %s %s'", patches, ps.State, patchRoot, patches)
				}
				patchState = ps
			}

			stderr := cmd.ErrOrStderr()
			color := isTerminal(os.Stderr)
			style := report.Style{Color: color}
			path, err := store.Resolve(storePath)
			if err != nil {
				return Usagef("%v", err)
			}
			st, err := store.Open(path)
			if err != nil {
				fmt.Fprintf(stderr, "bringup watch: %s %v\nbringup watch: the boot runs anyway, recorded only in its run directory (output.log, run.json)\n", style.Red("store:"), err)
				st = nil
			} else {
				defer st.Close()
				checkLost(stderr, "bringup watch", st, stopLost, grace)
			}
			runsDir := filepath.Join(filepath.Dir(path), "runs")

			cfg := watch.Config{
				Command: args, Env: env, EnvStrict: envStrict,
				Silence: silence, OnSilence: onSilence, Snapshots: snapshots,
				Timeout: timeout, Grace: grace, ReadyURL: readyURL, Then: then,
				RunsDir: runsDir, Dir: runDir,
				Stdout: cmd.OutOrStdout(), Stderr: stderr, Messages: stderr, Style: style,
				Store:      st,
				Patches:    patchState,
				Versions:   map[string]string{"bringup": Version},
				NewTracker: watch.NewEngineTracker,
				Capture:    watch.StacksCapture(snapshots, snapEvery, style),
				Diagnose:   watch.PipelineDiagnose(set, style),
			}
			if isTerminal(os.Stderr) {
				cfg.Status = os.Stderr
			}
			// The watcher's heap stays small while a flooding boot makes it
			// allocate a record per line: collect less often (CPU, not memory,
			// is what a watcher must not take from the boot).
			debug.SetGCPercent(400)
			// First Ctrl-C/SIGTERM/SIGHUP: stop the boot gracefully; a second
			// one: SIGKILL without waiting out --grace.
			// The cause names the signal: watch says who stopped the boot.
			ctx, cancel := context.WithCancelCause(cmd.Context())
			defer cancel(nil)
			hurry := make(chan struct{})
			sigs := make(chan os.Signal, 2)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer signal.Stop(sigs)
			go func() {
				n := 0
				for sig := range sigs {
					if n++; n == 1 {
						cancel(watch.Interrupted{Signal: sig})
					} else if n == 2 {
						close(hurry)
					}
				}
			}()
			cfg.Hurry = hurry
			// A closed stdout (bringup watch … | head) ends only the
			// terminal copy: writes to it fail with EPIPE instead of the
			// signal killing bringup and orphaning the boot. Notify, not
			// Ignore: an ignored signal would be inherited by the boot.
			pipes := make(chan os.Signal, 1)
			signal.Notify(pipes, syscall.SIGPIPE)
			run, err := watch.Run(ctx, cfg)
			if err != nil {
				if errors.Is(err, watch.ErrNotRunnable) {
					return Usagef("%v (check the command and PATH)", err)
				}
				return Usagef("%v", err)
			}
			printOutcome(stderr, run, style)
			switch run.Outcome {
			case store.OutcomeReady:
				return nil
			case store.OutcomeExited:
				if record.HasError(run.Findings) {
					return FoundErrors
				}
				return nil
			}
			return FoundErrors
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // everything after the command belongs to it
	f.StringArrayVar(&envs, "env", nil, "set NAME=VALUE for the boot and check every process gets it (repeatable)")
	f.StringVar(&envFile, "env-file", "", "read NAME=VALUE lines (# comments, optional 'export ') to set and check")
	f.BoolVar(&envStrict, "env-strict", false, "stop the boot when a process lacks a requested variable or has another value")
	f.DurationVar(&silence, "silence", 5*time.Minute, "no output this long → capture stacks (0: never)")
	f.StringVar(&onSilence, "on-silence", "dump", "after a silence capture: dump (keep watching) or stop (outcome hung)")
	f.IntVar(&snapshots, "snapshots", 3, "stack snapshots per capture, at least 1 (stuck vs slow needs 2 or more)")
	f.DurationVar(&snapEvery, "snapshot-interval", time.Second, "time between stack snapshots")
	f.DurationVar(&timeout, "timeout", 0, "stop the boot (after capturing stacks) when not ready after this long (0: never)")
	f.DurationVar(&grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL when stopping the boot")
	f.StringVar(&readyURL, "ready-url", "", "also ready when a GET of this URL answers 200 (e.g. http://localhost:8000/health)")
	f.StringVar(&then, "then", "stop", "once ready: stop the boot, or keep watching until it exits or Ctrl-C")
	f.StringVar(&storePath, "store", "", "run store file (default $"+store.EnvVar+", else the user's state dir)")
	f.StringVar(&runDir, "run-dir", "", "directory for output.log, stack captures and run.json (default next to the store)")
	f.StringVar(&patches, "patches", "", "patch series DIR that must be in an expected state (bringup patch status) before booting; recorded with the run")
	f.StringVar(&patchRoot, "patch-root", "", "site-packages directory the --patches targets are relative to")
	f.StringArrayVar(&ruleFiles, "rules", nil, "add rules from a YAML FILE for the diagnosis (repeatable)")
	f.BoolVar(&stopLost, "stop-lost", false, "stop the processes that lost runs (a killed watch) left running, before booting")
	return cmd
}

// printOutcome adds where to look after the outcome line and diagnosis
// that watch printed.
func printOutcome(w io.Writer, run *store.Run, st report.Style) {
	if len(run.EnvCheck) > 0 {
		fmt.Fprintf(w, "  env: %d process(es) did not get the requested environment (see 'bringup runs show %s')\n", len(run.EnvCheck), refOf(run))
	}
	for _, s := range run.Silences {
		if s.StacksPath != "" {
			fmt.Fprintf(w, "  stacks after %.0fs of silence: %s\n", s.Seconds, s.StacksPath)
		}
	}
	fmt.Fprintf(w, "  output: %s (%s)\n", filepath.Join(run.Dir, "output.log"), reportruns.Saved(run))
	if o := run.Output; o != nil && o.TerminalDropped > 0 {
		fmt.Fprintf(w, "  terminal: %s not shown (the terminal did not keep up)\n", reportruns.Lines(o.TerminalDropped))
	}
	if o := run.Output; o != nil && o.RunJSONError != "" {
		fmt.Fprintf(w, "  run.json: not written (%s); the run is in the store: bringup runs show %s\n", o.RunJSONError, refOf(run))
	}
}

func refOf(run *store.Run) string {
	if run.ID > 0 {
		return fmt.Sprint(run.ID)
	}
	return "last"
}

// readEnvFile reads an --env-file into env.
func readEnvFile(path string, env map[string]string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return watch.ParseEnvFile(f, path, env)
}
