package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/bringup-tool/bringup/cluster"
	"github.com/bringup-tool/bringup/cluster/node"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/report"
	reportcluster "github.com/bringup-tool/bringup/report/cluster"
	reportstacks "github.com/bringup-tool/bringup/report/stacks"
	"github.com/bringup-tool/bringup/stacks"
)

// ExitPartial: a gather across nodes ran, but a node did not answer or
// ranks are missing; the report covers what was gathered.
const ExitPartial = 3

// clusterCommand is the command the fan-out runs on every node: the
// collector is `bringup stacks --local`.
const clusterCommand = "stacks"

// clusterFlags are `bringup stacks`' flags for the node collector and the
// fan-out, registered with register and run with run.
type clusterFlags struct {
	fanOutFlags
	deliveryFlags
	local                         bool
	slurmJob, slurmStep, nodeName string
	srun, ssh, hostfile, ray      string
	sshConfig                     string
}

// deliveryFlags say how bringup gets onto the nodes.
type deliveryFlags struct {
	copyBinary, remoteDir string
}

// registerDelivery registers --copy-binary and --remote-dir; forFlags
// says which flags they go with in the help ("" when they are the
// command's).
func (d *deliveryFlags) registerDelivery(cmd *cobra.Command, forFlags string) {
	f := cmd.Flags()
	f.StringVar(&d.copyBinary, "copy-binary", cluster.CopyAuto, forFlags+"bringup on the nodes: auto (this path, else a copy), always (a copy of this binary), never (this path only)")
	f.StringVar(&d.remoteDir, "remote-dir", "/tmp", forFlags+"directory on the nodes for the copy of bringup")
}

// delivery is how the collector runs on the nodes: this binary (or its
// copy) with `stacks --local --json`, taking count snapshots interval
// apart, which must fit in deadline.
func (d *deliveryFlags) delivery(count int, interval, deadline time.Duration) (*cluster.Delivery, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, Usagef("cannot find this binary to run it on the nodes: %v", err)
	}
	switch d.copyBinary {
	case cluster.CopyAuto, cluster.CopyAlways, cluster.CopyNever:
	default:
		return nil, Usagef("--copy-binary %q: give auto, always or never", d.copyBinary)
	}
	if !strings.HasPrefix(d.remoteDir, "/") {
		return nil, Usagef("--remote-dir %q: give an absolute path on the nodes", d.remoteDir)
	}
	del := &cluster.Delivery{Self: self, SelfOnNode: self, RemoteDir: d.remoteDir, Copy: d.copyBinary,
		Collector: []string{clusterCommand, "--local", "--json"}}
	if count > 1 {
		if time.Duration(count-1)*interval >= deadline {
			return nil, Usagef("%d snapshots %s apart take longer than --deadline %s: raise --deadline", count, interval, deadline)
		}
		del.Collector = append(del.Collector, "--count", fmt.Sprint(count), "--interval", interval.String())
	}
	return del, nil
}

// fanOutFlags are the flags of every fan-out, for stacks and for logs.
type fanOutFlags struct {
	kube, namespace, container string
	deadline                   time.Duration
	parallel                   int
}

// registerFanOut registers -n, -c, --deadline and --parallel; for says
// which flags they go with in the help ("" when they are the command's).
func (o *fanOutFlags) registerFanOut(cmd *cobra.Command, forFlags string) {
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "--kube: the pods' namespace")
	f.StringVarP(&o.container, "container", "c", "", "--kube: the container (default: the pod's default container)")
	o.registerDeadline(cmd, forFlags)
}

// registerDeadline registers --deadline and --parallel.
func (o *fanOutFlags) registerDeadline(cmd *cobra.Command, forFlags string) {
	f := cmd.Flags()
	f.DurationVar(&o.deadline, "deadline", cluster.DefaultDeadline, forFlags+"each node's time to answer; its launcher is killed (SIGKILL) then")
	f.IntVar(&o.parallel, "parallel", cluster.DefaultParallel, forFlags+"nodes reached at once")
}

