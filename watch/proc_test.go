package watch

import (
	"os"
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
