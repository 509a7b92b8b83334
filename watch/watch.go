// Package watch supervises one engine boot: it runs the command in its own
// process group, tees its output to the terminal and the run directory,
// checks the environment every descendant really got, follows the startup
// phases, notices silence (and captures every Python process's stack),
// decides the outcome, stops the whole process tree cleanly and records the
// run in the store.
package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/bringup-tool/bringup/pyproc"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bringup-tool/bringup/diagnose"
	"github.com/bringup-tool/bringup/probe"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/report"
	reportruns "github.com/bringup-tool/bringup/report/runs"
	"github.com/bringup-tool/bringup/stacks/hang"
	"github.com/bringup-tool/bringup/store"
	"golang.org/x/sys/unix"
)

// Config is one supervised boot.
type Config struct {
	Command []string
	// Env is set for the boot on top of bringup's own environment, and
	// checked in every descendant.
	Env       map[string]string
	EnvStrict bool // stop the boot when a process lacks a requested variable

	Silence   time.Duration // no output this long → capture stacks; 0 disables
	OnSilence string        // "dump" (keep watching) or "stop" (outcome hung)
	Snapshots int           // stack snapshots per capture (passed to Capture by the wiring)
	Timeout   time.Duration // stop the boot after this long; 0 = never
	Grace     time.Duration // SIGTERM → SIGKILL delay
	// Hurry, when closed during the grace period, sends SIGKILL at once
	// (a second Ctrl-C).
	Hurry <-chan struct{}

	ReadyURL string // ready when a GET answers 200
	Then     string // after ready: "stop" or "keep"

	// RunsDir is where run directories are made (<RunsDir>/<id>-<random>,
	// unique per run whatever store numbered it); Dir, when set, is used as
	// the run directory itself and must not hold an output.log yet.
	RunsDir string
	Dir     string

	Stdout, Stderr io.Writer // where the boot's output is teed (the terminal)
	Messages       io.Writer // bringup's own lines
	Status         io.Writer // where the live status line is drawn; nil = none
	Style          report.Style
	// TerminalBuffer bounds the boot's output waiting for a terminal that
	// does not keep up (default DefaultTerminalBuffer); beyond it, lines
	// are left out of the terminal copy (never out of output.log).
	TerminalBuffer int
	// NoGuardian runs the boot without the guardian process that stops it
	// when bringup is killed (the parent-death signal still applies).
	NoGuardian bool

	Store    *store.Store // nil: the run is only written to run.json
	Patches  *store.PatchState
	Versions map[string]string

	NewTracker func(source string) Tracker // source: the output.log path
	Capture    Capture
	Diagnose   Diagnose

	Poll time.Duration // how often the process tree is scanned (default 200ms)

	// Probe, when set, injects the exception probe into every Python
	// process of the boot (RUN_DIR/probe; PYTHONPATH and BRINGUP_PROBE
	// added to the boot's environment); its reports are read at the end.
	Probe        *probe.Spec
	ProbeOptions probe.Options
}

// blockingPipe makes a pipe whose read end is read with plain blocking
// read(2) on its own thread, not through Go's netpoller: with the poller,
// every small write of a boot that logs line by line wakes epoll even while
// the reader is not waiting, which at 100k lines/s costs more CPU than the
// whole tee.
func blockingPipe(name string) (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(p[0]), "boot-"+name+"-r"), os.NewFile(uintptr(p[1]), "boot-"+name+"-w"), nil
}

// maxEnvSeen bounds the per-process env record of a boot that forks
// thousands of short-lived processes (compile workers).
const maxEnvSeen = 1024

// pipeSize is the capacity asked for the boot's stdout/stderr pipes.
const pipeSize = 1 << 20

// ErrNotRunnable is wrapped by errors that mean the boot never started.
var ErrNotRunnable = errors.New("cannot start the command")

// Run supervises one boot until its outcome is known and returns the run as
// recorded. An error is returned only when the boot could not be started;
// a failed or hung boot is a run with that outcome.
func Run(ctx context.Context, cfg Config) (*store.Run, error) {
	if len(cfg.Command) == 0 {
		return nil, fmt.Errorf("%w: no command given (bringup watch [flags] -- CMD ARGS...)", ErrNotRunnable)
	}
	path, err := exec.LookPath(cfg.Command[0])
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrNotRunnable, cfg.Command[0], errors.Unwrap(err))
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 200 * time.Millisecond
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 10 * time.Second
	}
	if cfg.Then == "" {
		cfg.Then = "stop"
	}
	if cfg.OnSilence == "" {
		cfg.OnSilence = "dump"
	}
	for _, w := range []*io.Writer{&cfg.Stdout, &cfg.Stderr, &cfg.Messages} {
		if *w == nil {
			*w = io.Discard
		}
	}
	// The boot's parent-death signal fires when the thread that forked it
	// exits, not the process: keep this goroutine on one thread until the
	// boot is stopped.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cwd, _ := os.Getwd()
	w := &watcher{cfg: cfg, seen: map[int]*seenProc{}, checked: map[int]bool{}, seenIdx: map[int]int{}}
	me := selfIdentity()
	w.run = &store.Run{
		Schema: store.Schema, Command: cfg.Command, Cwd: cwd, Env: cfg.Env, Started: time.Now(),
		Outcome: store.OutcomeRunning, Patches: cfg.Patches, Versions: cfg.Versions, Watcher: &me,
	}
	if err := w.makeDir(); err != nil {
		w.abandon(err.Error())
		return nil, err
	}
	defer w.dir.close()
	logPath := w.dir.join("output.log")
	file, err := w.dir.create("output.log")
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			err = fmt.Errorf("run directory %s already holds an output.log (an earlier run's?): give a new --run-dir", w.dir.path)
		} else {
			err = fmt.Errorf("run directory: %v", err)
		}
		w.abandon(err.Error())
		return nil, err
	}
	defer file.Close()
	w.file = file
	w.run.Logs = []string{logPath}
	if cfg.NewTracker != nil {
		w.tracker = cfg.NewTracker(logPath)
	}
	var onLines func([]byte)
	if w.tracker != nil {
		onLines = w.tracker.Write
	}
	w.term = newTermCopy(cfg.Stdout, cfg.Stderr, cfg.Messages, cfg.Status, cfg.TerminalBuffer)
	w.term.tell = func(msg string) { w.say("%s", msg) }
	w.tee = newTee(file, w.term, onLines)
	w.tee.onFileErr = func(err error, line int64) {
		w.say("%s writing output.log: %v; output.log stops at line %d: the boot goes on, and its output still reaches the terminal", w.cfg.Style.Red("error"), err, line)
	}
	w.dir.makeReserve()
	if err := w.start(path); err != nil {
		w.run.Outcome, w.run.Reason, w.run.Ended = store.OutcomeFailed, err.Error(), time.Now()
		w.guard.release()
		w.save(true)
		w.term.close(termStall)
		return nil, fmt.Errorf("%w %q: %v", ErrNotRunnable, cfg.Command[0], err)
	}
	w.cpuSelf, w.cpuKids = rusage(syscall.RUSAGE_SELF), rusage(syscall.RUSAGE_CHILDREN)
	w.save(false)
	w.say("%s pid %d, run %s, output in %s", w.cfg.Style.Bold("watching"), w.cmd.Process.Pid, w.runName(), logPath)
	w.loop(ctx)
	w.finish()
	return w.run, nil
}

