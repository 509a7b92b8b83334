package compiles

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
)

// Facts the trace analysis hands to the rules engine (rules/trace.yaml).
const (
	FactCompileFailed  = "trace.compile_failed"
	FactGraphBreak     = "trace.graph_break"
	FactOpenPhase      = "trace.open_phase"
	FactRecompile      = "trace.recompile"
	FactRecompileLimit = "trace.recompile_limit"
	FactCacheMiss      = "trace.cache_miss"
	FactCacheBypass    = "trace.cache_bypass"
	FactDivergence     = "trace.divergence"
	FactParity         = "trace.collectives_parity"
)

// FieldSurvived is the subject field that says the run went on past it
// ("true": a graph break, a compile Dynamo gave up on and ran eagerly).
// It is the rules engine's own Recovered field, so an error rule that
// matches such a subject makes a warning wherever the subject is matched:
// bringup trace (Conclude) and bringup diagnose given the trace or the
// run directory that holds it alike.
const FieldSurvived = rules.Recovered

// failOnLimit is the fail_type of a recompile limit that was fatal
// (fail_on_recompile_limit_hit, or fullgraph).
const failOnLimit = "FailOnRecompileLimitHit"

func frameKey(path string, pid, frame int) string {
	return path + "|" + strconv.Itoa(pid) + "|" + strconv.Itoa(frame)
}

// skipMarkers are the words Dynamo writes into a dynamo_graph_break_reason
// record when it gives up on the whole frame and runs it eagerly, rather
// than resuming after the break: InstructionTranslator.run ("Failed to
// handle graph break gracefully. Skipping the function and falling back to
// eager.") and ConvertFrame's soft-failure log ("… which results in a
// skip."). A failed compile logs no such record (fullgraph, a hard error).
var skipMarkers = [][]byte{
	[]byte("Skipping the function and falling back to eager"),
	[]byte("which results in a skip"),
}

func skipMarker(body []byte) bool {
	for _, m := range skipMarkers {
		if bytes.Contains(body, m) {
			return true
		}
	}
	return false
}

// fellBack: the compile failed softly (Unsupported or UserError, which
// ConvertFrame suppresses outside fullgraph) and Dynamo ran the frame
// eagerly: its own graph-break record said it skipped the frame, or the
// frame reached its recompile limit (Unsupported "Dynamo recompile limit
// exceeded"; a fatal limit is FailOnRecompileLimitHit).
func fellBack(c *Compile, skipMarked bool) bool {
	if c.FailType == "Unsupported" && strings.HasPrefix(c.FailReason, "Dynamo recompile limit exceeded") {
		return true
	}
	ft := c.FailType[strings.LastIndexByte(c.FailType, '.')+1:]
	return skipMarked && (ft == "Unsupported" || ft == "UserError")
}

