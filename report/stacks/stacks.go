// Package stacks renders a stack analysis: terminal text (verdict first,
// buckets largest first, recursion as ×k, colour only on a terminal), JSON
// (bringup.stacks/v1) and folded stacks for flame graphs and speedscope.
package stacks

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/report"
	"github.com/bringup-tool/bringup/stacks"
)

// Schema is the JSON schema id.
const Schema = "bringup.stacks/v1"

// TextOptions tune the terminal view.
type TextOptions struct {
	Style report.Style
	// All shows benign idle buckets instead of folding them.
	All bool
	// MaxFrames caps the frames shown per bucket (0: 60).
	MaxFrames int
}

// Text writes the analysis for a person.
func Text(w io.Writer, a *stacks.Analysis, o TextOptions) error {
	// Every text from the dumps is cleaned of escape sequences and control
	// characters on its way out (report.Safe, report.Fprintf): a dump's
	// frames and names are whatever the dumped program made them.
	st := report.Safe{Style: o.Style}
	if o.MaxFrames == 0 {
		o.MaxFrames = 60
	}
	ew := &errWriter{w: w}
	threads := 0
	for _, p := range a.Current {
		threads += len(p.Threads)
	}
	snaps := ""
	if n := len(a.Processes) - len(a.Current); n > 0 {
		snaps = fmt.Sprintf(", %d earlier snapshot(s)", n)
	}
	ew.printf("%s %s\n", st.Bold("verdict:"), st.Bold(orDash(a.Verdict())))
	ew.printf("%s\n", st.Dim(fmt.Sprintf("%d process(es), %d thread(s), %d bucket(s) at %s level%s", len(a.Current), threads, len(a.Buckets), a.Level, snaps)))
	// Known helper processes (resource tracker, compile workers, the
	// engine's API server while workers were captured) are named, never
	// counted among the workers.
	if h := helpersLine(a.Where.Helpers); h != "" {
		ew.printf("%s\n", st.Dim("helpers: "+h))
	}
	// A live process bringup's own reader could not read was captured by
	// a command (stacks/live: py-spy dump --nonblocking).
	for _, p := range a.Current {
		if p.CapturedBy != "" {
			ew.printf("%s\n", st.Dim(fmt.Sprintf("pid %d captured by %s (bringup's own reader could not read it)", p.PID, p.CapturedBy)))
		}
	}

	for _, iw := range a.Interleaved {
		ew.printf("%s %s\n", st.Severity("error"), iw.String())
	}

	if len(a.Findings) > 0 {
		ew.printf("\n")
		for _, f := range a.Findings {
			writeFinding(ew, st, f, a.RankTotal)
		}
	}

	if len(a.Shared.RootPath) > 0 || len(a.Shared.Diverge) > 0 {
		// Stacks of unrelated programs share no frame: say so, rather than
		// a "shared by all" heading over nothing and "diverge" from a root
		// path that is not there.
		noRoot := len(a.Shared.RootPath) == 0
		if noRoot && len(a.Shared.LeafPath) == 0 {
			ew.printf("\n%s\n", st.Bold(fmt.Sprintf("no frame shared by all %d primary threads:", a.Shared.Processes)))
		} else {
			ew.printf("\n%s\n", st.Bold(fmt.Sprintf("shared by all %d primary threads:", a.Shared.Processes)))
		}
		if n := len(a.Shared.RootPath); n > 0 {
			ew.printf("  root path (%s, outermost first): %s\n", frames(n), pathLine(a.Shared.RootPath, true))
		}
		// The leaf path is left out when it is the root path read backwards
		// (every primary thread has the same whole stack).
		if n := len(a.Shared.LeafPath); n > 0 && !reversedOf(a.Shared.LeafPath, a.Shared.RootPath) {
			ew.printf("  leaf path (%s, innermost first): %s\n", frames(n), pathLine(a.Shared.LeafPath, false))
		}
		for _, d := range a.Shared.Diverge {
			who := d.RankSet
			if pids := d.Unranked; who == "" || len(pids) > 0 {
				if who == "" {
					pids = d.PIDs
				} else {
					who += " + "
				}
				if len(pids) == 1 {
					who += fmt.Sprintf("pid %d", pids[0])
				} else {
					who += fmt.Sprintf("pids %s", intsJoin(pids))
				}
			}
			where := fmt.Sprintf("[bucket #%d]", d.Bucket)
			if len(d.Buckets) > 1 {
				var bs []string
				for _, b := range d.Buckets {
					bs = append(bs, fmt.Sprintf("#%d", b))
				}
				where = "[buckets " + strings.Join(bs, ", ") + "]"
			}
			next := "stack ends there"
			if d.Frame != nil {
				next = "then " + d.Frame.Func + " (" + d.Frame.File + ")"
			}
			if noRoot {
				// No common root: each group's outermost frame.
				if d.Frame != nil {
					ew.printf("  starts: %s in %s (%s)  %s\n", who, d.Frame.Func, d.Frame.File, where)
				}
				continue
			}
			ew.printf("  diverge: %s → %s  %s\n", who, next, where)
		}
	}
	if len(a.Outliers) > 0 {
		ew.printf("\n%s\n", st.Bold("outliers:"))
		for _, ol := range a.Outliers {
			who := ol.Rank
			if who == "" {
				who = "pid " + fmt.Sprint(ol.PID)
			} else {
				who = fmt.Sprintf("%s (pid %d)", who, ol.PID)
			}
			ew.printf("  %s in %s — %s\n", st.Yellow(who), ol.Leaf, ol.Why)
		}
	}
	if len(a.Progress) > 0 {
		ew.printf("\n%s\n", st.Bold("snapshots:"))
		for _, p := range a.Progress {
			who := p.Rank
			if who == "" {
				who = "pid " + fmt.Sprint(p.PID)
			}
			ew.printf("  %s: %s — %s\n", who, st.Bold(p.Verdict), p.Detail)
		}
	}

	roles := map[int]string{}
	for _, p := range a.Current {
		if p.Role != "" {
			roles[p.PID] = p.Role
		}
	}
	folded, foldedThreads := 0, 0
	for _, b := range a.Buckets {
		if b.Benign && !o.All {
			folded++
			foldedThreads += b.Count
			continue
		}
		ew.printf("\n")
		writeBucket(ew, st, b, roles, o.MaxFrames)
	}
	if folded > 0 {
		ew.printf("\n%s\n", st.Dim(fmt.Sprintf("%d idle auxiliary bucket(s), %d thread(s) folded (waits in threading/queue/selectors/zmq, watchdogs, frameless threads); --all shows them", folded, foldedThreads)))
	}
	if n := len(a.Warnings); n > 0 {
		ew.printf("\n%s\n", st.Dim(fmt.Sprintf("skipped input: %d line(s) not understood; first: %s", n, a.Warnings[0].String())))
	}
	return ew.err
}

