package stacks

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Where is the headline of a hang: where the workers are. Workers are the
// processes that do the boot's work: ranked processes when ranks are
// known, else every process that is not a helper (RoleLabel), an engine
// coordinator while workers were captured too, or a launcher waiting for
// captured children. Renderers print Text; diagnose and watch can build
// their own line from the fields ("STUCK 10.2 min in <Title>: <Text>").
type Where struct {
	// Workers is how many processes were compared, Noun what they are
	// called ("ranks", "workers" or "processes").
	Workers int    `json:"workers"`
	Noun    string `json:"noun"`
	// Together is how many of them are in the place below (the largest
	// group), with their ranks, pids and bucket.
	Together int    `json:"together"`
	RankSet  string `json:"rank_set,omitempty"`
	PIDs     []int  `json:"pids"`
	Bucket   int    `json:"bucket"`
	// Frame is the group's innermost user-meaningful frame: the one the
	// stack signature that matched names (Rule, Title), else the innermost
	// frame outside the standard library and native code. Nil: the group
	// has no Python frame.
	Frame *Frame `json:"frame,omitempty"`
	Rule  string `json:"rule,omitempty"`
	Title string `json:"title,omitempty"`
	// Snapshots per process (1: a single capture) and what they show of
	// the group: stuck, busy, slow, progressing, mixed; "" for one
	// snapshot whose threads stood still. BusyIn is the loop's frame.
	Snapshots int    `json:"snapshots"`
	Motion    string `json:"motion,omitempty"`
	BusyIn    *Frame `json:"busy_in,omitempty"`
	// Elsewhere are the workers not in the group; WaitedFor says the group
	// waits for them (it is in a collective or rendezvous: the ones
	// elsewhere are the ones it waits for).
	Elsewhere []Away `json:"elsewhere,omitempty"`
	WaitedFor bool   `json:"waited_for,omitempty"`
	// Others are signatures found on other threads of the workers (a
	// collective run by the autograd engine's thread while the main thread
	// is in backward).
	Others []Away `json:"others,omitempty"`
	// Launchers wait for captured children; Helpers are known helper and
	// coordinator processes that were not compared.
	Launchers []Away      `json:"launchers,omitempty"`
	Helpers   []RoleCount `json:"helpers,omitempty"`
	Text      string      `json:"text"`
}

// Away is one process (or thread) and where it is.
type Away struct {
	Rank   string `json:"rank,omitempty"`
	PID    int    `json:"pid"`
	Thread string `json:"thread,omitempty"` // a thread other than the main one: its name, else its id
	Bucket int    `json:"bucket,omitempty"` // 0: no Python frame
	Frame  *Frame `json:"frame,omitempty"`
	Rule   string `json:"rule,omitempty"`
	Title  string `json:"title,omitempty"`
}

// RoleCount is the processes of one role that were not compared.
type RoleCount struct {
	Role  string `json:"role"`
	Label string `json:"label"`
	PIDs  []int  `json:"pids"`
}

// procState is one current process with its primary thread (nil: none).
type procState struct {
	p    *Process
	prim *threadInfo
}

// workers splits the current processes into the compared workers, the
// launchers (parents of other captured workers) and the rest (helpers,
// coordinators while workers exist, unranked processes among ranked
// ones). It never returns no worker while there is a process.
func workers(a *Analysis, infos []*threadInfo) (work, launch, rest []procState) {
	prim := map[*Process]*threadInfo{}
	for _, ti := range infos {
		if ti.primary {
			prim[ti.proc] = ti
		}
	}
	var all []procState
	pids := map[int]bool{}
	for _, p := range a.Current {
		all = append(all, procState{p, prim[p]})
		if p.PID > 0 && !IsHelper(p.Role) {
			pids[p.PID] = true
		}
	}
	parent := map[int]bool{}
	for _, s := range all {
		if !IsHelper(s.p.Role) && s.p.PPID > 0 && pids[s.p.PPID] && s.p.PPID != s.p.PID {
			parent[s.p.PPID] = true
		}
	}
	var cand []procState
	for _, s := range all {
		switch {
		case IsHelper(s.p.Role):
			rest = append(rest, s)
		case parent[s.p.PID] && !IsCoordinator(s.p.Role):
			launch = append(launch, s)
		default:
			cand = append(cand, s)
		}
	}
	if slices.ContainsFunc(cand, func(s procState) bool { return !IsCoordinator(s.p.Role) }) {
		// Workers were captured: an engine's API server and engine core
		// are named as what they are (helpers line), never launchers.
		var keep []procState
		for _, s := range cand {
			if IsCoordinator(s.p.Role) {
				rest = append(rest, s)
			} else {
				keep = append(keep, s)
			}
		}
		cand = keep
	} else if slices.ContainsFunc(cand, func(s procState) bool { return !parent[s.p.PID] }) {
		// Only coordinators (vLLM at TP=1 runs the model in the engine
		// core): the one that started another is its launcher.
		var keep []procState
		for _, s := range cand {
			if parent[s.p.PID] {
				launch = append(launch, s)
			} else {
				keep = append(keep, s)
			}
		}
		cand = keep
	}
	if slices.ContainsFunc(cand, func(s procState) bool { return s.p.Rank != "" }) {
		var keep []procState
		for _, s := range cand {
			if s.p.Rank == "" {
				rest = append(rest, s)
			} else {
				keep = append(keep, s)
			}
		}
		cand = keep
	}
	switch {
	case len(cand) > 0:
		work = cand
	case len(launch) > 0:
		work, launch = launch, nil
	default:
		work, rest = rest, nil
	}
	return work, launch, rest
}

