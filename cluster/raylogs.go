package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RayLogs reads a Ray cluster's log files through its dashboard: the
// alive nodes from the state API, each node's log files from GET
// /api/v0/logs?node_id=N, and each file from GET
// /api/v0/logs/file?node_id=N&filename=F&lines=-1, which the head
// forwards to that node's agent. Read are the raylet's logs, the job
// drivers' and the workers' stdout and stderr (where an actor's or a
// task's traceback lands); the profiling endpoints are not needed.
type RayLogs struct {
	Ray *Ray
}

// Kind implements LogBackend.
func (l *RayLogs) Kind() string { return "ray" }

// Discover implements LogBackend.
func (l *RayLogs) Discover(ctx context.Context) ([]Target, error) {
	var nodes []RayNode
	if err := l.Ray.stateList(ctx, "/api/v0/nodes", &nodes); err != nil {
		return nil, err
	}
	targets := RayTargets(nodes, nil)
	if len(targets) == 0 {
		return nil, errors.New("the state API lists no alive node")
	}
	return targets, nil
}

// ParseRayLogList reads the answer of /api/v0/logs: {"result": true,
// "data": {"result": {"worker_out": [names…], "raylet": […], …}}}.
func ParseRayLogList(body []byte) (map[string][]string, error) {
	var env struct {
		Result bool   `json:"result"`
		Msg    string `json:"msg"`
		Data   struct {
			Result map[string][]string `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("not a Ray log list: %v", err)
	}
	if !env.Result {
		return nil, errors.New(orWord(env.Msg, "the log API reported a failure"))
	}
	return env.Data.Result, nil
}

// RayLogFiles picks the logs to read from a node's list, most telling
// first: the raylet's, the job drivers', the workers' stderr, then their
// stdout. Names that are not plain relative paths are left out.
func RayLogFiles(cats map[string][]string) []string {
	var raylet, drivers, errs, outs []string
	for cat, names := range cats {
		for _, n := range names {
			if !rayLogName(n) {
				continue
			}
			base := path.Base(n)
			switch {
			case cat == "raylet" && (base == "raylet.out" || base == "raylet.err"):
				raylet = append(raylet, n)
			case strings.HasPrefix(base, "job-driver-") && strings.HasSuffix(base, ".log"):
				drivers = append(drivers, n)
			case cat == "worker_err":
				errs = append(errs, n)
			case cat == "worker_out":
				outs = append(outs, n)
			}
		}
	}
	var out []string
	for _, g := range [][]string{raylet, drivers, errs, outs} {
		slices.Sort(g)
		out = append(out, g...)
	}
	return out
}

// rayLogName: a name relative to the log directory, without "..", of
// printable characters.
func rayLogName(n string) bool {
	if n == "" || len(n) > 512 || strings.HasPrefix(n, "/") || slices.Contains(strings.Split(n, "/"), "..") {
		return false
	}
	for _, c := range n {
		if c < ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// Logs implements LogBackend.
func (l *RayLogs) Logs(ctx context.Context, t Target, f *Fetch, _ *NodeResult) error {
	timeout := rpcTimeout(ctx)
	code, body, err := l.Ray.get(ctx, "/api/v0/logs", url.Values{"node_id": {t.Host}, "timeout": {timeout}})
	if err == nil {
		err = httpProblem(code, body)
	}
	var cats map[string][]string
	if err == nil {
		cats, err = ParseRayLogList(body)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &NodeError{Status: StatusLaunch, Msg: "listing the node's logs: " + err.Error()}
	}
	files := RayLogFiles(cats)
	if len(files) == 0 {
		f.Note("the node lists no raylet, driver or worker log")
	}
	failed := 0
	for _, name := range files {
		if err := l.fetch(ctx, t, f, name, timeout); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			failed++
			f.Note("%s: %v", name, err)
		}
	}
	if failed > 0 && failed == len(files) {
		return &NodeError{Status: StatusError, Msg: fmt.Sprintf("none of the node's %d log(s) could be read (the notes say why)", failed)}
	}
	return nil
}

// rpcTimeout is the time left to the node, in whole seconds, for the
// dashboard's own RPC to the node's agent.
func rpcTimeout(ctx context.Context) string {
	if d, ok := ctx.Deadline(); ok {
		if s := int(time.Until(d).Seconds()); s >= 1 {
			return strconv.Itoa(s)
		}
		return "1"
	}
	return "30"
}

func (l *RayLogs) fetch(ctx context.Context, t Target, f *Fetch, name, timeout string) error {
	q := url.Values{"node_id": {t.Host}, "filename": {name}, "lines": {"-1"}, "timeout": {timeout}}
	resp, err := l.Ray.request(ctx, "/api/v0/logs/file", q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return httpProblem(resp.StatusCode, body)
	}
	w, err := f.Open(strings.ReplaceAll(name, "/", "_"), name, -1)
	if err != nil || w == nil {
		return err
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		w.Abort()
		return err
	}
	return w.Close()
}
