package watch

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	ossignal "os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bringup-tool/bringup/store"
)

// The guardian stops the boot when bringup dies without stopping it
// (kill -9, an OOM kill, a crash). It is bringup itself, re-executed with
// guardianArg before the boot starts: a child of bringup in a process
// group of its own (Ctrl-C and the job's signals do not reach it), holding
// the read end of a pipe whose only write end bringup holds. bringup tells
// it the boot's process group and every process of the boot it finds;
// when the pipe reads EOF without a "release" first, bringup is gone, and
// the guardian stops the group and every such process still the same
// process (and their descendants), SIGTERM then SIGKILL after the grace
// period, and marks the run lost in the store.
//
// The boot's main process also gets a parent-death signal, in case the
// guardian could not start or was killed with bringup.

const (
	guardianArg = "__bringup_watch_guardian__"
	guardianEnv = "BRINGUP_WATCH_GUARDIAN"
)

func init() {
	if len(os.Args) == 2 && os.Args[1] == guardianArg && os.Getenv(guardianEnv) == "1" {
		os.Exit(guardianMain())
	}
}

// guardMsg is one line bringup writes to the guardian.
type guardMsg struct {
	Op         string        `json:"op"` // "boot", "proc", "release"
	PID        int           `json:"pid,omitempty"`
	StartTicks uint64        `json:"start,omitempty"`
	Grace      time.Duration `json:"grace,omitempty"`
	Store      string        `json:"store,omitempty"`
	Run        int64         `json:"run,omitempty"`
	Watcher    int           `json:"watcher,omitempty"`
}

type guardian struct {
	cmd  *exec.Cmd
	fd   int // write end of the pipe, non-blocking
	dead bool
	exit chan struct{}
}

// startGuardian starts the guardian; its messages go to stderr (nil: none).
func startGuardian(stderr *os.File) (*guardian, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	r := os.NewFile(uintptr(p[0]), "guardian-r")
	cmd := exec.Command("/proc/self/exe", guardianArg)
	cmd.Env = append(os.Environ(), guardianEnv+"=1")
	cmd.ExtraFiles = []*os.File{r}
	if stderr != nil {
		cmd.Stderr = stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err := cmd.Start()
	r.Close()
	if err != nil {
		unix.Close(p[1])
		return nil, err
	}
	unix.SetNonblock(p[1], true)
	g := &guardian{cmd: cmd, fd: p[1], exit: make(chan struct{})}
	go func() { cmd.Wait(); close(g.exit) }()
	return g, nil
}

// send writes one message; a full pipe (a guardian that stopped reading)
// or a dead guardian loses it and every later one.
func (g *guardian) send(m guardMsg) bool {
	if g == nil || g.dead {
		return false
	}
	b, _ := json.Marshal(m)
	b = append(b, '\n')
	for len(b) > 0 {
		n, err := unix.Write(g.fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			g.dead = true
			return false
		}
		b = b[n:]
	}
	return true
}

// release tells the guardian the boot is stopped, and waits for it.
func (g *guardian) release() {
	if g == nil {
		return
	}
	g.send(guardMsg{Op: "release"})
	unix.Close(g.fd)
	g.dead = true
	select {
	case <-g.exit:
	case <-time.After(2 * time.Second):
		g.cmd.Process.Kill()
		<-g.exit
	}
}

func (g *guardian) pid() int {
	if g == nil || g.cmd.Process == nil {
		return 0
	}
	return g.cmd.Process.Pid
}

func guardianMain() int {
	ossignal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	os.Chdir("/")
	in := os.NewFile(3, "watch")
	var boot guardMsg
	known := map[int]uint64{}
	released := false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var m guardMsg
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch m.Op {
		case "boot":
			boot = m
			known[m.PID] = m.StartTicks
		case "proc":
			known[m.PID] = m.StartTicks
			if len(known) > 4*store.MaxProcs {
				for pid, st := range known {
					if !alive(pid, st) {
						delete(known, pid)
					}
				}
			}
		case "release":
			released = true
		}
	}
	if released || boot.PID == 0 {
		return 0
	}
	// bringup is gone and the boot was not stopped.
	bootProcs := func() []procInfo { return bootTree(procTable(), boot.PID, boot.StartTicks, known) }
	left := bootProcs()
	if len(left) == 0 {
		return 0
	}
	fmt.Fprintf(os.Stderr, "bringup watch guardian: bringup watch (pid %d) ended without stopping its boot: stopping the boot's %d process(es)\n", boot.Watcher, len(left))
	grace := boot.Grace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	stopped := stopProcs(bootProcs, grace)
	note := fmt.Sprintf("its guardian (pid %d) stopped the boot's %d process(es)", os.Getpid(), len(stopped))
	said := fmt.Sprintf("stopped %d process(es) of the boot", len(stopped))
	if still := bootProcs(); len(still) > 0 {
		note = fmt.Sprintf("its guardian (pid %d) could not stop %d process(es) of the boot", os.Getpid(), len(still))
		said = fmt.Sprintf("could not stop %d process(es) of the boot", len(still))
	}
	if boot.Store != "" && boot.Run > 0 {
		st, err := store.Open(boot.Store)
		if err == nil {
			_, err = CheckRuns(st, CheckOptions{Only: boot.Run, Note: note})
			st.Close()
		}
		if err != nil {
			said += fmt.Sprintf("; run #%d could not be marked lost (%v): the next bringup that opens the store does it", boot.Run, err)
		} else {
			said += fmt.Sprintf("; run #%d is marked lost in %s", boot.Run, boot.Store)
		}
	}
	fmt.Fprintf(os.Stderr, "bringup watch guardian: %s\n", said)
	return 0
}