// onlyHelpers: every process compared is a helper (no worker was
// captured, e.g. a dump of torchrun's agent alone).
func onlyHelpers(work []procState) bool {
	for _, s := range work {
		if !IsHelper(s.p.Role) {
			return false
		}
	}
	return len(work) > 0
}

// where computes the headline.
func where(a *Analysis, infos []*threadInfo, anchors []anchorHit) Where {
	w := Where{PIDs: []int{}}
	if len(a.Current) == 0 {
		w.Text = "no stacks found"
		return w
	}
	work, launch, rest := workers(a, infos)
	w.Workers = len(work)
	w.Noun = "processes"
	ranked := true
	live := false
	for _, s := range work {
		ranked = ranked && s.p.Rank != ""
		live = live || s.p.Source == SourceLive
	}
	switch {
	case ranked:
		w.Noun = "ranks"
	case live || len(launch) > 0:
		w.Noun = "workers"
	}
	// The group: the bucket most workers' primary threads are in.
	count := map[int]int{}
	for _, s := range work {
		count[bucketID(s)]++
	}
	best := -1
	for id, n := range count {
		if best < 0 || n > count[best] || (n == count[best] && (best == 0 || (id != 0 && id < best))) {
			best = id
		}
	}
	w.Bucket = best
	var group []procState
	var ranks []string
	for _, s := range work {
		if bucketID(s) != best {
			continue
		}
		group = append(group, s)
		w.PIDs = append(w.PIDs, s.p.PID)
		if s.p.Rank != "" && !slices.Contains(ranks, s.p.Rank) {
			ranks = append(ranks, s.p.Rank)
		}
	}
	w.Together = len(group)
	sortRanks(ranks)
	sort.Ints(w.PIDs)
	if ranked {
		w.RankSet = RankSet(ranks, len(work))
	}
	inGroup := map[*Process]bool{}
	for _, s := range group {
		inGroup[s.p] = true
	}
	// The group's frame: a signature's anchor on a group member's primary
	// thread (findings come most important first), else the innermost
	// meaningful frame of the bucket.
	used := map[string]bool{}
	for _, h := range anchors {
		if h.ti.primary && inGroup[h.ti.proc] && h.ti.bucket != nil && h.ti.bucket.ID == best {
			w.Frame, w.Rule, w.Title = h.frame, h.rule, h.title
			used[h.rule] = true
			break
		}
	}
	if w.Frame == nil && best > 0 {
		// One thread alone: the frames inside its recursion (Leaf) are
		// its own, so they count; across several they differ.
		b := bucketByID(a, best)
		fs := b.Frames
		if len(group) == 1 {
			fs = append(slices.Clone(b.Leaf), b.Frames...)
		}
		w.Frame = meaningful(fs)
	}
	w.WaitedFor = waitsOnOthers(w.Frame)
	for _, s := range work {
		if inGroup[s.p] {
			continue
		}
		aw := away(a, s)
		for _, h := range anchors {
			if h.ti == s.prim {
				aw.Frame, aw.Rule, aw.Title = h.frame, h.rule, h.title
				break
			}
		}
		w.Elsewhere = append(w.Elsewhere, aw)
	}
	// Signatures on other threads of the workers.
	seen := map[string]bool{}
	for _, h := range anchors {
		if h.ti.primary || used[h.rule] || h.ti.bucket == nil {
			continue
		}
		isWorker := slices.ContainsFunc(work, func(s procState) bool { return s.p == h.ti.proc })
		key := h.rule + "|" + strconv.Itoa(h.ti.bucket.ID)
		if !isWorker || seen[key] {
			continue
		}
		seen[key] = true
		name := h.ti.t.Name
		if name == "" {
			name = strconv.FormatUint(h.ti.t.TID, 10)
		}
		w.Others = append(w.Others, Away{Rank: h.ti.proc.Rank, PID: h.ti.proc.PID, Thread: name, Bucket: h.ti.bucket.ID, Frame: h.frame, Rule: h.rule, Title: h.title})
	}
	for _, s := range launch {
		w.Launchers = append(w.Launchers, away(a, s))
	}
	byRole := map[string]*RoleCount{}
	for _, s := range rest {
		role := s.p.Role
		if role == "" {
			continue // an unranked process among ranked ones
		}
		rc := byRole[role]
		if rc == nil {
			rc = &RoleCount{Role: role, Label: RoleLabel(role)}
			byRole[role] = rc
		}
		rc.PIDs = append(rc.PIDs, s.p.PID)
	}
	for _, rc := range byRole {
		sort.Ints(rc.PIDs)
		w.Helpers = append(w.Helpers, *rc)
	}
	sort.Slice(w.Helpers, func(i, j int) bool { return w.Helpers[i].Role < w.Helpers[j].Role })
	w.motion(a, group)
	if onlyHelpers(work) {
		w.Noun = "helper processes"
	}
	w.Text = w.text(group)
	return w
}

