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

	"github.com/bringup-tool/bringup/cluster"
	"github.com/bringup-tool/bringup/probe"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/report"
	reportruns "github.com/bringup-tool/bringup/report/runs"
	"github.com/bringup-tool/bringup/store"
	"github.com/bringup-tool/bringup/watch"
)

func init() { register(newWatchCmd) }

// watchFlags are watch's flags.
type watchFlags struct {
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
	probeSpec string
	knobs     []string
	// --srun: the boot's ranks are the nodes' of a Slurm job.
	srun string
	fanOutFlags
	deliveryFlags
	changedFanOut bool // a flag of the fan-out was given
}

func newWatchCmd() *cobra.Command {
	var o watchFlags
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
  - --probe SPEC injects bringup's exception probe into every Python process
    (see 'bringup probe'): the verdict of a boot that died of a matching
    exception names the instruction that raised it, the code object and the
    module object it ran on, and the processes that did not load the probe
    are named with the reason;
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
  bringup watch --probe KeyError:in_proj -- vllm serve MODEL -O3
  bringup watch --on-silence stop --silence 10m --ready-url http://localhost:8000/health -- python -m sglang.launch_server ...`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	o.register(cmd)
	return cmd
}

func (o *watchFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.SetInterspersed(false) // everything after the command belongs to it
	f.StringArrayVar(&o.envs, "env", nil, "set NAME=VALUE for the boot and check every process gets it (repeatable)")
	f.StringVar(&o.envFile, "env-file", "", "read NAME=VALUE lines (# comments, optional 'export ') to set and check")
	f.BoolVar(&o.envStrict, "env-strict", false, "stop the boot when a process lacks a requested variable or has another value")
	f.DurationVar(&o.silence, "silence", 5*time.Minute, "no output this long → capture stacks (0: never)")
	f.StringVar(&o.onSilence, "on-silence", "dump", "after a silence capture: dump (keep watching) or stop (outcome hung)")
	f.IntVar(&o.snapshots, "snapshots", 3, "stack snapshots per capture, at least 1 (stuck vs slow needs 2 or more)")
	f.DurationVar(&o.snapEvery, "snapshot-interval", time.Second, "time between stack snapshots")
	f.DurationVar(&o.timeout, "timeout", 0, "stop the boot (after capturing stacks) when not ready after this long (0: never)")
	f.DurationVar(&o.grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL when stopping the boot")
	f.StringVar(&o.readyURL, "ready-url", "", "also ready when a GET of this URL answers 200 (e.g. http://localhost:8000/health)")
	f.StringVar(&o.then, "then", "stop", "once ready: stop the boot, or keep watching until it exits or Ctrl-C")
	f.StringVar(&o.storePath, "store", "", "run store file (default $"+store.EnvVar+", else the user's state dir)")
	f.StringVar(&o.runDir, "run-dir", "", "directory for output.log, stack captures and run.json (default next to the store)")
	f.StringVar(&o.patches, "patches", "", "patch series DIR that must be in an expected state (bringup patch status) before booting; recorded with the run")
	f.StringVar(&o.patchRoot, "patch-root", "", "site-packages directory the --patches targets are relative to")
	f.StringVar(&o.probeSpec, "probe", "any", "inject the exception probe into every Python process and read its reports: TYPE[:REGEX][;...] or any (see bringup probe)")
	f.StringArrayVar(&o.knobs, "knob", nil, "with --probe: another environment variable (or PREFIX*) each probe report records")
	f.StringArrayVar(&o.ruleFiles, "rules", nil, "add rules from a YAML FILE for the diagnosis (repeatable)")
	f.BoolVar(&o.stopLost, "stop-lost", false, "stop the processes that lost runs (a killed watch) left running, before booting")
	f.StringVar(&o.srun, "srun", "", "the boot's ranks run in Slurm job JOBID[.STEP] (or auto: the job of the srun the command starts): stack captures gather every node of the job (as 'bringup stacks --srun')")
	o.registerDeadline(cmd, "--srun: ")
	o.registerDelivery(cmd, "--srun: ")
}

// check refuses flags that cannot work together before anything runs.
func (o *watchFlags) check(args []string) error {
	if len(args) == 0 {
		return Usagef("watch needs a command after --, e.g. bringup watch -- vllm serve MODEL")
	}
	if o.onSilence != "dump" && o.onSilence != "stop" {
		return Usagef("--on-silence %q: use dump (keep watching) or stop", o.onSilence)
	}
	if o.then != "stop" && o.then != "keep" {
		return Usagef("--then %q: use stop or keep", o.then)
	}
	if o.silence < 0 || o.timeout < 0 || o.grace < 0 || o.snapEvery < 0 {
		return Usagef("durations must not be negative")
	}
	// A capture is at least one snapshot (like stacks --count); 0 is
	// refused rather than quietly taken as 1. To capture nothing, do not
	// watch for silence (--silence 0); --timeout still captures.
	if o.snapshots < 1 {
		return Usagef("--snapshots %d: a stack capture takes at least 1 snapshot (2+ tells stuck from slow); to never capture on silence use --silence 0", o.snapshots)
	}
	if o.snapshots > 1 && o.snapEvery == 0 {
		return Usagef("--snapshot-interval 0s: give a positive time between the %d stack snapshots (e.g. 1s)", o.snapshots)
	}
	// pollReady cannot report a URL it cannot GET (it runs beside the
	// boot), so one without http(s)://host would wait out --timeout.
	if o.readyURL != "" {
		if u, err := url.Parse(o.readyURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Usagef("--ready-url %q: give a full URL such as http://localhost:8000/health", o.readyURL)
		}
	}
	return nil
}

// environment is what --env-file and --env set, --env last.
func (o *watchFlags) environment() (map[string]string, error) {
	env := map[string]string{}
	if o.envFile != "" {
		if err := readEnvFile(o.envFile, env); err != nil {
			return nil, Usagef("--env-file: %v", err)
		}
	}
	for _, kv := range o.envs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !watch.ValidEnvName(k) {
			return nil, Usagef("--env %q: use NAME=VALUE", kv)
		}
		env[k] = v
	}
	return env, nil
}

