package stacks

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/record"
)

// Options tune Analyze.
type Options struct {
	Level Level
	// Conclude turns the analysis's signals into findings; the rules
	// engine provides it (see Conclude in rules.go). Nil: no findings.
	Conclude func([]Signal) []record.Finding
}

// Member is one thread in a bucket.
type Member struct {
	PID      int    `json:"pid"`
	Rank     string `json:"rank,omitempty"`
	TID      uint64 `json:"tid"`
	Name     string `json:"name,omitempty"`
	State    string `json:"state,omitempty"`
	Primary  bool   `json:"primary,omitempty"`
	Path     string `json:"path,omitempty"`
	Line     int    `json:"line,omitempty"`
	Depth    int    `json:"depth"`
	Snapshot int    `json:"snapshot,omitempty"`
}

// Frame is a frame of a collapsed stack as output: a frame of a repeated
// block carries Repeat (its fewest repetitions over the bucket),
// RepeatMax and Period (the block length).
type Frame struct {
	Func       string `json:"func"`
	File       string `json:"file"`
	Line       int    `json:"line"`
	Native     bool   `json:"native,omitempty"`
	Repeat     int    `json:"repeat"`
	RepeatMax  int    `json:"repeat_max,omitempty"`
	Period     int    `json:"period,omitempty"`
	LineVaries bool   `json:"line_varies,omitempty"`
	// Cycle: the qualified names of one cycle of a recursion whose frames
	// share one key; Repeat then counts cycles and Frames frames.
	Cycle  []string `json:"cycle,omitempty"`
	Frames int      `json:"frames,omitempty"`
	// Region: an irregular recursion in one file folded at funcs level;
	// Func lists its functions, Repeat (to RepeatMax) counts its frames,
	// Members gives each function with its frame count and line.
	Region  bool         `json:"region,omitempty"`
	Members []RegionFunc `json:"members,omitempty"`
}

// Bucket is the threads whose stacks are alike at the analysis level.
type Bucket struct {
	ID      int      `json:"id"`
	Count   int      `json:"count"`
	Ranks   []string `json:"ranks"`
	RankSet string   `json:"rank_set"` // "ranks 0-7 (8/8)"
	PIDs    []int    `json:"pids"`
	Threads []Member `json:"threads"`
	Frames  []Frame  `json:"frames"`
	// Leaf: at funcs level and coarser, the innermost frames that sit
	// inside a recursion before its first full repetition (where a sample
	// landed: str_helper, textwrap.indent) are not compared, so members
	// differ there; Leaf is them, innermost first, as the bucket's first
	// member shows them (above Frames[0]).
	Leaf   []Frame  `json:"leaf,omitempty"`
	States []string `json:"states,omitempty"`
	// Primary: the bucket holds a process's main (or busiest) thread.
	Primary bool `json:"primary"`
	// Benign: idle auxiliary threads, folded last.
	Benign    bool      `json:"benign"`
	Truncated bool      `json:"truncated,omitempty"`
	Partial   bool      `json:"partial,omitempty"`
	Rules     []string  `json:"rules,omitempty"`
	Stack     Collapsed `json:"-"`
	firstSeen int
	sig       string
}

// Shared is what all ranks' primary threads have in common.
type Shared struct {
	Processes int     `json:"processes"`
	RootPath  []Frame `json:"root_path"` // outermost first
	LeafPath  []Frame `json:"leaf_path"` // innermost first
	// Diverge lists, when the primary stacks differ, the groups that leave
	// the shared root path and the first frame each group takes.
	Diverge []Branch `json:"diverge,omitempty"`
}

// Branch is one group of ranks after the shared root path.
type Branch struct {
	RankSet string   `json:"rank_set"`
	Ranks   []string `json:"ranks"`
	PIDs    []int    `json:"pids"`
	Frame   *Frame   `json:"frame,omitempty"` // nil: the stack ends at the shared path
	Bucket  int      `json:"bucket"`          // the group's first (largest) bucket
	// Buckets lists every bucket the group's threads are in, when more than
	// one (threads that take the same next frame can differ further in).
	Buckets []int `json:"buckets,omitempty"`
	// Unranked are the group's pids with no known rank (RankSet names only
	// the ranked ones).
	Unranked []int `json:"unranked_pids,omitempty"`
}

