package watch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bringup-tool/bringup/store"
)

// CheckOptions says what CheckRuns does besides looking.
type CheckOptions struct {
	// Stop stops the processes lost runs left running (--stop-lost):
	// SIGTERM, SIGKILL after Grace.
	Stop  bool
	Grace time.Duration
	Only  int64  // check only this run (0: every unfinished run)
	Note  string // added to the reason of a run marked lost now
}

// Lost is what CheckRuns found about one run.
type Lost struct {
	Run     *store.Run
	Marked  bool             // marked lost just now
	Running []store.BootProc // processes of its boot still running
	Stopped []store.BootProc // stopped just now
}

// CheckRuns looks at every run of the store still marked running: one
// whose watcher is certainly gone (same host, same boot, same pid
// namespace, and that pid is no longer that process; or the host rebooted
// since) is marked lost with what is known: its output.log as it is on
// disk, when it was last heard of, and the processes of its boot still
// running, which are named and, with Stop, stopped. Lost runs that left
// processes running are looked at again. Runs watched from another host
// or pid namespace are left as they are: nothing here can tell.
func CheckRuns(st *store.Store, opt CheckOptions) ([]Lost, error) {
	runs, err := st.Unfinished()
	if err != nil {
		return nil, err
	}
	if opt.Grace <= 0 {
		opt.Grace = 10 * time.Second
	}
	me := selfIdentity()
	var out []Lost
	for _, r := range runs {
		if opt.Only != 0 && r.ID != opt.Only {
			continue
		}
		l := Lost{Run: r}
		switch r.Outcome {
		case store.OutcomeRunning:
			if watcherState(r.Watcher, me) != "gone" || guardianBusy(r.Watcher, me) {
				continue
			}
			marked, err := markLost(st, r, me, opt.Note)
			if err != nil {
				return out, err
			}
			if !marked {
				continue // another bringup did
			}
			l.Marked = true
		case store.OutcomeLost:
			if !sameMachine(r.Watcher, me) {
				continue
			}
			if refreshSurvivors(r) {
				if err := saveLost(st, r); err != nil {
					return out, err
				}
			}
		}
		if opt.Stop && len(running(r)) > 0 {
			known := knownOf(r.Survivors)
			stopped := stopProcs(func() []procInfo {
				return bootTree(procTable(), r.Watcher.PGID, r.Watcher.BootStartTicks, known)
			}, opt.Grace)
			was := map[int]bool{}
			for _, p := range stopped {
				was[p.PID] = true
			}
			for i, s := range r.Survivors {
				if was[s.PID] {
					r.Survivors[i].State = store.SurvivorStopped
					l.Stopped = append(l.Stopped, r.Survivors[i])
				}
			}
			// Descendants started since the last look are stopped too, and
			// named.
			for _, p := range stopped {
				if !hasPID(r.Survivors, p.PID) {
					bp := store.BootProc{PID: p.PID, StartTicks: p.Start, Process: p.Comm, State: store.SurvivorStopped}
					r.Survivors = append(r.Survivors, bp)
					l.Stopped = append(l.Stopped, bp)
				}
			}
			refreshSurvivors(r)
			if err := saveLost(st, r); err != nil {
				return out, err
			}
		}
		l.Running = running(r)
		if l.Marked || len(l.Running) > 0 || len(l.Stopped) > 0 {
			out = append(out, l)
		}
	}
	return out, nil
}

// guardianBusy reports whether the run's guardian, not this process, is
// alive: it is stopping the boot of a dead watcher and marks the run
// itself, with its account of what it stopped.
func guardianBusy(w *store.Watcher, me store.Watcher) bool {
	return w.Guardian > 0 && w.Guardian != me.PID && sameMachine(w, me) && alive(w.Guardian, w.GuardianStartTicks)
}

func sameMachine(w *store.Watcher, me store.Watcher) bool {
	return w != nil && w.Host == me.Host && w.BootID == me.BootID && w.PIDNS == me.PIDNS
}

