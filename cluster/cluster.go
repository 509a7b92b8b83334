// Package cluster gathers the Python stacks of every node of a multi-node
// boot through what the site already runs and authenticates (srun
// --overlap, ssh, kubectl exec, Ray's dashboard) and merges them into one
// stacks analysis. On every node it runs the collector of package
// cluster/node (bringup itself, copied there when missing) and reads one
// JSON document from its stdout; no agent, no port. Each node has its own
// deadline, after which its launcher is killed with SIGKILL; nodes that do
// not answer are reported with a status and the fix, and the ranks they
// held are listed as missing.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bringup-tool/bringup/cluster/node"
	"github.com/bringup-tool/bringup/pyproc"
)

// Status is how one node's gather ended.
type Status string

const (
	StatusOK      Status = "ok"
	StatusTimeout Status = "timeout"      // no answer within the deadline; the launcher was killed
	StatusLaunch  Status = "launch-error" // the launcher could not run the collector there
	StatusDenied  Status = "denied"       // permission: login, RBAC, or ptrace of the ranks
	StatusError   Status = "error"        // the collector ran but its answer was unusable
)

// Target is one node, pod or Ray node the fan-out reaches.
type Target struct {
	// Name is the node as the launcher names it (Slurm node, ssh host as
	// given, pod, Ray node id).
	Name string `json:"name"`
	// Host, Port, User: the ssh destination; Host is the pod for --kube and
	// the node id for --ray.
	Host string `json:"-"`
	Port string `json:"-"`
	User string `json:"-"`
	// Namespace and Container: --kube.
	Namespace string `json:"-"`
	Container string `json:"-"`
	// NodeRank is the node's index in its group when the launcher says it
	// (LWS worker index, pod index); -1 when unknown.
	NodeRank int `json:"node_rank"`
	// About is a few words for the report ("node gke-7", "10.0.0.3").
	About string `json:"about,omitempty"`
	// PIDs are the processes to read on a backend that reads pid by pid
	// (--ray: the node's workers).
	PIDs []int `json:"-"`
	// Skip, when set, is why the target is not gathered (a pod that is not
	// Running); it is reported as a launch error.
	Skip string `json:"-"`
	// Phase and Restarts: --kube, the pod's phase and how often its
	// container restarted (the log of the one before is kept).
	Phase    string `json:"-"`
	Restarts int    `json:"-"`
}

// Backend reaches the nodes of one launcher.
type Backend interface {
	// Kind names the backend: "srun", "ssh", "kube", "ray".
	Kind() string
	// Discover lists the nodes to gather from.
	Discover(ctx context.Context) ([]Target, error)
	// Collect gets one node's document. A failure is a *NodeError when its
	// status is known.
	Collect(ctx context.Context, t Target) (*node.Doc, error)
}

// NodeError is why a node gave no document, with the fix when known.
type NodeError struct {
	Status Status
	Msg    string
	Fix    string
}

func (e *NodeError) Error() string {
	if e.Fix != "" {
		return e.Msg + " (fix: " + e.Fix + ")"
	}
	return e.Msg
}

// NodeResult is one node's outcome.
type NodeResult struct {
	Target
	Status  Status        `json:"status"`
	Detail  string        `json:"detail,omitempty"`
	Fix     string        `json:"fix,omitempty"`
	Elapsed time.Duration `json:"-"`
	// ElapsedMS is Elapsed for JSON.
	ElapsedMS int64     `json:"elapsed_ms"`
	Doc       *node.Doc `json:"-"`
	// Logs are the node's log files (GatherLogs).
	Logs *NodeLogs `json:"-"`
}

// Options tune Gather.
type Options struct {
	// Deadline is each node's time to answer (default 15 s); its launcher
	// is killed with SIGKILL then: a hung srun ignores SIGTERM for its
	// message timeout.
	Deadline time.Duration
	// Parallel caps the nodes gathered at once (default 32).
	Parallel int
	// Done, when set, is called as each node finishes (from any goroutine,
	// one call at a time).
	Done func(NodeResult)
}

// DefaultDeadline and DefaultParallel are Options' defaults.
const (
	DefaultDeadline = 15 * time.Second
	DefaultParallel = 32
)

// Discover runs find (a backend's Discover) within deadline; the error
// names the backend kind and, when the deadline passed, says so.
func Discover(ctx context.Context, kind string, deadline time.Duration, find func(context.Context) ([]Target, error)) ([]Target, error) {
	dctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	targets, err := find(dctx)
	if err != nil {
		if errors.Is(dctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s: finding the nodes took longer than --deadline %s", kind, deadline)
		}
		return nil, fmt.Errorf("%s: %v", kind, err)
	}
	return targets, nil
}

