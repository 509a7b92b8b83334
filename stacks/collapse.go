package stacks

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/record"
)

// Recursion collapse (stack-dumps.md §6.4): a block of Period frames that
// repeats Repeat ≥ MinRepeat times in a row becomes one Segment. The
// Inductor implicit-fallback hang nests ExternKernel.__str__ to a depth
// that differs per rank and per snapshot; without this no two ranks would
// ever share a bucket.

const (
	MaxPeriod = 8 // longest recursion cycle looked for
	MinRepeat = 3 // fewest repetitions that count as recursion
)

// Segment is one frame, or a block of frames repeated Repeat times.
type Segment struct {
	// Frames is the block as first seen (innermost first), with files
	// normalised to their package-relative form.
	Frames []record.Frame
	Keys   []Key
	// Funcs lists, per block position, every distinct function name seen
	// there (qualified names can differ where co_name does not:
	// ExternKernel.__str__ vs MutableBox.__str__).
	Funcs  [][]string
	Repeat int // 1 for a plain frame
	// RepeatMin and RepeatMax span Repeat over a bucket's members.
	RepeatMin, RepeatMax int
	// LineVaries is set when members of a bucket disagree on a line.
	LineVaries bool
	// Cycle is set when one key repeats but the qualified names inside
	// follow a longer cycle, as live captures show the Inductor recursion
	// (ExternKernel.__str__ → MutableBox.__str__ → MutableBox.__str__):
	// the names of one cycle, innermost first, and how many cycles
	// (CyclesMin–CyclesMax over a bucket).
	Cycle                []string
	Cycles               int
	CyclesMin, CyclesMax int
	// Region: an irregular recursion inside one file (repeated blocks
	// with other frames of the same file between them) folded at funcs
	// level and coarser; Repeat counts its frames and Funcs[0] lists the
	// functions seen in it; Members says, per function (innermost first),
	// how many of the region's frames it is and at which line.
	Region  bool
	Members []RegionFunc
}

// RegionFunc is one function of a folded recursion region: its name (the
// qualified name first seen), file, the line of its innermost frame,
// how many of the region's frames it is, and whether its frames are at
// different lines.
type RegionFunc struct {
	Func       string `json:"func"`
	File       string `json:"file"`
	Line       int    `json:"line"`
	Count      int    `json:"count"`
	CountMax   int    `json:"count_max,omitempty"` // over a bucket's members, when it differs
	LineVaries bool   `json:"line_varies,omitempty"`
}

// Collapsed is a stack with its recursion folded, innermost first.
type Collapsed []Segment

// Depth is the number of frames the collapsed stack stands for.
func (c Collapsed) Depth() int {
	n := 0
	for _, s := range c {
		n += len(s.Frames) * s.Repeat
	}
	return n
}

