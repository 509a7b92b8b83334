package record

import (
	"regexp"
	"strconv"
	"testing"
)

func TestParseRankComponent(t *testing.T) {
	cases := []struct {
		tok  string
		ok   bool
		want string
	}{
		{"TP3", true, "TP3"}, {"DP0", true, "DP0"}, {"PP1", true, "PP1"}, {"EP2", true, "EP2"},
		{"PCP1", true, ""}, {"TP", false, ""}, {"3", false, ""}, {"Tp3", false, ""}, {"TP3x", false, ""}, {"XX1", false, ""},
	}
	for _, c := range cases {
		r := NoRank
		ok := ParseRankComponent(c.tok, &r)
		r2 := NoRank
		ok2 := ParseRankComponent([]byte(c.tok), &r2)
		if ok != c.ok || r.Key() != c.want || ok2 != ok || r2 != r {
			t.Errorf("%q: %v %q (bytes %v %q), want %v %q", c.tok, ok, r.Key(), ok2, r2.Key(), c.ok, c.want)
		}
	}
}

func TestScanRankTokens(t *testing.T) {
	cases := []struct{ s, want string }{
		{"sglang::scheduler_PP2_TP1", "PP2 TP1"},
		{"VLLM::Worker_TP3", "TP3"},
		{"rank3", "rank3"},
		{"dump_rank-3.txt", "rank3"},
		{"worker_TP6.log", "TP6"},
		{"xTP3", ""},
		{"TP1DP2", "TP1"},
		{"TP_=3", ""},
		{"TP99999999999", ""},
		{"DP0 TP7", "DP0 TP7"},
	}
	for _, c := range cases {
		r := NoRank
		found := ScanRankTokens(c.s, &r)
		if r.Key() != c.want || found != (c.want != "") {
			t.Errorf("%q: %q %v, want %q", c.s, r.Key(), found, c.want)
		}
	}
}

// The regular expression ScanRankTokens replaced: the scanner must agree
// with it on any input.
var rankTokRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9])(DP|PP|TP|EP|rank|RANK|Rank)[_=-]?(\d+)`)

func scanByRegexp(s string, r *Rank) bool {
	found := false
	for _, m := range rankTokRE.FindAllStringSubmatch(s, -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil || n > 1<<20 {
			continue
		}
		found = true
		*rankIndex(r, m[1]) = n
	}
	return found
}

func FuzzScanRankTokens(f *testing.F) {
	for _, s := range []string{"sglang::scheduler_PP2_TP1", "dump_rank-3.txt", "a-TP1_DP2 rank=7", "TP_-3", "EP00001", "RANK9999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, b := NoRank, NoRank
		fa, fb := ScanRankTokens(s, &a), scanByRegexp(s, &b)
		if a != b || fa != fb {
			t.Fatalf("%q: scanner %+v %v, regexp %+v %v", s, a, fa, b, fb)
		}
	})
}