// abandon records, when the run was already in the store, that it never
// started.
func (w *watcher) abandon(reason string) {
	if w.run.ID > 0 {
		w.run.Outcome, w.run.Reason, w.run.Ended = store.OutcomeFailed, "not started: "+reason, time.Now()
		w.save(true)
	}
}

type seenProc struct {
	info  procInfo
	first time.Time // when first seen
	env   bool      // environment checked for this command line
}

// execWindow is how long after a process appears its command line is
// still re-read to notice an exec (fork, then exec with another
// environment, happens at once in launchers).
const execWindow = 5 * time.Second

type watcher struct {
	cfg     Config
	run     *store.Run
	cmd     *exec.Cmd
	dir     *runDir
	file    *os.File
	tee     *tee
	term    *termCopy
	tracker Tracker
	guard   *guardian

	pumps    sync.WaitGroup
	exited   chan struct{}
	preexist map[int]bool      // our children before the boot: not the boot's
	seen     map[int]*seenProc // every process of the boot seen so far
	procs    treeScanner       // /proc reads of the periodic scan
	checked  map[int]bool      // pids reported in the env check
	envIdx   map[int]int       // pid → index in run.EnvCheck
	seenIdx  map[int]int       // pid → index in run.EnvSeen
	readyC   chan string       // --ready-url answered
	stopOnce sync.Once
	isReady  bool
	storeErr bool
	jsonErr  bool // run.json could not be written (said once)

	live        []store.BootProc // the boot's live processes at the last scan
	liveChanged bool             // since the last save
	lastSave    time.Time
	heldOpen    bool // a process kept the boot's output open after the stop

	captures []*CaptureResult // the stack captures, oldest first
	stopBy   string           // who stops the boot: store.StopByWatch unless the user
	stopSig  string           // the signal the user sent bringup

	cpuSelf, cpuKids time.Duration // rusage when the boot started

	probeDep  *probe.Deployment // --probe: the deployment in the run directory
	probeScan *probe.Scanner    // the boot's Python processes, for who did not load it
	probeIn   *diagnose.ProbeInput
}

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// makeDir creates the run directory. A directory bringup names itself is
// new: "<id>-<random>" (a run id is only unique within its store, and two
// stores, or a store and the one moved aside before it, share a runs
// directory), created exclusively, so no earlier run's files are ever
// written over.
func (w *watcher) makeDir() error {
	if w.cfg.Dir != "" {
		d, err := openRunDir(w.cfg.Dir, false)
		if err != nil {
			return fmt.Errorf("cannot create the run directory: %v", err)
		}
		w.dir = d
		w.run.Dir = d.path
		return nil
	}
	w.save(false) // assigns the id
	if err := os.MkdirAll(w.cfg.RunsDir, 0o755); err != nil {
		return fmt.Errorf("cannot create the run directory: %v (pass --run-dir)", err)
	}
	for try := 0; ; try++ {
		name := time.Now().Format("20060102-150405") + "-" + randomHex(4)
		if w.run.ID > 0 {
			name = fmt.Sprintf("%d-%s", w.run.ID, randomHex(4))
		}
		d, err := openRunDir(filepath.Join(w.cfg.RunsDir, name), true)
		if errors.Is(err, fs.ErrExist) && try < 8 {
			continue
		}
		if err != nil {
			return fmt.Errorf("cannot create the run directory: %v (pass --run-dir)", err)
		}
		w.dir = d
		w.run.Dir = d.path
		return nil
	}
}

func (w *watcher) runName() string {
	if w.run.ID > 0 {
		return fmt.Sprintf("#%d", w.run.ID)
	}
	return "(not recorded)"
}