func frames(n int) string {
	if n == 1 {
		return "1 frame"
	}
	return fmt.Sprintf("%d frames", n)
}

func reversedOf(a, b []stacks.Frame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[len(b)-1-i]) {
			return false
		}
	}
	return true
}

func writeFinding(ew *errWriter, st report.Safe, f record.Finding, total int) {
	who := ""
	if len(f.Ranks) > 0 {
		who = " · " + stacks.RankSet(f.Ranks, total)
	}
	ew.printf("%s %s %s%s\n", st.Severity(string(f.Severity)), st.Bold(f.Title), st.Dim("["+f.Rule+"]"), who)
	if c := strings.TrimSpace(f.Cause); c != "" {
		for _, l := range wrap(c, 96) {
			ew.printf("    %s\n", l)
		}
	}
	for i, r := range f.Remedy {
		prefix := "fix:"
		if i > 0 {
			prefix = "or: "
		}
		ew.printf("    %s %s\n", st.Green(prefix), strings.TrimSpace(r))
	}
	for i, e := range f.Evidence {
		if i == 3 {
			ew.printf("    %s\n", st.Dim(fmt.Sprintf("… %d more", f.Count-3)))
			break
		}
		r := ""
		if e.Rank != "" {
			r = " [" + e.Rank + "]"
		}
		ew.printf("    %s%s %s\n", st.Cyan(fmt.Sprintf("%s:%d", e.Path, e.Line)), r, e.Text)
	}
	for _, ref := range f.References {
		ew.printf("    %s\n", st.Dim(ref))
	}
}

