package stacks

import (
	"fmt"
	"sort"
	"strings"
)

// Progress is the verdict for one process dumped several times.
type Progress struct {
	PID       int    `json:"pid"`
	Rank      string `json:"rank,omitempty"`
	Snapshots int    `json:"snapshots"`
	// Verdict: "stuck" (identical stack every time), "busy" (the outer
	// frames stay put while the frames above Where move: a loop that
	// keeps calling and returning), "slow" (same functions, changing
	// recursion depth or lines: busy in one region) or "progressing" (the
	// stack moved on).
	Verdict string `json:"verdict"`
	Detail  string `json:"detail"`
	// Where: for busy, the innermost frame every snapshot shares (the
	// loop's function, its line as the latest snapshot has it); for
	// progressing, the innermost shared frame below which it moved.
	Where *Frame `json:"where,omitempty"`
	// Shared is how many frames, from the root, every snapshot has alike.
	Shared int `json:"shared_frames,omitempty"`

	// earlier are the primary threads of the snapshots before the latest,
	// oldest first (nil where a snapshot had none).
	earlier []*threadInfo
}

// progress compares the primary thread of each process across its
// snapshots (stack-dumps.md §6.7): identical at exact level → stuck; the
// outer frames the same and the frames above them moving (or a read that
// never settled) → busy in the innermost shared frame; same functions
// with changing recursion depth or lines → slow, busy in one region;
// anything else → progressing.
func progress(procs []*Process, norm *normalizer) []Progress {
	byKey := map[procKey][]*Process{}
	var keys []procKey
	for _, p := range procs {
		if p.PID <= 0 {
			continue
		}
		k := keyOf(p)
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], p)
	}
	var out []Progress
	for _, k := range keys {
		snaps := byKey[k]
		if len(snaps) < 2 {
			continue
		}
		sort.SliceStable(snaps, func(i, j int) bool { return snaps[i].Snapshot < snaps[j].Snapshot })
		var prims []*threadInfo
		for _, p := range snaps {
			var prim *threadInfo
			for _, ti := range analyzeProcess(p, norm) {
				if ti.primary {
					prim = ti
				}
			}
			prims = append(prims, prim)
		}
		pr := judge(prims)
		pr.PID, pr.Rank, pr.Snapshots = k.pid, snaps[len(snaps)-1].Rank, len(snaps)
		pr.earlier = prims[:len(prims)-1]
		out = append(out, pr)
	}
	return out
}

// judge gives the verdict for one thread's snapshots, oldest first (nil:
// a snapshot without a primary thread).
func judge(prims []*threadInfo) Progress {
	n := len(prims)
	var exact, funcs, depths []string
	partial := false
	for _, ti := range prims {
		if ti == nil {
			exact, funcs = append(exact, ""), append(funcs, "")
			continue
		}
		exact = append(exact, signature(ti.c, "", Level{Kind: LevelExact}))
		funcs = append(funcs, signature(ti.c, "", Level{Kind: LevelFuncs}))
		depths = append(depths, depthNote(ti.c))
		partial = partial || ti.t.Partial
	}
	var pr Progress
	last := prims[n-1]
	switch {
	case allSame(exact) && !partial && running(prims):
		// The same stack every time while the thread runs on the CPU
		// (the OS said R in every snapshot): it spins in one place.
		f := last.t.Frames[0]
		pr.Verdict = "busy"
		pr.Where = &Frame{Func: f.Func, File: last.keys[0].File, Line: f.Line, Native: f.Native}
		pr.Shared = len(last.t.Frames)
		pr.Detail = fmt.Sprintf("busy in %s: the stack is the same in all %d snapshots and the thread was running in each (spinning in one place)", frameLoc(*pr.Where), n)
		return pr
	case allSame(exact) && !partial:
		pr.Verdict = "stuck"
		pr.Detail = fmt.Sprintf("the main stack is identical in all %d snapshots: blocked or spinning in one place", n)
		return pr
	case allSame(funcs) && !partial && !allSame(depths):
		pr.Verdict = "slow"
		pr.Detail = "same functions in every snapshot, changing recursion depth (" + strings.Join(depths, " → ") + "): busy in one region, not deadlocked"
		return pr
	}
	shared, endsThere, sameLine := sharedRoot(prims)
	if shared > 0 && last != nil {
		f := last.t.Frames[len(last.t.Frames)-shared]
		where := &Frame{Func: f.Func, File: last.keys[len(last.keys)-shared].File, Line: f.Line, Native: f.Native}
		pr.Where, pr.Shared = where, shared
		loc := where.File
		if where.Line > 0 {
			loc += fmt.Sprintf(":%d", where.Line)
		}
		if partial || endsThere || sameLine || allSame(funcs) {
			pr.Verdict = "busy"
			why := "the frames above it change between snapshots"
			if partial {
				why = "the frames above it kept moving while being read"
			}
			pr.Detail = fmt.Sprintf("busy in %s (%s): the outer %d frame(s) are the same in all %d snapshots, %s (a loop that keeps calling and returning)", where.Func, loc, shared, n, why)
			return pr
		}
		pr.Verdict = "progressing"
		pr.Detail = fmt.Sprintf("the main stack changes between snapshots below %s (%s)", where.Func, where.File)
		return pr
	}
	pr.Verdict = "progressing"
	pr.Detail = "the main stack changes between snapshots"
	return pr
}

// running: every snapshot's thread was on the CPU (state active, as a live
// capture reads it from /proc and py-spy prints it).
func running(prims []*threadInfo) bool {
	for _, ti := range prims {
		if ti == nil || !strings.HasPrefix(ti.t.State, "active") {
			return false
		}
	}
	return true
}

// sharedRoot is how many frames, counted from the root, every snapshot's
// stack has alike (file and function); whether some snapshot ends right
// there (the thread was in that frame's own code), and whether that frame
// is at the same line in every snapshot (a loop calling from one place).
func sharedRoot(prims []*threadInfo) (shared int, endsThere, sameLine bool) {
	for _, ti := range prims {
		if ti == nil || ti.t.Truncated || len(ti.keys) == 0 {
			return 0, false, false
		}
	}
	first := prims[0]
	for ; shared < len(first.keys); shared++ {
		k := first.keys[len(first.keys)-1-shared]
		ok := true
		for _, ti := range prims[1:] {
			if shared >= len(ti.keys) || ti.keys[len(ti.keys)-1-shared] != k {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
	}
	if shared == 0 {
		return 0, false, false
	}
	sameLine = true
	line := first.t.Frames[len(first.t.Frames)-shared].Line
	for _, ti := range prims {
		if len(ti.keys) == shared {
			endsThere = true
		}
		if ti.t.Frames[len(ti.t.Frames)-shared].Line != line {
			sameLine = false
		}
	}
	return shared, endsThere, sameLine
}

func depthNote(c Collapsed) string {
	for _, s := range c {
		if s.Repeat > 1 {
			return fmt.Sprintf("%s ×%d", FuncLabel(s.Funcs[0]), s.Repeat)
		}
	}
	return fmt.Sprintf("%d frames", c.Depth())
}

func allSame(xs []string) bool {
	if len(xs) == 0 {
		return true
	}
	for _, x := range xs[1:] {
		if x != xs[0] {
			return false
		}
	}
	return true
}
