package tracehtml

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/analyze/compiles"
)

type indexPage struct {
	Page         pageMeta
	Verdict      verdictView
	Findings     []findingView
	Stats        []statView
	Timeline     *timelineView
	TimelineNote string
	Tree         []rankTree
	UnitRows     []unitRow
	Failures     []failureRow
	FailuresMore int
	Breaks       []breakRow
	Recompiles   []recompileRow
	// RecompilesMore and CacheMore count rows left out by Options.MaxRows.
	RecompilesMore int
	Cache          []cacheRow
	CacheMore      int
	RankCount      int
	RankRows       []compiles.RankSummary
	Divergence     []divergenceView
	DivergenceNone string
	Sources        []sourceRow
}

type findingView struct {
	Severity, Class string
	Title, Rule     string
	Cause           string
	Remedy          []string
	Ranks           string
	Count           int
	Evidence        []string
	References      []string
}

type verdictView struct {
	Class    string // "", "warn", "err"
	Headline string
	Points   []string
}

type statView struct{ Label, Value, Class string }

type rankTree struct {
	Name, Summary string
	Frames        []frameNode
}

type frameNode struct {
	Frame  string
	Where  string
	Search string
	Units  []unitRow
}

type unitRow struct {
	ID, Href            string
	Status, StatusClass string
	Meta                string
	Search              string
	Attempts            []unitRow
}

type failureRow struct {
	Rank, ID, Href, Type, Reason, Where string
}

type unitLink struct{ ID, Href string }

type breakRow struct {
	Count         int
	Reason, Where string
	Ranks         string
	Units         []unitLink
	More          int
}

type recompileRow struct {
	Rank, ID, Href, Where, Reason string
	// Earlier are the guard failures against older cache entries that
	// PyTorch lists after the first (the one against the newest entry).
	Earlier []string
}

type cacheRow struct {
	Rank, ID, Href, Cache, Outcome, Class, Detail string
}

type divergenceView struct {
	Class, Title, Detail string
	Groups               []divGroupView
}

type divGroupView struct{ Ranks, Value string }

type sourceRow struct {
	Path, Rank, Problems string
	Lines, Events        int
}