// start launches the boot in its own process group with the requested
// environment.
func (w *watcher) start(path string) error {
	if err := becomeSubreaper(); err != nil {
		w.say("%s cannot become a child subreaper (%v): a daemon that leaves the process group may escape", w.cfg.Style.Yellow("warning"), err)
	}
	// The guardian starts first: it is not part of the boot.
	deathSig := syscall.SIGKILL
	if !w.cfg.NoGuardian {
		errOut, _ := w.cfg.Messages.(*os.File)
		g, err := startGuardian(errOut)
		if err != nil {
			w.say("%s cannot start the guardian (%v): if bringup is killed, only the boot's main process is stopped", w.cfg.Style.Yellow("warning"), err)
		} else {
			w.guard = g
			w.run.Watcher.Guardian = g.pid()
			if p, err := readStat(g.pid()); err == nil {
				w.run.Watcher.GuardianStartTicks = p.Start
			}
			// The guardian stops the whole boot gracefully; the main
			// process's own parent-death signal need not be SIGKILL.
			deathSig = syscall.SIGTERM
		}
	}
	w.preexist = map[int]bool{}
	for _, c := range children(os.Getpid()) {
		w.preexist[c] = true
	}
	env := os.Environ()
	keys := sortedKeys(w.cfg.Env)
	for _, k := range keys {
		env = append(env, k+"="+w.cfg.Env[k])
	}
	if w.cfg.Probe != nil {
		dep, err := probe.Inject(w.run.Dir, *w.cfg.Probe, w.cfg.ProbeOptions)
		if err != nil {
			return fmt.Errorf("--probe: %v", err)
		}
		w.probeDep = &dep
		env = dep.Environ(env)
		w.run.Probe = &store.Probe{Spec: dep.Spec.String(), Dir: dep.Dir, Findings: []record.Finding{}}
	}
	w.cmd = exec.Command(path, w.cfg.Command[1:]...)
	w.cmd.Env = env
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSig}
	outR, outW, err := blockingPipe("stdout")
	if err != nil {
		return err
	}
	errR, errW, err := blockingPipe("stderr")
	if err != nil {
		return err
	}
	// A larger pipe means fewer, larger reads (and fewer wake-ups of the
	// boot) when it floods; best effort.
	for _, f := range []*os.File{outW, errW} {
		unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, pipeSize)
	}
	w.cmd.Stdout, w.cmd.Stderr = outW, errW
	err = w.cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return err
	}
	pid := w.cmd.Process.Pid
	if w.probeDep != nil {
		w.probeScan = probe.NewScanner(pid)
		w.probeScan.Scan()
	}
	w.run.Watcher.PGID = pid
	if p, err := readStat(pid); err == nil {
		w.run.Watcher.BootStartTicks = p.Start
	}
	storePath := ""
	if w.cfg.Store != nil {
		storePath = w.cfg.Store.Path()
	}
	if w.guard != nil && !w.guard.send(guardMsg{Op: "boot", PID: pid, StartTicks: w.run.Watcher.BootStartTicks,
		Grace: w.cfg.Grace, Store: storePath, Run: w.run.ID, Watcher: os.Getpid()}) {
		w.say("%s the guardian is not listening: if bringup is killed, only the boot's main process is stopped", w.cfg.Style.Yellow("warning"))
	}
	w.pumps.Add(2)
	go func() { defer w.pumps.Done(); w.tee.pump(0, outR); outR.Close() }()
	go func() { defer w.pumps.Done(); w.tee.pump(1, errR); errR.Close() }()
	w.exited = make(chan struct{})
	go func() { w.cmd.Wait(); close(w.exited) }()
	w.readyC = make(chan string, 1)
	return nil
}