// check checks the flags every fan-out shares.
func (o *fanOutFlags) check() error {
	if o.deadline <= 0 {
		return Usagef("--deadline %s: give a positive time (e.g. --deadline 15s)", o.deadline)
	}
	if o.parallel < 1 {
		return Usagef("--parallel must be at least 1")
	}
	if (o.namespace != "" || o.container != "") && o.kube == "" {
		return Usagef("-n/--namespace and -c/--container go with --kube")
	}
	return nil
}

func (c *clusterFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&c.local, "local", false, "collector: every Python process on this node, with the node's identity and rank hints (--json: bringup.node-stacks/v1)")
	f.StringVar(&c.slurmJob, "slurm-job", "", "collector: only processes of this Slurm job")
	f.StringVar(&c.slurmStep, "slurm-step", "", "collector: only processes of this step of --slurm-job")
	f.StringVar(&c.nodeName, "node-name", "", "collector: the name the fan-out reached this node by")
	f.StringVar(&c.srun, "srun", "", "gather from every node of the running Slurm job JOBID[.STEP] (srun --overlap, one step per node)")
	f.StringVar(&c.ssh, "ssh", "", "gather from these hosts over ssh ([user@]host[:port], comma-separated)")
	f.StringVar(&c.hostfile, "hostfile", "", "gather over ssh from the hosts of FILE (one per line; 'host slots=N' too)")
	f.StringVar(&c.kube, "kube", "", "gather from the pods of this label selector with kubectl exec")
	f.StringVar(&c.ray, "ray", "", "gather from the Ray cluster of this dashboard (http://HEAD:8265)")
	c.registerFanOut(cmd, "")
	c.registerDelivery(cmd, "")
	f.StringVar(&c.sshConfig, "ssh-config", "", "--ssh/--hostfile: an ssh_config file (ssh -F)")
}

// active reports whether the flags ask for the collector or a fan-out.
func (c *clusterFlags) active() bool {
	return c.local || c.srun != "" || c.ssh != "" || c.hostfile != "" || c.kube != "" || c.ray != ""
}

// clusterOutput is what the report needs from the stacks flags.
type clusterOutput struct {
	asJSON    bool
	collapsed bool
	outPath   string
	level     stacks.Level
	all       bool
	ruleFiles []string
	torch     string
	count     int
	interval  time.Duration
}

func (c *clusterFlags) backends() int {
	n := 0
	for _, s := range []string{c.srun, c.ssh, c.hostfile, c.kube, c.ray} {
		if s != "" {
			n++
		}
	}
	if c.local {
		n++
	}
	return n
}

// run is the collector (--local) or the fan-out.
func (c *clusterFlags) run(cmd *cobra.Command, o clusterOutput) error {
	if c.backends() > 1 {
		return Usagef("--local, --srun, --ssh, --hostfile, --kube and --ray are alternatives: give one")
	}
	if c.local {
		return c.runLocal(cmd, o)
	}
	if c.slurmJob != "" || c.slurmStep != "" || c.nodeName != "" {
		return Usagef("--slurm-job, --slurm-step and --node-name are the collector's (with --local)")
	}
	if err := c.check(); err != nil {
		return err
	}
	b, err := c.backend(o)
	if err != nil {
		return err
	}
	ctx, stop := fanOutContext(cmd)
	defer stop()
	targets, err := discover(ctx, b.Kind(), c.deadline, b.Discover)
	if err != nil {
		return err
	}
	progress, end := progressLine(cmd.ErrOrStderr(), len(targets))
	results := cluster.Gather(ctx, b, targets, cluster.Options{Deadline: c.deadline, Parallel: c.parallel, Done: progress})
	end()
	return reportGather(cmd, cluster.Merge(b.Kind(), results), o)
}

