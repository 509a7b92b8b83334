// Package diagnosis renders a diagnose.Diagnosis for people (terminal text:
// verdict first, then evidence with file:line, then the remedy; colour only
// when the Style enables it) and for programs (JSON, schema
// bringup.diagnosis/v1). It never parses and never decides.
package diagnosis

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bringup-tool/bringup/diagnose"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/report"
)

// WriteJSON writes d as indented JSON (the document NewDoc gives).
func WriteJSON(w io.Writer, d *diagnose.Diagnosis) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(NewDoc(d))
}

// Doc is the bringup.diagnosis/v1 document: the diagnosis's fields in the
// schema's order, its timeline in the schema's phase shape.
type Doc struct {
	Schema   string            `json:"schema"`
	Status   string            `json:"status"`
	Verdict  string            `json:"verdict"`
	Root     string            `json:"root,omitempty"`
	RaisedIn string            `json:"raised_in,omitempty"`
	PhaseWhy string            `json:"phase_why,omitempty"`
	Inputs   []diagnose.Input  `json:"inputs"`
	Versions map[string]string `json:"versions"`
	Findings []record.Finding  `json:"findings"`
	Errors   []diagnose.Error  `json:"errors"`
	Timeline []Phase           `json:"timeline"`
	Gaps     []diagnose.Gap    `json:"gaps"`
	Facts    map[string]any    `json:"facts,omitempty"`
	Hang     string            `json:"hang,omitempty"`
}

// Phase is a timeline entry as bringup.diagnosis/v1 writes it: the
// phase's name under "phase", start and end always written, and none of
// record.Phase's open or end_line.
type Phase struct {
	Rank    string    `json:"rank"`
	Phase   string    `json:"phase"`
	Detail  string    `json:"detail,omitempty"` // e.g. "compile range (1, 8192)"
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
	Status  string    `json:"status"` // done | failed | unfinished
	Path    string    `json:"path"`
	Line    int       `json:"line"`
	Until   string    `json:"until,omitempty"` // diagnose.UntilStop or UntilLastLine
}

// NewDoc is d's document.
func NewDoc(d *diagnose.Diagnosis) *Doc {
	doc := &Doc{Schema: d.Schema, Status: d.Status, Verdict: d.Verdict, Root: d.Root, RaisedIn: d.RaisedIn,
		PhaseWhy: d.PhaseWhy, Inputs: d.Inputs, Versions: d.Versions, Findings: d.Findings, Errors: d.Errors,
		Gaps: d.Gaps, Facts: d.Facts, Hang: d.Hang}
	if d.Timeline != nil {
		doc.Timeline = make([]Phase, 0, len(d.Timeline))
	}
	for _, p := range d.Timeline {
		doc.Timeline = append(doc.Timeline, Phase{Rank: p.Rank, Phase: p.Name, Detail: p.Detail, Start: p.Start,
			End: p.End, Seconds: p.Seconds, Status: p.Status, Path: p.Path, Line: p.Line, Until: p.Until})
	}
	return doc
}

// Limits of the terminal report; the JSON has everything.
const (
	maxErrorFrames = 4
	maxNotes       = 8
	maxPhases      = 8
	maxGaps        = 3
)