// Outlier is a rank whose primary thread is elsewhere than the majority's:
// with 7 ranks in a collective and 1 rank computing, the 1 is the culprit.
type Outlier struct {
	Rank     string `json:"rank,omitempty"`
	PID      int    `json:"pid"`
	Bucket   int    `json:"bucket"`
	Majority int    `json:"majority_bucket"`
	Leaf     string `json:"leaf"`
	Why      string `json:"why"`
}

// Analysis is everything bringup concludes from a set of dumps.
type Analysis struct {
	Level     Level
	Processes []*Process // every input process, all snapshots
	Current   []*Process // the latest snapshot of each process
	RankTotal int        // ranked processes in Current
	Buckets   []*Bucket
	Shared    Shared
	Outliers  []Outlier
	Progress  []Progress
	// Where is the headline: where the workers are (Verdict prints it).
	Where    Where
	Signals  []Signal
	Findings []record.Finding
	// Warnings are the readers' skipped input, carried for the report.
	Warnings []Warning
	// Interleaved lists inputs whose processes' output was mixed inside
	// lines and could not be read.
	Interleaved []Warning

	infos []*threadInfo
}

// threadInfo is one thread with its derived keys.
type threadInfo struct {
	proc    *Process
	t       *Thread
	c       Collapsed
	keys    []Key
	primary bool
	benign  bool
	bucket  *Bucket
}

// Analyze buckets the threads of the latest snapshot of every process,
// finds the path the ranks share and the outliers, judges stuck versus
// slow from repeated snapshots, and asks opt.Conclude for findings.
func Analyze(procs []*Process, opt Options) *Analysis {
	a := &Analysis{Level: opt.Level, Processes: procs}
	numberSnapshots(procs)
	a.Current = latest(procs)
	norm := newNormalizer(procs)
	for _, p := range procs {
		p.Role = roleOf(p, norm)
	}

	var infos []*threadInfo
	for _, p := range a.Current {
		if p.Rank != "" {
			a.RankTotal++
		}
		pi := analyzeProcess(p, norm)
		infos = append(infos, pi...)
	}

	a.Buckets = bucketize(infos, opt.Level, a.RankTotal)
	a.Shared = shared(infos, a)
	a.Outliers = outliers(infos, a)
	a.Progress = progress(procs, norm)
	a.Signals = signals(infos, a)
	a.infos = infos
	a.Conclude(opt.Conclude)
	return a
}

// Conclude turns the signals into findings with conclude (nil: none) and
// computes the headline (Where) from them. Analyze calls it; a caller
// that learns the run's versions later (diagnose reads the torch version
// from the log) calls it again with stacks.Conclude(set, versions) so
// the findings and the headline agree with the versions.
func (a *Analysis) Conclude(conclude func([]Signal) []record.Finding) {
	a.Findings = nil
	for _, b := range a.Buckets {
		b.Rules = nil
	}
	for _, s := range a.Signals {
		clear(s.anchors)
	}
	if conclude != nil {
		a.Findings = conclude(a.Signals)
		for _, f := range a.Findings {
			for _, b := range a.Buckets {
				if bucketHasEvidence(b, f) && !slices.Contains(b.Rules, f.Rule) {
					b.Rules = append(b.Rules, f.Rule)
				}
			}
		}
	}
	a.Where = where(a, a.infos, anchorHits(a))
}

// anchorHit is a signature that matched one thread, with the frame it
// names.
type anchorHit struct {
	ti          *threadInfo
	rule, title string
	frame       *Frame
}

// anchorHits lists, most important finding first, every thread a
// finding's rule matched with the frame the rule names.
func anchorHits(a *Analysis) []anchorHit {
	var out []anchorHit
	for _, f := range a.Findings {
		for _, s := range a.Signals {
			i, ok := s.anchors[f.Rule]
			if !ok || s.ti == nil || i >= len(s.Frames) {
				continue
			}
			fr := s.Frames[i]
			out = append(out, anchorHit{ti: s.ti, rule: f.Rule, title: f.Title,
				frame: &Frame{Func: fr.Func, File: fr.File, Line: fr.Line, Native: fr.Native}})
		}
	}
	return out
}