func (w *watcher) loop(ctx context.Context) {
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	if w.cfg.ReadyURL != "" {
		go pollReady(pollCtx, w.cfg.ReadyURL, w.readyC)
	}
	var timeout <-chan time.Time
	if w.cfg.Timeout > 0 {
		t := time.NewTimer(w.cfg.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	tick := time.NewTicker(w.cfg.Poll)
	defer tick.Stop()
	silenceBase := w.run.Started
	lastDraw := time.Time{}
	for {
		select {
		case <-ctx.Done():
			w.stopBy = store.StopByUser
			how := "Ctrl-C or SIGTERM"
			var in Interrupted
			if errors.As(context.Cause(ctx), &in) && in.Signal != nil {
				w.stopSig, how = in.Signal.String(), signalWords(in.Signal)
			}
			if w.isReady {
				w.say("interrupted after ready: stopping the boot")
			} else {
				// A user who interrupts a hang wants to know where it was:
				// one snapshot, at once, before the stop changes it.
				w.say("%s: taking the stacks once, then stopping the boot", w.cfg.Style.Yellow("interrupted"))
				w.capture(context.WithoutCancel(ctx), "interrupt", 1)
				reason := "stopped by " + how + " before it was ready"
				if ph := w.openPhase(); ph != "" {
					reason += ", in phase " + ph
				}
				w.conclude(store.OutcomeInterrupted, reason)
			}
			w.stopBoot()
			return
		case <-w.exited:
			w.scan() // last look at what the boot left behind
			w.childExited()
			return
		case <-timeout:
			w.say("%s after %s: capturing stacks, then stopping the boot", w.cfg.Style.Red("timeout"), w.cfg.Timeout)
			w.capture(ctx, "timeout", 0)
			w.conclude(store.OutcomeTimeout, fmt.Sprintf("did not become ready within --timeout %s", w.cfg.Timeout))
			w.stopBoot()
			return
		case how := <-w.readyC:
			if w.becameReady(how) {
				return
			}
		case now := <-tick.C:
			if w.scan() && w.cfg.EnvStrict {
				w.conclude(store.OutcomeFailed, "a process lacks a requested environment variable (--env-strict)")
				w.stopBoot()
				return
			}
			silent := w.tee.since(now)
			if w.tracker != nil {
				var ready bool
				var line string
				w.tee.locked(func() {
					if silent > 300*time.Millisecond {
						w.tracker.Flush()
					}
					ready, line = w.tracker.Ready()
				})
				if ready && !w.isReady && w.becameReady(strings.TrimSpace(line)) {
					return
				}
			}
			if w.cfg.Silence > 0 && silent >= w.cfg.Silence && now.Sub(silenceBase) >= w.cfg.Silence {
				silenceBase = now
				if w.onSilence(ctx, now, silent) {
					return
				}
			}
			if w.cfg.Status != nil && now.Sub(lastDraw) >= time.Second {
				lastDraw = now
				w.drawStatus(now, silent)
			}
			// A heartbeat, and the processes a dead watcher would leave, for
			// the next bringup to find.
			if since := now.Sub(w.lastSave); since >= heartbeat || w.liveChanged && since >= time.Second {
				w.save(false)
			}
		}
	}
}

// becameReady records readiness; it reports whether watching ends.
func (w *watcher) becameReady(how string) bool {
	if w.isReady {
		return false
	}
	// Look at the process tree as it stands at ready before concluding:
	// a boot whose workers start and report in between two periodic scans
	// would otherwise be called ready with their environment unchecked
	// (and --env-strict would not stop it).
	if w.scan() && w.cfg.EnvStrict {
		w.conclude(store.OutcomeFailed, "a process lacks a requested environment variable (--env-strict)")
		w.stopBoot()
		return true
	}
	w.isReady = true
	w.conclude(store.OutcomeReady, how)
	w.say("%s after %s (%s)", w.cfg.Style.Green(w.cfg.Style.Bold("ready")), round(time.Since(w.run.Started)), how)
	w.save(false)
	if w.cfg.Then == "keep" {
		w.say("--then keep: still watching; Ctrl-C stops the boot")
		return false
	}
	w.stopBoot()
	return true
}

// onSilence handles a stretch without output; it reports whether watching
// ends.
func (w *watcher) onSilence(ctx context.Context, now time.Time, silent time.Duration) bool {
	sil := store.Silence{At: now, Seconds: silent.Seconds()}
	if pct, tool, ok := gpuUtil(ctx); ok {
		sil.GPUBusy = fmt.Sprintf("%d%% (%s)", pct, tool)
		if pct >= gpuBusyPercent {
			w.say("no output for %s, but the GPU is busy (%s): not treated as a hang", round(silent), sil.GPUBusy)
			return false
		}
	}
	w.say("%s: no output for %s; capturing the stacks of every Python process", w.cfg.Style.Yellow("silence"), round(silent))
	n := len(w.run.Silences) + 1
	res := w.capture(ctx, fmt.Sprintf("silence-%d", n), 0)
	if res != nil {
		sil.StacksPath, sil.Summary = res.Path, firstLine(res.Text)
	}
	w.run.Silences = append(w.run.Silences, sil)
	w.save(false)
	if w.cfg.OnSilence == "stop" {
		w.conclude(store.OutcomeHung, fmt.Sprintf("no output for %s (--silence %s, --on-silence stop)", round(silent), w.cfg.Silence))
		w.stopBoot()
		return true
	}
	return false
}

// capture takes the stacks of every process of the boot (snapshots of
// them; 0: as configured) and prints the buckets and findings.
func (w *watcher) capture(ctx context.Context, name string, snapshots int) *CaptureResult {
	if w.cfg.Capture == nil {
		w.say("stack capture is not available in this build")
		return nil
	}
	req := CaptureRequest{PIDs: w.pids(), Dir: w.run.Dir, Name: name, Snapshots: snapshots,
		Rank: func(int) record.Rank { return record.NoRank }}
	if w.tracker != nil {
		w.tee.locked(func() {
			ranks := map[int]record.Rank{}
			for _, p := range req.PIDs {
				ranks[p] = w.tracker.Identity(p)
			}
			req.Rank = func(pid int) record.Rank {
				if r, ok := ranks[pid]; ok {
					return r
				}
				return record.NoRank
			}
			req.Versions = w.tracker.Versions()
		})
	}
	res, err := w.cfg.Capture(ctx, req)
	if err != nil {
		w.say("%s stack capture failed: %v", w.cfg.Style.Yellow("warning"), err)
		return nil
	}
	w.captures = append(w.captures, res)
	w.run.Findings = mergeFindings(w.run.Findings, res.Findings)
	w.print(strings.TrimRight(res.Text, "\n") + "\n")
	if res.Path != "" {
		what := fmt.Sprintf("%d processes", res.Processes)
		if res.Processes == 1 {
			what = "1 process"
		}
		w.say("stacks of %s saved to %s", what, res.Path)
	}
	return res
}

// childExited decides the outcome when the boot's main process ends by
// itself.
func (w *watcher) childExited() {
	st := w.cmd.ProcessState
	code := st.ExitCode()
	desc := fmt.Sprintf("exit status %d", code)
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		desc = "killed by " + ws.Signal().String()
	}
	switch {
	case w.isReady:
		w.say("the boot ended after ready (%s)", desc)
	case code == 0:
		w.conclude(store.OutcomeExited, "the command exited with status 0 before it was ready")
	default:
		w.conclude(store.OutcomeFailed, "the command ended before it was ready: "+desc)
	}
	// What the main process printed last may still be in the pipes: let
	// it arrive (a second at most) before the stop, whose output is the
	// stop's, begins.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline) && w.tee.since(time.Now()) < 100*time.Millisecond; {
		time.Sleep(20 * time.Millisecond)
	}
	// Workers or daemons it left behind go too.
	w.stopBoot()
}