func writeBucket(ew *errWriter, st report.Safe, b *stacks.Bucket, roles map[int]string, maxFrames int) {
	who := b.RankSet
	var unranked []int
	seen := map[int]bool{}
	for _, m := range b.Threads {
		if m.Rank == "" && m.PID > 0 && !seen[m.PID] {
			seen[m.PID] = true
			unranked = append(unranked, m.PID)
		}
	}
	if len(unranked) > 0 {
		if who != "" {
			who += " + "
		}
		if len(unranked) == 1 {
			who += "pid " + intsJoin(unranked)
		} else {
			who += "pids " + intsJoin(unranked)
		}
	}
	names := map[string]bool{}
	var nl []string
	for _, m := range b.Threads {
		if m.Name != "" && !names[m.Name] {
			names[m.Name] = true
			nl = append(nl, m.Name)
		}
	}
	sort.Strings(nl)
	if len(nl) > 3 {
		nl = append(nl[:3], "…")
	}
	// Each piece of the head is clean: styled, or cleaned here.
	head := []string{string(st.Bold(fmt.Sprintf("#%d", b.ID)))}
	if who != "" {
		head = append(head, string(st.Bold(who)))
	}
	if r := bucketRoles(b, roles); r != "" {
		head = append(head, string(st.Cyan(r)))
	}
	head = append(head, fmt.Sprintf("%d thread(s)", b.Count))
	if len(nl) > 0 {
		head = append(head, report.Clean(strings.Join(nl, ",")))
	}
	if len(b.States) > 0 {
		head = append(head, report.Clean(strings.Join(b.States, "/")))
	}
	if b.Benign {
		head = append(head, string(st.Dim("idle")))
	}
	if b.Truncated {
		head = append(head, string(st.Dim("root cut off")))
	}
	if b.Partial {
		// The read of a running thread never settled: the frames above
		// the innermost one shown kept changing (a loop calling and
		// returning), so the thread is busy there.
		what := "busy: the frames above it kept moving while read"
		if len(b.Frames) > 0 {
			what = "busy: frames above " + report.Clean(b.Frames[0].Func) + " kept moving while read"
		}
		head = append(head, string(st.Dim(what)))
	}
	if len(b.Rules) > 0 {
		head = append(head, string(st.Yellow(strings.Join(b.Rules, ","))))
	}
	ew.printf("%s\n", report.Styled(strings.Join(head, " · ")))
	if len(b.Frames) == 0 {
		ew.printf("    %s\n", st.Dim("(no Python frame)"))
		return
	}
	width := 0
	for _, f := range b.Leaf {
		width = max(width, len(report.Clean(f.Func)))
	}
	for _, f := range b.Frames {
		if f.Region {
			for _, m := range f.Members {
				width = max(width, len(report.Clean(m.Func)))
			}
			continue
		}
		width = max(width, len(report.Clean(f.Func)))
	}
	width = min(width, 48)
	// The innermost frames inside the recursion (where the sample landed,
	// not compared at this level) come first, as the first thread has
	// them: the leaf a person looks for stays visible.
	if len(b.Leaf) > 0 {
		if b.Count > 1 {
			ew.printf("  %s\n", st.Dim(fmt.Sprintf("innermost frames as %s has them (they differ between the threads):", firstMember(b))))
		}
		for _, f := range b.Leaf {
			writeFrame(ew, st, f, "", width)
		}
	}
	for i := 0; i < len(b.Frames); i++ {
		if i == maxFrames {
			ew.printf("    %s\n", st.Dim(fmt.Sprintf("… %d more frame(s)", len(b.Frames)-i)))
			break
		}
		f := b.Frames[i]
		if f.Region {
			writeRegion(ew, st, f, width)
			continue
		}
		mark := ""
		if f.Period > 0 {
			// first frame of a block carries the count; the rest a bar.
			first := i == 0 || b.Frames[i-1].Period == 0 || blockStart(b.Frames, i)
			if first {
				mark = "↻ " + repeatText(f.Repeat, f.RepeatMax)
			} else {
				mark = "│"
			}
		}
		writeFrame(ew, st, f, mark, width)
	}
}

