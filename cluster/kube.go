package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/bringup-tool/bringup/cluster/node"
)

// Kube reaches the pods of a label selector with kubectl: the pods from
// `kubectl get pods -l SEL -o json`, the collector through `kubectl exec
// -i`, the binary streamed over that exec when the container lacks it
// (kubectl cp would need tar in the image).
type Kube struct {
	Selector, Namespace, Container string
	Delivery                       *Delivery
}

// Kind implements Backend.
func (k *Kube) Kind() string { return "kube" }

// Labels that give a pod's index in its group.
const (
	labelLWSWorker = "leaderworkerset.sigs.k8s.io/worker-index"
	labelLWSGroup  = "leaderworkerset.sigs.k8s.io/group-index"
	labelPodIndex  = "apps.kubernetes.io/pod-index"
	labelJobIndex  = "batch.kubernetes.io/job-completion-index"
	annoDefaultCtr = "kubectl.kubernetes.io/default-container"
)

func (k *Kube) nsArgs() []string {
	if k.Namespace != "" {
		return []string{"-n", k.Namespace}
	}
	return nil
}

// Discover implements Backend.
func (k *Kube) Discover(ctx context.Context) ([]Target, error) {
	args := append([]string{"get", "pods", "-l", k.Selector, "-o", "json"}, k.nsArgs()...)
	out, err := query(ctx, nil, "kubectl is not on PATH: --kube needs it, configured for the cluster", "kubectl", args...)
	if err != nil {
		return nil, err
	}
	targets, err := ParsePods(out, k.Container)
	if err != nil {
		return nil, fmt.Errorf("kubectl get pods -l %s: %v", k.Selector, err)
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("no pod matches -l %s%s", k.Selector, nsWords(k.Namespace))
	}
	return targets, nil
}

func nsWords(ns string) string {
	if ns == "" {
		return " in the current namespace (-n NAMESPACE for another)"
	}
	return " in namespace " + ns
}

