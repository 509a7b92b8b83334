package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bringup-tool/bringup/pyproc"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/report"
	reportstacks "github.com/bringup-tool/bringup/report/stacks"
	"github.com/bringup-tool/bringup/stacks"
	"github.com/bringup-tool/bringup/stacks/live"
)

func init() { register(newStacksCmd) }

// stacksFlags are stacks' flags.
type stacksFlags struct {
	asJSON, collapsed, all bool
	outPath, pidList       string
	treePID                int
	count                  int
	interval               time.Duration
	level                  string
	ruleFiles              []string
	torch                  string
	cf                     clusterFlags
}

func newStacksCmd() *cobra.Command {
	var o stacksFlags
	cmd := &cobra.Command{
		Use:   "stacks [--json|--collapsed] [-o FILE] [--pid PID[,PID…]] [--tree PID] [--local | --srun JOBID | --ssh HOSTS | --hostfile F | --kube SEL | --ray URL] [--count N --interval D] [FILE…]",
		Short: "Group the Python stacks of every rank, collapse recursion, name the hang",
		Long: `stacks reads stack dumps (py-spy text and --json, faulthandler, pystack,
PyTorch debug-server files, dumps inside engine logs such as SGLang watchdog
records, bringup's own JSON) from files, directories or stdin ("-"), or
captures live processes (--pid, --tree; py-spy is used as a fallback when
the built-in reader cannot read a process). It collapses recursion, buckets
the threads of all ranks at a similarity level, shows the path all ranks
share and where they diverge, the outlier ranks, stuck versus slow when
there are several snapshots, and names known hang signatures.

Levels: exact, lines, funcs (default: same functions, lines and recursion
depth ignored), leaf-K (same innermost K frames).

Across nodes (docs/cluster.md): --srun, --ssh, --hostfile and --kube run
bringup's node collector on every node through the cluster's own launcher
(srun --overlap one step per node, ssh, kubectl exec), --ray reads Ray's
dashboard; everything is merged into one report with ranks named across
nodes, pids qualified by node and a status per node. Each node has
--deadline to answer (its launcher is then killed with SIGKILL); at most
--parallel nodes are gathered at once; bringup is copied to a node that
lacks it (sbcast for --srun, over the connection for --ssh and --kube).
--local is the collector itself: every Python process on this node with
the node's identity and each process's rank hints (--json:
bringup.node-stacks/v1 on stdout; nothing listens, nothing stays behind).

Exit status: 0 no error-level finding, 1 error-level finding, 2 could not
run (no node answered), 3 partial result across nodes: a node did not answer
or ranks are missing (the report covers the rest).`,
		Example: `  bringup stacks dumps/                      # one py-spy dump per rank
  bringup stacks --pid 4242,4243 --count 3 --interval 5s
  bringup stacks --tree $(pgrep -f 'vllm serve') --json -o stacks.json
  kubectl logs pod/sglang-0 | bringup stacks -
  bringup stacks --collapsed dumps/ > stacks.folded   # flamegraph.pl / speedscope
  bringup stacks --srun 4242                  # every node of a Slurm job
  bringup stacks --hostfile hostfile --deadline 30s
  bringup stacks --kube leaderworkerset.sigs.k8s.io/name=vllm -n serving
  bringup stacks --ray http://127.0.0.1:8265`,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	o.register(cmd)
	return cmd
}

func (o *stacksFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&o.asJSON, "json", false, "write bringup.stacks/v1 JSON")
	f.BoolVar(&o.collapsed, "collapsed", false, "write folded stacks (root first, ';'-joined, count) for flame graphs and speedscope")
	f.StringVarP(&o.outPath, "output", "o", "", "write to FILE instead of stdout")
	f.StringVar(&o.pidList, "pid", "", "capture these live processes (comma-separated pids)")
	f.IntVar(&o.treePID, "tree", 0, "capture PID and every Python process below it")
	f.IntVar(&o.count, "count", 1, "snapshots to take of live processes (2+ tells stuck from slow)")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "time between snapshots")
	f.StringVar(&o.level, "level", "funcs", "bucket similarity: exact, lines, funcs or leaf-K")
	f.BoolVar(&o.all, "all", false, "show idle auxiliary threads too (folded by default)")
	f.StringArrayVar(&o.ruleFiles, "rules", nil, "add rules from a YAML file (repeatable)")
	f.StringVar(&o.torch, "torch", "", "torch version of the dumped processes, for version-gated signatures (e.g. 2.10.0)")
	o.cf.register(cmd)
}

// check reads the flags every input shares: the level and the pids.
func (o *stacksFlags) check() (stacks.Level, []int, error) {
	if o.asJSON && o.collapsed {
		return stacks.Level{}, nil, Usagef("--json and --collapsed are two output formats: choose one")
	}
	lv, err := stacks.ParseLevel(o.level)
	if err != nil {
		return stacks.Level{}, nil, Usagef("--level: %v", err)
	}
	pids, err := parsePIDs(o.pidList)
	if err != nil {
		return stacks.Level{}, nil, Usagef("--pid: %v (give pids separated by commas, e.g. --pid 4242,4243)", err)
	}
	if o.count < 1 {
		return stacks.Level{}, nil, Usagef("--count must be at least 1")
	}
	// Snapshots taken back to back all look alike: every thread would
	// be called stuck.
	if o.interval < 0 || (o.count > 1 && o.interval == 0) {
		return stacks.Level{}, nil, Usagef("--interval %s: give a positive time between snapshots (e.g. --interval 5s)", o.interval)
	}
	return lv, pids, nil
}