// writeFrame prints one frame line: the recursion mark (yellow), the
// function and its file:line (":*" when the line differs between threads).
func writeFrame(ew *errWriter, st report.Safe, f stacks.Frame, mark string, width int) {
	loc := report.Clean(f.File)
	if f.Line > 0 {
		if f.LineVaries {
			loc += ":*"
		} else {
			loc += fmt.Sprintf(":%d", f.Line)
		}
	}
	fn := report.Clean(f.Func)
	if len(fn) > width {
		fn = fn[:width-1] + "…"
	}
	// fn and loc are clean, mark is bringup's: the line is too.
	m := fmt.Sprintf("%-9s", mark)
	if mark != "" {
		m = st.Style.Yellow(m)
	}
	line := fmt.Sprintf("  %s %-*s  %s", m, width, fn, loc)
	if f.Native {
		line = st.Style.Dim(line)
	}
	ew.printf("%s\n", report.Styled(line))
}

// writeRegion prints an irregular recursion folded into one entry: how
// many frames, then each of its functions with its line and frame count
// (innermost first), so the functions the recursion runs through stay
// visible at every level.
func writeRegion(ew *errWriter, st report.Safe, f stacks.Frame, width int) {
	k := fmt.Sprintf("%d", f.Repeat)
	if f.RepeatMax > 0 {
		k = fmt.Sprintf("%d–%d", f.Repeat, f.RepeatMax)
	}
	if len(f.Members) == 0 {
		ew.printf("  %s %s\n", st.Yellow(fmt.Sprintf("↻ %s frames of recursion in %s:", k, f.File)), f.Func)
		return
	}
	ew.printf("  %s\n", st.Yellow(fmt.Sprintf("↻ %s frames of recursion in %s, through:", k, f.File)))
	for i, m := range f.Members {
		mark := "│ " + repeatText(m.Count, m.CountMax)
		if i == 0 {
			mark = "↻ " + repeatText(m.Count, m.CountMax)
		}
		writeFrame(ew, st, stacks.Frame{Func: m.Func, File: m.File, Line: m.Line, LineVaries: m.LineVaries}, mark, width)
	}
}

// repeatText is "×k" or "×k–m".
func repeatText(k, kmax int) string {
	if kmax > 0 && kmax != k {
		return fmt.Sprintf("×%d–%d", k, kmax)
	}
	return fmt.Sprintf("×%d", k)
}

// firstMember names the bucket's first thread (whose Leaf is shown).
func firstMember(b *stacks.Bucket) string {
	if len(b.Threads) == 0 {
		return "the first thread"
	}
	m := b.Threads[0]
	if m.Rank != "" {
		return fmt.Sprintf("%s (pid %d)", m.Rank, m.PID)
	}
	return fmt.Sprintf("pid %d", m.PID)
}

// bucketRoles names the helper or coordinator roles of the bucket's
// processes ("multiprocessing resource tracker"); "" for workers.
func bucketRoles(b *stacks.Bucket, roles map[int]string) string {
	var labels []string
	for _, m := range b.Threads {
		if r := roles[m.PID]; r != "" {
			if l := stacks.RoleLabel(r); !slices.Contains(labels, l) {
				labels = append(labels, l)
			}
		}
	}
	return strings.Join(labels, ", ")
}