func bucketID(s procState) int {
	if s.prim == nil || s.prim.bucket == nil || len(s.prim.t.Frames) == 0 {
		return 0
	}
	return s.prim.bucket.ID
}

func bucketByID(a *Analysis, id int) *Bucket {
	for _, b := range a.Buckets {
		if b.ID == id {
			return b
		}
	}
	return &Bucket{}
}

func away(a *Analysis, s procState) Away {
	aw := Away{Rank: s.p.Rank, PID: s.p.PID, Bucket: bucketID(s)}
	if aw.Bucket > 0 {
		aw.Frame = meaningful(bucketByID(a, aw.Bucket).Frames)
	}
	return aw
}

// motion fills Snapshots, Motion and BusyIn from the group's snapshots.
func (w *Where) motion(a *Analysis, group []procState) {
	w.Snapshots = 1
	verdicts := map[string]int{}
	for _, s := range group {
		for _, p := range a.Progress {
			if p.PID == s.p.PID && p.Rank == s.p.Rank {
				w.Snapshots = max(w.Snapshots, p.Snapshots)
				verdicts[p.Verdict]++
				if p.Verdict == "busy" && w.BusyIn == nil {
					w.BusyIn = p.Where
				}
			}
		}
	}
	switch len(verdicts) {
	case 0:
		// One snapshot: a thread whose read never settled is moving.
		for _, s := range group {
			if s.prim != nil && s.prim.t.Partial && len(s.prim.t.Frames) > 0 {
				w.Motion = "busy"
				f := s.prim.t.Frames[0]
				w.BusyIn = &Frame{Func: f.Func, File: s.prim.keys[0].File, Line: f.Line}
				return
			}
		}
	case 1:
		for v := range verdicts {
			w.Motion = v
		}
	default:
		w.Motion = "mixed"
	}
}