func bucketHasEvidence(b *Bucket, f record.Finding) bool {
	for _, e := range f.Evidence {
		for _, m := range b.Threads {
			if e.Path == m.Path && e.Line == m.Line {
				return true
			}
		}
	}
	return false
}

// numberSnapshots numbers repeated dumps of one pid in input order, unless
// the producer already did.
func numberSnapshots(procs []*Process) {
	seen := map[procKey]int{}
	numbered := false
	for _, p := range procs {
		if p.Snapshot > 0 {
			numbered = true
		}
	}
	if numbered {
		return
	}
	for _, p := range procs {
		if p.PID <= 0 {
			continue
		}
		p.Snapshot = seen[keyOf(p)]
		seen[keyOf(p)]++
	}
}

// procKey identifies one process across snapshots: its pid, and its rank
// when known (pids repeat across the nodes of a multi-node job).
type procKey struct {
	pid  int
	rank string
}

func keyOf(p *Process) procKey { return procKey{p.PID, p.Rank} }

func latest(procs []*Process) []*Process {
	last := map[procKey]*Process{}
	for _, p := range procs {
		if p.PID > 0 {
			if old := last[keyOf(p)]; old == nil || p.Snapshot >= old.Snapshot {
				last[keyOf(p)] = p
			}
		}
	}
	var out []*Process
	for _, p := range procs {
		if p.PID <= 0 || last[keyOf(p)] == p {
			out = append(out, p)
		}
	}
	return out
}

func analyzeProcess(p *Process, norm *normalizer) []*threadInfo {
	var infos []*threadInfo
	for i := range p.Threads {
		t := &p.Threads[i]
		ti := &threadInfo{proc: p, t: t, c: Collapse(t.Frames, norm)}
		ti.keys = make([]Key, len(t.Frames))
		for j, f := range t.Frames {
			ti.keys[j] = norm.key(f)
		}
		infos = append(infos, ti)
	}
	// The primary thread: the main thread, else the busiest one that is
	// not parked.
	prim := -1
	for i, ti := range infos {
		t := ti.t
		if t.Main || t.Name == "MainThread" || (t.Ident == "" && p.PID > 0 && t.TID == uint64(p.PID)) {
			prim = i
			break
		}
	}
	if prim < 0 {
		for i, ti := range infos {
			if n := len(ti.t.Frames); n > 0 && ti.t.Frames[n-1].Func == "<module>" {
				prim = i
				break
			}
		}
	}
	for i, ti := range infos {
		ti.benign = isBenign(ti.t, ti.keys, i == prim)
	}
	if prim < 0 {
		best := 0
		for i, ti := range infos {
			if !ti.benign && len(ti.t.Frames) > best {
				prim, best = i, len(ti.t.Frames)
			}
		}
	}
	if prim >= 0 {
		infos[prim].primary = true
		infos[prim].benign = false
	}
	return infos
}