// markLost records r as lost; it reports false when the store no longer
// had it running (another bringup marked it first).
func markLost(st *store.Store, r *store.Run, me store.Watcher, note string) (bool, error) {
	if sameMachine(r.Watcher, me) {
		for _, p := range bootTree(procTable(), r.Watcher.PGID, r.Watcher.BootStartTicks, knownOf(r.Procs)) {
			r.Survivors = append(r.Survivors, store.BootProc{PID: p.PID, StartTicks: p.Start, Process: procName(p), State: store.SurvivorRunning})
		}
		sort.Slice(r.Survivors, func(i, j int) bool { return r.Survivors[i].PID < r.Survivors[j].PID })
	}
	own := ownRunDir(r)
	if own {
		if lines, n, err := countLog(r.Dir); err == nil {
			r.Lines, r.Bytes = lines, n
		}
	}
	last := r.Updated
	if last.IsZero() || last.Before(r.Started) {
		last = r.Started
	}
	who := "bringup watch"
	if r.Watcher != nil {
		who = fmt.Sprintf("bringup watch (pid %d)", r.Watcher.PID)
	}
	r.Outcome, r.Ended = store.OutcomeLost, last
	r.Reason = fmt.Sprintf("%s ended without recording an outcome (killed, crashed, or the machine went down); last heard from %s after the start", who, round(last.Sub(r.Started)))
	if r.Watcher != nil && r.Watcher.BootID != "" && r.Watcher.BootID != me.BootID && r.Watcher.Host == me.Host {
		r.Reason += "; the machine has rebooted since"
	}
	if note != "" {
		r.Reason += "; " + note
	}
	ok, err := st.SaveIf(r, store.OutcomeRunning)
	if !ok || err != nil {
		return false, err
	}
	if own {
		writeRunJSON(r)
	}
	return true, nil
}

func saveLost(st *store.Store, r *store.Run) error {
	if err := st.Save(r); err != nil {
		return err
	}
	if ownRunDir(r) {
		writeRunJSON(r)
	}
	return nil
}

// ownRunDir reports whether r.Dir is r's run directory: its run.json (a
// regular file, not through a symlink) is this run's, same id and start.
// The store is only data: a directory it names is written in, and cleaned,
// only when the directory itself agrees.
func ownRunDir(r *store.Run) bool {
	if r.Dir == "" || !filepath.IsAbs(r.Dir) {
		return false
	}
	b, err := readRegular(filepath.Join(r.Dir, "run.json"), 64<<20)
	if err != nil {
		return false
	}
	var on struct {
		ID      int64     `json:"id"`
		Started time.Time `json:"started"`
	}
	return json.Unmarshal(b, &on) == nil && on.ID == r.ID && on.Started.Equal(r.Started)
}

// readRegular reads a regular file of at most max bytes, not through a
// symlink and without blocking on a FIFO put in its place.
func readRegular(path string, max int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return b, err
}

func openRegular(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}

// writeRunJSON rewrites a run's run.json (best effort: the store has
// the record) and clears what a killed watcher left in its directory.
func writeRunJSON(r *store.Run) {
	if b, err := json.MarshalIndent(r, "", "  "); err == nil {
		writeFileIn(r.Dir, "run.json", append(b, '\n'))
	}
	cleanLeftovers(r.Dir)
}

// refreshSurvivors marks survivors that ended by themselves; it reports
// whether any changed.
func refreshSurvivors(r *store.Run) bool {
	changed := false
	for i, s := range r.Survivors {
		if s.State == store.SurvivorRunning && !alive(s.PID, s.StartTicks) {
			r.Survivors[i].State = store.SurvivorGone
			changed = true
		}
	}
	return changed
}

func running(r *store.Run) []store.BootProc {
	var out []store.BootProc
	for _, s := range r.Survivors {
		if s.State == store.SurvivorRunning {
			out = append(out, s)
		}
	}
	return out
}

func knownOf(ps []store.BootProc) map[int]uint64 {
	m := make(map[int]uint64, len(ps))
	for _, p := range ps {
		if p.State == "" || p.State == store.SurvivorRunning {
			m[p.PID] = p.StartTicks
		}
	}
	return m
}

func hasPID(ps []store.BootProc, pid int) bool {
	for _, p := range ps {
		if p.PID == pid {
			return true
		}
	}
	return false
}

// countLog counts the lines and bytes of a run directory's output.log as
// it is on disk (not through a symlink placed there).
func countLog(dir string) (lines, n int64, err error) {
	if dir == "" {
		return 0, 0, os.ErrNotExist
	}
	f, err := openRegular(filepath.Join(dir, "output.log"))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	buf := make([]byte, 1<<20)
	for {
		k, err := br.Read(buf)
		lines += int64(bytes.Count(buf[:k], []byte{'\n'}))
		n += int64(k)
		if err == io.EOF {
			return lines, n, nil
		}
		if err != nil {
			return lines, n, err
		}
	}
}