// Gather runs b.Collect on every target, at most o.Parallel at once, each
// under its own deadline, and returns one result per target in order.
func Gather(ctx context.Context, b Backend, targets []Target, o Options) []NodeResult {
	return fanOut(ctx, b.Kind(), targets, o, func(ctx context.Context, t Target, r *NodeResult) error {
		doc, err := b.Collect(ctx, t)
		if err != nil {
			return err
		}
		if doc == nil {
			return &NodeError{Status: StatusError, Msg: "no document"}
		}
		r.Doc = doc
		r.Status, r.Detail, r.Fix = docProblems(doc)
		return nil
	})
}

// fanOut is the one fan-out of the package, for stacks and for logs: it
// runs collect on every target, at most o.Parallel at once, each under
// its own deadline, and returns one result per target in order. collect
// fills in what the node gave (r.Status is ok when it is called) or
// returns why the node gave nothing; fanOut times the node and names a
// deadline, a cancellation and a *NodeError.
func fanOut(ctx context.Context, kind string, targets []Target, o Options, collect func(ctx context.Context, t Target, r *NodeResult) error) []NodeResult {
	if o.Deadline <= 0 {
		o.Deadline = DefaultDeadline
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel
	}
	out := make([]NodeResult, len(targets))
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, t := range targets {
		wg.Add(1)
		go func(i int, t Target) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := collectOne(ctx, kind, t, o.Deadline, collect)
			out[i] = r
			if o.Done != nil {
				mu.Lock()
				o.Done(r)
				mu.Unlock()
			}
		}(i, t)
	}
	wg.Wait()
	return out
}

func collectOne(ctx context.Context, kind string, t Target, deadline time.Duration, collect func(ctx context.Context, t Target, r *NodeResult) error) NodeResult {
	if t.Skip != "" {
		return NodeResult{Target: t, Status: StatusLaunch, Detail: t.Skip}
	}
	nctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	start := time.Now()
	r := NodeResult{Target: t, Status: StatusOK}
	err := collect(nctx, t, &r)
	r.Elapsed = time.Since(start)
	r.ElapsedMS = r.Elapsed.Milliseconds()
	switch {
	case err == nil:
	case errors.Is(nctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		r.Status = StatusTimeout
		r.Detail = fmt.Sprintf("no answer within %s; the %s launcher was killed", deadline, kind)
		var ne *NodeError
		if errors.As(err, &ne) && ne.Msg != "" {
			r.Detail += ": " + ne.Msg
		}
	default:
		var ne *NodeError
		if errors.As(err, &ne) {
			r.Status, r.Detail, r.Fix = ne.Status, ne.Msg, ne.Fix
		} else {
			r.Status, r.Detail = StatusError, err.Error()
		}
		if ctx.Err() != nil {
			r.Status, r.Detail = StatusTimeout, "the gather was cancelled: "+ctx.Err().Error()
		}
	}
	if err != nil {
		r.Doc, r.Logs = nil, nil
	}
	return r
}

// docProblems judges a node's document: processes it could not read for
// permission make it "denied" (with the fix), a node where none of its
// Python processes could be read is an "error"; the document is merged
// either way.
func docProblems(d *node.Doc) (Status, string, string) {
	denied := 0
	for _, f := range d.Failures {
		if f.Kind == node.FailPermission {
			denied++
		}
	}
	switch {
	case denied > 0:
		return StatusDenied, fmt.Sprintf("%d of %d Python process(es) could not be read (ptrace permission)", denied, d.Scope.Python), permissionFix()
	case len(d.Processes) == 0 && d.Scope.Unreadable > 0:
		return StatusDenied, fmt.Sprintf("%d Python process(es) whose environment this user cannot read, so whether they belong to job %s is unknown", d.Scope.Unreadable, d.Scope.SlurmJob), "run bringup as the job's user or root"
	case len(d.Failures) > 0 && len(d.Processes) == 0:
		return StatusError, fmt.Sprintf("none of %d Python process(es) could be read: %s", len(d.Failures), d.Failures[0].Error), ""
	}
	return StatusOK, "", ""
}

// permissionFix is what lets the collector read the ranks' memory, as
// pyproc says it after the colon of its error.
func permissionFix() string {
	msg := pyproc.ErrPermission.Error()
	if i := strings.Index(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}