func bucketize(infos []*threadInfo, l Level, rankTotal int) []*Bucket {
	byKey := map[string]*Bucket{}
	var order []*Bucket
	for i, ti := range infos {
		sig := signature(ti.c, ti.t.State, l)
		if ti.benign {
			sig = "benign|" + sig
		}
		b := byKey[sig]
		if b == nil {
			b = &Bucket{sig: sig, firstSeen: i, Stack: cloneCollapsed(ti.c), Benign: ti.benign}
			if l.Kind >= LevelFuncs {
				b.Stack = cloneCollapsed(coarse(b.Stack))
				if _, lead := leafTrim(ti.c); lead > 0 {
					b.Leaf = outFrames(ti.c[:lead])
				}
			}
			byKey[sig] = b
			order = append(order, b)
		} else {
			mergeStack(b.Stack, ti.c, l)
		}
		ti.bucket = b
		b.Count++
		b.Primary = b.Primary || ti.primary
		b.Truncated = b.Truncated || ti.t.Truncated
		b.Partial = b.Partial || ti.t.Partial
		m := Member{PID: ti.proc.PID, Rank: ti.proc.Rank, TID: ti.t.TID, Name: ti.t.Name, State: ti.t.State,
			Primary: ti.primary, Path: ti.proc.Path, Line: ti.t.Line, Depth: len(ti.t.Frames), Snapshot: ti.proc.Snapshot}
		b.Threads = append(b.Threads, m)
		if m.State != "" && !slices.Contains(b.States, m.State) {
			b.States = append(b.States, m.State)
		}
	}
	for _, b := range order {
		seenPID := map[int]bool{}
		for _, m := range b.Threads {
			if m.Rank != "" && !slices.Contains(b.Ranks, m.Rank) {
				b.Ranks = append(b.Ranks, m.Rank)
			}
			if m.PID > 0 && !seenPID[m.PID] {
				seenPID[m.PID] = true
				b.PIDs = append(b.PIDs, m.PID)
			}
		}
		sortRanks(b.Ranks)
		sort.Ints(b.PIDs)
		b.RankSet = RankSet(b.Ranks, rankTotal)
		b.Frames = outFrames(b.Stack)
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.Benign != b.Benign {
			return !a.Benign
		}
		if a.Primary != b.Primary {
			return a.Primary
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if ca, cb := ownFrames(a.Stack), ownFrames(b.Stack); ca != cb {
			return ca > cb
		}
		return a.firstSeen < b.firstSeen
	})
	for i, b := range order {
		b.ID = i + 1
	}
	return order
}

// ownFrames counts frames outside the standard library: stacks with more
// engine and library code are more interesting (panicparse pushes
// stdlib-only stacks down the same way).
func ownFrames(c Collapsed) int {
	n := 0
	for _, s := range c {
		for _, k := range s.Keys {
			if strings.ContainsRune(k.File, '/') {
				n++
			}
		}
	}
	return n
}

func cloneCollapsed(c Collapsed) Collapsed {
	out := make(Collapsed, len(c))
	for i, s := range c {
		s.Frames = append([]record.Frame(nil), s.Frames...)
		s.Keys = append([]Key(nil), s.Keys...)
		fs := make([][]string, len(s.Funcs))
		for j := range s.Funcs {
			fs[j] = append([]string(nil), s.Funcs[j]...)
		}
		s.Funcs = fs
		s.Members = slices.Clone(s.Members)
		out[i] = s
	}
	return out
}

// mergeStack widens a bucket's representative with another member: the
// range of recursion depths, lines that differ, function names seen.
func mergeStack(rep, c Collapsed, l Level) {
	if l.Kind >= LevelFuncs {
		c = coarse(c)
	}
	for i := range rep {
		if i >= len(c) {
			return
		}
		s := &rep[i]
		o := c[i]
		if s.Region && o.Region {
			s.RepeatMin, s.RepeatMax = min(s.RepeatMin, o.Repeat), max(s.RepeatMax, o.Repeat)
			for _, fn := range o.Funcs[0] {
				if !slices.Contains(s.Funcs[0], fn) {
					s.Funcs[0] = append(s.Funcs[0], fn)
					sort.Strings(s.Funcs[0])
				}
			}
			s.Members = mergeMembers(s.Members, o.Members)
			continue
		}
		if len(o.Keys) != len(s.Keys) || s.Region != o.Region {
			return
		}
		if o.Repeat < s.RepeatMin {
			s.RepeatMin = o.Repeat
		}
		if o.Repeat > s.RepeatMax {
			s.RepeatMax = o.Repeat
		}
		if s.Cycle != nil && strings.Join(o.Cycle, ";") == strings.Join(s.Cycle, ";") {
			if o.Cycles < s.CyclesMin {
				s.CyclesMin = o.Cycles
			}
			if o.Cycles > s.CyclesMax {
				s.CyclesMax = o.Cycles
			}
		}
		for j := range s.Frames {
			if s.Frames[j].Line != o.Frames[j].Line {
				s.LineVaries = true
			}
			for _, fn := range o.Funcs[j] {
				if !slices.Contains(s.Funcs[j], fn) {
					s.Funcs[j] = append(s.Funcs[j], fn)
					sort.Strings(s.Funcs[j])
				}
			}
		}
	}
}