// WriteText writes the terminal report.
func WriteText(w io.Writer, d *diagnose.Diagnosis, st report.Style) error {
	p := &printer{w: w}
	switch d.Status {
	case "failed":
		p.line(st.Red(st.Bold(d.Verdict)))
	case "warnings":
		p.line(st.Yellow(d.Verdict))
	default:
		p.line(st.Green(d.Verdict))
	}
	p.line(st.Dim(summary(d)))

	for i, f := range d.Findings {
		p.line("")
		if f.Severity == record.SeverityError || i == 0 {
			writeFinding(p, f, st, true)
		} else {
			writeFinding(p, f, st, false)
		}
	}

	if len(d.Errors) > 0 {
		p.line("")
		p.line(st.Bold("Root exceptions") + st.Dim(" (wrappers unwrapped)"))
		for _, e := range d.Errors {
			msg := firstLine(e.Message)
			head := e.Exception
			if msg != "" {
				head += ": " + msg
			}
			p.line("  " + st.Red(head))
			p.line(fmt.Sprintf("    %s%s%s", st.Cyan(fmt.Sprintf("%s:%d", e.Path, e.Line)), ranksSuffix(e.Ranks, e.Count), rulesSuffix(e.Rules)))
			for i, fr := range e.Frames {
				if i == maxErrorFrames {
					p.line(st.Dim(fmt.Sprintf("      … %d outer frames", len(e.Frames)-i)))
					break
				}
				p.line(st.Dim(fmt.Sprintf("      at %s (%s:%d)", fr.Func, fr.File, fr.Line)))
			}
		}
	}

	// Phases that did not finish, one line per (input, phase, status) with
	// the ranks that share it.
	type openKey struct{ path, phase, status string }
	var order []openKey
	open := map[openKey]*openPhases{}
	for _, ph := range d.Timeline {
		if ph.Status == "done" {
			continue
		}
		k := openKey{ph.Path, ph.Name, ph.Status}
		o := open[k]
		if o == nil {
			o = &openPhases{line: ph.Line}
			open[k] = o
			order = append(order, k)
		}
		if ph.Rank != "" {
			o.ranks = append(o.ranks, ph.Rank)
		}
		if ph.Seconds > o.seconds || o.until == "" {
			o.seconds, o.until = max(o.seconds, ph.Seconds), ph.Until
		}
	}
	if len(order) > 0 {
		p.line("")
		p.line(st.Bold("Phases not finished"))
		for i, k := range order {
			if i == maxPhases {
				p.line(st.Dim(fmt.Sprintf("  … %d more (see --json)", len(order)-i)))
				break
			}
			o := open[k]
			ranks := "-"
			if len(o.ranks) > 0 {
				ranks = rankRange(o.ranks)
			}
			p.line(fmt.Sprintf("  %-10s %-10s %8s  %s  %s%s", k.phase, k.status, fmtSeconds(o.seconds), st.Cyan(fmt.Sprintf("%s:%d", k.path, o.line)), st.Dim(ranks), st.Dim(untilNote(o.until))))
		}
	}
	if len(d.Gaps) > 0 && d.Gaps[0].Seconds >= 60 {
		p.line("")
		p.line(st.Bold("Longest silences"))
		for i, g := range d.Gaps {
			if i == maxGaps || g.Seconds < 60 {
				break
			}
			p.line(fmt.Sprintf("  %s of no output after %s", fmtSeconds(g.Seconds), st.Cyan(fmt.Sprintf("%s:%d", g.Path, g.Line))))
		}
	}

	var notes []string
	for _, in := range d.Inputs {
		if in.Error != "" {
			notes = append(notes, in.Note())
		} else if in.Skipped > 0 {
			where := ""
			if len(in.SkipSamples) > 0 {
				where = fmt.Sprintf(" (first at line %d: %s)", in.SkipSamples[0].Line, in.SkipSamples[0].Reason)
			}
			notes = append(notes, fmt.Sprintf("%s: %d lines skipped%s", in.Path, in.Skipped, where))
		}
	}
	if len(notes) > 0 {
		p.line("")
		p.line(st.Bold("Inputs not fully used"))
		for i, n := range notes {
			if i == maxNotes {
				p.line(st.Dim(fmt.Sprintf("  … %d more (see --json)", len(notes)-i)))
				break
			}
			p.line("  " + n)
		}
	}
	return p.err
}

func writeFinding(p *printer, f record.Finding, st report.Style, full bool) {
	p.line(fmt.Sprintf("%s  %s  %s", st.Severity(string(f.Severity)), st.Bold(f.Title), st.Dim("["+f.Rule+"]")))
	var meta []string
	if f.Phase != "" {
		meta = append(meta, "phase "+f.Phase)
	}
	if len(f.Ranks) > 0 {
		meta = append(meta, "ranks "+rankRange(f.Ranks))
	}
	if f.Count > 1 {
		meta = append(meta, fmt.Sprintf("seen %d×", f.Count))
	}
	if f.Confidence != "" {
		meta = append(meta, "confidence "+f.Confidence)
	}
	if len(meta) > 0 {
		p.line("  " + st.Dim(strings.Join(meta, " · ")))
	}
	ev := f.Evidence
	if !full && len(ev) > 1 {
		ev = ev[:1]
	}
	// The same line on several ranks is printed once, with where else it was seen.
	for i := 0; i < len(ev); i++ {
		e := ev[i]
		rank := ""
		if e.Rank != "" {
			rank = " [" + e.Rank + "]"
		}
		p.line(fmt.Sprintf("  %s%s  %s", st.Cyan(evidenceAt(e.Path, e.Line)), st.Dim(rank), e.Text))
		var also []string
		for i+1 < len(ev) && ev[i+1].Text == e.Text {
			i++
			a := ev[i]
			where := fmt.Sprintf(":%d", a.Line)
			if a.Path != e.Path {
				where = fmt.Sprintf("%s:%d", a.Path, a.Line)
			}
			if a.Rank != "" {
				where += " [" + a.Rank + "]"
			}
			also = append(also, where)
		}
		if len(also) > 0 {
			p.line(st.Dim("    same at " + strings.Join(also, ", ")))
		}
	}
	switch {
	case f.Root != "" && (len(f.Evidence) == 0 || !strings.Contains(f.Evidence[0].Text, f.Root)):
		root := f.Root
		if f.RaisedIn != "" {
			root += "  " + st.Dim("raised in "+f.RaisedIn)
		}
		p.line("  root: " + root)
	case f.RaisedIn != "":
		p.line(st.Dim("  raised in " + f.RaisedIn))
	}
	if f.PhaseWhy != "" && full {
		p.line(st.Dim("  phase " + f.Phase + ": " + f.PhaseWhy))
	}
	if !full {
		if len(f.Remedy) > 0 {
			p.line("  fix: " + f.Remedy[0])
		}
		return
	}
	p.wrapped("  why: ", oneParagraph(f.Cause))
	for i, r := range f.Remedy {
		lead := "       "
		if i == 0 {
			lead = "  fix: "
		}
		p.wrapped(lead+fmt.Sprintf("%d. ", i+1), r)
	}
	if len(f.References) > 0 {
		p.line("  " + st.Dim("see: "+strings.Join(f.References, " ")))
	}
}

