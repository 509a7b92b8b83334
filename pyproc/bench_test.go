package pyproc

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bringup-tool/bringup/testsupport/cputime"
	"github.com/bringup-tool/bringup/testsupport/pyenv"
)

// startTargets starts 8 targets, two per installed CPython (round-robin
// over what exists), each optionally with a thread spinning in Python.
func startTargets(b *testing.B, spin bool) []int {
	var pythons []string
	for _, m := range testedMinors {
		if py := pyenv.Python(m); py != "" {
			pythons = append(pythons, py)
		}
	}
	if len(pythons) == 0 {
		b.Skip("no CPython 3.10+ under pyenv")
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "target.py"))
	var pids []int
	var args []string
	if spin {
		args = append(args, "--spin")
	}
	for i := 0; i < 8; i++ {
		cmd, _ := startTargetAt(b, pythons[i%len(pythons)], script, args...)
		pids = append(pids, cmd.Process.Pid)
	}
	return pids
}

// BenchmarkCapture8 captures 8 live processes (one op = all 8), sequentially
// and in parallel. While it runs, a watcher samples every target thread's
// state in /proc: "stopped-samples" counts samples in state t/T (stopped or
// traced), which must stay 0; "target-cpu" is how many CPUs' worth of time
// the targets burned meanwhile (they keep running: the spinner threads take
// what the two cores leave).
//
// Targets are "blocked" (every thread parked, like a hung engine) or
// "spinning" (one thread per target always running Python, like a slow
// one; its stack changes while it is read). "reads/op" counts
// process_vm_readv calls and "cpu-ms/op" this process's CPU time, both
// meaningful on a loaded machine where wall time is not.
func BenchmarkCapture8(b *testing.B) {
	for _, kind := range []string{"blocked", "spinning"} {
		b.Run(kind, func(b *testing.B) {
			pids := startTargets(b, kind == "spinning")
			for _, mode := range []string{"sequential", "parallel"} {
				b.Run(mode, func(b *testing.B) { benchCapture(b, pids, mode == "parallel", false) })
			}
			// cold: no parsed ELF files or thread-name anchors kept between
			// ops, as in a one-shot `bringup stacks --pid` run.
			b.Run("cold-sequential", func(b *testing.B) { benchCapture(b, pids, false, true) })
		})
	}
}

func benchCapture(b *testing.B, pids []int, parallel, cold bool) {
	var stopped, samples atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			for _, pid := range pids {
				for _, st := range taskStates(pid) {
					samples.Add(1)
					if st == 't' || st == 'T' {
						stopped.Add(1)
					}
				}
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	if !parallel {
		// Pin the capturing goroutine so its OS thread's CPU time is the
		// capture's alone (the watcher runs elsewhere).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	cpu0 := cpuTicks(pids)
	reads0 := processReads.Load()
	self0 := cputime.Used(cputime.Self)
	thread0 := cputime.Used(cputime.Thread)
	start := time.Now()
	frames := 0
	b.ResetTimer()
	for b.Loop() {
		procs := captureAll(b, pids, parallel)
		frames = 0
		for _, p := range procs {
			for _, th := range p.Threads {
				frames += len(th.Frames)
			}
		}
	}
	b.StopTimer()
	threadUsed := cputime.Used(cputime.Thread) - thread0
	wall := time.Since(start).Seconds()
	close(done)
	wg.Wait()
	b.ReportMetric(float64(stopped.Load()), "stopped-samples")
	b.ReportMetric(float64(samples.Load()), "state-samples")
	b.ReportMetric(float64(cpuTicks(pids)-cpu0)/100/wall, "target-cpu")
	b.ReportMetric(float64(frames), "frames/op")
	b.ReportMetric(float64(processReads.Load()-reads0)/float64(b.N), "reads/op")
	b.ReportMetric((cputime.Used(cputime.Self)-self0).Seconds()*1000/float64(b.N), "cpu-ms/op")
	if !parallel {
		b.ReportMetric(threadUsed.Seconds()*1000/float64(b.N), "capture-cpu-ms/op")
	}
}

func captureAll(b *testing.B, pids []int, parallel bool) []*Process {
	out := make([]*Process, len(pids))
	errs := make([]error, len(pids))
	if parallel {
		var wg sync.WaitGroup
		for i, pid := range pids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[i], errs[i] = Capture(pid)
			}()
		}
		wg.Wait()
	} else {
		for i, pid := range pids {
			out[i], errs[i] = Capture(pid)
		}
	}
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// taskStates returns the state letter of each thread of pid.
func taskStates(pid int) []byte {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, _ := os.ReadDir(dir)
	var out []byte
	for _, e := range ents {
		data, err := os.ReadFile(dir + "/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			out = append(out, s[i+2])
		}
	}
	return out
}

// cpuTicks sums utime+stime (clock ticks) of the processes.
func cpuTicks(pids []int) int64 {
	var sum int64
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 13 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			k, _ := strconv.ParseInt(f[12], 10, 64)
			sum += u + k
		}
	}
	return sum
}

func dropCaches() {
	binCacheMu.Lock()
	binCache = map[string]*binaryInfo{}
	binCacheMu.Unlock()
	activeCache.Clear()
}

// BenchmarkCaptureBusy captures testdata/busy.py (the main thread at the
// end of a 30-deep chain, spinning in one loop that calls and returns; a
// blocked thread named "helper") once per op, per installed CPython.
// "tries/op" is how many reads of the busy thread's chain a capture took
// (1 when the first read and its re-check agreed), "partial/op" the share
// of captures that never settled, "capture-cpu-ms/op" this process's CPU
// time per capture (ns/op is wall time, which a loaded machine inflates).
func BenchmarkCaptureBusy(b *testing.B) {
	for _, minor := range testedMinors {
		b.Run(minor, func(b *testing.B) {
			py := pyenv.Python(minor)
			if py == "" {
				b.Skipf("CPython %s is not installed under pyenv", minor)
			}
			script, _ := filepath.Abs(filepath.Join("testdata", "busy.py"))
			cmd, _ := startTargetAt(b, py, script)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tries, partial := 0, 0
			thread0 := cputime.Used(cputime.Thread)
			b.ResetTimer()
			for b.Loop() {
				p, err := Capture(cmd.Process.Pid)
				if err != nil {
					b.Fatal(err)
				}
				for _, th := range p.Threads {
					if th.Main {
						tries += th.Tries
						if th.Partial {
							partial++
						}
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(tries)/float64(b.N), "tries/op")
			b.ReportMetric(float64(partial)/float64(b.N), "partial/op")
			b.ReportMetric((cputime.Used(cputime.Thread)-thread0).Seconds()*1000/float64(b.N), "capture-cpu-ms/op")
		})
	}
}
