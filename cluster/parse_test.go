package cluster

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseHost(t *testing.T) {
	for spec, want := range map[string]Target{
		"bt1":               {Host: "bt1"},
		"alice@node-7:2222": {Host: "node-7", User: "alice", Port: "2222"},
		"10.0.0.3":          {Host: "10.0.0.3"},
		"[fe80::1]:22":      {Host: "fe80::1", Port: "22"},
		"fe80::1":           {Host: "fe80::1"},
	} {
		got, err := ParseHost(spec)
		if err != nil || got.Host != want.Host || got.User != want.User || got.Port != want.Port || got.Name != spec {
			t.Errorf("%s: %+v %v", spec, got, err)
		}
	}
	for _, bad := range []string{"", "-oProxyCommand=x", "a b", "h:0", "h:99999", "h;rm", "-l@h", "[::1", "[::1]x", "h\n"} {
		if _, err := ParseHost(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseHostfile(t *testing.T) {
	in := "# DeepSpeed hostfile\nworker-1 slots=8\n\nworker-2 slots=8 # the second\n  10.0.0.3\n"
	ts, err := ParseHostfile(strings.NewReader(in), "hostfile")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, t := range ts {
		names = append(names, t.Name+"|"+t.About)
	}
	if !slices.Equal(names, []string{"worker-1|slots=8", "worker-2|slots=8", "10.0.0.3|"}) {
		t.Errorf("got %v", names)
	}
	for in, want := range map[string]string{
		"a slots=x\n":        "hostfile:1: slots=\"x\"",
		"a\nb cpus=2\n":      "hostfile:2: unknown hostfile key",
		"a\na\n":             "hostfile:2: host a listed twice",
		"# only comments\n":  "no host",
		"a slots\n":          "hostfile:1: \"slots\" is not key=value",
		"-oProxyCommand=x\n": "hostfile:1:",
	} {
		_, err := ParseHostfile(strings.NewReader(in), "hostfile")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func FuzzParseHostfile(f *testing.F) {
	f.Add("worker-1 slots=8\nworker-2 slots=8\n")
	f.Add("# c\n a@b:22 max_slots=2\n[::1]:2\n")
	f.Fuzz(func(t *testing.T, in string) {
		ts, err := ParseHostfile(strings.NewReader(in), "f")
		if err != nil {
			return
		}
		for _, h := range ts {
			if h.Host == "" || strings.HasPrefix(h.Host, "-") || strings.ContainsAny(h.Host+h.User+h.Port, " \t\n;'\"$`\\") {
				t.Fatalf("accepted host %+v", h)
			}
		}
	})
}

func TestParseJob(t *testing.T) {
	for in, want := range map[string][2]string{"4242": {"4242", ""}, "4242.0": {"4242", "0"}, "17_3": {"17_3", ""}, " 9.batch ": {"9", "batch"}} {
		j, s, err := ParseJob(in)
		if err != nil || j != want[0] || s != want[1] {
			t.Errorf("%q: %q %q %v", in, j, s, err)
		}
	}
	for _, bad := range []string{"", "abc", "12.", "-1", "12;ls", "12 13"} {
		if _, _, err := ParseJob(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseScontrolJob(t *testing.T) {
	// A real `scontrol show job -o` line of the test cluster (Slurm 22.05).
	b, err := os.ReadFile(filepath.Join("testdata", "slurm", "show-job.txt"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := ParseScontrolJob(b)
	if err != nil || info.State != "RUNNING" || !slices.Equal(info.NodeLists, []string{"bt[1-2]"}) {
		t.Errorf("%+v %v", info, err)
	}
	// A heterogeneous job: one line per component.
	het := "JobId=5 HetJobId=5 HetJobOffset=0 JobState=RUNNING NodeList=a[1-2]\nJobId=6 HetJobId=5 HetJobOffset=1 JobState=RUNNING NodeList=b1\n"
	info, err = ParseScontrolJob([]byte(het))
	if err != nil || !slices.Equal(info.NodeLists, []string{"a[1-2]", "b1"}) {
		t.Errorf("het: %+v %v", info, err)
	}
	info, err = ParseScontrolJob([]byte("JobId=7 JobState=PENDING NodeList=(null)\n"))
	if err != nil || info.State != "PENDING" || len(info.NodeLists) != 0 {
		t.Errorf("pending: %+v %v", info, err)
	}
	if _, err := ParseScontrolJob([]byte("slurm_load_jobs error: Invalid job id specified\n")); err == nil {
		t.Error("an error text was taken for a job")
	}
}

func FuzzParseScontrolJob(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "slurm", "show-job.txt")); err == nil {
		f.Add(b)
	}
	f.Add([]byte("JobId=1 JobState=RUNNING NodeList=x\nJobId=2 JobState=FAILED\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := ParseScontrolJob(b)
		if err == nil && info.State == "" {
			t.Fatal("a job without a state")
		}
	})
}

// podJSON is the shape `kubectl get pods -o json` prints, cut to what is
// read.
const podJSON = `{"apiVersion":"v1","kind":"List","items":[
{"metadata":{"name":"vllm-0-1","namespace":"serving","labels":{"leaderworkerset.sigs.k8s.io/worker-index":"1","leaderworkerset.sigs.k8s.io/group-index":"0"},"annotations":{"kubectl.kubernetes.io/default-container":"vllm"}},"spec":{"nodeName":"gpu-b","containers":[{"name":"sidecar"},{"name":"vllm"}]},"status":{"phase":"Running"}},
{"metadata":{"name":"vllm-0","namespace":"serving","labels":{"leaderworkerset.sigs.k8s.io/worker-index":"0"}},"spec":{"nodeName":"gpu-a","containers":[{"name":"vllm"}]},"status":{"phase":"Running"}},
{"metadata":{"name":"job-x","labels":{"batch.kubernetes.io/job-completion-index":"3"}},"spec":{"containers":[{"name":"main"}]},"status":{"phase":"Pending"}}]}`

func TestParsePods(t *testing.T) {
	ts, err := ParsePods([]byte(podJSON), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 {
		t.Fatalf("%d targets", len(ts))
	}
	want := []struct {
		name, ctr, skip string
		rank            int
	}{{"vllm-0", "vllm", "", 0}, {"vllm-0-1", "vllm", "", 1}, {"job-x", "main", "pod is Pending, not Running", 3}}
	for i, w := range want {
		g := ts[i]
		if g.Name != w.name || g.Container != w.ctr || g.Skip != w.skip || g.NodeRank != w.rank {
			t.Errorf("%d: %+v, want %+v", i, g, w)
		}
	}
	if !strings.Contains(ts[1].About, "node gpu-b") || !strings.Contains(ts[1].About, "LWS group 0") || ts[0].Namespace != "serving" {
		t.Errorf("about %q ns %q", ts[1].About, ts[0].Namespace)
	}
	if ts, _ := ParsePods([]byte(podJSON), "sidecar"); ts[0].Container != "sidecar" {
		t.Error("-c ignored")
	}
	for _, bad := range []string{`{"kind":"Pod"}`, `[]`, `{"kind":"List","items":[{"metadata":{"name":"-x"}}]}`} {
		if _, err := ParsePods([]byte(bad), ""); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func FuzzParsePods(f *testing.F) {
	f.Add([]byte(podJSON))
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := ParsePods(b, "")
		if err != nil {
			return
		}
		for _, p := range ts {
			if !validName(p.Host) || (p.Container != "" && !validName(p.Container)) {
				t.Fatalf("accepted %+v", p)
			}
		}
	})
}

// rayServer serves the dashboard answers recorded from a real two-node
// Ray 2.60 cluster of the cluster test (testdata/ray).
func rayServer(t *testing.T, profiling bool) *httptest.Server {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "ray", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/profiling_enabled", func(w http.ResponseWriter, r *http.Request) {
		if profiling {
			w.Write(read("profiling_enabled.json"))
			return
		}
		w.Write([]byte(`{"result": true, "msg": "", "data": {"profilingEnabled": false}}`))
	})
	mux.HandleFunc("/api/v0/nodes", func(w http.ResponseWriter, r *http.Request) { w.Write(read("nodes.json")) })
	mux.HandleFunc("/api/v0/workers", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("exclude_driver") != "false" {
			t.Error("drivers not asked for")
		}
		w.Write(read("workers.json"))
	})
	mux.HandleFunc("/worker/traceback", func(w http.ResponseWriter, r *http.Request) {
		if !profiling {
			// Ray's answer with profiling off (reporter_head.py).
			http.Error(w, "Profiling is disabled by default for security reasons. To enable profiling, set the environment variable RAY_DASHBOARD_ENABLE_PROFILING=1 on the Ray head node.", http.StatusForbidden)
			return
		}
		if r.URL.Query().Get("pid") == "113" {
			http.Error(w, "Failed to execute: py-spy is not installed", http.StatusInternalServerError)
			return
		}
		w.Write(read("traceback.txt"))
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func TestRay(t *testing.T) {
	s := rayServer(t, true)
	r := &Ray{Address: s.URL}
	ts, err := r.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Name != "10.77.194.1" || !slices.Equal(ts[0].PIDs, []int{411, 429}) || !slices.Equal(ts[1].PIDs, []int{113}) ||
		!strings.HasPrefix(ts[0].About, "head") {
		t.Fatalf("targets %+v", ts)
	}
	d, err := r.Collect(context.Background(), ts[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Processes) != 2 || d.Processes[0].Threads[0].Frames[0].Func != "Rank.wait_for_peers" || d.Processes[1].PID != 429 {
		t.Errorf("processes %+v", d.Processes)
	}
	d, err = r.Collect(context.Background(), ts[1])
	if err != nil || len(d.Failures) != 1 || !strings.Contains(d.Failures[0].Error, "pip install py-spy") {
		t.Errorf("py-spy missing: %+v %v", d, err)
	}
}

func TestRayProfilingDisabled(t *testing.T) {
	s := rayServer(t, false)
	r := &Ray{Address: s.URL}
	if _, err := r.Discover(context.Background()); !errors.Is(err, ErrProfilingDisabled) || !strings.Contains(err.Error(), "RAY_DASHBOARD_ENABLE_PROFILING=1") {
		t.Errorf("Discover: %v", err)
	}
	// A head too old for /api/profiling_enabled answers 403 on the
	// traceback itself.
	_, err := r.Collect(context.Background(), Target{Name: "n", Host: "id", PIDs: []int{1}})
	var ne *NodeError
	if !errors.As(err, &ne) || ne.Status != StatusDenied || !strings.Contains(ne.Fix, "RAY_DASHBOARD_ENABLE_PROFILING=1") {
		t.Errorf("Collect: %v", err)
	}
	for in, want := range map[string]string{"127.0.0.1:8265": "http://127.0.0.1:8265", "https://head:8265/": "https://head:8265"} {
		if got, err := ParseRayAddress(in); err != nil || got != want {
			t.Errorf("%s: %s %v", in, got, err)
		}
	}
	if _, err := ParseRayAddress("ftp://x"); err == nil {
		t.Error("ftp accepted")
	}
}

func FuzzParseStateList(f *testing.F) {
	for _, n := range []string{"nodes.json", "workers.json"} {
		if b, err := os.ReadFile(filepath.Join("testdata", "ray", n)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"result": false, "msg": "Given limit 10000 exceeds the supported limit"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var nodes []RayNode
		var workers []RayWorker
		if ParseStateList(b, &nodes) != nil || ParseStateList(b, &workers) != nil {
			return
		}
		for _, tg := range RayTargets(nodes, workers) {
			if tg.Host == "" {
				t.Fatalf("a target without a node id: %+v", tg)
			}
			for _, pid := range tg.PIDs {
				if pid <= 0 {
					t.Fatalf("pid %d", pid)
				}
			}
		}
	})
}
