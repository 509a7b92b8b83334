package record

import (
	"fmt"
	"strings"
	"testing"
)

// keyByFormat is Key as it was written first, with fmt: the reference the
// strconv version must equal.
func keyByFormat(r Rank) string {
	var parts []string
	for _, p := range []struct {
		name string
		n    int
	}{{"DP", r.DP}, {"PP", r.PP}, {"TP", r.TP}, {"EP", r.EP}, {"rank", r.Global}} {
		if p.n >= 0 {
			parts = append(parts, fmt.Sprintf("%s%d", p.name, p.n))
		}
	}
	return strings.Join(parts, " ")
}

func TestRankKeyAndString(t *testing.T) {
	vals := []int{-1, 0, 7, 15, 123456789}
	for _, dp := range vals {
		for _, pp := range vals[:3] {
			for _, tp := range vals {
				for _, ep := range vals[:2] {
					for _, g := range vals {
						r := Rank{DP: dp, PP: pp, TP: tp, EP: ep, Global: g}
						if got, want := r.Key(), keyByFormat(r); got != want {
							t.Fatalf("%+v: Key %q, want %q", r, got, want)
						}
					}
				}
			}
		}
	}
	none := Rank{DP: -1, PP: -1, TP: -1, EP: -1, Global: -1}
	for _, c := range []struct {
		r    Rank
		want string
	}{
		{none, ""},
		{Rank{DP: 0, PP: -1, TP: 3, EP: -1, Global: -1}, "DP0 TP3"},
		{Rank{Role: "EngineCore", DP: 0, PP: -1, TP: -1, EP: -1, Global: -1}, "EngineCore DP0"},
		{Rank{Role: "Worker", DP: -1, PP: -1, TP: -1, EP: -1, Global: -1, PID: 4242}, "Worker pid 4242"},
		{Rank{DP: -1, PP: -1, TP: -1, EP: -1, Global: -1, PID: 4242}, "pid 4242"},
		{Rank{Role: "Worker", DP: -1, PP: -1, TP: -1, EP: -1, Global: -1}, "Worker"},
		{Rank{Role: "Worker", DP: -1, PP: -1, TP: -1, EP: -1, Global: 2}, "rank2"},
	} {
		if got := c.r.String(); got != c.want {
			t.Errorf("%+v: String %q, want %q", c.r, got, c.want)
		}
	}
}

func BenchmarkRankString(b *testing.B) {
	r := Rank{Role: "VllmWorker", DP: 1, PP: -1, TP: 3, EP: -1, Global: -1, PID: 77}
	for i := 0; i < b.N; i++ {
		_ = r.String()
	}
}