// bootTree is every live process of a boot: the members of its process
// group pgid started no earlier than its main process (a pgid is reused
// only after the group is empty), the known processes still the same
// process, and all their descendants.
func bootTree(tab map[int]procInfo, pgid int, bootStart uint64, known map[int]uint64) []procInfo {
	var roots []int
	for pid, p := range tab {
		if pgid > 1 && p.PGID == pgid && p.Start >= bootStart {
			roots = append(roots, pid)
		} else if st, ok := known[pid]; ok && st == p.Start {
			roots = append(roots, pid)
		}
	}
	var out []procInfo
	self := os.Getpid()
	for _, pid := range subtree(tab, roots...) {
		if p := tab[pid]; p.State != 'Z' && p.State != 'X' && pid != self && pid > 1 {
			out = append(out, p)
		}
	}
	return out
}

// stopProcs stops what find returns: SIGTERM, SIGKILL to what is left
// after grace, again until nothing is left (processes fork while being
// stopped). It returns every process it signalled.
func stopProcs(find func() []procInfo, grace time.Duration) []procInfo {
	signalled := map[int]procInfo{}
	var order []int
	send := func(ps []procInfo, sig syscall.Signal) {
		for _, p := range ps {
			// The same process: a pid freed since and reused is left alone.
			if cur, err := readStat(p.PID); err == nil && cur.Start == p.Start {
				signal(p.PID, sig)
				if _, ok := signalled[p.PID]; !ok {
					signalled[p.PID] = p
					order = append(order, p.PID)
				}
			}
		}
	}
	send(find(), syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if len(find()) == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for round := 0; round < 40; round++ {
		left := find()
		if len(left) == 0 {
			break
		}
		send(left, syscall.SIGKILL)
		time.Sleep(50 * time.Millisecond)
	}
	out := make([]procInfo, 0, len(order))
	for _, pid := range order {
		out = append(out, signalled[pid])
	}
	return out
}

// procName is a process's command line, shortened, or its comm.
func procName(p procInfo) string {
	if c := shortCmd(readCmdline(p.PID)); c != "" {
		return c
	}
	return p.Comm
}
