package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/bringup-tool/bringup/cluster/node"
)

// Srun reaches the nodes of a running Slurm job: the nodes from
// scontrol, then on each node its own step, `srun --overlap --jobid J -w
// NODE -N1 -n1 --gres=none`, so that one bad node cannot abort the others'
// step. The binary is copied with sbcast when a node lacks it.
type Srun struct {
	Job, Step string
	Delivery  *Delivery
	// Env is the launchers' environment; nil: this process's without the
	// SLURM_* variables of an enclosing allocation (SLURM_CONF is kept).
	Env []string

	mu     sync.Mutex
	copied bool
}

var jobRE = regexp.MustCompile(`^([0-9]+(?:_[0-9]+)?)(?:\.([0-9]+|batch|extern))?$`)

// ParseJob splits JOBID[.STEP] ("1234", "1234_7" for an array task,
// "1234.0").
func ParseJob(s string) (job, step string, err error) {
	m := jobRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return "", "", fmt.Errorf("%q is not a Slurm job id (JOBID or JOBID.STEP, e.g. 1234 or 1234.0)", s)
	}
	return m[1], m[2], nil
}

// Kind implements Backend.
func (s *Srun) Kind() string { return "srun" }

func (s *Srun) env() []string {
	if s.Env != nil {
		return s.Env
	}
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SLURM_") && !strings.HasPrefix(kv, "SLURM_CONF=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// Discover implements Backend: `scontrol show job -o J` for the node
// list, `scontrol show hostnames` to expand it.
func (s *Srun) Discover(ctx context.Context) ([]Target, error) {
	info, err := s.jobInfo(ctx)
	if err != nil {
		return nil, err
	}
	if info.State != "RUNNING" {
		return nil, fmt.Errorf("job %s is %s, not RUNNING: there is no process to read (squeue -j %s)", s.Job, info.State, s.Job)
	}
	return s.nodes(ctx, info)
}

// jobInfo is `scontrol show job -o J`, parsed.
func (s *Srun) jobInfo(ctx context.Context) (*JobInfo, error) {
	out, err := s.scontrol(ctx, "show", "job", "-o", s.Job)
	if err != nil {
		return nil, err
	}
	info, err := ParseScontrolJob(out)
	if err != nil {
		return nil, fmt.Errorf("scontrol show job %s: %v", s.Job, err)
	}
	return info, nil
}

// nodes expands the job's node lists with `scontrol show hostnames`, one
// target per node in Slurm's order.
func (s *Srun) nodes(ctx context.Context, info *JobInfo) ([]Target, error) {
	var targets []Target
	seen := map[string]bool{}
	for _, list := range info.NodeLists {
		names, err := s.scontrol(ctx, "show", "hostnames", list)
		if err != nil {
			return nil, err
		}
		for _, n := range strings.Fields(string(names)) {
			if !seen[n] && validName(n) {
				seen[n] = true
				targets = append(targets, Target{Name: n, Host: n, NodeRank: -1})
			}
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("job %s lists no node (scontrol show job -o %s)", s.Job, s.Job)
	}
	return targets, nil
}

func (s *Srun) scontrol(ctx context.Context, args ...string) ([]byte, error) {
	return query(ctx, s.env(), "scontrol is not on PATH: --srun needs Slurm's client commands on this machine (run bringup on a login or compute node of the cluster)", "scontrol", args...)
}

// JobInfo is what the fan-out needs of `scontrol show job -o`.
type JobInfo struct {
	State     string
	NodeLists []string // one per line (a heterogeneous job has several)
	// BatchHost is the node that runs the batch script and writes its
	// output; Outputs are the StdOut and StdErr paths (each once; none
	// for an interactive job or /dev/null), as scontrol prints them:
	// Slurm 22.05 leaves %N, %n, %t, %s and %% for the node to expand.
	BatchHost string
	Outputs   []string
	JobName   string
	// UID is the job's user (UserId=name(uid)); -1 when not shown.
	UID int
}

var (
	stateRE    = regexp.MustCompile(`(?:^|\s)JobState=(\S+)`)
	nodeListRE = regexp.MustCompile(`(?:^|\s)NodeList=(\S+)`)
	batchRE    = regexp.MustCompile(`(?:^|\s)BatchHost=(\S+)`)
	userRE     = regexp.MustCompile(`(?:^|\s)UserId=[^\s(]*\(([0-9]+)\)`)
	// keyRE finds the next "Key=" of a line, where a value that may hold
	// spaces (a path) ends.
	keyRE = regexp.MustCompile(`\s[A-Za-z][A-Za-z0-9_/:]*=`)
)

// ParseScontrolJob reads `scontrol show job -o` output: one line per job
// (or per component of a heterogeneous job).
func ParseScontrolJob(out []byte) (*JobInfo, error) {
	info := &JobInfo{UID: -1}
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || !strings.Contains(line, "JobId=") {
			continue
		}
		st := stateRE.FindStringSubmatch(line)
		if st == nil {
			return nil, fmt.Errorf("no JobState in %q", clipStr(line, 80))
		}
		if info.State == "" || st[1] == "RUNNING" {
			info.State = st[1]
		}
		if m := nodeListRE.FindStringSubmatch(line); m != nil && m[1] != "(null)" {
			info.NodeLists = append(info.NodeLists, m[1])
		}
		if m := batchRE.FindStringSubmatch(line); m != nil && info.BatchHost == "" && validName(m[1]) {
			info.BatchHost = m[1]
		}
		if info.JobName == "" {
			info.JobName = spacedValue(line, "JobName")
		}
		if m := userRE.FindStringSubmatch(line); m != nil && info.UID < 0 {
			if uid, err := strconv.Atoi(m[1]); err == nil {
				info.UID = uid
			}
		}
		for _, k := range []string{"StdOut", "StdErr"} {
			p := spacedValue(line, k)
			if p != "" && p != "(null)" && p != "/dev/null" && strings.HasPrefix(p, "/") && !slices.Contains(info.Outputs, p) {
				info.Outputs = append(info.Outputs, p)
			}
		}
	}
	if info.State == "" {
		return nil, fmt.Errorf("no job in the output")
	}
	return info, nil
}

// spacedValue is the value of key in a `scontrol -o` line, up to the next
// key: a path may hold spaces.
func spacedValue(line, key string) string {
	i := strings.Index(" "+line, " "+key+"=")
	if i < 0 {
		return ""
	}
	v := line[i+len(key)+1:]
	if m := keyRE.FindStringIndex(v); m != nil {
		v = v[:m[0]]
	}
	return strings.TrimSpace(v)
}

func clipStr(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// validName keeps node, host and pod names that cannot be taken for an
// option or carry a shell's or terminal's special characters.
func validName(s string) bool {
	if s == "" || s[0] == '-' || len(s) > 253 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._:", c)) {
			return false
		}
	}
	return true
}

