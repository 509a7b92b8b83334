package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A boot launched with `srun …` (bringup watch -- srun …) runs its ranks
// in a Slurm job whose id the srun process knows but does not print. The
// job is found, in this order, from
//
//  1. the srun's command line: --jobid=J (a step in a job that exists);
//  2. SLURM_JOB_ID in the srun's environment, else in any process of the
//     boot's: srun inside salloc or an sbatch script runs its step in the
//     enclosing job;
//  3. otherwise srun made an allocation of its own: the job Slurm records
//     with AllocNode:Sid = this host and the srun's session, that is
//     running and did not exist when the watch began (SessionJobs).
//
// Nothing is guessed: no job, or several, is an error that says to give
// the job id.

// JobSource is how FindSrunJob found the job, for the watch's messages.
type JobSource string

const (
	FromArgv    JobSource = "the srun command line (--jobid)"
	FromEnv     JobSource = "SLURM_JOB_ID in the boot's environment"
	FromSession JobSource = "the job Slurm allocated for the boot's srun (scontrol: AllocNode:Sid)"
)

// SessionJobs lists the ids of the jobs Slurm records as allocated from
// this host and session: the ones that existed before a boot are not the
// boot's. An error when scontrol cannot run.
func SessionJobs(ctx context.Context, env []string) (map[string]bool, error) {
	jobs, err := allocJobs(ctx, env)
	if err != nil {
		return nil, err
	}
	host, sid := thisHost(), os.Getpid()
	if s, err := sessionOf(os.Getpid()); err == nil {
		sid = s
	}
	out := map[string]bool{}
	for _, j := range jobs {
		if j.sessionMatches(host, sid) {
			out[j.ID] = true
		}
	}
	return out, nil
}

// FindSrunJob finds the job of the boot whose processes are pids (see
// above); before is SessionJobs at the start of the watch.
func FindSrunJob(ctx context.Context, env []string, pids []int, before map[string]bool) (string, JobSource, error) {
	sruns, others := splitSruns(pids)
	for _, p := range sruns {
		if j := jobidArg(cmdline(p)); j != "" {
			return j, FromArgv, nil
		}
	}
	for _, p := range append(append([]int{}, sruns...), others...) {
		if j := environValue(p, "SLURM_JOB_ID"); j != "" {
			if job, _, err := ParseJob(j); err == nil {
				return job, FromEnv, nil
			}
		}
	}
	if len(sruns) == 0 {
		return "", "", fmt.Errorf("no srun among the boot's %d process(es), and none has SLURM_JOB_ID: give the job with --srun JOBID", len(pids))
	}
	jobs, err := allocJobs(ctx, env)
	if err != nil {
		return "", "", err
	}
	host := thisHost()
	var found, sids, running []string
	for _, p := range sruns {
		sid, err := sessionOf(p)
		if err != nil {
			continue
		}
		if s := fmt.Sprintf("%s:%d", host, sid); !slices.Contains(sids, s) {
			sids = append(sids, s)
		}
		for _, j := range jobs {
			if j.State == "RUNNING" && !before[j.ID] && j.sessionMatches(host, sid) {
				found = append(found, j.ID)
			}
		}
	}
	for _, j := range jobs {
		if j.State == "RUNNING" {
			running = append(running, fmt.Sprintf("%s from %s:%d", j.ID, j.AllocNode, j.Sid))
		}
	}
	sort.Strings(found)
	found = dedupe(found)
	switch len(found) {
	case 1:
		return found[0], FromSession, nil
	case 0:
		if len(running) == 0 {
			running = []string{"none"}
		}
		return "", "", fmt.Errorf("no running Slurm job was allocated for the boot's srun (pid %d, AllocNode:Sid %s); running jobs: %s: give the job with --srun JOBID", sruns[0], strings.Join(sids, " "), strings.Join(running, ", "))
	}
	return "", "", fmt.Errorf("the boot's srun allocated several running jobs (%s): give the one to watch with --srun JOBID", strings.Join(found, ", "))
}