type openPhases struct {
	ranks   []string
	line    int
	seconds float64
	until   string // what its length runs to (record.Phase.Until)
}

// untilNote says what an open phase's length runs to.
func untilNote(until string) string {
	switch until {
	case diagnose.UntilStop:
		return "  (open until the stop)"
	case diagnose.UntilLastLine:
		return "  (open until the log's last line)"
	}
	return ""
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(s string) {
	if p.err == nil {
		_, p.err = fmt.Fprintln(p.w, s)
	}
}

const width = 100

// wrapped prints text after lead, wrapping at width with a hanging indent.
func (p *printer) wrapped(lead, text string) {
	indent := strings.Repeat(" ", len([]rune(lead)))
	cur := lead
	n := len([]rune(lead))
	fresh := true
	for _, word := range strings.Fields(text) {
		wl := len([]rune(word))
		if !fresh && n+1+wl > width {
			p.line(cur)
			cur, n, fresh = indent, len(indent), true
		}
		if !fresh {
			cur += " "
			n++
		}
		cur += word
		n += wl
		fresh = false
	}
	p.line(cur)
}

func oneParagraph(s string) string { return strings.Join(strings.Fields(s), " ") }

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if len(l) > 300 {
		l = l[:300] + "…"
	}
	return l
}

func summary(d *diagnose.Diagnosis) string {
	var recs, skipped int64
	used := 0
	for _, in := range d.Inputs {
		recs += in.Records
		skipped += in.Skipped
		if in.Error == "" {
			used++
		}
	}
	s := fmt.Sprintf("%d input(s), %d records", used, recs)
	if skipped > 0 {
		s += fmt.Sprintf(", %d lines skipped", skipped)
	}
	if len(d.Versions) > 0 {
		keys := make([]string, 0, len(d.Versions))
		for k := range d.Versions {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var vs []string
		for _, k := range keys {
			vs = append(vs, k+" "+d.Versions[k])
		}
		s += "; " + strings.Join(vs, ", ")
	}
	return s
}

func ranksSuffix(ranks []string, count int) string {
	s := ""
	if len(ranks) > 0 {
		s = "  ranks " + rankRange(ranks)
	}
	if count > 1 {
		s += fmt.Sprintf("  (%d×)", count)
	}
	return s
}

func rulesSuffix(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return "  → " + strings.Join(ids, ", ")
}

// rankRange shortens a long sorted rank list: "TP0, TP1 … TP7 (8)".
func rankRange(rs []string) string {
	if len(rs) <= 6 {
		return strings.Join(rs, ", ")
	}
	return fmt.Sprintf("%s, %s … %s (%d ranks)", rs[0], rs[1], rs[len(rs)-1], len(rs))
}

func fmtSeconds(s float64) string {
	switch {
	case s >= 3600:
		return fmt.Sprintf("%.1f h", s/3600)
	case s >= 120:
		return fmt.Sprintf("%.1f min", s/60)
	}
	return fmt.Sprintf("%.0f s", s)
}

// evidenceAt is "path:line", or the path alone for evidence that is a
// whole file (a probe report).
func evidenceAt(path string, line int) string {
	if line <= 0 {
		return path
	}
	return path + ":" + strconv.Itoa(line)
}