// probe is --probe's spec, nil when --probe was not given.
func (o *watchFlags) probe(cmd *cobra.Command) (*probe.Spec, error) {
	if cmd.Flags().Changed("probe") {
		sp, err := probe.ParseSpec(o.probeSpec)
		if err != nil {
			return nil, Usagef("--probe: %v", err)
		}
		return &sp, nil
	} else if len(o.knobs) > 0 {
		return nil, Usagef("--knob is for the probe's reports: give --probe SPEC too")
	}
	return nil, nil
}

// patchState checks --patches before the boot; nil without --patches.
func (o *watchFlags) patchState(stderr io.Writer) (*store.PatchState, error) {
	if o.patches == "" {
		return nil, nil
	}
	if o.patchRoot == "" {
		return nil, Usagef("--patches needs --patch-root: the site-packages directory the patch targets are relative to")
	}
	ps, problems, err := watch.CheckPatches(o.patchRoot, o.patches)
	if err != nil {
		return nil, Usagef("--patches %s: %v", o.patches, err)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stderr, "bringup watch: patch series: %s\n", p)
		}
		return nil, Usagef("patch series %s is not in an expected state (%s): not booting; see 'bringup patch status --root %s %s'", o.patches, ps.State, o.patchRoot, o.patches)
	}
	return ps, nil
}

// openStore opens the run store (nil when it cannot be opened: the boot
// runs anyway, said on stderr) and the runs directory next to it.
func (o *watchFlags) openStore(stderr io.Writer, style report.Style) (*store.Store, string, error) {
	path, err := store.Resolve(o.storePath)
	if err != nil {
		return nil, "", Usagef("%v", err)
	}
	runsDir := filepath.Join(filepath.Dir(path), "runs")
	st, err := store.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "bringup watch: %s %v\nbringup watch: the boot runs anyway, recorded only in its run directory (output.log, run.json)\n", style.Red("store:"), err)
		return nil, runsDir, nil
	}
	checkLost(stderr, "bringup watch", st, o.stopLost, o.grace)
	return st, runsDir, nil
}