// mergeMembers widens a region's per-function counts with another
// member's: the count range, lines that differ, functions only it has.
func mergeMembers(rep, o []RegionFunc) []RegionFunc {
	rep = slices.Clone(rep)
	for _, m := range o {
		i := slices.IndexFunc(rep, func(r RegionFunc) bool { return r.Func == m.Func && r.File == m.File })
		if i < 0 {
			rep = append(rep, m)
			continue
		}
		r := &rep[i]
		lo, hi := min(r.Count, m.Count), max(r.Count, m.Count, r.CountMax, m.CountMax)
		r.Count, r.CountMax = lo, 0
		if hi != lo {
			r.CountMax = hi
		}
		r.LineVaries = r.LineVaries || m.LineVaries || r.Line != m.Line
	}
	return rep
}

func outFrames(c Collapsed) []Frame {
	var out []Frame
	for _, s := range c {
		if s.Region {
			fr := Frame{Func: strings.Join(s.Funcs[0], ", "), File: s.Keys[0].File, Repeat: s.RepeatMin, Region: true, LineVaries: true, Period: len(s.Keys),
				Members: slices.Clone(s.Members)}
			if s.RepeatMax != s.RepeatMin {
				fr.RepeatMax = s.RepeatMax
			}
			out = append(out, fr)
			continue
		}
		for j, f := range s.Frames {
			name := FuncLabel(s.Funcs[j])
			if f.Native && len(s.Funcs[j]) > 1 {
				name = s.Keys[j].Func // addresses differ per process: "<unknown in libc.so>"
			}
			fr := Frame{Func: name, File: f.File, Line: f.Line, Native: f.Native, Repeat: s.RepeatMin, LineVaries: s.LineVaries}
			if s.Repeat > 1 {
				fr.Period = len(s.Frames)
				if s.RepeatMax != s.RepeatMin {
					fr.RepeatMax = s.RepeatMax
				}
			}
			if s.Cycle != nil {
				// Show the qualified cycle and count cycles, not frames.
				fr.Func = CycleLabel(s.Cycle)
				fr.Cycle = s.Cycle
				fr.Frames = s.RepeatMin
				fr.Repeat, fr.RepeatMax = s.CyclesMin, 0
				if s.CyclesMax != s.CyclesMin {
					fr.RepeatMax = s.CyclesMax
				}
			}
			out = append(out, fr)
		}
	}
	return out
}

