package compiles

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/bringup-tool/bringup/ingest/torchtrace"
)

// runSlack is how far apart two traces' time spans may be and still be one
// run: ranks start and stop compiling within minutes of each other.
const runSlack = 10 * 60

// assignRuns sorts the inputs into runs, so that a folder holding several
// runs (several TORCH_TRACE directories, or one directory written twice)
// is not read as one run whose every rank_0 is "rank 0". The files named
// on the command line are one run: the user chose to compare them. Under a
// directory argument:
//   - the files of one directory whose ranks are all known and distinct
//     are one run (that is what TORCH_TRACE=<dir> writes);
//   - otherwise its files are clustered by time: a file joins a run of its
//     directory whose time span overlaps its own (within runSlack) and
//     that has no file of the same rank yet; a file without a rank (one
//     process that never joined a process group) is a run of its own;
//   - runs of different directories with disjoint ranks and overlapping
//     times are one run (one directory per node).
//
// When there is more than one run, each input's Run names its run (the
// directory, "#2" … for later runs of the same directory, the file name for
// a run of one file without a rank); with one run Run stays "".
func assignRuns(inputs []Input, stats map[string]*torchtrace.Stats) {
	type run struct {
		group     string
		members   []int
		ranks     map[int]bool
		from, to  float64
		timed     bool
		allRanked bool
	}
	span := func(i int) (float64, float64, bool) {
		st := stats[inputs[i].Path]
		if st == nil {
			return 0, 0, false
		}
		a, ok1 := glogSeconds(st.FirstTime)
		b, ok2 := glogSeconds(st.LastTime)
		if !ok1 || !ok2 {
			return 0, 0, false
		}
		if b < a { // past the new year: the glog date has no year
			b += 366 * 86400
		}
		return a, b, true
	}
	var groups []string
	byGroup := map[string][]int{}
	for i := range inputs {
		g := inputs[i].group
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], i)
	}
	var runs []*run
	newRun := func(g string) *run {
		r := &run{group: g, ranks: map[int]bool{}, allRanked: true}
		runs = append(runs, r)
		return r
	}
	join := func(r *run, i int) {
		r.members = append(r.members, i)
		if in := inputs[i]; in.Rank >= 0 {
			r.ranks[in.Rank] = true
		} else {
			r.allRanked = false
		}
		if a, b, ok := span(i); ok {
			if !r.timed {
				r.from, r.to, r.timed = a, b, true
			} else {
				r.from, r.to = min(r.from, a), max(r.to, b)
			}
		}
	}
	overlaps := func(r *run, a, b float64) bool {
		return r.timed && a <= r.to+runSlack && r.from <= b+runSlack
	}
	for _, g := range groups {
		idx := byGroup[g]
		distinct := true
		seen := map[int]bool{}
		for _, i := range idx {
			if r := inputs[i].Rank; r < 0 || seen[r] {
				distinct = false
			} else {
				seen[r] = true
			}
		}
		if g == "" || distinct {
			r := newRun(g)
			for _, i := range idx {
				join(r, i)
			}
			continue
		}
		// In time order, files without a time last (they join any run of
		// their directory that lacks their rank: an empty rank file).
		sorted := append([]int(nil), idx...)
		sort.SliceStable(sorted, func(x, y int) bool {
			a, _, okA := span(sorted[x])
			b, _, okB := span(sorted[y])
			if okA != okB {
				return okA
			}
			return a < b
		})
		first := len(runs)
		for _, i := range sorted {
			rank := inputs[i].Rank
			a, b, timed := span(i)
			var into *run
			for _, r := range runs[first:] {
				if rank < 0 {
					break // a file without a rank is a process of its own
				}
				if rank >= 0 && r.ranks[rank] {
					continue
				}
				if timed && overlaps(r, a, b) || !timed && r.allRanked {
					into = r
					break
				}
			}
			if into == nil {
				into = newRun(g)
			}
			join(into, i)
		}
	}
	// One directory per node: runs with disjoint ranks at the same time.
	for i := 0; i < len(runs); i++ {
		for j := i + 1; j < len(runs); j++ {
			a, b := runs[i], runs[j]
			if a.group == b.group || a.group == "" || b.group == "" || !a.allRanked || !b.allRanked ||
				!a.timed || !b.timed || !overlaps(a, b.from, b.to) {
				continue
			}
			disjoint := true
			for r := range b.ranks {
				if a.ranks[r] {
					disjoint = false
					break
				}
			}
			if !disjoint {
				continue
			}
			for _, m := range b.members {
				join(a, m)
			}
			runs = append(runs[:j], runs[j+1:]...)
			j--
		}
	}
	if len(runs) < 2 {
		return
	}
	// Names: the directory (relative to the argument), "#N" for later runs
	// of the same one, the file name for a lone file without a rank.
	used := map[string]int{}
	for _, r := range runs {
		in := inputs[r.members[0]]
		name := in.groupName
		if len(r.members) == 1 && in.Rank < 0 {
			name = filepath.Base(in.Path)
		}
		if name == "" {
			name = "given files"
		}
		used[name]++
		if n := used[name]; n > 1 {
			name += " #" + strconv.Itoa(n)
		}
		for _, m := range r.members {
			inputs[m].Run = name
		}
	}
}

// glogSeconds reads a glog "MMDD HH:MM:SS.uuuuuu" time as seconds since
// the start of a year (glog prints no year).
func glogSeconds(s string) (float64, bool) {
	var mo, d, h, mi int
	var sec float64
	if n, err := fmt.Sscanf(s, "%2d%2d %d:%d:%f", &mo, &d, &h, &mi, &sec); err != nil || n != 5 || mo < 1 || mo > 12 ||
		d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || !(sec >= 0 && sec < 61) {
		return 0, false
	}
	return float64(((mo-1)*31+d-1)*86400+h*3600+mi*60) + sec, true
}

// runInputs lists the inputs per run, runs in input order.
func runInputs(res *Result) (names []string, by map[string][]Input) {
	by = map[string][]Input{}
	for _, in := range res.Inputs {
		if _, ok := by[in.Run]; !ok {
			names = append(names, in.Run)
		}
		by[in.Run] = append(by[in.Run], in)
	}
	return names, by
}