// fanOutContext is the command's context, cancelled by Ctrl-C or
// SIGTERM: the launchers run in process groups of their own (so that a
// deadline kills all of a launcher), so a Ctrl-C must reach them through
// the context.
func fanOutContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// discover finds the nodes within the deadline; a failure is exit 2.
func discover(ctx context.Context, kind string, deadline time.Duration, find func(context.Context) ([]cluster.Target, error)) ([]cluster.Target, error) {
	targets, err := cluster.Discover(ctx, kind, deadline, find)
	if err != nil {
		return nil, Usagef("%v", err)
	}
	return targets, nil
}

// progressLine counts the nodes that answered on a terminal's stderr;
// end clears the line. Both are no-ops elsewhere.
func progressLine(stderr io.Writer, total int) (func(cluster.NodeResult), func()) {
	f, ok := stderr.(*os.File)
	if !ok || !isTerminal(f) {
		return nil, func() {}
	}
	done := 0
	return func(cluster.NodeResult) {
			done++
			fmt.Fprintf(stderr, "\r\x1b[Kbringup: %d/%d node(s) answered…", done, total)
		}, func() {
			fmt.Fprint(stderr, "\r\x1b[K")
		}
}

// nodeReasons writes one line per node that gave nothing usable: its
// status, detail and fix.
func nodeReasons(stderr io.Writer, nodes []cluster.NodeResult, extra func(cluster.NodeResult) string) {
	for _, r := range nodes {
		line := fmt.Sprintf("bringup: %s: %s", r.Name, r.Status)
		if r.Detail != "" {
			line += ": " + r.Detail
		}
		if r.Fix != "" {
			line += " (fix: " + r.Fix + ")"
		}
		if extra != nil && r.Detail == "" {
			line += extra(r)
		}
		fmt.Fprintln(stderr, report.Clean(line))
	}
}

func (c *clusterFlags) backend(o clusterOutput) (cluster.Backend, error) {
	d, err := c.delivery(o.count, o.interval, c.deadline)
	if err != nil {
		return nil, err
	}
	switch {
	case c.srun != "":
		job, step, err := cluster.ParseJob(c.srun)
		if err != nil {
			return nil, Usagef("--srun: %v", err)
		}
		return &cluster.Srun{Job: job, Step: step, Delivery: d}, nil
	case c.ssh != "" || c.hostfile != "":
		var hosts []cluster.Target
		if c.ssh != "" {
			hosts, err = cluster.ParseHosts(c.ssh)
		} else {
			hosts, err = cluster.ReadHostfile(c.hostfile)
		}
		if err != nil {
			return nil, Usagef("--ssh/--hostfile: %v", err)
		}
		return &cluster.SSH{Hosts: hosts, Delivery: d, Config: c.sshConfig}, nil
	case c.kube != "":
		d.SelfOnNode = "" // a container never has this machine's path
		return &cluster.Kube{Selector: c.kube, Namespace: c.namespace, Container: c.container, Delivery: d}, nil
	default:
		addr, err := cluster.ParseRayAddress(c.ray)
		if err != nil {
			return nil, Usagef("--ray: %v", err)
		}
		return &cluster.Ray{Address: addr, Token: cluster.RayToken()}, nil
	}
}

