package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/bringup-tool/bringup/cluster/node"
)

// SSH reaches hosts with `ssh -o BatchMode=yes`: no prompt ever, so a host
// that wants a password fails at once instead of hanging. The binary is
// streamed over the same connection when the host lacks it.
type SSH struct {
	Hosts    []Target
	Delivery *Delivery
	// Config is an ssh_config file (ssh -F); empty: the user's own.
	Config string
	// ConnectTimeout in seconds (default 5).
	ConnectTimeout int
}

// Kind implements Backend.
func (s *SSH) Kind() string { return "ssh" }

// Discover implements Backend: the hosts as given.
func (s *SSH) Discover(context.Context) ([]Target, error) {
	if len(s.Hosts) == 0 {
		return nil, fmt.Errorf("no host given")
	}
	return s.Hosts, nil
}

// ParseHost reads one [user@]host[:port] ("[::1]:2222" for IPv6).
func ParseHost(spec string) (Target, error) {
	t := Target{Name: spec, NodeRank: -1}
	h := spec
	if i := strings.LastIndexByte(h, '@'); i >= 0 {
		t.User, h = h[:i], h[i+1:]
		if !validUser(t.User) {
			return t, fmt.Errorf("%q: %q is not a user name", spec, t.User)
		}
	}
	switch {
	case strings.HasPrefix(h, "["):
		j := strings.IndexByte(h, ']')
		if j < 0 {
			return t, fmt.Errorf("%q: unclosed [", spec)
		}
		rest := h[j+1:]
		h = h[1:j]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return t, fmt.Errorf("%q: junk after ]", spec)
			}
			t.Port = rest[1:]
		}
	case strings.Count(h, ":") == 1:
		i := strings.IndexByte(h, ':')
		h, t.Port = h[:i], h[i+1:]
	}
	if t.Port != "" {
		if n, err := strconv.Atoi(t.Port); err != nil || n < 1 || n > 65535 {
			return t, fmt.Errorf("%q: port %q is not a number from 1 to 65535", spec, t.Port)
		}
	}
	if !validName(h) {
		return t, fmt.Errorf("%q is not a host name (letters, digits, '-', '.', ':' and '_'; not starting with '-')", spec)
	}
	t.Host = h
	return t, nil
}

func validUser(u string) bool {
	if u == "" || u[0] == '-' {
		return false
	}
	for _, c := range u {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// ParseHosts reads a comma-separated list of hosts.
func ParseHosts(list string) ([]Target, error) {
	var out []Target
	seen := map[string]bool{}
	for _, part := range strings.Split(list, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		t, err := ParseHost(part)
		if err != nil {
			return nil, err
		}
		if !seen[part] {
			seen[part] = true
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no host in %q", list)
	}
	return out, nil
}

// ParseHostfile reads a hostfile: one host per line, DeepSpeed's and
// Open MPI's "host slots=N" too; '#' starts a comment. Errors name the
// line.
func ParseHostfile(r io.Reader, name string) ([]Target, error) {
	var out []Target
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		t, err := ParseHost(f[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, ln, err)
		}
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("%s:%d: %q is not key=value (e.g. slots=8)", name, ln, kv)
			}
			switch k {
			case "slots", "max_slots", "max-slots":
				if n, err := strconv.Atoi(v); err != nil || n < 0 {
					return nil, fmt.Errorf("%s:%d: %s=%q is not a count", name, ln, k, v)
				}
				if k == "slots" {
					t.About = "slots=" + v
				}
			default:
				return nil, fmt.Errorf("%s:%d: unknown hostfile key %q (known: slots, max_slots)", name, ln, k)
			}
		}
		if seen[f[0]] {
			return nil, fmt.Errorf("%s:%d: host %s listed twice", name, ln, f[0])
		}
		seen[f[0]] = true
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no host in the file", name)
	}
	return out, nil
}

// ReadHostfile is ParseHostfile of a file.
func ReadHostfile(path string) ([]Target, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseHostfile(f, path)
}

func (s *SSH) argv(t Target) ([]string, error) {
	remote, err := s.Delivery.remoteArgv(true, s.Delivery.collector("--node-name", t.Name))
	if err != nil {
		return nil, err
	}
	ct := s.ConnectTimeout
	if ct <= 0 {
		ct = 5
	}
	argv := []string{"ssh", "-o", "BatchMode=yes", "-o", fmt.Sprintf("ConnectTimeout=%d", ct)}
	if s.Config != "" {
		argv = append(argv, "-F", s.Config)
	}
	if t.Port != "" {
		argv = append(argv, "-p", t.Port)
	}
	if t.User != "" {
		argv = append(argv, "-l", t.User)
	}
	return append(argv, "--", t.Host, shellJoin(remote)), nil
}

// Collect implements Backend.
func (s *SSH) Collect(ctx context.Context, t Target) (*node.Doc, error) {
	argv, err := s.argv(t)
	if err != nil {
		return nil, &NodeError{Status: StatusLaunch, Msg: err.Error()}
	}
	r := run(ctx, argv, nil, s.Delivery.Self)
	return outcome(r, t.Name, func(r ran) *NodeError { return classifySSH(r, t) })
}

// classifySSH names ssh's own failures (exit 255).
func classifySSH(r ran, t Target) *NodeError {
	e := string(r.stderr)
	tail := lastLines(r.stderr, 2)
	if r.exit == exitMissing && strings.Contains(e, markerMissing) {
		return &NodeError{Status: StatusLaunch, Msg: "bringup is not at the same path on " + t.Name,
			Fix: "install it there, or let --copy-binary=auto stream it over ssh"}
	}
	if r.exit != 255 {
		return nil
	}
	switch {
	case strings.Contains(e, "Permission denied"):
		return &NodeError{Status: StatusDenied, Msg: "ssh " + t.Name + ": " + tail,
			Fix: "BatchMode allows no password prompt: install your key on the host (ssh-copy-id " + t.Host + ") or load it into ssh-agent"}
	case strings.Contains(e, "Host key verification failed"):
		return &NodeError{Status: StatusLaunch, Msg: "ssh " + t.Name + ": " + tail,
			Fix: "the host key of " + t.Host + " is not in known_hosts: ssh to it once interactively and check the fingerprint"}
	case strings.Contains(e, "Could not resolve hostname"):
		return &NodeError{Status: StatusLaunch, Msg: tail, Fix: "check the host name (or add it to ~/.ssh/config)"}
	case strings.Contains(e, "Connection refused"):
		return &NodeError{Status: StatusLaunch, Msg: tail, Fix: "no sshd listens there: check the host and port"}
	case strings.Contains(e, "timed out") || strings.Contains(e, "No route to host"):
		return &NodeError{Status: StatusLaunch, Msg: tail, Fix: "the host is unreachable from here: check the address and the network"}
	}
	return &NodeError{Status: StatusLaunch, Msg: "ssh " + t.Name + " exited 255: " + tail}
}