// Subjects turns a Result into what the rules engine matches: one subject
// per failed compile, distinct graph break, open phase, recompile, frame at
// its recompile limit, explained cache miss, cache bypass and divergence.
// Texts are the producer's own words (fail reason, graph-break reason,
// recompile reason), so the text rules of other families match them too.
func Subjects(res *Result) []rules.Subject {
	var out []rules.Subject
	hardLimit := map[string]bool{} // frames whose recompile limit was fatal
	for _, c := range res.Compiles {
		if c.Status == StatusFailed && c.FailType == failOnLimit && c.FrameID != nil {
			hardLimit[frameKey(c.Path, c.PID, *c.FrameID)] = true
		}
	}
	for _, c := range res.Compiles {
		if c.Status != StatusFailed {
			continue
		}
		text := c.FailType
		if c.FailReason != "" {
			text += ": " + c.FailReason
		}
		line := c.MetricsLine
		if line == 0 {
			line = c.Line
		}
		out = append(out, rules.Subject{
			Text: text, Frames: c.Stack, Fact: FactCompileFailed,
			Fields: map[string]string{"fail_type": c.FailType, "compile_id": Ref(c.ID, c.Occurrence), "function": c.Frame.String(),
				"user_frame": c.FailUserFrame, "user_code": c.UserCode, "phase": c.FailPhase,
				FieldSurvived: strconv.FormatBool(c.FellBack)},
			// The whole chain, innermost exception first, on one line:
			// the first line of a reason is often only "backend=… raised:".
			Evidence: record.Evidence{Path: c.Path, Line: line, Rank: rankText(c.Rank),
				Text: Label(c.ID, c.Occurrence) + " " + FailHeadline(&c)},
		})
	}
	for _, gb := range res.GraphBreaks {
		ev := gb.Evidence
		if ev.Text == "" || !strings.Contains(ev.Text, gb.Reason) {
			ev.Text = firstLine(gb.Reason)
		}
		out = append(out, rules.Subject{
			Text: gb.Reason, Fact: FactGraphBreak,
			Fields: map[string]string{"reason": gb.Reason, "user_frame": gb.UserFrame, "gb_id": gb.GBID,
				"count": strconv.Itoa(gb.Count), "compile_ids": strings.Join(gb.CompileIDs, ","), "source": gb.Source,
				"gb_type": gb.GBType, FieldSurvived: "true"},
			Evidence: ev,
		})
	}
	for _, p := range res.OpenSpans {
		out = append(out, rules.Subject{
			Fact: FactOpenPhase,
			Fields: map[string]string{"name": p.Name, "phase": PhaseOf(p.Name), "compile_id": p.CompileID,
				"innermost": strconv.FormatBool(p.Innermost), "uncertain": strconv.FormatBool(p.Uncertain),
				"seconds": strconv.FormatFloat(p.DurUs/1e6, 'f', 1, 64)},
			Evidence: record.Evidence{Path: p.Path, Line: p.Line, Rank: rankText(p.Rank),
				Text: Label(p.CompileID, p.Occurrence) + " " + p.Name + " began and never ended"},
		})
	}
	for _, r := range res.Recompiles {
		for _, why := range r.Reasons {
			out = append(out, rules.Subject{
				Text: why, Fact: FactRecompile,
				Fields:   map[string]string{"compile_id": r.CompileID, "frame": r.Frame, "reason": why},
				Evidence: record.Evidence{Path: r.Evidence.Path, Line: r.Evidence.Line, Rank: r.Evidence.Rank, Text: Label(r.CompileID, r.Occurrence) + " " + firstLine(why)},
			})
		}
	}
	for _, f := range res.Frames {
		if !f.LimitHit {
			continue
		}
		out = append(out, rules.Subject{
			Text: f.Evidence.Text, Fact: FactRecompileLimit,
			Fields: map[string]string{"frame": f.Name, "file": f.File, "compiles": strconv.Itoa(f.Compiles),
				"limit": strconv.Itoa(f.Limit), FieldSurvived: strconv.FormatBool(!hardLimit[frameKey(f.Path, f.PID, f.FrameID)])},
			Evidence: f.Evidence,
		})
	}
	for _, ce := range res.Cache {
		ev := record.Evidence{Path: ce.Path, Line: ce.Line, Rank: rankText(ce.Rank)}
		switch {
		case ce.Outcome == OutcomeBypass:
			ev.Text = Label(ce.CompileID, ce.Occurrence) + " " + ce.Kind + " cache bypass: " + firstLine(ce.Reason)
			out = append(out, rules.Subject{Text: ce.Reason, Fact: FactCacheBypass,
				Fields: map[string]string{"kind": ce.Kind, "compile_id": ce.CompileID, "reason": ce.Reason}, Evidence: ev})
		case ce.Outcome == OutcomeMiss && ce.Differs != nil:
			d := ce.Differs
			ev.Text = Label(ce.CompileID, ce.Occurrence) + " " + ce.Kind + " cache miss; hit at " + base(d.Path) + ":" + strconv.Itoa(d.Line)
			if !d.SameKey && len(d.Components) > 0 {
				ev.Text += " differs in " + strings.Join(d.Components, ", ")
			}
			out = append(out, rules.Subject{Fact: FactCacheMiss,
				Fields: map[string]string{"kind": ce.Kind, "compile_id": ce.CompileID, "differs": "true",
					"same_key": strconv.FormatBool(d.SameKey), "components": strings.Join(d.Components, ","),
					"other_input": strconv.FormatBool(d.Path != ce.Path || d.Rank != ce.Rank)},
				Evidence: ev})
		}
	}
	for _, p := range res.CollectiveParity {
		out = append(out, rules.Subject{Fact: FactParity,
			Fields: map[string]string{"compile_id": p.CompileID, "offset": strconv.Itoa(p.Offset),
				"missing_waits": strconv.Itoa(p.MissingWaits)},
			Evidence: record.Evidence{Path: p.Path, Line: p.Line, Rank: rankText(p.Rank),
				Text: "[" + p.CompileID + "] output code vs collective schedule: offset " + strconv.Itoa(p.Offset) +
					", " + strconv.Itoa(p.MissingWaits) + " collective(s) without wait_tensor"}})
	}
	for _, d := range res.Divergence {
		var groups []string
		for _, g := range d.Groups {
			groups = append(groups, strings.Join(g.Labels, ", ")+" = "+firstLine(g.Value))
		}
		ev := record.Evidence{Text: d.Summary + ": " + strings.Join(groups, " | ")}
		if d.Run != "" {
			ev.Text = d.Run + ": " + ev.Text
		}
		for _, in := range res.Inputs {
			if in.Run == d.Run {
				ev.Path = in.Path
				break
			}
		}
		out = append(out, rules.Subject{Text: d.Summary, Fact: FactDivergence,
			Fields: map[string]string{"kind": d.Kind, "groups": strconv.Itoa(len(d.Groups)), "run": d.Run}, Evidence: ev})
	}
	return out
}