// Collapse folds tandem repeats of frame keys, greedily taking at each
// position the period that covers the most frames (the shortest on ties).
func Collapse(frames record.Stack, n *normalizer) Collapsed {
	keys := make([]Key, len(frames))
	ids := make([]int, len(frames))
	intern := map[Key]int{}
	norm := make([]record.Frame, len(frames))
	for i, f := range frames {
		keys[i] = n.key(f)
		id, ok := intern[keys[i]]
		if !ok {
			id = len(intern)
			intern[keys[i]] = id
		}
		ids[i] = id
		norm[i] = record.Frame{Func: f.Func, File: keys[i].File, Line: f.Line, Native: f.Native}
	}
	var out Collapsed
	for i := 0; i < len(ids); {
		bestP, bestK := 0, 0
		for p := 1; p <= MaxPeriod && i+p*MinRepeat <= len(ids); p++ {
			k := 1
			for i+(k+1)*p <= len(ids) && equalInts(ids[i:i+p], ids[i+k*p:i+(k+1)*p]) {
				k++
			}
			if k >= MinRepeat && p*k > bestP*bestK {
				bestP, bestK = p, k
			}
		}
		plain := 0
		switch {
		case bestK == 0:
			plain = 1
		case innermostOwnLines(norm[i:i+bestP*bestK], bestP):
			// The innermost repetition is at lines of its own (the
			// leaf that sleeps or spins at another line than the one
			// that recurses): its frames stay frames and the recursion
			// is folded from the next repetition, so no level hides the
			// line the recursion ended at.
			plain = bestP
		}
		if plain > 0 {
			for j := i; j < i+plain; j++ {
				out = append(out, Segment{Frames: norm[j : j+1], Keys: keys[j : j+1], Funcs: [][]string{{norm[j].Func}}, Repeat: 1, RepeatMin: 1, RepeatMax: 1})
			}
			i += plain
			continue
		}
		seg := Segment{Frames: norm[i : i+bestP], Keys: keys[i : i+bestP], Repeat: bestK, RepeatMin: bestK, RepeatMax: bestK}
		seg.Funcs = make([][]string, bestP)
		for r := 0; r < bestK; r++ {
			for j := 0; j < bestP; j++ {
				if norm[i+r*bestP+j].Line != norm[i+j].Line {
					seg.LineVaries = true
				}
				fn := norm[i+r*bestP+j].Func
				if !slices.Contains(seg.Funcs[j], fn) {
					seg.Funcs[j] = append(seg.Funcs[j], fn)
				}
			}
		}
		for j := range seg.Funcs {
			sort.Strings(seg.Funcs[j])
		}
		if bestP == 1 && len(seg.Funcs[0]) > 1 {
			names := make([]string, bestK)
			for r := range names {
				names[r] = norm[i+r].Func
			}
			if q := minCycle(names); q > 1 {
				seg.Cycle = names[:q]
				seg.Cycles = (bestK + q - 1) / q
				seg.CyclesMin, seg.CyclesMax = seg.Cycles, seg.Cycles
			}
		}
		out = append(out, seg)
		i += bestP * bestK
	}
	return out
}

// minCycle is the shortest period q ≤ MaxPeriod with names[i] ==
// names[i%q] throughout (a partial last cycle allowed); 0 when none.
func minCycle(names []string) int {
	for q := 2; q <= MaxPeriod && q*2 <= len(names); q++ {
		ok := true
		for i := q; i < len(names); i++ {
			if names[i] != names[i%q] {
				ok = false
				break
			}
		}
		if ok {
			return q
		}
	}
	return 0
}

// CycleLabel prints a cycle compactly: "ExternKernel.__str__ → MutableBox.__str__ ×2".
func CycleLabel(cycle []string) string {
	var parts []string
	for i := 0; i < len(cycle); {
		j := i
		for j+1 < len(cycle) && cycle[j+1] == cycle[i] {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%s ×%d", cycle[i], j-i+1))
		} else {
			parts = append(parts, cycle[i])
		}
		i = j + 1
	}
	return strings.Join(parts, " → ")
}

// innermostOwnLines: of a recursion's repetitions of p frames (innermost
// first), the first is at other lines than the second and every later
// one at the second's: the innermost is the odd one out, not a cycle of
// lines.
func innermostOwnLines(run []record.Frame, p int) bool {
	differs := false
	for j := 0; j < p; j++ {
		differs = differs || run[j].Line != run[p+j].Line
	}
	if !differs {
		return false
	}
	for r := 2 * p; r < len(run); r += p {
		for j := 0; j < p; j++ {
			if run[r+j].Line != run[p+j].Line {
				return false
			}
		}
	}
	return true
}