// shared finds the longest common root and leaf paths of the primary
// threads (at funcs level, recursion collapsed) and where they diverge.
func shared(infos []*threadInfo, a *Analysis) Shared {
	// Helpers (a resource tracker, compile workers) and, when workers were
	// captured too, an engine's coordinators run other code: compared,
	// they would leave nothing shared by the workers.
	worker := func(ti *threadInfo) bool { return !IsHelper(ti.proc.Role) && !IsCoordinator(ti.proc.Role) }
	others := false
	for _, ti := range infos {
		others = others || ti.primary && worker(ti)
	}
	var prims []*threadInfo
	for _, ti := range infos {
		if ti.primary && (worker(ti) || !others) {
			prims = append(prims, ti)
		}
	}
	sh := Shared{Processes: len(prims)}
	if len(prims) < 2 {
		return sh
	}
	seqs := make([]Collapsed, len(prims))
	for i, ti := range prims {
		seqs[i] = coarse(ti.c)
	}
	same := func(x, y Segment) bool { return segKey(x) == segKey(y) }
	// Leaf side.
	for i := 0; ; i++ {
		if i >= len(seqs[0]) {
			break
		}
		ok := true
		for _, s := range seqs[1:] {
			if i >= len(s) || !same(s[i], seqs[0][i]) {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
		sh.LeafPath = append(sh.LeafPath, outFrames(Collapsed{seqs[0][i]})...)
	}
	// Root side: only stacks that still have their root.
	var rooted []int
	for i, ti := range prims {
		if !ti.t.Truncated && len(seqs[i]) > 0 {
			rooted = append(rooted, i)
		}
	}
	if len(rooted) < 2 {
		return sh
	}
	r0 := seqs[rooted[0]]
	depth := 0
	for ; depth < len(r0); depth++ {
		seg := r0[len(r0)-1-depth]
		ok := true
		for _, i := range rooted[1:] {
			s := seqs[i]
			if depth >= len(s) || !same(s[len(s)-1-depth], seg) {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
		sh.RootPath = append(sh.RootPath, outFrames(Collapsed{seg})...)
	}
	// Divergence: group the rooted stacks by the first segment after the
	// shared root.
	groups := map[string]*Branch{}
	var order []string
	for _, i := range rooted {
		s := seqs[i]
		key := "<end>"
		var fr *Frame
		if depth < len(s) {
			seg := s[len(s)-1-depth]
			key = segKey(seg)
			f := outFrames(Collapsed{seg})
			fr = &f[len(f)-1]
		}
		g := groups[key]
		if g == nil {
			g = &Branch{Frame: fr}
			groups[key] = g
			order = append(order, key)
		}
		if b := bucketOf(a, prims[i]); b > 0 && !slices.Contains(g.Buckets, b) {
			g.Buckets = append(g.Buckets, b)
		}
		if r := prims[i].proc.Rank; r == "" {
			g.Unranked = append(g.Unranked, prims[i].proc.PID)
		} else if !slices.Contains(g.Ranks, r) {
			g.Ranks = append(g.Ranks, r)
		}
		g.PIDs = append(g.PIDs, prims[i].proc.PID)
	}
	if len(groups) > 1 {
		for _, k := range order {
			g := groups[k]
			slices.Sort(g.Buckets)
			if len(g.Buckets) > 0 {
				g.Bucket = g.Buckets[0]
			}
			if len(g.Buckets) < 2 {
				g.Buckets = nil
			}
			if len(g.Ranks) == 0 {
				g.Unranked = nil // PIDs says it all
			}
			sortRanks(g.Ranks)
			g.RankSet = RankSet(g.Ranks, a.RankTotal)
			sh.Diverge = append(sh.Diverge, *g)
		}
		sort.SliceStable(sh.Diverge, func(i, j int) bool { return len(sh.Diverge[i].PIDs) > len(sh.Diverge[j].PIDs) })
	}
	return sh
}

func segKey(s Segment) string {
	if s.Region {
		return "{region@" + s.Keys[0].File + "}"
	}
	var b strings.Builder
	if s.Repeat > 1 {
		b.WriteByte('{')
	}
	for _, k := range s.Keys {
		b.WriteString(k.String())
		b.WriteByte(';')
	}
	return b.String()
}

func bucketOf(_ *Analysis, ti *threadInfo) int {
	if ti.bucket == nil {
		return 0
	}
	return ti.bucket.ID
}

// outliers: when most workers' primary threads share one bucket, the
// workers whose primary thread is elsewhere. Helpers (the resource
// tracker, compile workers), coordinators while workers exist, launchers
// waiting for their workers and unranked processes among ranked ones are
// not compared (see workers).
func outliers(infos []*threadInfo, a *Analysis) []Outlier {
	work, _, _ := workers(a, infos)
	count := map[int][]*threadInfo{}
	total := 0
	ranked := true
	for _, s := range work {
		if s.prim == nil {
			continue
		}
		ti := s.prim
		ranked = ranked && ti.proc.Rank != ""
		id := bucketOf(a, ti)
		count[id] = append(count[id], ti)
		total++
	}
	if len(count) < 2 || total < 3 {
		return nil
	}
	maj, best := 0, 0
	for id, tis := range count {
		if len(tis) > best || (len(tis) == best && id < maj) {
			maj, best = id, len(tis)
		}
	}
	if best*2 <= total {
		return nil
	}
	what := "ranks"
	if !ranked {
		what = "processes"
	}
	var out []Outlier
	for id, tis := range count {
		if id == maj {
			continue
		}
		for _, ti := range tis {
			leaf := ""
			if len(ti.t.Frames) > 0 {
				k := ti.keys[0]
				leaf = k.String()
			}
			out = append(out, Outlier{Rank: ti.proc.Rank, PID: ti.proc.PID, Bucket: id, Majority: maj, Leaf: leaf,
				Why: fmt.Sprintf("%d of %d %s are in bucket #%d; this one is in bucket #%d", best, total, what, maj, id)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Bucket != out[j].Bucket {
			return out[i].Bucket < out[j].Bucket
		}
		return out[i].PID < out[j].PID
	})
	return out
}