func ranksWord(rs []int) string {
	var b []string
	for _, r := range rs {
		b = append(b, rankWord(r))
	}
	return strings.Join(b, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func (s *site) indexView() indexPage {
	res := s.res
	p := indexPage{Page: pageMeta{Title: s.opts.Title, Footer: s.opts.Footer}}
	var sub []string
	for _, in := range res.Inputs {
		sub = append(sub, filepath.Base(in.Path))
	}
	if len(sub) > 4 {
		sub = append(sub[:3], fmt.Sprintf("and %d more", len(sub)-3))
	}
	p.Page.Subtitle = strings.Join(sub, ", ")
	p.RankCount = len(res.Inputs)

	// Counts for the verdict and the stat cards.
	var failed, restarted, running, noMetrics []*compiles.Compile
	var total float64
	for i := range res.Compiles {
		c := &res.Compiles[i]
		total += c.Seconds.Total
		switch c.Status {
		case compiles.StatusFailed:
			failed = append(failed, c)
		case compiles.StatusRestarted:
			restarted = append(restarted, c)
		case compiles.StatusRunning:
			running = append(running, c)
		case compiles.StatusNoMetrics:
			noMetrics = append(noMetrics, c)
		}
	}
	breaks := 0
	for _, g := range res.GraphBreaks {
		breaks += g.Count
	}
	var hit, miss, bypass int
	for _, st := range res.CacheStats {
		hit, miss, bypass = hit+st.Hit, miss+st.Miss, bypass+st.Bypass
	}
	limitHit := 0
	for _, f := range res.Frames {
		if f.LimitHit {
			limitHit++
		}
	}

	v := &p.Verdict
	ranks := plural(len(res.Inputs), "input", "inputs")
	switch {
	case len(failed) > 0:
		c := failed[0]
		v.Class = "err"
		v.Headline = fmt.Sprintf("%s of %d failed — first: [%s] on %s, %s", plural(len(failed), "compile", "compiles"), len(res.Compiles), c.ID, s.label(c.Path), orDash(c.FailType))
	case len(running) > 0 || len(res.OpenPhases) > 0:
		v.Class = "err"
		v.Headline = fmt.Sprintf("The log ends inside a compile: %s still open", plural(len(res.OpenPhases), "phase", "phases"))
	case len(res.Divergence) > 0:
		v.Class = "warn"
		v.Headline = fmt.Sprintf("Ranks disagree: %s — a classic precursor of a distributed hang", res.Divergence[0].Summary)
	case limitHit > 0:
		v.Class = "warn"
		v.Headline = fmt.Sprintf("%s hit the recompile limit and now run eagerly", plural(limitHit, "frame", "frames"))
	case breaks > 0 || len(res.Recompiles) > 0:
		v.Class = "warn"
		v.Headline = fmt.Sprintf("%d compiles finished, with %s and %s", len(res.Compiles), plural(breaks, "graph break", "graph breaks"), plural(len(res.Recompiles), "recompile", "recompiles"))
	case len(res.Compiles) == 0:
		v.Class = "warn"
		v.Headline = fmt.Sprintf("No compile units in %s", ranks)
	default:
		v.Headline = fmt.Sprintf("All %d compiles on %s finished without failure, graph break or recompile", len(res.Compiles), ranks)
	}
	for _, op := range res.OpenPhases {
		if op.Innermost && len(v.Points) < 6 {
			pt := fmt.Sprintf("%s stopped inside %s [%s] (line %d)", s.label(op.Path), op.Name, orDash(op.CompileID), op.Line)
			if op.DurUs > 0 {
				pt += ", open for " + fmtDur(op.DurUs/1e6)
			}
			v.Points = append(v.Points, pt)
		}
	}
	// The same failure repeated (several runs in one log, every rank) is
	// one bullet with its count.
	var failPoints []string
	failCount := map[string]int{}
	for _, c := range failed {
		pt := fmt.Sprintf("[%s] on %s failed: %s", c.ID, s.label(c.Path), firstLine(orDash(c.FailType)+": "+c.FailReason, 200))
		if failCount[pt] == 0 {
			failPoints = append(failPoints, pt)
		}
		failCount[pt]++
	}
	for _, pt := range failPoints {
		if len(v.Points) >= 8 {
			break
		}
		if n := failCount[pt]; n > 1 {
			pt += fmt.Sprintf(" (%d times)", n)
		}
		v.Points = append(v.Points, pt)
	}
	for _, d := range res.Divergence {
		if len(v.Points) >= 10 {
			break
		}
		if v.Class != "warn" || d.Summary != res.Divergence[0].Summary {
			v.Points = append(v.Points, "divergence: "+d.Summary)
		}
	}
	if limitHit > 0 && len(failed) > 0 {
		v.Points = append(v.Points, fmt.Sprintf("%s hit the recompile limit (later calls run eagerly)", plural(limitHit, "frame", "frames")))
	}

	errs := 0
	for _, f := range res.Findings {
		fv := findingView{Severity: string(f.Severity), Class: "s-" + string(f.Severity), Title: f.Title, Rule: f.Rule,
			Cause: f.Cause, Remedy: f.Remedy, Ranks: strings.Join(f.Ranks, ", "), Count: f.Count, References: f.References}
		if f.Severity == "error" {
			fv.Class = "s-error"
			errs++
		}
		for _, e := range f.Evidence {
			ev := fmt.Sprintf("%s:%d", e.Path, e.Line)
			if e.Rank != "" {
				ev += " (" + e.Rank + ")"
			}
			fv.Evidence = append(fv.Evidence, ev+"  "+firstLine(e.Text, 300))
		}
		p.Findings = append(p.Findings, fv)
	}
	if warns := len(res.Findings) - errs; errs == 0 && warns > 0 && v.Class == "" {
		v.Class = "warn"
		v.Points = append(v.Points, fmt.Sprintf("%s below: %s", plural(warns, "finding", "findings"), res.Findings[0].Title))
	}
	if errs > 0 && v.Class != "err" {
		v.Class = "err"
		v.Points = append([]string{fmt.Sprintf("%s: %s", plural(errs, "error-level finding", "error-level findings"), res.Findings[0].Title)}, v.Points...)
	}

	cls := func(bad bool, c string) string {
		if bad {
			return c
		}
		return "ok"
	}
	p.Stats = []statView{
		{"inputs", fmt.Sprint(len(res.Inputs)), ""},
		{"compile units", fmt.Sprint(len(res.Compiles)), ""},
		{"failed", fmt.Sprint(len(failed)), cls(len(failed) > 0, "err")},
		{"graph breaks", fmt.Sprint(breaks), cls(breaks > 0, "warn")},
		{"recompiles", fmt.Sprint(len(res.Recompiles)), cls(len(res.Recompiles) > 0, "warn")},
		{"open phases", fmt.Sprint(len(res.OpenPhases)), cls(len(res.OpenPhases) > 0, "err")},
		{"cache hit / miss / bypass", fmt.Sprintf("%d / %d / %d", hit, miss, bypass), ""},
		{"compile time (sum)", fmtDur(total), ""},
	}
	if len(noMetrics) > 0 {
		p.Stats = append(p.Stats, statView{"without metrics", fmt.Sprint(len(noMetrics)), "warn"})
	}

	// Timeline: one lane per input.
	lanes := make([]tlLane, 0, len(res.Inputs))
	laneOf := map[string]int{}
	for _, in := range res.Inputs {
		laneOf[in.Path] = len(lanes)
		lanes = append(lanes, tlLane{Name: s.label(in.Path)})
	}
	addPhase := func(ph *compiles.Phase, open bool, u int) {
		j, ok := laneOf[ph.Path]
		if !ok {
			j = len(lanes)
			laneOf[ph.Path] = j
			lanes = append(lanes, tlLane{Name: s.label(ph.Path)})
		}
		href := ""
		if u >= 0 {
			href = s.units[u].File
		}
		lanes[j].Phases = append(lanes[j].Phases, tlPhase{P: ph, Open: open, Href: href})
	}
	for i := range res.Phases {
		addPhase(&res.Phases[i], false, s.phaseUnit[i])
	}
	for i := range res.OpenPhases {
		addPhase(&res.OpenPhases[i], true, s.openUnit[i])
	}
	p.Timeline = layoutTimeline(lanes)
	p.TimelineNote = fmt.Sprintf("%d phases from chromium events; hover a bar for its name and times, click it for its compile unit", len(res.Phases)+len(res.OpenPhases))
	if res.PhasesDropped > 0 {
		p.TimelineNote += fmt.Sprintf("; %d more were over the analysis cap", res.PhasesDropped)
	}

	p.Tree, p.UnitRows = s.unitTree()

	for i, c := range failed {
		if i >= s.opts.MaxRows {
			p.FailuresMore = len(failed) - i
			break
		}
		p.Failures = append(p.Failures, failureRow{Rank: s.label(c.Path), ID: c.ID, Href: s.unitHref("", c.Path, c.ID, c.Line),
			Type: orDash(c.FailType), Reason: c.FailReason, Where: c.FailUserFrame})
	}

	for _, g := range res.GraphBreaks {
		r := breakRow{Count: g.Count, Reason: g.Reason, Where: orDash(g.UserFrame), Ranks: ranksWord(g.Ranks)}
		if g.GBID != "" {
			r.Reason = g.GBID + " " + g.GBType + ": " + r.Reason
		}
		for _, id := range g.CompileIDs {
			if len(r.Units) >= 12 {
				r.More++
				continue
			}
			href := ""
			for _, rk := range g.Ranks {
				if href = s.unitHrefByRank("", rk, id); href != "" {
					break
				}
			}
			r.Units = append(r.Units, unitLink{ID: id, Href: href})
		}
		p.Breaks = append(p.Breaks, r)
	}
	sort.SliceStable(p.Breaks, func(i, j int) bool { return p.Breaks[i].Count > p.Breaks[j].Count })

	for i, rc := range res.Recompiles {
		if i >= s.opts.MaxRows {
			p.RecompilesMore = len(res.Recompiles) - i
			break
		}
		href := s.unitHref("", rc.Evidence.Path, rc.CompileID, rc.Evidence.Line)
		if href == "" {
			href = s.unitHrefByRank("", rc.Rank, rc.CompileID)
		}
		row := recompileRow{Rank: rankWord(rc.Rank), ID: rc.CompileID, Href: href, Where: rc.Frame}
		if len(rc.Reasons) > 0 {
			row.Reason, row.Earlier = rc.Reasons[0], rc.Reasons[1:]
		}
		p.Recompiles = append(p.Recompiles, row)
	}

	for i, ce := range res.Cache {
		if i >= s.opts.MaxRows {
			p.CacheMore = len(res.Cache) - i
			break
		}
		detail := ce.Reason
		if ce.Key != "" {
			detail = strings.TrimSpace(ce.Key + "  " + detail)
		}
		if ce.TimeSavedMs > 0 {
			detail += fmt.Sprintf("  (saved %s)", fmtDur(ce.TimeSavedMs/1e3))
		}
		if d := ce.Differs; d != nil && len(d.Components) > 0 {
			detail += fmt.Sprintf("  — differs from [%s] on rank %s in: %s", d.CompileID, rankWord(d.Rank), strings.Join(d.Components, ", "))
		}
		p.Cache = append(p.Cache, cacheRow{Rank: s.label(ce.Path), ID: ce.CompileID, Href: s.unitHref("", ce.Path, ce.CompileID, ce.Line),
			Cache: ce.Kind, Outcome: ce.Outcome, Class: "c-" + ce.Outcome, Detail: detail})
	}

	if len(res.Ranks) > 1 {
		p.RankRows = res.Ranks
	}
	for _, d := range res.Divergence {
		dv := divergenceView{Title: d.Summary, Detail: d.Kind}
		for _, g := range d.Groups {
			rs := strings.Join(g.Labels, ", ")
			if rs == "" {
				rs = ranksWord(g.Ranks)
			}
			dv.Groups = append(dv.Groups, divGroupView{Ranks: rs, Value: firstLine(g.Value, 400)})
		}
		p.Divergence = append(p.Divergence, dv)
	}
	switch {
	case len(res.Inputs) < 2:
		p.DivergenceNone = "One input only: nothing to compare across ranks."
	default:
		p.DivergenceNone = fmt.Sprintf("The %d inputs agree on compile ids, cache hit/miss patterns, collective schedules and execution order.", len(res.Inputs))
	}

	for _, in := range res.Inputs {
		row := sourceRow{Path: in.Path, Rank: rankWord(in.Rank) + " (from " + in.RankFrom + ")"}
		if st := res.Counts[in.Path]; st != nil {
			row.Lines, row.Events = st.Lines, st.Records
			var probs []string
			add := func(n int, what string, lines []int) {
				if n > 0 {
					s := fmt.Sprintf("%d %s", n, what)
					if len(lines) > 0 {
						s += fmt.Sprintf(" (first at line %d)", lines[0])
					}
					probs = append(probs, s)
				}
			}
			add(st.Corrupted, "bad envelopes", st.CorruptedLines)
			add(st.NonGlog, "non-trace lines", st.NonGlogLines)
			add(st.PayloadMD5Mismatch, "payload MD5 mismatches", st.MD5MismatchLines)
			add(st.OrphanPayloadLines, "orphan payload lines", nil)
			if len(st.Unknown) > 0 {
				probs = append(probs, fmt.Sprintf("%d unknown event kinds", len(st.Unknown)))
			}
			if st.ReadError != "" {
				probs = append(probs, "read error: "+st.ReadError)
			}
			row.Problems = strings.Join(probs, "; ")
		}
		if row.Problems == "" {
			row.Problems = "none"
		}
		p.Sources = append(p.Sources, row)
	}
	for _, ig := range res.Ignored {
		p.Sources = append(p.Sources, sourceRow{Path: ig.Path, Rank: "-", Problems: "not read: " + ig.Reason})
	}
	return p
}

// unitTree groups compile units by input, then by Dynamo frame.
func (s *site) unitTree() ([]rankTree, []unitRow) {
	var trees []rankTree
	var all []unitRow
	treeOf := map[string]int{}
	frameOf := map[string]int{}
	frameInfo := map[string]compiles.FrameSummary{}
	for _, f := range s.res.Frames {
		frameInfo[key(f.Path, fmt.Sprint(f.FrameID))] = f
	}
	for i := range s.units {
		u := &s.units[i]
		c := u.C
		if c == nil {
			continue
		}
		ti, ok := treeOf[u.Path]
		if !ok {
			ti = len(trees)
			treeOf[u.Path] = ti
			trees = append(trees, rankTree{Name: u.Label})
		}
		fr := "-"
		if c.FrameID != nil {
			fr = fmt.Sprint(*c.FrameID)
		}
		if c.AutogradID != nil {
			fr = fmt.Sprintf("compiled autograd %d / %s", *c.AutogradID, fr)
		}
		fk := key(u.Path, fr)
		fi, ok := frameOf[fk]
		if !ok {
			fi = len(trees[ti].Frames)
			frameOf[fk] = fi
			where := ""
			if c.Frame.Func != "" {
				where = c.Frame.String()
			}
			if info, ok := frameInfo[fk]; ok && info.LimitHit {
				where += fmt.Sprintf(" — recompile limit (%d) hit: later calls run eagerly", info.Limit)
			}
			trees[ti].Frames = append(trees[ti].Frames, frameNode{Frame: fr, Where: where,
				Search: strings.ToLower(u.Label + " " + fr + " " + where)})
		}
		meta := []string{}
		if c.Occurrence > 0 {
			meta = append(meta, fmt.Sprintf("occurrence %d of this id (the log holds several runs)", c.Occurrence+1))
		}
		if c.Seconds.Total > 0 {
			meta = append(meta, fmtDur(c.Seconds.Total))
		}
		if c.Attempts > 1 {
			meta = append(meta, fmt.Sprintf("%d attempts", c.Attempts))
		}
		if c.GraphBreaks > 0 {
			meta = append(meta, plural(c.GraphBreaks, "graph break", "graph breaks"))
		}
		if c.FailType != "" {
			meta = append(meta, c.FailType)
		}
		if len(c.RecompileReasons) > 0 {
			meta = append(meta, "recompile: "+firstLine(c.RecompileReasons[0], 120))
		}
		row := unitRow{ID: c.ID, Href: u.File, Status: statusWord(c.Status), StatusClass: statusClass(c.Status),
			Meta: strings.Join(meta, " · ")}
		row.Search = strings.ToLower(strings.Join([]string{u.Label, c.ID, row.Status, c.Frame.Func, row.Meta}, " "))
		trees[ti].Frames[fi].Units = append(trees[ti].Frames[fi].Units, row)
		trees[ti].Frames[fi].Search += " " + row.Search
		all = append(all, row)
	}
	for i := range trees {
		n, bad := 0, 0
		for _, f := range trees[i].Frames {
			for _, u := range f.Units {
				n++
				if u.StatusClass == "s-error" || u.StatusClass == "s-running" {
					bad++
				}
			}
		}
		trees[i].Summary = fmt.Sprintf("%s, %s", plural(len(trees[i].Frames), "frame", "frames"), plural(n, "unit", "units"))
		if bad > 0 {
			trees[i].Summary += fmt.Sprintf(", %d not finished or failed", bad)
		}
	}
	// Pages for events outside any compile are linked from the tree too.
	for i := range s.units {
		u := &s.units[i]
		if u.C != nil {
			continue
		}
		ti, ok := treeOf[u.Path]
		if !ok {
			ti = len(trees)
			treeOf[u.Path] = ti
			trees = append(trees, rankTree{Name: u.Label, Summary: "no compile units"})
		}
		row := unitRow{ID: "no compile id", Href: u.File, Status: "outside", StatusClass: "s-empty",
			Meta: plural(len(u.Artifacts), "event", "events") + " outside any compile"}
		row.Search = strings.ToLower(u.Label + " outside " + row.Meta)
		trees[ti].Frames = append(trees[ti].Frames, frameNode{Frame: "-", Where: "events without a compile id", Search: row.Search, Units: []unitRow{row}})
	}
	return trees, all
}