func equalInts(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuncLabel is how a block position's function is shown: the one name,
// or the shared method name with its classes, "{ExternKernel,MutableBox}.__str__".
func FuncLabel(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	var classes []string
	method := ""
	for _, n := range names {
		i := strings.LastIndexByte(n, '.')
		if i < 0 {
			classes = append(classes, "")
			method = n
			continue
		}
		classes = append(classes, n[:i])
		method = n[i+1:]
	}
	var cl []string
	for _, c := range classes {
		if c != "" && !slices.Contains(cl, c) {
			cl = append(cl, c)
		}
	}
	if len(cl) == 0 {
		return method
	}
	return "{" + strings.Join(cl, ",") + "}." + method
}

// leafTrim drops the innermost frames that sit inside a recursion, before
// its first full repetition: where a sample lands inside the cycle
// (str_helper, textwrap.indent, a partial block) is noise when comparing
// ranks at funcs level. Only frames whose file belongs to the recursion or
// to the standard library are dropped.
func leafTrim(c Collapsed) (Collapsed, int) {
	first := -1
	for i, s := range c {
		if s.Repeat > 1 {
			first = i
			break
		}
	}
	if first <= 0 {
		return c, 0
	}
	files := map[string]bool{}
	for _, k := range c[first].Keys {
		files[k.File] = true
	}
	limit := 2*len(c[first].Keys) + 2
	if first > limit {
		return c, 0
	}
	for _, s := range c[:first] {
		for _, k := range s.Keys {
			if !files[k.File] && strings.ContainsRune(k.File, '/') {
				return c, 0
			}
		}
	}
	return c[first:], first
}

// coarse is the form compared at funcs level and coarser: the sampled
// leaf inside a recursion trimmed, irregular recursions folded.
func coarse(c Collapsed) Collapsed {
	c, _ = leafTrim(c)
	return regionize(c)
}

// regionize folds a run of segments that all lie in one Python file and
// hold at least two repeated blocks into one Region segment (the second
// collapse pass of stack-dumps.md §6.4, "then on file only"): real
// Inductor IR printing recurses through __str__, str_helper, inner_fn_str
// and comprehensions irregularly, so the exact blocks differ per rank
// while the region does not. The region runs from the run's innermost
// repeated block to its outermost one: plain frames of the same file
// outside them (the caller that started the recursion, a <module>, the
// leaf the recursion reached) stay frames of their own.
func regionize(c Collapsed) Collapsed {
	var out Collapsed
	for i := 0; i < len(c); {
		file, ok := segFile(c[i])
		if !ok || c[i].Repeat < 2 {
			out = append(out, c[i])
			i++
			continue
		}
		// c[i] is a repeated block: extend to the last repeated block of
		// the same-file run.
		j, last, repeats := i, i, 0
		for j < len(c) {
			f, ok2 := segFile(c[j])
			if !ok2 || f != file {
				break
			}
			if c[j].Repeat > 1 {
				repeats++
				last = j
			}
			j++
		}
		if repeats < 2 {
			out = append(out, c[i])
			i++
			continue
		}
		out = append(out, region(c[i:last+1]))
		i = last + 1
	}
	return out
}

// region folds segments of one file into one Region segment.
func region(segs Collapsed) Segment {
	reg := Segment{Region: true, Funcs: [][]string{nil}}
	seen := map[Key]bool{}
	member := map[string]int{} // qualified name -> index in Members
	for _, s := range segs {
		reg.Repeat += len(s.Frames) * s.Repeat
		for k, key := range s.Keys {
			if !seen[key] {
				seen[key] = true
				reg.Keys = append(reg.Keys, key)
				reg.Frames = append(reg.Frames, s.Frames[k])
			}
			for _, fn := range s.Funcs[k] {
				if !slices.Contains(reg.Funcs[0], fn) {
					reg.Funcs[0] = append(reg.Funcs[0], fn)
				}
			}
			name := FuncLabel(s.Funcs[k])
			mi, ok := member[name]
			if !ok {
				mi = len(reg.Members)
				member[name] = mi
				reg.Members = append(reg.Members, RegionFunc{Func: name, File: s.Frames[k].File, Line: s.Frames[k].Line})
			}
			m := &reg.Members[mi]
			m.Count += s.Repeat
			if m.Line != s.Frames[k].Line || (s.Repeat > 1 && s.LineVaries) {
				m.LineVaries = true
			}
		}
	}
	sort.Strings(reg.Funcs[0])
	reg.RepeatMin, reg.RepeatMax = reg.Repeat, reg.Repeat
	reg.LineVaries = true
	return reg
}

// segFile is the one Python file all frames of a segment are in.
func segFile(s Segment) (string, bool) {
	file := ""
	for i, k := range s.Keys {
		if s.Frames[i].Native {
			return "", false
		}
		if file == "" {
			file = k.File
		} else if k.File != file {
			return "", false
		}
	}
	return file, file != ""
}