// capture is the stack capture: the boot's processes on this machine, or
// with --srun every node of the job through the fan-out.
func (o *watchFlags) capture(ctx context.Context, style report.Style) (watch.Capture, error) {
	if o.srun == "" {
		if o.changedFanOut {
			return nil, Usagef("--deadline, --parallel, --copy-binary and --remote-dir go with --srun")
		}
		return watch.StacksCapture(o.snapshots, o.snapEvery, style), nil
	}
	if err := o.fanOutFlags.check(); err != nil {
		return nil, err
	}
	job, before := o.srun, map[string]bool(nil)
	if job == "auto" {
		job = ""
		var err error
		if before, err = cluster.SessionJobs(ctx, nil); err != nil {
			return nil, Usagef("--srun auto: %v", err)
		}
	} else if _, _, err := cluster.ParseJob(job); err != nil {
		return nil, Usagef("--srun: %v (or auto: the job of the srun the command starts)", err)
	}
	d, err := o.delivery(o.snapshots, o.snapEvery, o.deadline)
	if err != nil {
		return nil, err
	}
	return watch.ClusterCapture(watch.SrunJob(job, d, before), cluster.Options{Deadline: o.deadline, Parallel: o.parallel}, style), nil
}

func (o *watchFlags) run(cmd *cobra.Command, args []string) error {
	if err := o.check(args); err != nil {
		return err
	}
	o.changedFanOut = anyChanged(cmd, "deadline", "parallel", "copy-binary", "remote-dir")
	env, err := o.environment()
	if err != nil {
		return err
	}
	set, err := loadRules(o.ruleFiles...)
	if err != nil {
		return err
	}
	spec, err := o.probe(cmd)
	if err != nil {
		return err
	}
	patchState, err := o.patchState(cmd.ErrOrStderr())
	if err != nil {
		return err
	}

	stderr := cmd.ErrOrStderr()
	color := isTerminal(os.Stderr)
	style := report.Style{Color: color}
	capture, err := o.capture(cmd.Context(), style)
	if err != nil {
		return err
	}
	st, runsDir, err := o.openStore(stderr, style)
	if err != nil {
		return err
	}
	if st != nil {
		defer st.Close()
	}

	cfg := watch.Config{
		Command: args, Env: env, EnvStrict: o.envStrict,
		Silence: o.silence, OnSilence: o.onSilence, Snapshots: o.snapshots,
		Timeout: o.timeout, Grace: o.grace, ReadyURL: o.readyURL, Then: o.then,
		RunsDir: runsDir, Dir: o.runDir,
		Stdout: cmd.OutOrStdout(), Stderr: stderr, Messages: stderr, Style: style,
		Store:        st,
		Patches:      patchState,
		Versions:     map[string]string{"bringup": Version},
		NewTracker:   watch.NewEngineTracker,
		Capture:      capture,
		Diagnose:     watch.PipelineDiagnose(set, style),
		Probe:        spec,
		ProbeOptions: probe.Options{Knobs: o.knobs},
	}
	if isTerminal(os.Stderr) {
		cfg.Status = os.Stderr
	}
	// The watcher's heap stays small while a flooding boot makes it
	// allocate a record per line: collect less often (CPU, not memory,
	// is what a watcher must not take from the boot).
	debug.SetGCPercent(400)
	ctx, hurry, stop := stopSignals(cmd.Context())
	defer stop()
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
	return outcomeExit(run)
}

// stopSignals: the first Ctrl-C/SIGTERM/SIGHUP cancels ctx (the boot is
// stopped gracefully; the cause names the signal, so watch says who
// stopped the boot), a second one closes hurry (SIGKILL without waiting
// out --grace).
func stopSignals(parent context.Context) (context.Context, chan struct{}, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	hurry := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
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
	return ctx, hurry, func() { signal.Stop(sigs); cancel(nil) }
}

// outcomeExit is watch's exit status for a finished run.
func outcomeExit(run *store.Run) error {
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
}

func anyChanged(cmd *cobra.Command, names ...string) bool {
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			return true
		}
	}
	return false
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