func (c *clusterFlags) runLocal(cmd *cobra.Command, o clusterOutput) error {
	if c.slurmStep != "" && c.slurmJob == "" {
		return Usagef("--slurm-step needs --slurm-job")
	}
	d, err := node.Collect(node.Options{SlurmJob: c.slurmJob, SlurmStep: c.slurmStep, LauncherName: c.nodeName,
		Count: o.count, Interval: o.interval, Version: Version})
	if err != nil {
		return Usagef("%v", err)
	}
	if o.asJSON {
		w, err := openOutput(cmd, o.outPath)
		if err != nil {
			return err
		}
		defer w.Close()
		if err := node.Write(w, d); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
		return w.Close()
	}
	name := orDefault(c.nodeName, d.Node.Hostname)
	r := cluster.NodeResult{Target: cluster.Target{Name: name, NodeRank: -1}, Status: cluster.StatusOK, Doc: d}
	return reportGather(cmd, cluster.Merge("local", []cluster.NodeResult{r}), o)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// reportGather analyses and renders a merged gather; exit 3 when partial.
func reportGather(cmd *cobra.Command, m *cluster.Merged, o clusterOutput) error {
	stderr := cmd.ErrOrStderr()
	if len(m.Processes) == 0 {
		nodeReasons(stderr, m.Nodes, func(r cluster.NodeResult) string {
			if r.Doc != nil {
				return fmt.Sprintf(": no Python process (%d found in scope)", r.Doc.Scope.Python)
			}
			return ""
		})
		for _, f := range m.Failures {
			fmt.Fprintf(stderr, "bringup: %s pid %d: %s\n", f.Node, f.PID, f.Error)
		}
		if m.Answered() == 0 {
			return Usagef("no node answered (reasons above)")
		}
		return Usagef("no Python process could be read on the %d node(s) that answered", m.Answered())
	}
	set, err := loadRules(o.ruleFiles...)
	if err != nil {
		return err
	}
	a := stacks.AnalyzeWith(m.Processes, o.level, set, o.torch)
	w, err := openOutput(cmd, o.outPath)
	if err != nil {
		return err
	}
	defer w.Close()
	switch {
	case o.asJSON:
		err = reportcluster.JSON(w, m, a)
	case o.collapsed:
		err = reportstacks.Collapsed(w, a, o.all)
		if m.Partial() {
			fmt.Fprintf(stderr, "bringup: partial result: %d of %d node(s) answered; not answered: %s; missing ranks: %v\n",
				m.Answered(), len(m.Nodes), strings.Join(m.Missing.Nodes, ","), m.Missing.Ranks)
		}
	default:
		err = reportcluster.Text(w, m, a, reportstacks.TextOptions{Style: w.Style(), All: o.all})
	}
	if err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	if err := w.Close(); err != nil {
		return err
	}
	switch {
	case m.Partial():
		return &ExitError{Code: ExitPartial}
	case record.HasError(a.Findings):
		return FoundErrors
	}
	return nil
}

// logFlags are diagnose's flags for logs gathered from the nodes of a
// job: each node's logs are fetched into a directory of their own under a
// temporary directory, and diagnosed as NODE/FILE.
type logFlags struct {
	fanOutFlags
	srun, ray, logBytes string
}

func (l *logFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&l.srun, "srun", "", "diagnose the output files of Slurm job JOBID (scontrol's StdOut/StdErr), read on each of its nodes through srun --overlap")
	f.StringVar(&l.kube, "kube", "", "diagnose the container logs of the pods of this label selector (kubectl logs --prefix; --previous too for a container that restarted)")
	f.StringVar(&l.ray, "ray", "", "diagnose the raylet, driver and worker logs of every node of the Ray cluster of this dashboard (http://HEAD:8265)")
	l.registerFanOut(cmd, "--srun/--kube/--ray: ")
	f.StringVar(&l.logBytes, "log-bytes", "16MiB", "--srun/--kube/--ray: what is kept of one log, its end (a node keeps at most 64 logs and 4 times this in all)")
}

// active reports whether logs are to be gathered from nodes.
func (l *logFlags) active() bool { return l.srun != "" || l.kube != "" || l.ray != "" }