func (o *stacksFlags) run(cmd *cobra.Command, args []string) error {
	lv, pids, err := o.check()
	if err != nil {
		return err
	}
	live := len(pids) > 0 || o.treePID > 0
	if o.cf.active() {
		if live || len(args) > 0 {
			return Usagef("--local, --srun, --ssh, --hostfile, --kube and --ray gather from the nodes themselves: give no FILE, --pid or --tree with them")
		}
		return o.cf.run(cmd, clusterOutput{asJSON: o.asJSON, collapsed: o.collapsed, outPath: o.outPath, level: lv, all: o.all,
			ruleFiles: o.ruleFiles, torch: o.torch, count: o.count, interval: o.interval})
	}
	if !live && len(args) == 0 {
		if f, ok := cmd.InOrStdin().(*os.File); ok && isTerminal(f) || !ok {
			return Usagef("stacks needs dump FILEs (or - for stdin), --pid PID or --tree PID")
		}
		args = []string{"-"}
	}
	set, err := loadRules(o.ruleFiles...)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	var procs []*record.Process
	if live {
		if procs, err = o.captureLive(stderr, pids, len(args) > 0); err != nil {
			return err
		}
	}
	note := func(s string) { fmt.Fprintf(stderr, "bringup: %s\n", report.Clean(s)) }
	d := stacks.ReadDumps(args, cmd.InOrStdin(), note)
	d.Processes = append(procs, d.Processes...)
	if err := d.Empty(args, note); err != nil {
		return Usagef("%s", report.Clean(err.Error()))
	}
	return o.write(cmd, d.Analyze(lv, set, o.torch))
}

// captureLive reads --pid and --tree; the processes that could not be
// read are said on stderr. When every pid failed and there are no
// files, it is exit 2 with each one's reason.
func (o *stacksFlags) captureLive(stderr io.Writer, pids []int, files bool) ([]*record.Process, error) {
	var progress io.Writer
	if f, ok := stderr.(*os.File); ok && isTerminal(f) {
		progress = stderr
	}
	res, err := captureLive(pids, o.treePID, o.count, o.interval, progress)
	if err != nil && (res == nil || len(res.Processes) == 0) && !files {
		// Every pid failed: name each one's reason, and the hint
		// about pids only where a pid is not Python at all (an
		// unsupported CPython is a Python process).
		if res != nil && len(res.Failures) > 1 {
			for _, f := range res.Failures {
				fmt.Fprintf(stderr, "bringup: %v\n", f)
			}
			return nil, Usagef("none of the %d processes could be read (reasons above)", len(res.Failures))
		}
		if errors.Is(err, pyproc.ErrNotPython) && !errors.Is(err, pyproc.ErrUnsupported) {
			return nil, Usagef("%v (give the pid of a Python process such as an engine worker; --tree PID finds them below a launcher)", err)
		}
		return nil, Usagef("%v", err)
	}
	if res == nil {
		return nil, nil
	}
	for _, f := range res.Failures {
		fmt.Fprintf(stderr, "bringup: %v\n", f)
	}
	return res.Processes, nil
}

// write renders the analysis in the format asked for; exit 1 on an
// error-level finding.
func (o *stacksFlags) write(cmd *cobra.Command, a *stacks.Analysis) error {
	w, err := openOutput(cmd, o.outPath)
	if err != nil {
		return err
	}
	defer w.Abort()
	f := reportstacks.FormatText
	switch {
	case o.asJSON:
		f = reportstacks.FormatJSON
	case o.collapsed:
		f = reportstacks.FormatCollapsed
	}
	if err := reportstacks.Write(w, a, f, reportstacks.TextOptions{Style: w.Style(), All: o.all}); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	if err := w.Close(); err != nil {
		return err
	}
	if record.HasError(a.Findings) {
		return FoundErrors
	}
	return nil
}

func parsePIDs(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		n, err := strconv.Atoi(part)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a pid", part)
		}
		out = append(out, n)
	}
	return out, nil
}

func captureLive(pids []int, tree, count int, interval time.Duration, progress io.Writer) (*live.Result, error) {
	o := live.Options{Count: count, Interval: interval}
	if tree > 0 {
		o.Tree, pids = true, append([]int{tree}, pids...)
	}
	if progress != nil && count > 1 {
		o.Progress = snapshotProgress(progress, interval)
		defer fmt.Fprint(progress, "\r\x1b[K")
	}
	return live.Capture(pids, o)
}

// snapshotProgress draws "snapshot 2/5 of 8 process(es) (2s apart)" on one
// terminal line, redrawn as each snapshot starts: a capture of several
// snapshots takes (count-1) × interval.
func snapshotProgress(w io.Writer, interval time.Duration) func(round, count, procs int) {
	return func(round, count, procs int) {
		fmt.Fprintf(w, "\r\x1b[Kbringup: snapshot %d/%d of %d process(es) (%s apart)…", round, count, procs, interval)
	}
}