// text is the one line.
func (w *Where) text(group []procState) string {
	var b strings.Builder
	where := "has no Python frame"
	if w.Frame != nil {
		where = "in " + frameWhere(*w.Frame)
	}
	if w.Noun == "helper processes" {
		// No worker: say what the helpers are.
		var who []string
		for _, s := range group {
			who = append(who, fmt.Sprintf("%s pid %d", RoleLabel(s.p.Role), s.p.PID))
		}
		fmt.Fprintf(&b, "no worker captured, only %s; main thread %s", strings.Join(who, ", "), where)
		if w.Bucket > 0 {
			fmt.Fprintf(&b, " (bucket #%d)", w.Bucket)
		}
		return b.String()
	}
	if w.Workers == 1 && len(w.PIDs) == 1 {
		who := fmt.Sprintf("pid %d", w.PIDs[0])
		if w.RankSet != "" {
			who = awayWho(Away{Rank: group[0].p.Rank, PID: w.PIDs[0]})
		}
		fmt.Fprintf(&b, "main thread of %s %s", who, where)
	} else {
		fmt.Fprintf(&b, "%d/%d %s %s", w.Together, w.Workers, w.Noun, where)
	}
	if w.Bucket > 0 {
		fmt.Fprintf(&b, " (bucket #%d)", w.Bucket)
	}
	switch w.Motion {
	case "stuck":
		fmt.Fprintf(&b, ", %d snapshots identical", w.Snapshots)
	case "busy":
		switch {
		case w.BusyIn != nil && w.Frame != nil && w.BusyIn.Func == w.Frame.Func && w.BusyIn.File == w.Frame.File && w.BusyIn.Line > 0:
			fmt.Fprintf(&b, ", busy in a loop there (line %d)", w.BusyIn.Line)
		case w.BusyIn != nil:
			fmt.Fprintf(&b, ", busy in %s", frameLoc(*w.BusyIn))
		default:
			b.WriteString(", busy")
		}
		if w.Snapshots > 1 {
			fmt.Fprintf(&b, " across %d snapshots", w.Snapshots)
		} else {
			b.WriteString(" (the frames above it kept moving while read)")
		}
	case "slow":
		fmt.Fprintf(&b, ", slow across %d snapshots (same functions, changing depth)", w.Snapshots)
	case "progressing":
		fmt.Fprintf(&b, ", progressing across %d snapshots", w.Snapshots)
	case "mixed":
		fmt.Fprintf(&b, ", %d snapshots: not all alike", w.Snapshots)
	}
	for i, e := range w.Elsewhere {
		if i == 3 {
			fmt.Fprintf(&b, "; %d more elsewhere", len(w.Elsewhere)-3)
			break
		}
		fmt.Fprintf(&b, "; %s elsewhere, %s", awayWho(e), awayWhere(e))
		if !w.WaitedFor && waitsOnOthers(e.Frame) {
			b.WriteString(", waiting for the others")
		}
		if w.WaitedFor && i == 0 {
			if len(w.Elsewhere) == 1 {
				b.WriteString(": the others wait for it")
			} else {
				b.WriteString(": the others wait for these")
			}
		}
	}
	for i, o := range w.Others {
		if i == 2 {
			break
		}
		fmt.Fprintf(&b, "; thread %s of %s %s", o.Thread, awayWho(o), awayWhere(o))
	}
	for _, l := range w.Launchers {
		fmt.Fprintf(&b, "; launcher pid %d", l.PID)
		if l.Bucket > 0 {
			fmt.Fprintf(&b, " in bucket #%d", l.Bucket)
		}
	}
	return b.String()
}

func awayWho(e Away) string {
	switch {
	case e.Rank != "" && e.PID > 0:
		return fmt.Sprintf("%s (pid %d)", RankSet([]string{e.Rank}, 0), e.PID)
	case e.Rank != "":
		return RankSet([]string{e.Rank}, 0)
	}
	return fmt.Sprintf("pid %d", e.PID)
}

func awayWhere(e Away) string {
	if e.Frame == nil {
		return "no Python frame"
	}
	s := "in " + frameWhere(*e.Frame)
	if e.Rule != "" {
		s += " [" + e.Rule + "]"
	} else if e.Bucket > 0 {
		s += fmt.Sprintf(" (bucket #%d)", e.Bucket)
	}
	return s
}

// frameWhere prints a frame as the headline does: "file function".
func frameWhere(f Frame) string {
	if f.Region && len(f.Members) > 0 {
		return f.File + " " + f.Members[0].Func + " (recursion)"
	}
	return f.File + " " + f.Func
}

// frameLoc prints "function (file:line)".
func frameLoc(f Frame) string {
	loc := f.File
	if f.Line > 0 && !f.LineVaries {
		loc += ":" + strconv.Itoa(f.Line)
	}
	return f.Func + " (" + loc + ")"
}

// meaningful is the innermost frame of a bucket outside the standard
// library and native code (the frame a person looks for); the innermost
// Python frame when all are, else the innermost frame.
func meaningful(fr []Frame) *Frame {
	for i := range fr {
		if !fr[i].Native && !IsStdlib(fr[i].File) {
			f := fr[i]
			return &f
		}
	}
	for i := range fr {
		if !fr[i].Native {
			f := fr[i]
			return &f
		}
	}
	if len(fr) > 0 {
		f := fr[0]
		return &f
	}
	return nil
}

// IsStdlib reports whether a package-relative file is in the standard
// library ("threading.py", "concurrent/futures/_base.py"); files with an
// absolute path (a script outside any install location) never are.
func IsStdlib(file string) bool {
	if file == "" || strings.HasPrefix(file, "/") || strings.HasPrefix(file, "<") {
		return false
	}
	top := file
	if i := strings.IndexByte(top, '/'); i >= 0 {
		top = top[:i]
	}
	top = strings.TrimSuffix(top, ".py")
	return stdlibNames[top]
}

// waitsOnOthers: a frame in torch.distributed or in NCCL/gloo waits for
// other ranks.
func waitsOnOthers(f *Frame) bool {
	if f == nil {
		return false
	}
	if f.Native {
		l := strings.ToLower(f.Func)
		return strings.Contains(l, "nccl") || strings.Contains(l, "gloo") || strings.Contains(l, "c10d")
	}
	return strings.HasPrefix(f.File, "torch/distributed/") || strings.Contains(f.File, "/distributed/")
}