func (s *Srun) collectorArgs(t Target) []string {
	args := s.Delivery.collector("--slurm-job", s.Job, "--node-name", t.Name)
	if s.Step != "" {
		args = append(args, "--slurm-step", s.Step)
	}
	return args
}

func (s *Srun) srunArgv(t Target) ([]string, error) {
	remote, err := s.Delivery.remoteArgv(false, s.collectorArgs(t))
	if err != nil {
		return nil, err
	}
	argv := []string{"srun", "--overlap", "--jobid=" + s.Job, "-w", t.Name, "-N1", "-n1", "--gres=none",
		"--quiet", "--job-name=bringup-stacks", "--"}
	return append(argv, remote...), nil
}

// Collect implements Backend.
func (s *Srun) Collect(ctx context.Context, t Target) (*node.Doc, error) {
	argv, err := s.srunArgv(t)
	if err != nil {
		return nil, &NodeError{Status: StatusLaunch, Msg: err.Error()}
	}
	r := run(ctx, argv, s.env(), "")
	if r.exit == exitMissing && bytes.Contains(r.stderr, []byte(markerMissing)) {
		if s.Delivery.Copy == CopyNever {
			return nil, &NodeError{Status: StatusLaunch, Msg: fmt.Sprintf("bringup is not at %s on %s", s.Delivery.SelfOnNode, t.Name),
				Fix: "install it at the same path on every node, or let --copy-binary=auto sbcast it"}
		}
		if err := s.broadcast(ctx); err != nil {
			return nil, err
		}
		r = run(ctx, argv, s.env(), "")
	}
	return outcome(r, t.Name, s.classify)
}

// broadcast copies this binary to the job's nodes once with sbcast.
func (s *Srun) broadcast(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.copied {
		return nil
	}
	dest, err := s.Delivery.RemotePath(os.Getuid())
	if err != nil {
		return &NodeError{Status: StatusLaunch, Msg: err.Error()}
	}
	r := run(ctx, []string{"sbcast", "--jobid=" + s.Job, "--force", "--preserve", s.Delivery.Self, dest}, s.env(), "")
	if r.err != nil || r.exit != 0 {
		msg := lastLines(r.stderr, 2)
		if r.err != nil && msg == "" {
			msg = r.err.Error()
		}
		if ctx.Err() != nil {
			return &NodeError{Status: StatusTimeout, Msg: "sbcast of bringup to the job's nodes did not finish: " + msg}
		}
		return &NodeError{Status: StatusLaunch, Msg: "sbcast of bringup to the job's nodes failed: " + msg,
			Fix: "put bringup at the same path on every node (a shared file system), or give --remote-dir a directory the job may write on the nodes"}
	}
	s.copied = true
	return nil
}

// classify names srun's own failures (its "srun: error:" lines).
func (s *Srun) classify(r ran) *NodeError {
	e := string(r.stderr)
	tail := lastLines(r.stderr, 3)
	switch {
	case strings.Contains(e, "Invalid job id"):
		return &NodeError{Status: StatusLaunch, Msg: "job " + s.Job + " is no longer running: " + tail}
	case strings.Contains(e, "Access/permission denied") || strings.Contains(e, "Permission denied") && strings.Contains(e, "srun: error"):
		return &NodeError{Status: StatusDenied, Msg: tail, Fix: "only the job's owner and root may start a step in it: run bringup as the job's user"}
	case r.exit == exitMissing && strings.Contains(e, markerMissing):
		return &NodeError{Status: StatusLaunch, Msg: "bringup is still missing on the node after sbcast: " + tail,
			Fix: "give --remote-dir a directory that exists on the nodes"}
	case strings.Contains(e, "srun: error:") || strings.Contains(e, "srun: fatal:") || strings.Contains(e, "slurmstepd: error:"):
		ne := &NodeError{Status: StatusLaunch, Msg: tail}
		if strings.Contains(e, "Socket timed out") || strings.Contains(e, "Task launch") || strings.Contains(e, "not responding") {
			ne.Fix = "the node's slurmd does not answer: scontrol show node; check slurmd there"
		}
		return ne
	}
	return nil
}