// openPhase is the phase the boot's log opened last and has not closed.
func (w *watcher) openPhase() string {
	if w.tracker == nil {
		return ""
	}
	var ph []store.Phase
	w.tee.locked(func() { ph = w.tracker.Phases() })
	return hang.OpenPhase(ph)
}

// noteStop records the moment the stop begins: who stops the boot, and
// how much it had printed. From here on its output is the stop's doing
// (a SIGTERM handler's traceback): it still goes to output.log and the
// terminal, but the timeline no longer takes it.
func (w *watcher) noteStop() {
	st := &store.Stop{By: w.stopBy, Signal: w.stopSig, At: time.Now()}
	if st.By == "" {
		st.By = store.StopByWatch
	}
	w.tee.locked(func() {
		st.Line = w.tee.seenLines
		if w.tracker != nil {
			w.tracker.Flush()
		}
		w.tee.onLines = nil
	})
	st.LastOutput = time.Unix(0, w.tee.lastOutput.Load())
	w.run.Stop = st
}

// Interrupted is the cause a caller cancels Run's context with when the
// user stopped bringup (context.WithCancelCause): it names the signal.
type Interrupted struct{ Signal os.Signal }

func (i Interrupted) Error() string {
	if i.Signal == nil {
		return "interrupted"
	}
	return "interrupted by " + i.Signal.String()
}

// signalWords names a signal the user sent bringup.
func signalWords(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "Ctrl-C (SIGINT)"
	case syscall.SIGTERM:
		return "SIGTERM to bringup"
	case syscall.SIGHUP:
		return "SIGHUP to bringup (the terminal closed)"
	}
	return sig.String() + " to bringup"
}

// conclude sets the outcome once; later calls keep the first.
func (w *watcher) conclude(outcome, reason string) {
	if w.run.Outcome != store.OutcomeRunning {
		return
	}
	w.run.Outcome, w.run.Reason = outcome, reason
}

// scan walks the boot's process tree, remembers every process, checks the
// environment of new ones and reports whether a process lacked a requested
// variable.
func (w *watcher) scan() bool {
	if w.probeScan != nil {
		w.probeScan.Scan()
	}
	bad := false
	tab := w.procs.table()
	tree := w.tree(tab)
	w.procs.settle(tab, tree)
	now := time.Now()
	defer w.noteLive(tree, tab)
	for _, pid := range tree {
		info := tab[pid]
		if info.State == 'Z' {
			continue
		}
		sp := w.seen[pid]
		if sp != nil && sp.info.Start == info.Start && now.Sub(sp.first) > execWindow {
			continue // long settled: no exec to look for
		}
		info.Cmdline = readCmdline(pid)
		if sp == nil || sp.info.Start != info.Start || sp.info.Cmdline != info.Cmdline {
			// New process, or the same pid after exec: its environment may
			// be new too.
			first := now
			if sp != nil && sp.info.Start == info.Start {
				first = sp.first
			}
			sp = &seenProc{info: info, first: first}
			w.seen[pid] = sp
		}
		if sp.env || len(w.cfg.Env) == 0 {
			continue
		}
		// The knobs are for the boot's Python processes; a compiler or
		// assembler that Inductor's C++ build runs with its own
		// environment is not a worker that missed them.
		if !pyproc.LooksLikePython(pid) {
			continue
		}
		env, err := readEnviron(pid)
		if err != nil {
			continue // gone, or not ours to read; the next scan retries
		}
		sp.env = true
		if w.checkEnv(info, env) {
			bad = true
		}
	}
	return bad
}

// noteLive keeps the boot's live processes for the record and tells the
// guardian of new ones.
func (w *watcher) noteLive(tree []int, tab map[int]procInfo) {
	prev := make(map[int]uint64, len(w.live))
	for _, p := range w.live {
		prev[p.PID] = p.StartTicks
	}
	live := make([]store.BootProc, 0, len(tree))
	changed := false
	for _, pid := range tree {
		info := tab[pid]
		if info.State == 'Z' || info.State == 'X' {
			continue
		}
		if st, ok := prev[pid]; !ok || st != info.Start {
			changed = true
			w.guard.send(guardMsg{Op: "proc", PID: pid, StartTicks: info.Start})
		}
		delete(prev, pid)
		if len(live) < store.MaxProcs {
			name := info.Comm
			if sp := w.seen[pid]; sp != nil && sp.info.Start == info.Start && sp.info.Cmdline != "" {
				name = shortCmd(sp.info.Cmdline)
			}
			live = append(live, store.BootProc{PID: pid, StartTicks: info.Start, Process: name})
		}
	}
	sort.Slice(live, func(i, j int) bool { return live[i].PID < live[j].PID })
	w.live = live
	if changed || len(prev) > 0 {
		w.liveChanged = true
	}
}

// heartbeat is how often a run still going is saved without news.
const heartbeat = 5 * time.Second