// PhaseOf maps a chromium event name to bringup's startup phase vocabulary
// (dynamo, inductor, cache, cudagraph) so rules can speak of phases.
func PhaseOf(name string) string {
	switch {
	case strings.Contains(name, "cudagraph") || strings.Contains(name, "cuda_graph"):
		return "cudagraph"
	case strings.Contains(name, "cache"):
		return "cache"
	case strings.HasPrefix(name, "GraphLowering") || strings.HasPrefix(name, "Scheduler") ||
		strings.Contains(name, "inductor") || strings.Contains(name, "code_gen") ||
		strings.Contains(name, "async_compile") || strings.Contains(name, "Autotuner") ||
		strings.Contains(name, "compile_file") || strings.Contains(name, "Codegen") ||
		strings.Contains(name, "grad_passes") || strings.Contains(name, "benchmark") ||
		strings.Contains(name, "PyCodeCache") || strings.Contains(name, "fw_compiler") ||
		strings.Contains(name, "triton"):
		return "inductor"
	case strings.Contains(name, "aot") || strings.Contains(name, "backend_compile"):
		return "inductor"
	}
	return "dynamo"
}

// Conclude matches the Subjects against a rule set and collects findings,
// most important first. Versions come from the trace itself.
func Conclude(res *Result, set *rules.Set) []record.Finding {
	col := rules.NewCollector()
	v := rules.Versions{}
	for k, x := range res.Versions {
		v[k] = x
	}
	// A failed compile's finding speaks of the component that raised
	// (backend, aot-autograd, inductor), not of the Dynamo frame that
	// reported it: the rule's phase is replaced when all its failures
	// agree on one.
	failPhases := map[string]map[string]bool{}
	// A rule's error is a warning when every subject it matched is one the
	// run survived (FieldSurvived: the collector gives such a subject the
	// warning severity, and a fatal one raises it back to error).
	for _, sub := range Subjects(res) {
		for _, r := range set.Match(sub, v) {
			col.Add(r, sub)
			if sub.Fact == FactCompileFailed && r.Match.Fact == FactCompileFailed && sub.Fields["phase"] != "" {
				if failPhases[r.ID] == nil {
					failPhases[r.ID] = map[string]bool{}
				}
				failPhases[r.ID][sub.Fields["phase"]] = true
			}
		}
	}
	fs := col.Findings()
	for i := range fs {
		if ph := failPhases[fs[i].Rule]; len(ph) == 1 {
			for p := range ph {
				fs[i].Phase = p
			}
		}
	}
	return fs
}