type podList struct {
	Kind  string `json:"kind"`
	Items []struct {
		Metadata struct {
			Name        string            `json:"name"`
			Namespace   string            `json:"namespace"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			NodeName   string `json:"nodeName"`
			Containers []struct {
				Name string `json:"name"`
			} `json:"containers"`
		} `json:"spec"`
		Status struct {
			Phase             string `json:"phase"`
			ContainerStatuses []struct {
				Name         string `json:"name"`
				RestartCount int    `json:"restartCount"`
			} `json:"containerStatuses"`
		} `json:"status"`
	} `json:"items"`
}

// ParsePods reads `kubectl get pods -o json`: one target per pod, the
// node rank from the LeaderWorkerSet worker index or the pod or job
// index labels. A pod that is not Running is a target that is skipped
// with its phase as the reason.
func ParsePods(data []byte, container string) ([]Target, error) {
	var pl podList
	if err := json.Unmarshal(data, &pl); err != nil {
		return nil, fmt.Errorf("not a pod list: %v", err)
	}
	if pl.Kind != "List" && pl.Kind != "PodList" {
		return nil, fmt.Errorf("not a pod list (kind %q)", pl.Kind)
	}
	var out []Target
	for _, it := range pl.Items {
		m := it.Metadata
		if !validName(m.Name) || (m.Namespace != "" && !validName(m.Namespace)) {
			return nil, fmt.Errorf("pod name %q is not a Kubernetes name", m.Name)
		}
		t := Target{Name: m.Name, Host: m.Name, Namespace: m.Namespace, NodeRank: -1}
		for _, l := range []string{labelLWSWorker, labelPodIndex, labelJobIndex} {
			if v, ok := m.Labels[l]; ok {
				if n, err := strconv.Atoi(v); err == nil && n >= 0 {
					t.NodeRank = n
					break
				}
			}
		}
		var about []string
		if it.Spec.NodeName != "" {
			about = append(about, "node "+it.Spec.NodeName)
		}
		if g, ok := m.Labels[labelLWSGroup]; ok {
			about = append(about, "LWS group "+g)
		}
		t.Container = container
		if t.Container == "" {
			t.Container = m.Annotations[annoDefaultCtr]
		}
		if t.Container == "" && len(it.Spec.Containers) > 0 {
			t.Container = it.Spec.Containers[0].Name
		}
		if t.Container != "" && !validName(t.Container) {
			return nil, fmt.Errorf("pod %s: container name %q is not a Kubernetes name", m.Name, t.Container)
		}
		if t.Container != "" {
			about = append(about, "container "+t.Container)
		}
		t.About = strings.Join(about, ", ")
		t.Phase = it.Status.Phase
		for _, cs := range it.Status.ContainerStatuses {
			if cs.Name == t.Container && cs.RestartCount > 0 {
				t.Restarts = cs.RestartCount
			}
		}
		if it.Status.Phase != "Running" {
			t.Skip = "pod is " + orWord(it.Status.Phase, "in no phase") + ", not Running"
		}
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].NodeRank != out[j].NodeRank {
			return out[i].NodeRank < out[j].NodeRank
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func orWord(s, w string) string {
	if s == "" {
		return w
	}
	return s
}

// Collect implements Backend.
func (k *Kube) Collect(ctx context.Context, t Target) (*node.Doc, error) {
	remote, err := k.Delivery.remoteArgv(true, k.Delivery.collector("--node-name", t.Name))
	if err != nil {
		return nil, &NodeError{Status: StatusLaunch, Msg: err.Error()}
	}
	argv := []string{"kubectl", "exec", "-i", t.Host}
	if t.Namespace != "" {
		argv = append(argv, "-n", t.Namespace)
	} else {
		argv = append(argv, k.nsArgs()...)
	}
	if t.Container != "" {
		argv = append(argv, "-c", t.Container)
	}
	argv = append(append(argv, "--"), remote...)
	r := run(ctx, argv, nil, k.Delivery.Self)
	return outcome(r, t.Name, func(r ran) *NodeError { return classifyKube(r, t) })
}

// classifyKube names kubectl exec's failures.
func classifyKube(r ran, t Target) *NodeError {
	e := string(r.stderr)
	tail := lastLines(r.stderr, 2)
	switch {
	case strings.Contains(e, "Forbidden") || strings.Contains(e, "forbidden"):
	case strings.Contains(e, "executable file not found") || strings.Contains(e, "no such file or directory") && strings.Contains(e, "\"sh\""):
		return &NodeError{Status: StatusLaunch, Msg: "container " + t.Container + " of " + t.Name + " has no sh: " + tail,
			Fix: "a distroless image: attach a debug container that shares its processes, kubectl debug " + t.Name + " -it --image=<an image with bringup> --target=" + t.Container + " --profile=sysadmin, and run bringup stacks --local there"}
	case r.exit == exitMissing && strings.Contains(e, markerMissing):
		return &NodeError{Status: StatusLaunch, Msg: "bringup is not in the container " + t.Name, Fix: "let --copy-binary=auto stream it in"}
	}
	return kubectlFailure(r, "the create verb on pods/exec")
}

// kubectlFailure names what any kubectl call can meet; rbac is the
// permission the call needs.
func kubectlFailure(r ran, rbac string) *NodeError {
	e := string(r.stderr)
	tail := lastLines(r.stderr, 2)
	switch {
	case strings.Contains(e, "Forbidden") || strings.Contains(e, "forbidden"):
		return &NodeError{Status: StatusDenied, Msg: tail, Fix: "your Kubernetes account needs " + rbac + " in the pod's namespace (RBAC)"}
	case strings.Contains(e, "container not found") || strings.Contains(e, "is not valid for pod"):
		return &NodeError{Status: StatusLaunch, Msg: tail, Fix: "name the container with -c CONTAINER"}
	case strings.Contains(e, "NotFound") || strings.Contains(e, "not found"):
		return &NodeError{Status: StatusLaunch, Msg: tail}
	case strings.Contains(e, "Unable to connect to the server"):
		return &NodeError{Status: StatusLaunch, Msg: tail, Fix: "kubectl cannot reach the API server: check the context (kubectl config current-context)"}
	}
	return nil
}
