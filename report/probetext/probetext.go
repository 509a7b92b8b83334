// Package probetext renders what the probe recorded in a boot as terminal
// text, verdict first.
package probetext

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/probe"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/report"
)

// Input is everything one rendering needs.
type Input struct {
	Dir      string // the probe directory the reports are in
	Spec     string
	Reports  []probe.Report
	Problems []record.Skip
	Missing  []probe.NotLoaded
	Scanned  bool // Missing is meaningful: the process tree was followed
}

// MaxStack is how many innermost frames a group's stack shows.
const MaxStack = 8

// Write renders in to w.
func Write(w io.Writer, st report.Style, in Input) {
	groups := probe.Distinct(in.Reports)
	pr := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	head := st.Bold("probe:")
	if len(groups) == 0 && probe.CaughtInLibrary(in.Reports) > 0 {
		pr("%s nothing matching %s reached code outside torch, numpy or the standard library in %d Python process%s that loaded the probe\n", head, in.Spec, loadedCount(in.Reports), es(loadedCount(in.Reports)))
	} else if len(groups) == 0 {
		pr("%s nothing matching %s was recorded in %d Python process%s that loaded the probe\n", head, in.Spec, loadedCount(in.Reports), es(loadedCount(in.Reports)))
	} else {
		pr("%s %s\n", head, groups[0].Explanation.Verdict)
	}
	for _, g := range groups {
		e := g.Explanation
		pr("\n%s  %s  [%s]\n", st.Severity(string(g.Severity())), st.Bold(e.Exception), probe.RuleOf(e.Shape))
		pr("  %-12s %s\n", st.Dim("verdict"), e.Verdict)
		field := func(name, v string) {
			if v != "" {
				pr("  %-12s %s\n", st.Dim(name), v)
			}
		}
		field("instruction", e.Instruction)
		field("expression", e.Expression)
		field("code", e.Code)
		field("module", e.Module)
		field("likely", e.Mechanism)
		field("seen", e.Seen)
		if len(e.UserStack) > 0 {
			field("user code", strings.Join(e.UserStack, " → "))
		}
		var who []string
		for _, r := range g.Reports {
			who = append(who, procName(r.Doc))
		}
		field("processes", strings.Join(who, ", "))
		if g.Count > len(g.Reports) {
			field("records", fmt.Sprintf("%d", g.Count))
		}
		writeStack(pr, st, g.Record)
		writeWindow(pr, g.Record)
	}
	pr("\n")
	writeProcesses(pr, st, in)
	for _, p := range in.Problems {
		pr("%s %s\n", head, p)
	}
	if in.Dir != "" {
		pr("%s reports in %s\n", head, in.Dir)
	}
}

func es(n int) string {
	if n == 1 {
		return ""
	}
	return "es"
}

func loadedCount(rs []probe.Report) int {
	n := 0
	for _, r := range rs {
		if r.Loaded {
			n++
		}
	}
	return n
}

func procName(d probe.Doc) string {
	argv := strings.Join(d.Argv, " ")
	if len(argv) > 120 {
		argv = argv[:120] + "…"
	}
	return fmt.Sprintf("pid %d (%s)", d.PID, argv)
}

func writeStack(pr func(string, ...any), st report.Style, r probe.Record) {
	if len(r.Stack) == 0 {
		return
	}
	from := 0
	if len(r.Stack) > MaxStack {
		from = len(r.Stack) - MaxStack
	}
	note := "innermost last"
	if from > 0 || r.StackTruncated {
		note = fmt.Sprintf("innermost last, %d of %d frames", len(r.Stack)-from, max(r.NFrames, len(r.Stack)))
	}
	pr("  %-12s (%s)\n", st.Dim("stack"), note)
	for _, f := range r.Stack[from:] {
		line := "?"
		if f.Line != nil {
			line = fmt.Sprint(*f.Line)
		}
		mark := ""
		if f.Generated {
			mark = "  " + st.Yellow("[generated]")
		}
		pr("    %s:%s in %s  %s%s\n", f.File, line, f.Function, f.Instruction, mark)
	}
}

func writeWindow(pr func(string, ...any), r probe.Record) {
	o, ok := r.Origin()
	if !ok || len(o.Window) == 0 {
		return
	}
	pr("  bytecode\n")
	for _, in := range o.Window {
		arrow := "   "
		if in.Current {
			arrow = "-->"
		}
		pos := ""
		if in.Position == "none" || in.Position == "no-columns" {
			pos = "  (no source position)"
		}
		pr("    %s %4d %s%s\n", arrow, in.Offset, strings.TrimSpace(in.Opname+" "+in.Argrepr), pos)
	}
}

func writeProcesses(pr func(string, ...any), st report.Style, in Input) {
	head := st.Bold("probe:")
	loaded := loadedCount(in.Reports)
	// Reasons a loaded process could not hook, said once each.
	notes := map[string][]int{}
	var order []string
	var dropped, errs []string
	for _, r := range in.Reports {
		for _, n := range r.NotHooked {
			if _, ok := notes[n]; !ok {
				order = append(order, n)
			}
			notes[n] = append(notes[n], r.PID)
		}
		if c := r.Counts; c.DroppedCap+c.DroppedTime > 0 {
			dropped = append(dropped, fmt.Sprintf("pid %d matched %d, recorded %d (%d over the record cap, %d over the time budget)", r.PID, c.Matched, c.Recorded, c.DroppedCap, c.DroppedTime))
		}
		for _, e := range r.Errors {
			errs = append(errs, fmt.Sprintf("pid %d: %s", r.PID, e))
		}
	}
	pr("%s %d Python process%s loaded the probe", head, loaded, es(loaded))
	if in.Scanned {
		pr(", %d did not", len(in.Missing))
	}
	pr("\n")
	for _, n := range order {
		pr("%s %s (pid %s)\n", head, n, pids(notes[n]))
	}
	if n := probe.CaughtInLibrary(in.Reports); n > 0 {
		what := "raise"
		if n > 1 {
			what = "raises"
		}
		pr("%s %d %s made while Dynamo traced caught inside torch, numpy or the standard library, never reaching other code: not evidence, not shown\n", head, n, what)
	}
	for _, d := range dropped {
		pr("%s %s: narrow the spec (TYPE:REGEX) to record the one you want\n", head, d)
	}
	for _, e := range errs {
		pr("%s %s %s\n", head, st.Yellow("probe error"), e)
	}
	sort.Slice(in.Missing, func(i, j int) bool { return in.Missing[i].PID < in.Missing[j].PID })
	for _, m := range in.Missing {
		pr("%s %s did not load the probe: %s\n", head, st.Yellow(m.Proc.String()), m.Reason)
	}
}

func pids(ps []int) string {
	s := make([]string, 0, len(ps))
	for i, p := range ps {
		if i == 6 {
			s = append(s, fmt.Sprintf("and %d more", len(ps)-i))
			break
		}
		s = append(s, fmt.Sprint(p))
	}
	return strings.Join(s, ", ")
}