// checkEnv compares one process's environment with the request and
// records and prints a mismatch.
func (w *watcher) checkEnv(info procInfo, env map[string]string) bool {
	seen := store.EnvSeen{PID: info.PID, Process: shortCmd(info.Cmdline), Env: map[string]string{}}
	if seen.Process == "" {
		seen.Process = info.Comm
	}
	for k := range w.cfg.Env {
		if v, ok := env[k]; ok {
			seen.Env[k] = v
		}
	}
	if i, ok := w.seenIdx[info.PID]; ok {
		w.run.EnvSeen[i] = seen
	} else if len(w.run.EnvSeen) < maxEnvSeen {
		w.seenIdx[info.PID] = len(w.run.EnvSeen)
		w.run.EnvSeen = append(w.run.EnvSeen, seen)
	}
	ec := store.EnvCheck{PID: info.PID, Process: shortCmd(info.Cmdline), Different: map[string]store.EnvDiff{}, At: time.Now()}
	if ec.Process == "" {
		ec.Process = info.Comm
	}
	for _, k := range sortedKeys(w.cfg.Env) {
		got, ok := env[k]
		switch {
		case !ok:
			ec.Missing = append(ec.Missing, k)
		case got != w.cfg.Env[k]:
			ec.Different[k] = store.EnvDiff{Want: w.cfg.Env[k], Got: got}
		}
	}
	if len(ec.Missing) == 0 && len(ec.Different) == 0 {
		return false
	}
	if w.envIdx == nil {
		w.envIdx = map[int]int{}
	}
	if i, ok := w.envIdx[info.PID]; ok {
		w.run.EnvCheck[i] = ec // re-checked after an exec
	} else {
		w.envIdx[info.PID] = len(w.run.EnvCheck)
		w.run.EnvCheck = append(w.run.EnvCheck, ec)
	}
	var what []string
	if len(ec.Missing) > 0 {
		what = append(what, "missing "+strings.Join(ec.Missing, ", "))
	}
	for _, k := range sortedKeys(ec.Different) {
		d := ec.Different[k]
		what = append(what, fmt.Sprintf("%s=%q (requested %q)", k, d.Got, d.Want))
	}
	w.say("%s pid %d (%s): %s", w.cfg.Style.Red("env"), info.PID, ec.Process, strings.Join(what, "; "))
	w.save(false)
	return true
}

// tree is every process of the boot: the descendants of our own
// children that were not there before the boot (the boot, and orphans
// re-parented to us as subreaper), plus processes seen earlier that are
// still the same process (in case they were re-parented elsewhere).
func (w *watcher) tree(tab map[int]procInfo) []int {
	self := os.Getpid()
	var roots []int
	for pid, p := range tab {
		if p.PPID == self && !w.preexist[pid] {
			roots = append(roots, pid)
		}
	}
	for pid, sp := range w.seen {
		if p, ok := tab[pid]; ok && p.Start == sp.info.Start {
			roots = append(roots, pid)
		}
	}
	return subtree(tab, roots...)
}

// pids is the boot's live (not zombie) processes, sorted.
func (w *watcher) pids() []int {
	tab := procTable()
	var out []int
	for _, p := range w.tree(tab) {
		if st := tab[p].State; st != 'Z' && st != 'X' {
			out = append(out, p)
		}
	}
	sort.Ints(out)
	return out
}

// stopBoot ends the boot and everything it started: SIGTERM to the process
// group and to every process of the tree that left it, SIGKILL
// to whatever is left after the grace period, then reap re-parented
// orphans. Idempotent.
func (w *watcher) stopBoot() {
	w.stopOnce.Do(func() {
		w.noteStop()
		pgid := w.cmd.Process.Pid
		w.scan()
		syscall.Kill(-pgid, syscall.SIGTERM)
		// Once each: a process of the group has its SIGTERM already. A
		// second one lands in its handler's shutdown (vLLM's API server
		// raises KeyboardInterrupt on each, cutting its own traceback; a
		// server may take the second as "force").
		tab := procTable()
		for _, p := range w.tree(tab) {
			if pi := tab[p]; pi.PGID != pgid && pi.State != 'Z' && pi.State != 'X' {
				signal(p, syscall.SIGTERM)
			}
		}
		deadline := time.Now().Add(w.cfg.Grace)
	grace:
		for time.Now().Before(deadline) {
			w.reap()
			if len(w.pids()) == 0 {
				break
			}
			select {
			case <-w.cfg.Hurry:
				break grace
			case <-time.After(50 * time.Millisecond):
			}
		}
		// Processes can fork while being killed: repeat until none is left.
		for round := 0; round < 20; round++ {
			left := w.pids()
			if len(left) == 0 {
				break
			}
			if round == 0 {
				w.say("%d process(es) still running after %s: SIGKILL", len(left), w.cfg.Grace)
			}
			syscall.Kill(-pgid, syscall.SIGKILL)
			for _, p := range left {
				signal(p, syscall.SIGKILL)
			}
			time.Sleep(50 * time.Millisecond)
			w.reap()
		}
		select {
		case <-w.exited:
		case <-time.After(5 * time.Second):
			w.say("%s the boot's main process did not go away after SIGKILL", w.cfg.Style.Red("warning"))
		}
		w.reap()
	})
}

// reap collects zombies among our direct children that are not the boot's
// main process (exec.Cmd waits for that one).
func (w *watcher) reap() {
	for _, c := range children(os.Getpid()) {
		if w.preexist[c] || (w.cmd.Process != nil && c == w.cmd.Process.Pid) {
			continue
		}
		if p, err := readStat(c); err == nil && p.State == 'Z' {
			reapChild(c)
		}
	}
}