// helpersLine lists the helper processes that were not compared:
// "multiprocessing resource tracker pid 12; engine API server pids 3,4".
func helpersLine(hs []stacks.RoleCount) string {
	var parts []string
	for _, h := range hs {
		what := "pid " + intsJoin(h.PIDs)
		if len(h.PIDs) > 1 {
			what = "pids " + intsJoin(h.PIDs)
		}
		parts = append(parts, h.Label+" "+what)
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + " (not counted among the workers)"
}

// blockStart tells whether frame i starts a new repeated block right after
// another block.
func blockStart(fr []stacks.Frame, i int) bool {
	// Count back to the start of the run of block frames.
	j := i
	for j > 0 && fr[j-1].Period > 0 {
		j--
	}
	return (i-j)%fr[i].Period == 0 && fr[j].Period == fr[i].Period && sameBlockRun(fr, j, i)
}

func sameBlockRun(fr []stacks.Frame, j, i int) bool {
	// Blocks sit back to back; a new block starts every Period frames
	// within a run of equal periods.
	for k := j; k < i; k++ {
		if fr[k].Period != fr[i].Period {
			return false
		}
	}
	return true
}

func pathLine(fr []stacks.Frame, rootFirst bool) string {
	var parts []string
	for _, f := range fr {
		s := f.Func
		switch {
		case f.Region:
			s = "[recursion in " + f.File + "]"
		case f.Cycle != nil:
			s = "[" + s + "] ×k"
		case f.Period > 0:
			s += " ×k"
		}
		parts = append(parts, s)
	}
	const show = 6
	if len(parts) > show {
		if rootFirst {
			parts = append(parts[:show], "…")
		} else {
			parts = append(parts[:show], "…")
		}
	}
	return strings.Join(parts, " → ")
}

func intsJoin(ns []int) string {
	var s []string
	for _, n := range ns {
		s = append(s, fmt.Sprint(n))
	}
	return strings.Join(s, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func wrap(s string, width int) []string {
	var out []string
	for _, para := range strings.Split(s, "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			if line != "" && len(line)+1+len(w) > width {
				out = append(out, line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}

type errWriter struct {
	w   io.Writer
	err error
}

// printf writes with every text argument cleaned (report.Fprintf).
func (e *errWriter) printf(format string, a ...any) {
	if e.err != nil {
		return
	}
	_, e.err = report.Fprintf(e.w, format, a...)
}

// Doc is the JSON document (bringup.stacks/v1).
type Doc struct {
	Schema      string            `json:"schema"`
	Verdict     string            `json:"verdict"`
	Level       string            `json:"level"`
	Processes   []*record.Process `json:"processes"`
	Buckets     []*stacks.Bucket  `json:"buckets"`
	Shared      stacks.Shared     `json:"shared"`
	Outliers    []stacks.Outlier  `json:"outliers"`
	Findings    []record.Finding  `json:"findings"`
	Snapshots   []stacks.Progress `json:"snapshots,omitempty"`
	Warnings    []Warning         `json:"warnings"`
	Interleaved []Warning         `json:"interleaved,omitempty"`
	// Where is the headline's data: where the workers are (the verdict's
	// text is Where.Text when no signature matched).
	Where stacks.Where `json:"where"`
}

// NewDoc builds the JSON document; empty lists are [] not null.
func NewDoc(a *stacks.Analysis) Doc {
	d := Doc{
		Schema: Schema, Verdict: a.Verdict(), Level: a.Level.String(),
		Processes: a.Processes, Buckets: a.Buckets, Shared: a.Shared, Outliers: a.Outliers,
		Findings: a.Findings, Snapshots: a.Progress, Warnings: wireWarnings(a.Warnings), Interleaved: wireWarnings(a.Interleaved),
		Where: a.Where,
	}
	if d.Where.PIDs == nil {
		d.Where.PIDs = []int{}
	}
	if d.Processes == nil {
		d.Processes = []*record.Process{}
	}
	for _, p := range d.Processes {
		if p.Threads == nil {
			p.Threads = []record.Thread{}
		}
		for i := range p.Threads {
			if p.Threads[i].Frames == nil {
				p.Threads[i].Frames = record.Stack{}
			}
		}
	}
	if d.Buckets == nil {
		d.Buckets = []*stacks.Bucket{}
	}
	for _, b := range d.Buckets {
		if b.Ranks == nil {
			b.Ranks = []string{}
		}
		if b.PIDs == nil {
			b.PIDs = []int{}
		}
		if b.Frames == nil {
			b.Frames = []stacks.Frame{}
		}
	}
	if d.Shared.RootPath == nil {
		d.Shared.RootPath = []stacks.Frame{}
	}
	if d.Shared.LeafPath == nil {
		d.Shared.LeafPath = []stacks.Frame{}
	}
	if d.Outliers == nil {
		d.Outliers = []stacks.Outlier{}
	}
	if d.Findings == nil {
		d.Findings = []record.Finding{}
	}
	if d.Warnings == nil {
		d.Warnings = []Warning{}
	}
	return d
}

// Warning is a record.Skip as bringup.stacks/v1 writes it: the reason
// under "message", the path always present.
type Warning struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

func wireWarnings(skips []record.Skip) []Warning {
	if skips == nil {
		return nil
	}
	ws := make([]Warning, len(skips))
	for i, s := range skips {
		ws[i] = Warning{Path: s.Path, Line: s.Line, Message: s.Reason}
	}
	return ws
}

// JSON writes the analysis as bringup.stacks/v1.
func JSON(w io.Writer, a *stacks.Analysis) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(NewDoc(a))
}

// Collapsed writes folded stacks, root first, one line per distinct stack
// with the number of threads that have it ("a;b;c 8"), as flamegraph.pl,
// speedscope and py-spy's raw format read them. Frames are "func
// (file:line)" with package-relative files; recursion is kept at its real
// depth so the flame graph shows it. Idle auxiliary threads are left out
// unless all is set.
func Collapsed(w io.Writer, a *stacks.Analysis, all bool) error {
	benign := map[string]bool{}
	for _, b := range a.Buckets {
		if b.Benign {
			for _, m := range b.Threads {
				benign[fmt.Sprintf("%s:%d:%d", m.Path, m.Line, m.PID)] = true
			}
		}
	}
	counts := map[string]int{}
	var order []string
	for _, p := range a.Current {
		for _, t := range p.Threads {
			if len(t.Frames) == 0 || (!all && benign[fmt.Sprintf("%s:%d:%d", p.Path, t.Line, p.PID)]) {
				continue
			}
			parts := make([]string, len(t.Frames))
			for i, f := range t.Frames {
				file := stacks.NormFile(f.File, f.Native)
				s := f.Func + " (" + file
				if f.Line > 0 {
					s += fmt.Sprintf(":%d", f.Line)
				}
				s += ")"
				parts[len(t.Frames)-1-i] = strings.ReplaceAll(s, ";", ":")
			}
			key := strings.Join(parts, ";")
			if counts[key] == 0 {
				order = append(order, key)
			}
			counts[key]++
		}
	}
	ew := &errWriter{w: w}
	for _, k := range order {
		ew.printf("%s %d\n", k, counts[k])
	}
	return ew.err
}

// Format is one of the outputs of a stack analysis.
type Format int

// The formats.
const (
	FormatText      Format = iota // Text
	FormatJSON                    // JSON, bringup.stacks/v1
	FormatCollapsed               // Collapsed
)

// Write writes the analysis in format f (o.All also keeps idle threads in
// the folded stacks).
func Write(w io.Writer, a *stacks.Analysis, f Format, o TextOptions) error {
	switch f {
	case FormatJSON:
		return JSON(w, a)
	case FormatCollapsed:
		return Collapsed(w, a, o.All)
	}
	return Text(w, a, o)
}