func dedupe(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// AllocJob is one job of `scontrol show job -o`: its id, state and where
// it was allocated from.
type AllocJob struct {
	ID, State, AllocNode string
	Sid                  int
}

// sessionMatches: the job was allocated from this host in session sid.
// In a container whose session leader is outside its pid namespace every
// process's session reads 0, and Slurm records 0 too: then the session
// says only "this container", and FindSrunJob's other conditions (running,
// not there when the watch began, the only one) decide.
func (j AllocJob) sessionMatches(host string, sid int) bool {
	return j.Sid == sid && (strings.EqualFold(shortName(j.AllocNode), host) || isThisMachine(j.AllocNode))
}

// isThisMachine: name resolves to an address of this machine (Slurm may
// record the allocating host as "localhost" or by an address).
func isThisMachine(name string) bool {
	addrs, err := net.LookupHost(name)
	if err != nil {
		return false
	}
	local, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		ip := net.ParseIP(a)
		if ip == nil {
			continue
		}
		if ip.IsLoopback() {
			return true
		}
		for _, l := range local {
			if n, ok := l.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}

var (
	jobIDRE     = regexp.MustCompile(`(?:^|\s)JobId=([0-9]+)(?:\s|$)`)
	allocNodeRE = regexp.MustCompile(`(?:^|\s)AllocNode:Sid=([^\s:]+):([0-9]+)(?:\s|$)`)
)

// ParseAllocJobs reads `scontrol show job -o`: one job per line; a line
// without JobId, JobState or AllocNode:Sid is passed over (a component of
// a heterogeneous job is its own line with its own id).
func ParseAllocJobs(out []byte) []AllocJob {
	var jobs []AllocJob
	for _, line := range strings.Split(string(out), "\n") {
		id := jobIDRE.FindStringSubmatch(line)
		st := stateRE.FindStringSubmatch(line)
		an := allocNodeRE.FindStringSubmatch(line)
		if id == nil || st == nil || an == nil {
			continue
		}
		sid, err := strconv.Atoi(an[2])
		if err != nil {
			continue
		}
		jobs = append(jobs, AllocJob{ID: id[1], State: st[1], AllocNode: an[1], Sid: sid})
	}
	return jobs
}

func allocJobs(ctx context.Context, env []string) ([]AllocJob, error) {
	out, err := query(ctx, env, "scontrol is not on PATH: watch --srun needs Slurm's client commands on this machine", "scontrol", "show", "job", "-o")
	if err != nil {
		return nil, err
	}
	if bytes.Contains(out, []byte("No jobs in the system")) {
		return nil, nil
	}
	return ParseAllocJobs(out), nil
}

func thisHost() string {
	h, _ := os.Hostname()
	return shortName(h)
}

func shortName(h string) string {
	if i := strings.IndexByte(h, '.'); i > 0 {
		return h[:i]
	}
	return h
}

// splitSruns puts the boot's srun processes first (by their executable's
// name), the others after.
func splitSruns(pids []int) (sruns, others []int) {
	for _, p := range pids {
		argv := cmdline(p)
		if len(argv) > 0 && filepath.Base(argv[0]) == "srun" {
			sruns = append(sruns, p)
		} else {
			others = append(others, p)
		}
	}
	return sruns, others
}

func cmdline(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// jobidArg is the job of an srun command line's --jobid (--jobid=J,
// --jobid J), "" when it has none or the value is not a job id. srun's
// own options end at its first non-option word, the command.
func jobidArg(argv []string) string {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		var v string
		switch {
		case a == "--":
			return ""
		case strings.HasPrefix(a, "--jobid="):
			v = strings.TrimPrefix(a, "--jobid=")
		case a == "--jobid" && i+1 < len(argv):
			v = argv[i+1]
		case !strings.HasPrefix(a, "-"):
			if i > 1 && srunTakesValue(argv[i-1]) {
				continue
			}
			return ""
		default:
			continue
		}
		if job, _, err := ParseJob(v); err == nil {
			return job
		}
		return ""
	}
	return ""
}

// srunTakesValue: srun's short options that take their value as the next
// word (-N 2, -n 4, -w node …), so the value is not the command.
func srunTakesValue(opt string) bool {
	if strings.HasPrefix(opt, "--") {
		return !strings.Contains(opt, "=") && opt != "--overlap" && opt != "--exclusive" && opt != "--pty" &&
			opt != "--unbuffered" && opt != "--label" && opt != "--verbose" && opt != "--quiet"
	}
	return len(opt) == 2 && strings.ContainsRune("ABcCdDeiJLmnNopqStTwWx", rune(opt[1]))
}

func environValue(pid int, key string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return ""
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte("=")); ok && string(k) == key {
			return string(v)
		}
	}
	return ""
}

// sessionOf is the session id of pid (field 6 of /proc/PID/stat).
func sessionOf(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 {
		return 0, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	return strconv.Atoi(f[3])
}
