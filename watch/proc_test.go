package watch

import (
	"os"
	"os/exec"
	"testing"
)

// BenchmarkProcTable is one pass of the 200 ms process-tree scan over
// this machine's /proc (bringup watch pays it five times a second).
//
//	go test -run XXX -bench ProcTable ./watch
func BenchmarkProcTable(b *testing.B) {
	n := 0
	for i := 0; i < b.N; i++ {
		n = len(procTable())
	}
	b.ReportMetric(float64(n), "procs")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*max(n, 1)), "ns/proc")
}

// The table holds this process with its parent, and reading the stat of
// a pid that does not exist fails.
func TestProcTable(t *testing.T) {
	tab := procTable()
	self, ok := tab[os.Getpid()]
	if !ok || self.PPID != os.Getppid() || self.Comm == "" || self.Start == 0 {
		t.Fatalf("own entry %+v (present %v) in a table of %d", self, ok, len(tab))
	}
	if _, err := readStat(1 << 30); err == nil {
		t.Error("stat of a pid that cannot exist read")
	}
}

// The scanner reads a process found outside the tree only on full scans,
// reads every new process and every process of the tree each time.
func TestTreeScannerSkipsOutsiders(t *testing.T) {
	var s treeScanner
	tab := s.table() // full
	self := os.Getpid()
	if _, ok := tab[self]; !ok {
		t.Fatal("first scan is not full")
	}
	s.settle(tab, []int{self})
	// The processes outside the tree at the first scan: a partial scan
	// must not read one of them again (one that exited and whose pid was
	// reused is still skipped, so other processes coming and going on a
	// busy machine cannot fail this).
	outside := map[int]bool{}
	for pid := range tab {
		if pid != self {
			outside[pid] = true
		}
	}
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start sleep:", err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	for i := 1; i < fullScanEvery; i++ {
		tab = s.table()
		if _, ok := tab[self]; !ok {
			t.Fatalf("scan %d: the tree's process was not read", i)
		}
		if _, ok := tab[cmd.Process.Pid]; !ok {
			t.Fatalf("scan %d: a process new since the last scan was not read", i)
		}
		for pid := range tab {
			if outside[pid] {
				t.Errorf("scan %d read pid %d again, outside the tree since the first scan", i, pid)
			}
		}
		s.settle(tab, []int{self, cmd.Process.Pid})
	}
	tab = s.table()
	for _, pid := range []int{1, os.Getppid()} {
		if _, ok := tab[pid]; !ok && outside[pid] {
			t.Errorf("scan %d (full) did not read pid %d, outside the tree and alive", fullScanEvery, pid)
		}
	}
}
