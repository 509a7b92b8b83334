package stacks

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var singleRankRE = regexp.MustCompile(`^(DP|PP|TP|EP|rank)(\d+)$`)

// RankSet prints a set of rank labels compactly with how many of all
// ranked processes it holds: "ranks 0-7 (8/8)" when every label is one
// index of the same kind (TP3, rank3), else "ranks PP2 TP1, PP3 TP1 (2/4)".
func RankSet(ranks []string, total int) string {
	if len(ranks) == 0 {
		return ""
	}
	of := ""
	if total > 0 {
		of = fmt.Sprintf(" (%d/%d)", len(ranks), total)
	}
	kind := ""
	var nums []int
	for _, r := range ranks {
		m := singleRankRE.FindStringSubmatch(r)
		if m == nil || (kind != "" && m[1] != kind) {
			nums = nil
			break
		}
		kind = m[1]
		n, _ := strconv.Atoi(m[2])
		nums = append(nums, n)
	}
	if nums == nil {
		word := "ranks "
		if len(ranks) == 1 {
			word = "rank "
		}
		return word + strings.Join(ranks, ", ") + of
	}
	sort.Ints(nums)
	word := "ranks "
	if len(nums) == 1 {
		word = "rank "
	}
	return word + compactInts(nums) + of
}

// compactInts prints sorted ints as ranges: 0-3,5,7-8.
func compactInts(ns []int) string {
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] <= ns[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ns[i], ns[j]))
		} else {
			parts = append(parts, strconv.Itoa(ns[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

var numRE = regexp.MustCompile(`\d+`)

// sortRanks orders labels naturally: TP2 before TP10.
func sortRanks(rs []string) {
	pad := func(s string) string {
		return numRE.ReplaceAllStringFunc(s, func(n string) string { return fmt.Sprintf("%08s", n) })
	}
	sort.SliceStable(rs, func(i, j int) bool { return pad(rs[i]) < pad(rs[j]) })
}
