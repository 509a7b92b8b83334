package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bringup-tool/bringup/cluster/node"
	"github.com/bringup-tool/bringup/ingest/stackdump"
	"github.com/bringup-tool/bringup/record"
)

// Ray reads a Ray cluster through its dashboard: the nodes and workers
// from the state API (/api/v0/nodes, /api/v0/workers), each worker's
// stack from /worker/traceback, which the head forwards to the node's
// agent (py-spy there). Nothing is run on the nodes by bringup. Ray's
// profiling endpoints are off unless the head was started with
// RAY_DASHBOARD_ENABLE_PROFILING=1.
type Ray struct {
	// Address is the dashboard's URL (http://HEAD:8265).
	Address string
	Client  *http.Client
	// Token is sent as a bearer token (Ray's token authentication);
	// RayToken finds it.
	Token string
}

// Kind implements Backend.
func (r *Ray) Kind() string { return "ray" }

// ParseRayAddress accepts host:port or an http(s) URL.
func ParseRayAddress(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("empty address")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not a dashboard address (http://HEAD:8265)", s)
	}
	u.Path, u.RawQuery, u.Fragment = strings.TrimRight(u.Path, "/"), "", ""
	return u.String(), nil
}

// RayToken is Ray's authentication token from RAY_AUTH_TOKEN,
// RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token; empty when none.
func RayToken() string {
	if t := strings.TrimSpace(os.Getenv("RAY_AUTH_TOKEN")); t != "" {
		return t
	}
	path := os.Getenv("RAY_AUTH_TOKEN_PATH")
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		path = filepath.Join(home, ".ray", "auth_token")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// ProfilingFix is how to turn Ray's profiling endpoints on.
const ProfilingFix = "restart the Ray head with RAY_DASHBOARD_ENABLE_PROFILING=1 in its environment (ray stop; RAY_DASHBOARD_ENABLE_PROFILING=1 ray start --head …; on KubeRay, set it in the head group's container env), and make sure py-spy is installed on every node (pip install 'ray[default]' brings it)"

// ErrProfilingDisabled is returned by Discover when the head says its
// profiling endpoints are off.
var ErrProfilingDisabled = errors.New("the Ray dashboard's profiling endpoints are disabled (Ray's default): " + ProfilingFix)

// request sends a GET to the dashboard, with the token when there is one;
// the caller closes the body.
func (r *Ray) request(ctx context.Context, path string, q url.Values) (*http.Response, error) {
	u := r.Address + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	c := r.Client
	if c == nil {
		c = http.DefaultClient
	}
	return c.Do(req)
}

func (r *Ray) get(ctx context.Context, path string, q url.Values) (int, []byte, error) {
	resp, err := r.request(ctx, path, q)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, node.MaxDoc))
	return resp.StatusCode, body, err
}

// stateList reads a state API list: {"result": true, "msg": "", "data":
// {"result": {"result": [rows…]}}}.
func (r *Ray) stateList(ctx context.Context, path string, rows any) error {
	q := url.Values{"limit": {"10000"}, "detail": {"true"}, "exclude_driver": {"false"}}
	code, body, err := r.get(ctx, path, q)
	if err != nil {
		return fmt.Errorf("GET %s%s: %v", r.Address, path, err)
	}
	if err := httpProblem(code, body); err != nil {
		return fmt.Errorf("GET %s%s: %v", r.Address, path, err)
	}
	if err := ParseStateList(body, rows); err != nil {
		return fmt.Errorf("GET %s%s: %v", r.Address, path, err)
	}
	return nil
}