func (l *logFlags) backend() (cluster.LogBackend, error) {
	n := 0
	for _, s := range []string{l.srun, l.kube, l.ray} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return nil, Usagef("--srun, --kube and --ray are alternatives: give one")
	}
	if err := l.check(); err != nil {
		return nil, err
	}
	switch {
	case l.srun != "":
		job, step, err := cluster.ParseJob(l.srun)
		if err != nil {
			return nil, Usagef("--srun: %v", err)
		}
		if step != "" {
			return nil, Usagef("--srun %s: give the job (%s): its output files are the job's, not a step's", l.srun, job)
		}
		return &cluster.SrunLogs{Srun: &cluster.Srun{Job: job}}, nil
	case l.kube != "":
		return &cluster.KubeLogs{Kube: &cluster.Kube{Selector: l.kube, Namespace: l.namespace, Container: l.container}}, nil
	}
	addr, err := cluster.ParseRayAddress(l.ray)
	if err != nil {
		return nil, Usagef("--ray: %v", err)
	}
	return &cluster.RayLogs{Ray: &cluster.Ray{Address: addr, Token: cluster.RayToken()}}, nil
}

// gather fetches the nodes' logs into a temporary directory, which
// cleanup removes; nil without --srun, --kube or --ray. When no node gave
// a log it says why, node by node, and fails (exit 2).
func (l *logFlags) gather(cmd *cobra.Command) (g *cluster.LogGather, cleanup func(), err error) {
	cleanup = func() {}
	if !l.active() {
		if l.namespace != "" || l.container != "" {
			return nil, cleanup, Usagef("-n/--namespace and -c/--container go with --kube")
		}
		return nil, cleanup, nil
	}
	b, err := l.backend()
	if err != nil {
		return nil, cleanup, err
	}
	maxBytes, err := parseBytes(l.logBytes)
	if err != nil || maxBytes < 1<<10 {
		return nil, cleanup, Usagef("--log-bytes %q: give a size of 1KiB or more (e.g. 16MiB)", l.logBytes)
	}
	ctx, stop := fanOutContext(cmd)
	defer stop()
	targets, err := discover(ctx, b.Kind(), l.deadline, b.Discover)
	if err != nil {
		return nil, cleanup, err
	}
	root, err := os.MkdirTemp("", "bringup-logs-")
	if err != nil {
		return nil, cleanup, err
	}
	cleanup = func() { os.RemoveAll(root) }
	progress, end := progressLine(cmd.ErrOrStderr(), len(targets))
	g = cluster.GatherLogs(ctx, b, targets, root, cluster.Options{Deadline: l.deadline, Parallel: l.parallel, Done: progress},
		cluster.LogOptions{MaxFileBytes: maxBytes})
	end()
	if paths, _ := g.Files(); len(paths) == 0 {
		nodeReasons(cmd.ErrOrStderr(), g.Nodes, func(r cluster.NodeResult) string {
			if r.Logs != nil && len(r.Logs.Notes) > 0 {
				return ": no log: " + strings.Join(r.Logs.Notes, "; ")
			}
			if r.Logs != nil {
				return fmt.Sprintf(": no log (%d empty)", r.Logs.Empty)
			}
			return ""
		})
		cleanup()
		if g.Answered() == 0 {
			return nil, func() {}, Usagef("no node answered (reasons above)")
		}
		return nil, func() {}, Usagef("none of the %d node(s) that answered has a log to diagnose (what each said above)", g.Answered())
	}
	return g, cleanup, nil
}

// logInputs are the gathered copies to diagnose and the name each is
// reported by (NODE/FILE, never the temporary directory).
func logInputs(g *cluster.LogGather) ([]string, func(string) string) {
	if g == nil {
		return nil, nil
	}
	paths, names := g.Files()
	return paths, func(p string) string {
		if n, ok := names[p]; ok {
			return n
		}
		return p
	}
}

// parseBytes reads a size: 4096, 512K, 16M, 16MiB, 1G.
func parseBytes(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(s), "B"), "i")
	mult := int64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'K', 'k':
			mult = 1 << 10
		case 'M', 'm':
			mult = 1 << 20
		case 'G', 'g':
			mult = 1 << 30
		}
		if mult > 1 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return n * mult, nil
}