// finish writes down the outcome: exit status, timeline, ranks of the env
// report, diagnosis, and saves the run.
func (w *watcher) finish() {
	// The boot is stopped: the guardian has nothing left to do, and the
	// record's processes are those still running now (normally none).
	w.guard.release()
	tab := procTable()
	w.noteLive(w.tree(tab), tab)
	// The pipes close once every process that held them is gone; a process
	// we could not stop must not hold the run open forever.
	done := make(chan struct{})
	go func() { w.pumps.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		w.tee.locked(func() {
			if w.tee.fileErr == nil {
				w.tee.fileErr, w.tee.errLine = errHeldOpen, w.tee.lines+1
			}
		})
		w.say("%s some process still holds the boot's output open; output after this point is not saved", w.cfg.Style.Yellow("warning"))
	}
	// What reached the disk: an error the kernel reports only now (NFS,
	// delayed allocation on a full disk) makes the log incomplete too.
	if err := w.file.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		w.tee.locked(func() {
			if w.tee.fileErr == nil {
				w.tee.fileErr, w.tee.errLine = fmt.Errorf("fsync: %w", err), 1
			}
		})
	}
	w.run.Ended = time.Now()
	if st := w.cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			w.run.Signal = ws.Signal().String()
		} else {
			code := st.ExitCode()
			w.run.ExitCode = &code
		}
	}
	w.run.CPU = &store.CPU{
		WatchSeconds: (rusage(syscall.RUSAGE_SELF) - w.cpuSelf).Seconds(),
		BootSeconds:  (rusage(syscall.RUSAGE_CHILDREN) - w.cpuKids).Seconds(),
	}
	// The terminal gets what it can take of the rest; what it could not is
	// counted.
	w.term.drain(termStall)
	w.noteOutput()
	if w.tracker != nil {
		w.tee.locked(func() {
			w.tracker.Finish()
			w.run.Timeline = w.tracker.Phases()
			if v := w.tracker.Versions(); len(v) > 0 {
				if w.run.Versions == nil {
					w.run.Versions = map[string]string{}
				}
				for k, x := range v {
					w.run.Versions[k] = x
				}
			}
			for i := range w.run.EnvCheck {
				w.run.EnvCheck[i].Rank = w.tracker.Rank(w.run.EnvCheck[i].PID)
			}
			for i := range w.run.EnvSeen {
				w.run.EnvSeen[i].Rank = w.tracker.Rank(w.run.EnvSeen[i].PID)
			}
		})
	}
	w.trueLengths()
	w.readProbe()
	w.run.Ended = time.Now()
	// Verdict first: the outcome line heads the closing block, then what
	// became of the output, then the diagnosis that explains the outcome.
	w.print("\n" + Headline(w.run, w.cfg.Style) + "\n")
	out := w.run.Output
	if out.Error != "" {
		w.say("%s output.log holds %d of the %s the boot printed (%s)", w.cfg.Style.Red("incomplete:"), w.run.Lines, reportruns.Lines(out.Lines), out.Error)
	}
	if out.TerminalDropped > 0 {
		has := "output.log has every line"
		if out.Error != "" {
			has = "output.log has those it saved"
		}
		w.say("the terminal did not keep up: %s of the boot's output were left out of its copy (%s)", reportruns.Lines(out.TerminalDropped), has)
	}
	switch {
	case w.run.Outcome == store.OutcomeReady || w.cfg.Diagnose == nil:
	case out.Bytes == 0:
		// Nothing was printed: nothing to diagnose, and not a failure of
		// the diagnosis.
		w.say("no output to diagnose (the boot printed nothing)")
	case w.run.Bytes == 0:
		w.say("no output to diagnose: none of it reached output.log")
	default:
		if w.run.Bytes >= DiagnoseNoteBytes {
			// Reading a large log takes a while: say what is going on.
			w.say("diagnosing %s of output (a second Ctrl-C skips it)", sizeText(w.run.Bytes))
		}
		w.save(false) // logs are complete; the diagnosis reads them
		// The boot's context is over (after Ctrl-C it is cancelled); a
		// second Ctrl-C (Hurry) abandons the diagnosis.
		dctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if w.cfg.Hurry != nil {
			go func() {
				select {
				case <-w.cfg.Hurry:
					cancel()
				case <-dctx.Done():
				}
			}()
		}
		d, err := w.cfg.Diagnose(dctx, w.run, Evidence{Captures: w.captures, Arrived: w.tee.arrived, Probe: w.probeIn})
		if err != nil {
			w.say("%s diagnosis failed: %v", w.cfg.Style.Yellow("warning"), err)
		} else if d != nil {
			w.run.Verdict = d.Verdict
			w.run.Findings = mergeFindings(w.run.Findings, d.Findings)
			if strings.TrimSpace(d.Text) != "" {
				w.print(strings.TrimRight(d.Text, "\n") + "\n")
			}
		}
	}
	if w.run.Verdict == "" {
		// No diagnosis (nothing printed, none configured): the stacks
		// still say where a hang was.
		if v := hangVerdict(w.run, lastWhere(w.captures)); v != "" {
			w.run.Verdict = v
			w.print(w.cfg.Style.Red(w.cfg.Style.Bold(v)) + "\n")
		}
	}
	if st := w.run.Stop; st != nil && len(st.After) > 0 {
		who := "watch's stop"
		if st.By == store.StopByUser {
			who = "the user's stop"
		}
		w.say("after %s the boot printed %s: the stop's doing, not a failure of the boot (not counted as findings)", who, strings.Join(st.After, "; "))
	}
	w.save(true)
	w.term.close(termStall)
}

// trueLengths makes the phases still open and the silences still going
// when the boot was stopped last until the stop: the log's own clock
// ends at its last line (often the phase's first), watch knows when each
// line arrived and when the stop came.
func (w *watcher) trueLengths() {
	st := w.run.Stop
	if st == nil {
		return
	}
	for i := range w.run.Timeline {
		p := &w.run.Timeline[i]
		if !p.Open || p.Status != "unfinished" {
			continue
		}
		if sec, ok := openUntil(w.tee.arrived(p.Line), st.At); ok && sec > p.Seconds {
			p.Seconds = sec
			if !p.Start.IsZero() {
				p.End = p.Start.Add(time.Duration(sec * float64(time.Second)))
			}
		}
	}
	for i := range w.run.Silences {
		s := &w.run.Silences[i]
		start := s.At.Add(-time.Duration(s.Seconds * float64(time.Second)))
		if !st.LastOutput.After(start.Add(markEvery)) && st.At.After(s.At) {
			s.Seconds = st.At.Sub(start).Seconds() // no output since: it lasted until the stop
		}
	}
}

