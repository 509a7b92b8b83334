package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// KubeLogs reads the container log of every pod of a label selector with
// `kubectl logs POD -c CTR --prefix`, and for a container
// that restarted also the log of the one before (--previous), where a
// crash that made it restart is. A pod that has ended (Succeeded,
// Failed) still has its logs; a Pending one has none yet.
type KubeLogs struct {
	Kube *Kube
}

// Kind implements LogBackend.
func (k *KubeLogs) Kind() string { return "kube" }

// Discover implements LogBackend: the pods of `kubectl get pods -l SEL`.
func (k *KubeLogs) Discover(ctx context.Context) ([]Target, error) {
	targets, err := k.Kube.Discover(ctx)
	if err != nil {
		return nil, err
	}
	for i := range targets {
		switch targets[i].Phase {
		case "Running", "Succeeded", "Failed":
			targets[i].Skip = ""
		case "Pending":
			targets[i].Skip = "pod is Pending: no container of it has run, so there is no log yet"
		}
	}
	return targets, nil
}

// Logs implements LogBackend.
func (k *KubeLogs) Logs(ctx context.Context, t Target, f *Fetch, _ *NodeResult) error {
	if t.Restarts > 0 {
		if err := k.fetch(ctx, t, f, true); err != nil {
			return err
		}
	}
	return k.fetch(ctx, t, f, false)
}

// kubectlLogsArgv is the kubectl logs line for a pod.
func (k *KubeLogs) kubectlLogsArgv(t Target, previous bool) []string {
	argv := []string{"kubectl", "logs", t.Host}
	if t.Namespace != "" {
		argv = append(argv, "-n", t.Namespace)
	} else {
		argv = append(argv, k.Kube.nsArgs()...)
	}
	if t.Container != "" {
		argv = append(argv, "-c", t.Container)
	}
	// Not --timestamps: the engine-log parser joins a traceback's lines
	// only where they repeat the same prefix bytes, and kubectl's stamp
	// differs on every line, so no traceback would be found.
	argv = append(argv, "--prefix")
	if previous {
		argv = append(argv, "--previous")
	}
	return argv
}

func (k *KubeLogs) fetch(ctx context.Context, t Target, f *Fetch, previous bool) error {
	argv := k.kubectlLogsArgv(t, previous)
	name, source := orWord(t.Container, "log")+".log", "kubectl logs "+t.Name
	if t.Container != "" {
		source += " -c " + t.Container
	}
	if previous {
		name = orWord(t.Container, "log") + ".previous.log"
		source += fmt.Sprintf(" --previous (before restart %d)", t.Restarts)
	}
	w, err := f.Open(name, source, -1)
	if err != nil || w == nil {
		return err
	}
	r := launch(ctx, argv, nil, false, func(out io.Reader, _ io.WriteCloser, _ func()) error {
		_, err := io.Copy(w, out)
		return err
	})
	switch {
	case r.err != nil:
		w.Abort()
		if errors.Is(r.err, context.DeadlineExceeded) || errors.Is(r.err, context.Canceled) {
			return &NodeError{Status: StatusTimeout, Msg: lastLines(r.stderr, 2)}
		}
		return &NodeError{Status: StatusLaunch, Msg: r.err.Error()}
	case r.exit != 0:
		w.Abort()
		e := string(r.stderr)
		if previous && strings.Contains(e, "previous terminated container") {
			f.Note("%s: kubectl has no log of the container before its restart", source)
			return nil
		}
		if ne := kubectlFailure(r, "the get verb on pods/log"); ne != nil {
			return ne
		}
		return &NodeError{Status: StatusLaunch, Msg: fmt.Sprintf("kubectl logs exited %d: %s", r.exit, lastLines(r.stderr, 2))}
	}
	return w.Close()
}
