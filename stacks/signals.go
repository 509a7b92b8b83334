package stacks

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bringup-tool/bringup/record"
)

// Signal is one thing the signature rules look at (rules.Subject without
// the dependency): a thread's stack in a bucket, a divergence between
// groups of ranks, a stuck/slow verdict. Fact names:
//
//	stacks.bucket      one per thread of every non-benign bucket; Fields:
//	                   bucket, count, ranks, rank_set, state, primary,
//	                   truncated, partial, role (the process's Role, ""
//	                   for a worker), phase (the compile phase its frames
//	                   are in: dynamo, inductor or ""), log_format (true:
//	                   the thread is inside logging's formatting of a
//	                   record, so a handler took it)
//	stacks.divergence  one per ordered pair of primary buckets; Fields:
//	                   frames, other_frames (";"-joined "func (file)" of each
//	                   side, innermost first), ranks, other_ranks, count,
//	                   other_count, phase and other_phase (as for a bucket)
//	stacks.progress    one per process dumped several times; Fields:
//	                   verdict (stuck|busy|slow|progressing), snapshots
type Signal struct {
	Text     string
	Frames   record.Stack // innermost first, files package-relative
	Fact     string
	Fields   map[string]string
	Evidence record.Evidence

	// ti is the thread of a stacks.bucket signal; anchors, filled in by
	// Conclude, maps a rule that matched it to the index in Frames of the
	// frame the rule names (its first frame pattern's match).
	ti      *threadInfo
	anchors map[string]int
}

func signals(infos []*threadInfo, a *Analysis) []Signal {
	var out []Signal
	byThread := map[*threadInfo]*Bucket{}
	for _, ti := range infos {
		byThread[ti] = ti.bucket
	}
	for _, ti := range infos {
		b := byThread[ti]
		if b == nil || b.Benign {
			continue
		}
		out = append(out, Signal{
			Text:     threadText(ti),
			Frames:   normFrames(ti),
			Fact:     "stacks.bucket",
			Fields:   bucketFields(b, ti, ti.primary, ti.proc.Role),
			Evidence: evidence(ti),
			ti:       ti,
			anchors:  map[string]int{},
		})
	}
	out = append(out, earlierSignals(infos, a)...)
	// Divergence between groups of primary threads.
	type group struct {
		b   *Bucket
		rep *threadInfo
		n   int
	}
	var groups []*group
	seen := map[*Bucket]*group{}
	for _, ti := range infos {
		if !ti.primary {
			continue
		}
		b := byThread[ti]
		if b == nil {
			continue
		}
		g := seen[b]
		if g == nil {
			g = &group{b: b, rep: ti}
			seen[b] = g
			groups = append(groups, g)
		}
		g.n++
	}
	const maxGroups = 8
	if len(groups) > maxGroups {
		groups = groups[:maxGroups]
	}
	for _, g := range groups {
		for _, o := range groups {
			if g == o {
				continue
			}
			out = append(out, Signal{
				Text:   fmt.Sprintf("%s in bucket #%d while %s in bucket #%d", orPIDs(g.b), g.b.ID, orPIDs(o.b), o.b.ID),
				Frames: normFrames(g.rep),
				Fact:   "stacks.divergence",
				Fields: map[string]string{
					"frames":       joinKeys(g.rep.keys),
					"other_frames": joinKeys(o.rep.keys),
					"ranks":        strings.Join(g.b.Ranks, ","),
					"other_ranks":  strings.Join(o.b.Ranks, ","),
					"count":        strconv.Itoa(g.n),
					"other_count":  strconv.Itoa(o.n),
					"phase":        compilePhase(g.rep.keys),
					"other_phase":  compilePhase(o.rep.keys),
				},
				Evidence: evidence(g.rep),
			})
		}
	}
	primByProc := map[procKey]*threadInfo{}
	for _, ti := range infos {
		if ti.primary && ti.proc.PID > 0 {
			primByProc[keyOf(ti.proc)] = ti
		}
	}
	for _, p := range a.Progress {
		rep := primByProc[procKey{p.PID, p.Rank}]
		if rep == nil {
			continue
		}
		out = append(out, Signal{
			Text:     p.Detail,
			Frames:   normFrames(rep),
			Fact:     "stacks.progress",
			Fields:   map[string]string{"verdict": p.Verdict, "snapshots": strconv.Itoa(p.Snapshots)},
			Evidence: evidence(rep),
		})
	}
	return out
}