// ParseStateList reads the rows of a Ray state API answer.
func ParseStateList(body []byte, rows any) error {
	var env struct {
		Result bool   `json:"result"`
		Msg    string `json:"msg"`
		Data   struct {
			Result struct {
				Result json.RawMessage `json:"result"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("not a Ray state API answer: %v", err)
	}
	if !env.Result {
		return errors.New(orWord(env.Msg, "the state API reported a failure"))
	}
	if len(env.Data.Result.Result) == 0 {
		return errors.New("a state API answer without rows")
	}
	if err := json.Unmarshal(env.Data.Result.Result, rows); err != nil {
		return fmt.Errorf("rows: %v", err)
	}
	return nil
}

// httpProblem names an HTTP failure of the dashboard.
func httpProblem(code int, body []byte) error {
	text := clipStr(strings.TrimSpace(string(body)), 300)
	switch {
	case code == http.StatusOK:
		return nil
	case code == http.StatusUnauthorized:
		return fmt.Errorf("401 %s: the cluster uses Ray token authentication; set RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH) to its token", text)
	case code == http.StatusForbidden && strings.Contains(text, "RAY_DASHBOARD_ENABLE_PROFILING"):
		return ErrProfilingDisabled
	case code == http.StatusNotFound:
		return fmt.Errorf("404: the dashboard has no such endpoint (a Ray older than the state API, or a proxy in front of the dashboard that does not pass it)")
	}
	return fmt.Errorf("HTTP %d: %s", code, text)
}

// RayNode and RayWorker are the state API rows used.
type RayNode struct {
	NodeID   string `json:"node_id"`
	NodeIP   string `json:"node_ip"`
	NodeName string `json:"node_name"`
	State    string `json:"state"`
	IsHead   bool   `json:"is_head_node"`
}

type RayWorker struct {
	WorkerType string `json:"worker_type"`
	IsAlive    bool   `json:"is_alive"`
	NodeID     string `json:"node_id"`
	IP         string `json:"ip"`
	PID        int    `json:"pid"`
}

// Discover implements Backend: one target per alive node, with its alive
// workers and drivers.
func (r *Ray) Discover(ctx context.Context) ([]Target, error) {
	if code, body, err := r.get(ctx, "/api/profiling_enabled", nil); err == nil && code == http.StatusOK {
		var pe struct {
			Data struct {
				ProfilingEnabled *bool `json:"profilingEnabled"`
			} `json:"data"`
		}
		if json.Unmarshal(body, &pe) == nil && pe.Data.ProfilingEnabled != nil && !*pe.Data.ProfilingEnabled {
			return nil, ErrProfilingDisabled
		}
	}
	var nodes []RayNode
	if err := r.stateList(ctx, "/api/v0/nodes", &nodes); err != nil {
		return nil, err
	}
	var workers []RayWorker
	if err := r.stateList(ctx, "/api/v0/workers", &workers); err != nil {
		return nil, err
	}
	return RayTargets(nodes, workers), nil
}

// RayTargets groups the alive workers and drivers by alive node.
func RayTargets(nodes []RayNode, workers []RayWorker) []Target {
	byNode := map[string][]int{}
	for _, w := range workers {
		if w.IsAlive && w.PID > 0 && (w.WorkerType == "WORKER" || w.WorkerType == "DRIVER") {
			byNode[w.NodeID] = append(byNode[w.NodeID], w.PID)
		}
	}
	var out []Target
	for _, n := range nodes {
		if n.State != "ALIVE" || n.NodeID == "" {
			continue
		}
		name := orWord(n.NodeName, n.NodeIP)
		about := "node id " + clipStr(n.NodeID, 12)
		if n.IsHead {
			about = "head, " + about
		}
		pids := byNode[n.NodeID]
		sort.Ints(pids)
		t := Target{Name: name, Host: n.NodeID, NodeRank: -1, About: about, PIDs: pids}
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Collect implements Backend: every worker of the node, one traceback
// request each.
func (r *Ray) Collect(ctx context.Context, t Target) (*node.Doc, error) {
	d := &node.Doc{Schema: node.Schema, Processes: []node.Process{}, Failures: []node.Failure{}}
	d.Node = node.Identity{Hostname: t.Name, LauncherName: t.Host, CapturedAt: time.Now().UTC()}
	for _, pid := range t.PIDs {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		d.Scope.Python++
		q := url.Values{"pid": {strconv.Itoa(pid)}, "node_id": {t.Host}, "native": {"0"}}
		code, body, err := r.get(ctx, "/worker/traceback", q)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &NodeError{Status: StatusLaunch, Msg: err.Error()}
		}
		if perr := httpProblem(code, body); perr != nil {
			if errors.Is(perr, ErrProfilingDisabled) {
				return nil, &NodeError{Status: StatusDenied, Msg: "profiling is disabled on the Ray head", Fix: ProfilingFix}
			}
			d.Failures = append(d.Failures, rayFailure(pid, perr.Error()))
			continue
		}
		res, err := stackdump.Parse(bytes.NewReader(body), fmt.Sprintf("ray %s pid %d", t.Name, pid))
		if err != nil || len(res.Processes) == 0 {
			msg := "the traceback is not a py-spy dump"
			if err != nil {
				msg += ": " + err.Error()
			}
			d.Failures = append(d.Failures, node.Failure{PID: pid, Kind: node.FailError, Error: msg})
			continue
		}
		p := res.Processes[0]
		p.PID, p.Source = pid, record.SourceLive
		d.Processes = append(d.Processes, node.Process{Process: *p})
	}
	node.ResolveRanks(d.Processes)
	d.Node.FinishedAt = time.Now().UTC()
	return d, nil
}

// rayFailure classifies a failed traceback: py-spy missing or not allowed
// to attach on that node.
func rayFailure(pid int, msg string) node.Failure {
	f := node.Failure{PID: pid, Kind: node.FailError, Error: msg}
	switch {
	case strings.Contains(msg, "Permission denied") || strings.Contains(msg, "Operation not permitted"):
		f.Kind = node.FailPermission
		f.Error = msg + " (py-spy on that node needs ptrace: passwordless sudo for the Ray user, or CAP_SYS_PTRACE in the container)"
	case strings.Contains(msg, "py-spy is not installed"):
		f.Error = msg + " (pip install py-spy on that node)"
	}
	return f
}