// errHeldOpen ends output.log when a process the stop could not end keeps
// the boot's output open.
var errHeldOpen = errors.New("a process still held the boot's output open after the boot was stopped")

// noteOutput records what reached output.log and what became of the rest.
// The tee's lock is taken, so the counts and the error agree.
func (w *watcher) noteOutput() {
	if w.tee == nil {
		return
	}
	out := &store.Output{}
	w.tee.locked(func() {
		w.run.Lines, w.run.Bytes = w.tee.lines, w.tee.bytes
		out.Lines, out.Bytes = w.tee.seenLines, w.tee.seenBytes
		if err := w.tee.fileErr; err != nil {
			out.Error = fmt.Sprintf("output incomplete at line %d: %s", w.tee.errLine, errText(err))
		}
	})
	out.TerminalDropped = w.term.dropped()
	out.TerminalClosed = w.term.closed()
	if w.run.Output != nil {
		out.RunJSONError = w.run.Output.RunJSONError
	}
	w.run.Output = out
}

// errText is an error's cause without the path it was about ("no space
// left on device").
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// sizeText is "1.2 GB", "340 MB", "12 KB" or "512 bytes".
func sizeText(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0f KB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d bytes", n)
}

// DiagnoseNoteBytes is the output size from which the closing diagnosis
// is announced (it reads the whole log).
var DiagnoseNoteBytes int64 = 64 << 20

// Headline is the one-line outcome of a run: "HUNG after 7.2s — no output
// for 5s (…) (run #1)".
func Headline(run *store.Run, st report.Style) string {
	word := strings.ToUpper(run.Outcome)
	switch run.Outcome {
	case store.OutcomeReady:
		word = st.Green(st.Bold(word))
	case store.OutcomeExited:
		word = st.Bold(word)
	default:
		word = st.Red(st.Bold(word))
	}
	id := "not recorded"
	if run.ID > 0 {
		id = fmt.Sprintf("run #%d", run.ID)
	}
	return fmt.Sprintf("%s after %s — %s (%s)", word, run.Duration().Round(100*time.Millisecond), run.Reason, id)
}

// save writes run.json into the run directory (atomically: a temp file
// renamed over it) and the run into the store (when there is one); final
// also syncs run.json to disk. A failure of either is said once and the
// boot goes on; what is said about where the run is recorded is what is
// true at that moment.
func (w *watcher) save(final bool) {
	w.lastSave, w.liveChanged = time.Now(), false
	w.run.Updated = w.lastSave
	w.run.Procs = w.live
	if !final {
		w.noteOutput()
	}
	jsonOK := w.dir == nil
	if w.dir != nil {
		b, err := json.MarshalIndent(w.run, "", "  ")
		if err == nil {
			err = w.dir.writeFile("run.json", append(b, '\n'), final)
		}
		jsonOK = err == nil
		if w.run.Output != nil {
			w.run.Output.RunJSONError = ""
			if err != nil {
				// The store's copy says so: it is then the only record.
				w.run.Output.RunJSONError = errText(err)
			}
		}
		if err != nil && !w.jsonErr {
			w.jsonErr = true
			where := "the store keeps the run"
			if w.cfg.Store == nil || w.storeErr {
				where = "and there is no store: this run is recorded nowhere but in these messages"
			}
			w.say("%s run.json cannot be written in %s: %v; %s", w.cfg.Style.Red("error"), w.dir.path, errText(err), where)
		}
	}
	if w.cfg.Store == nil || w.storeErr {
		return
	}
	if err := w.cfg.Store.Save(w.run); err != nil {
		w.storeErr = true
		var where string
		switch {
		case w.dir == nil:
			where = "it has no run directory yet"
		case jsonOK:
			where = "run.json in " + w.dir.path + " keeps it"
		default:
			where = "and run.json could not be written either: it is recorded nowhere"
		}
		w.say("%s %v; this run is not recorded in the store (%s)", w.cfg.Style.Red("store:"), err, where)
	}
}

// say prints one of bringup's own lines; it never waits for the terminal.
func (w *watcher) say(format string, a ...any) {
	w.print(fmt.Sprintf("bringup watch: "+format+"\n", a...))
}

// print writes text (whole lines) to the messages.
func (w *watcher) print(text string) {
	if w.term == nil {
		io.WriteString(w.cfg.Messages, text)
		return
	}
	w.term.message(text)
}

func (w *watcher) drawStatus(now time.Time, silent time.Duration) {
	var text string
	w.tee.locked(func() {
		var phases []store.Phase
		if w.tracker != nil {
			phases = w.tracker.Phases()
		}
		note := ""
		if w.isReady {
			note = "ready"
		}
		if w.tee.seenBytes == 0 {
			silent = -1 // "last output 1.4s ago" of a boot that printed nothing misleads
		}
		text = statusText(now.Sub(w.run.Started), silent, phases, note)
	})
	w.term.status(text)
}

// pollReady GETs url every second until it answers 200.
func pollReady(ctx context.Context, url string, ready chan<- string) {
	client := &http.Client{Timeout: 2 * time.Second}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ready <- url + " answered 200"
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// mergeFindings adds findings whose rule is not there yet.
func mergeFindings(have, add []record.Finding) []record.Finding {
	seen := map[string]bool{}
	for _, f := range have {
		seen[f.Rule] = true
	}
	for _, f := range add {
		if !seen[f.Rule] {
			seen[f.Rule] = true
			have = append(have, f)
		}
	}
	return have
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