// earlierSignals offers the rules the earlier snapshots of a main thread
// that stayed in one region (progress busy or slow): a loop that keeps
// calling and returning is caught by a sparse sample between the calls
// as often as inside them, so the latest snapshot alone can miss the
// signature every other one shows (a lowering loop sampled in its
// decomposition lookup between two slow message formattings). A stack
// that is stuck adds nothing; one that progressed is no longer there.
// Each is a stacks.bucket signal of the latest thread's bucket (so the
// headline names that group) with the earlier stack's frames, state and
// derived fields, and its evidence says which snapshot it is.
func earlierSignals(infos []*threadInfo, a *Analysis) []Signal {
	cur := map[procKey]*threadInfo{}
	for _, ti := range infos {
		if ti.primary && ti.proc.PID > 0 && ti.bucket != nil && !ti.bucket.Benign {
			cur[keyOf(ti.proc)] = ti
		}
	}
	var out []Signal
	for _, p := range a.Progress {
		if p.Verdict != "busy" && p.Verdict != "slow" {
			continue
		}
		last := cur[procKey{p.PID, p.Rank}]
		if last == nil {
			continue
		}
		b := last.bucket
		for i, ti := range p.earlier {
			if ti == nil {
				continue
			}
			ev := evidence(ti)
			ev.Text += fmt.Sprintf(" (snapshot %d of %d)", i+1, p.Snapshots)
			out = append(out, Signal{
				Text:     threadText(ti),
				Frames:   normFrames(ti),
				Fact:     "stacks.bucket",
				Fields:   bucketFields(b, ti, true, last.proc.Role),
				Evidence: ev,
				ti:       last,
				anchors:  map[string]int{},
			})
		}
	}
	return out
}

// bucketFields are a stacks.bucket signal's fields: bucket b's, and
// thread ti's own (role: its process's).
func bucketFields(b *Bucket, ti *threadInfo, primary bool, role string) map[string]string {
	return map[string]string{
		"bucket":     strconv.Itoa(b.ID),
		"count":      strconv.Itoa(b.Count),
		"ranks":      strings.Join(b.Ranks, ","),
		"rank_set":   b.RankSet,
		"state":      ti.t.State,
		"primary":    strconv.FormatBool(primary),
		"truncated":  strconv.FormatBool(ti.t.Truncated),
		"partial":    strconv.FormatBool(ti.t.Partial),
		"role":       role,
		"phase":      compilePhase(ti.keys),
		"log_format": strconv.FormatBool(inLogFormat(ti.keys)),
	}
}

// compilePhase is the torch.compile phase a stack is in, from its
// frames: inductor when any frame is Inductor's (lowering, scheduling,
// codegen), AOTAutograd's or Triton's compiler (they run only once Dynamo
// has handed the graph to the backend), else dynamo when a frame is
// Dynamo's (tracing the bytecode, running fake tensors for it); "" when
// neither.
func compilePhase(keys []Key) string {
	dynamo := false
	for _, k := range keys {
		f := k.File
		switch {
		case strings.HasPrefix(f, "torch/_inductor/") && f != "torch/_inductor/config.py",
			strings.HasPrefix(f, "torch/_functorch/_aot_autograd/"), strings.HasPrefix(f, "triton/compiler/"):
			return "inductor"
		case strings.HasPrefix(f, "torch/_dynamo/"):
			dynamo = true
		}
	}
	if dynamo {
		return "dynamo"
	}
	return ""
}

// inLogFormat: a frame of the stack is logging formatting a record
// (Formatter.format, Handler.format, LogRecord.getMessage): a handler
// took the record and builds its message now.
func inLogFormat(keys []Key) bool {
	for _, k := range keys {
		if k.File == "logging/__init__.py" {
			switch k.Func {
			case "format", "getMessage", "Formatter.format", "Handler.format", "LogRecord.getMessage":
				return true
			}
		}
	}
	return false
}

func orPIDs(b *Bucket) string {
	if b.RankSet != "" {
		return b.RankSet
	}
	var ps []string
	for _, p := range b.PIDs {
		ps = append(ps, strconv.Itoa(p))
	}
	if len(ps) == 0 {
		return fmt.Sprintf("%d thread(s)", b.Count)
	}
	if len(ps) == 1 {
		return "pid " + ps[0]
	}
	return "pids " + strings.Join(ps, ",")
}

func joinKeys(keys []Key) string {
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(k.String())
	}
	return b.String()
}

// normFrames is a thread's stack with package-relative files, as rules
// match it ("func (file)").
func normFrames(ti *threadInfo) record.Stack {
	out := make(record.Stack, len(ti.t.Frames))
	for i, f := range ti.t.Frames {
		out[i] = record.Frame{Func: f.Func, File: ti.keys[i].File, Line: f.Line, Native: f.Native}
	}
	return out
}

func threadText(ti *threadInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Thread %d", ti.t.TID)
	if ti.t.State != "" {
		fmt.Fprintf(&b, " (%s)", ti.t.State)
	}
	if ti.t.Name != "" {
		fmt.Fprintf(&b, ": %q", ti.t.Name)
	}
	if len(ti.t.Frames) > 0 {
		fmt.Fprintf(&b, " in %s", ti.t.Frames[0].String())
	}
	return b.String()
}

func evidence(ti *threadInfo) record.Evidence {
	return record.Evidence{Path: ti.proc.Path, Line: ti.t.Line, Rank: ti.proc.Rank, Text: threadText(ti)}
}
