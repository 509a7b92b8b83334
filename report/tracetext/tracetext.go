// Package tracetext prints a compiles.Result for people: the verdict first,
// then failures, graph breaks, recompiles, cache, phases left open,
// divergence across ranks and what could not be read, each line with the
// file:line it came from. Colour only when the Style says so.
package tracetext

import (
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/report"
)

// Options tune the summary.
type Options struct {
	Style report.Style
	// Top bounds each list (graph breaks, recompiles, slow compiles…);
	// 0 means 10.
	Top int
}

type printer struct {
	w      io.Writer
	s      report.Safe
	top    int
	err    error
	labels map[string]string // input path → label
}

// f prints one formatted piece. Every text argument is cleaned of control
// and escape sequences (report.Fprintf): names, messages and paths come
// from the trace, which the traced program wrote. Text already styled was
// cleaned before its colour was added.
func (p *printer) f(format string, a ...any) {
	if p.err == nil {
		_, p.err = report.Fprintf(p.w, format, a...)
	}
}

// cut says whether entry i of a list of n is past --top, and prints
// "… N more" at the first one that is.
func (p *printer) cut(i, n int) bool {
	if i == p.top {
		p.f("  … %d more\n", n-i)
	}
	return i >= p.top
}

func (p *printer) section(title string, n int) {
	p.f("\n%s\n", p.s.Bold(fmt.Sprintf("%s (%d)", title, n)))
}

// loc is a short "file:line" for evidence.
func loc(path string, line int) string {
	if line <= 0 {
		return filepath.Base(path)
	}
	return fmt.Sprintf("%s:%d", filepath.Base(path), line)
}

func rankLabel(r int) string {
	if r < 0 {
		return "-"
	}
	return fmt.Sprintf("rank %d", r)
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Verdict is the one-line conclusion and whether it is an error.
func Verdict(res *compiles.Result) (string, bool) {
	var failed, fellBack, running, limit int
	for _, c := range res.Compiles {
		switch c.Status {
		case compiles.StatusFailed:
			failed++
			if c.FellBack {
				fellBack++
			}
		case compiles.StatusRunning:
			running++
		}
	}
	for _, f := range res.Frames {
		if f.LimitHit {
			limit++
		}
	}
	hang := 0
	for _, d := range res.Divergence {
		if d.Kind == compiles.DivCollectives || d.Kind == compiles.DivCompileIDs {
			hang++
		}
	}
	var parts []string
	switch {
	case fellBack > 0:
		parts = append(parts, fmt.Sprintf("%d compile(s) failed (%d fell back to eager)", failed, fellBack))
	case failed > 0:
		parts = append(parts, fmt.Sprintf("%d compile(s) failed", failed))
	}
	open := 0
	inner := ""
	for _, ph := range res.OpenSpans {
		if ph.Uncertain {
			continue
		}
		open++
		if ph.Innermost && inner == "" {
			inner = ph.Name
		}
	}
	if open > 0 {
		parts = append(parts, fmt.Sprintf("log stopped inside %s (%d phase(s) never ended)", inner, open))
	}
	if limit > 0 {
		parts = append(parts, fmt.Sprintf("%d frame(s) hit the recompile limit", limit))
	}
	if hang > 0 {
		parts = append(parts, "ranks diverge (compile ids or collectives)")
	}
	issues := 0
	for _, e := range res.Exports {
		issues += len(e.Issues)
	}
	if issues > 0 {
		parts = append(parts, fmt.Sprintf("export found %d issue(s) and could not soundly produce a graph", issues))
	}
	if len(parts) > 0 {
		return "PROBLEM: " + strings.Join(parts, "; "), failed > fellBack || open > 0 || limit > 0
	}
	if len(res.Compiles) == 0 && len(res.Exports) > 0 {
		return fmt.Sprintf("OK: export finished without issues (%d exported program(s))", programs(res)), false
	}
	return fmt.Sprintf("OK: %d compile(s), none failed, nothing left running", len(res.Compiles)), false
}

func programs(res *compiles.Result) int {
	n := 0
	for _, e := range res.Exports {
		n += len(e.Programs)
	}
	return n
}

// Write prints the summary.
func Write(w io.Writer, res *compiles.Result, opts Options) error {
	p := &printer{w: w, s: report.Safe{Style: opts.Style}, top: opts.Top, labels: map[string]string{}}
	if p.top <= 0 {
		p.top = 10
	}
	for _, in := range res.Inputs {
		p.labels[in.Path] = in.Label
	}
	verdict, bad := Verdict(res)
	if bad {
		p.f("%s\n", p.s.RedBold(verdict))
	} else {
		p.f("%s\n", p.s.GreenBold(verdict))
	}
	p.overview(res)
	p.failures(res)
	p.exports(res)
	p.open(res)
	p.breaks(res)
	p.recompiles(res)
	p.limits(res)
	p.shapes(res)
	p.cache(res)
	p.slow(res)
	p.provenance(res)
	p.divergence(res)
	p.runtimes(res)
	p.parity(res)
	p.inputs(res)
	return p.err
}

func (p *printer) overview(res *compiles.Result) {
	var breaks, recs int
	for _, gb := range res.GraphBreaks {
		breaks += gb.Count
	}
	recs = len(res.Recompiles)
	hits, total := 0, 0
	for _, s := range res.CacheStats {
		hits += s.Hit
		total += s.Hit + s.Miss + s.Bypass
	}
	cache := "no cache lookups logged"
	if total > 0 {
		cache = fmt.Sprintf("cache %d/%d hits (%.0f%%)", hits, total, 100*float64(hits)/float64(total))
	}
	p.f("%d input(s), %d rank(s), %d compile(s), %d graph break(s) (%d distinct), %d recompile(s), %s\n",
		len(res.Inputs), len(res.Ranks), len(res.Compiles), breaks, len(res.GraphBreaks), recs, cache)
	if len(res.Versions) > 0 {
		var keys []string
		for k := range res.Versions {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var vs []string
		for _, k := range keys {
			vs = append(vs, k+" "+clip(res.Versions[k], 24))
		}
		p.f("%s\n", p.s.Dim("versions: "+strings.Join(vs, ", ")))
	}
	if len(res.Ranks) > 1 {
		p.section("Ranks", len(res.Ranks))
		for _, r := range res.Ranks {
			var extra report.Styled
			if r.Failed > 0 {
				extra += p.s.Red(fmt.Sprintf(", %d failed", r.Failed))
			}
			if r.OpenSpans > 0 {
				extra += p.s.Red(fmt.Sprintf(", %d open phase(s)", r.OpenSpans))
			}
			p.f("  %-8s %3d compile(s), %d graph break(s), %d recompile(s), cache %d hit/%d miss/%d bypass, %.1fs compiling%s\n",
				r.Label, r.Compiles, r.GraphBreaks, r.Recompiles, r.CacheHits, r.CacheMisses, r.CacheBypasses, r.CompileSeconds, extra)
		}
	}
}

func (p *printer) failures(res *compiles.Result) {
	var list []compiles.Compile
	for _, c := range res.Compiles {
		if c.Status == compiles.StatusFailed {
			list = append(list, c)
		}
	}
	if len(list) == 0 {
		return
	}
	p.section("Failed compiles", len(list))
	for i, c := range list {
		if p.cut(i, len(list)) {
			break
		}
		// The exception that was raised first, then what wrapped it, the
		// component that raised, and every line of the reason.
		chain := c.FailChain
		if len(chain) == 0 {
			chain = []string{c.FailType}
		}
		phase := ""
		if c.FailPhase != "" {
			phase = " (" + c.FailPhase + ")"
		}
		p.f("  %s %s %s%s\n", p.who(c.Rank, c.Path), compiles.Label(c.ID, c.Occurrence), p.s.Red(chain[0]), phase)
		for _, outer := range chain[1:] {
			p.f("      ← %s\n", outer)
		}
		if c.UserCode != "" {
			p.f("    user code: %s\n", c.UserCode)
		}
		if r := strings.TrimSpace(c.FailReason); r != "" && strings.Contains(r, "\n") {
			p.f("    %s\n", p.s.Dim("fail_reason:"))
			for _, l := range strings.Split(r, "\n") {
				p.f("      %s\n", p.s.Dim(strings.TrimRight(l, " \t\r")))
			}
		}
		p.f("    %s\n", p.s.Dim(fmt.Sprintf("in %s, metrics at %s", filepath.Base(c.Path), loc(c.Path, c.MetricsLine))))
	}
}

// who names where a record came from: the input's label when it is not
// just its rank (several runs, or no rank), else the rank.
func (p *printer) who(rank int, path string) string {
	if l := p.labels[path]; l != "" && (rank < 0 || l != rankLabel(rank)) {
		return l
	}
	return rankLabel(rank)
}

func (p *printer) open(res *compiles.Result) {
	if len(res.OpenSpans) == 0 {
		return
	}
	p.section("Phases never ended (running when the log stopped; ? = its E may be an unreadable event)", len(res.OpenSpans))
	for i, ph := range res.OpenSpans {
		if p.cut(i, len(res.OpenSpans)) {
			break
		}
		mark := report.Styled("  ")
		if ph.Innermost {
			mark = p.s.Red("▶ ")
		}
		if ph.Uncertain {
			mark = "? "
		}
		p.f("  %s%s pid %d %s %s, open for %.1fs before the last event  %s\n", mark, p.who(ph.Rank, ph.Path), ph.PID,
			compiles.Label(ph.CompileID, ph.Occurrence), p.s.Bold(ph.Name), ph.DurUs/1e6, p.s.Dim(loc(ph.Path, ph.Line)))
	}
}

func (p *printer) breaks(res *compiles.Result) {
	if len(res.GraphBreaks) == 0 {
		return
	}
	p.section("Graph breaks, distinct", len(res.GraphBreaks))
	for i, gb := range res.GraphBreaks {
		if p.cut(i, len(res.GraphBreaks)) {
			break
		}
		where := gb.UserCode
		if where == "" {
			where = gb.UserFrame
		}
		if where == "" {
			where = gb.Function
		}
		id := ""
		if gb.GBID != "" {
			id = " [" + gb.GBID + " " + gb.URL + "]"
		}
		p.f("  %3d× %s%s\n", gb.Count, clip(gb.Reason, 160), id)
		ids := make([]string, len(gb.CompileIDs))
		for j, id := range gb.CompileIDs {
			ids[j] = compiles.RefLabel(id)
		}
		p.f("       %s\n", p.s.Dim(fmt.Sprintf("at %s; compiles %s; %s", orDash(where), strings.Join(limitList(ids, 8), ", "), loc(gb.Evidence.Path, gb.Evidence.Line))))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func limitList(l []string, n int) []string {
	if len(l) <= n {
		return l
	}
	return append(append([]string(nil), l[:n]...), fmt.Sprintf("… %d more", len(l)-n))
}

// reasonShape is a recompile reason with its numbers and leading compile
// id blanked, so "0/3: tensor 'x' size mismatch at index 0. expected 5,
// actual 6" and its 13 siblings read as one line.
var reasonShape = regexp.MustCompile(`\d+`)

func (p *printer) recompiles(res *compiles.Result) {
	if len(res.Recompiles) == 0 {
		return
	}
	type group struct {
		example   compiles.Recompile
		reason    string
		n         int
		ranks     []string
		ids       []string
		frames    []string
		firstLine int
	}
	var groups []*group
	idx := map[string]*group{}
	for _, r := range res.Recompiles {
		why := r.Reasons[0]
		if i := strings.Index(why, ": "); i > 0 && strings.Contains(why[:i], "/") {
			why = why[i+2:]
		}
		key := reasonShape.ReplaceAllString(why, "N")
		g := idx[key]
		if g == nil {
			g = &group{example: r, reason: why}
			idx[key] = g
			groups = append(groups, g)
		}
		g.n++
		g.ranks = addOnce(g.ranks, p.who(r.Rank, r.Evidence.Path))
		g.ids = addOnce(g.ids, compiles.Label(r.CompileID, r.Occurrence))
		g.frames = addOnce(g.frames, orDash(r.Frame))
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].n > groups[j].n })
	p.f("\n%s\n", p.s.Bold(fmt.Sprintf("Recompiles (%d, %d distinct reason(s))", len(res.Recompiles), len(groups))))
	for i, g := range groups {
		if p.cut(i, len(groups)) {
			break
		}
		p.f("  %3d× %s\n", g.n, clip(g.reason, 160))
		p.f("       %s\n", p.s.Dim(fmt.Sprintf("in %s; %s; compiles %s; first at %s", strings.Join(limitList(g.frames, 3), ", "),
			strings.Join(limitList(g.ranks, 8), ", "), strings.Join(limitList(g.ids, 8), ", "),
			loc(g.example.Evidence.Path, g.example.Evidence.Line))))
	}
}

func addOnce(l []string, s string) []string {
	for _, x := range l {
		if x == s {
			return l
		}
	}
	return append(l, s)
}

func (p *printer) limits(res *compiles.Result) {
	var hit []compiles.FrameSummary
	for _, f := range res.Frames {
		if f.LimitHit {
			hit = append(hit, f)
		}
	}
	if len(hit) == 0 {
		return
	}
	p.section("Recompile limit reached (later calls run eagerly)", len(hit))
	for i, f := range hit {
		if p.cut(i, len(hit)) {
			break
		}
		p.f("  %s frame %d %s (%s:%d): %d compiles, limit %d: %s\n", p.who(f.Rank, f.Path), f.FrameID, f.Name,
			filepath.Base(f.File), f.Line, f.Compiles, f.Limit, clip(f.Evidence.Text, 160))
	}
}

func (p *printer) cache(res *compiles.Result) {
	if len(res.Cache) == 0 {
		return
	}
	p.section("Cache lookups", len(res.Cache))
	for _, k := range []string{compiles.CacheFXGraph, compiles.CacheAOTAutograd} {
		s, ok := res.CacheStats[k]
		if !ok {
			continue
		}
		p.f("  %-12s %d hit, %d miss, %d bypass\n", k, s.Hit, s.Miss, s.Bypass)
	}
	bypass := map[string]int{}
	var order []string
	shown := 0
	for _, ce := range res.Cache {
		if ce.Outcome == compiles.OutcomeBypass && ce.Reason != "" {
			key := ce.Kind + ": " + clip(ce.Reason, 140)
			if bypass[key] == 0 {
				order = append(order, key)
			}
			bypass[key]++
		}
		if ce.Outcome == compiles.OutcomeMiss && ce.Differs != nil && shown < p.top {
			shown++
			d := ce.Differs
			why := "same key: the entry was not in the cache (cold, cleared, or another cache dir)"
			if !d.SameKey && len(d.Components) > 0 {
				why = "inputs differ: " + strings.Join(limitList(d.Components, 6), ", ")
			}
			p.f("  miss %s %s %s vs hit %s %s %s: %s\n", p.who(ce.Rank, ce.Path), compiles.Label(ce.CompileID, ce.Occurrence), ce.Kind,
				p.who(d.Rank, d.Path), compiles.Label(d.CompileID, d.Occurrence), p.s.Dim(loc(d.Path, d.Line)), why)
		}
	}
	for i, k := range order {
		if i == p.top {
			p.f("  … %d more bypass reason(s)\n", len(order)-i)
			break
		}
		p.f("  bypass ×%d %s\n", bypass[k], k)
	}
}

func (p *printer) slow(res *compiles.Result) {
	list := append([]compiles.Compile(nil), res.Compiles...)
	sort.SliceStable(list, func(i, j int) bool { return list[i].Seconds.Total > list[j].Seconds.Total })
	n := 0
	for _, c := range list {
		if c.Seconds.Total > 0 {
			n++
		}
	}
	if n == 0 {
		return
	}
	top := min(n, p.top)
	p.section("Slowest compiles", top)
	for _, c := range list[:top] {
		s := c.Seconds
		var parts []string
		for _, x := range []struct {
			n string
			v float64
		}{{"dynamo", s.Dynamo}, {"aot", s.AOTAutograd}, {"backend", s.Backend}, {"inductor", s.Inductor}, {"codegen", s.CodeGen}, {"triton", s.Triton}, {"autotune", s.Autotune}} {
			if x.v > 0 {
				parts = append(parts, fmt.Sprintf("%s %.2fs", x.n, x.v))
			}
		}
		fn := c.UserCode
		if c.Frame.Func != "" {
			fn = c.Frame.Func
		}
		p.f("  %7.2fs %s %s %s  %s\n", s.Total, p.who(c.Rank, c.Path), compiles.Label(c.ID, c.Occurrence), fn, p.s.Dim(strings.Join(parts, ", ")))
		if ph := topPhases(c.PhaseSeconds, 4); ph != "" {
			p.f("           %s\n", p.s.Dim("self time: "+ph))
		}
	}
}

func (p *printer) divergence(res *compiles.Result) {
	if len(res.Divergence) == 0 {
		return
	}
	p.section("Divergence across ranks", len(res.Divergence))
	for i, d := range res.Divergence {
		if p.cut(i, len(res.Divergence)) {
			break
		}
		run := ""
		if d.Run != "" {
			run = d.Run + ": "
		}
		p.f("  %s %s%s\n", p.s.Yellow(d.Kind+":"), run, d.Summary)
		for j, g := range d.Groups {
			if j == p.top {
				p.f("    … %d more group(s)\n", len(d.Groups)-j)
				break
			}
			who := strings.Join(g.Labels, ", ")
			if len(g.Ranks) > 0 && len(g.Ranks) == len(g.Labels) {
				who = "Ranks: " + joinInts(g.Ranks)
			}
			p.f("    %s: %s\n", who, p.s.Dim(clip(orDash(g.Value), 160)))
		}
	}
}

func joinInts(l []int) string {
	s := make([]string, len(l))
	for i, n := range l {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

func (p *printer) inputs(res *compiles.Result) {
	var lines []string
	for _, in := range res.Inputs {
		st := res.Counts[in.Path]
		if st == nil {
			continue
		}
		var probs []string
		if st.ReadError != "" {
			probs = append(probs, "read error: "+st.ReadError)
		}
		if st.Corrupted > 0 {
			probs = append(probs, fmt.Sprintf("%d corrupted envelope(s) (lines %s)", st.Corrupted, joinInts(st.CorruptedLines.Lines())))
		}
		if st.PayloadMD5Mismatch > 0 {
			probs = append(probs, fmt.Sprintf("%d payload MD5 mismatch(es) (envelopes at lines %s)", st.PayloadMD5Mismatch, joinInts(st.MD5MismatchLines.Lines())))
		}
		if st.NonGlog > 0 {
			probs = append(probs, fmt.Sprintf("%d non-trace line(s) (lines %s)", st.NonGlog, joinInts(st.NonGlogLines.Lines())))
		}
		if st.OrphanPayloadLines > 0 {
			probs = append(probs, fmt.Sprintf("%d payload line(s) with no envelope", st.OrphanPayloadLines))
		}
		if len(st.Unknown) > 0 {
			var ks []string
			for k, n := range st.Unknown {
				ks = append(ks, fmt.Sprintf("%s×%d", k, n))
			}
			sort.Strings(ks)
			probs = append(probs, "unknown event kinds kept and counted: "+strings.Join(ks, ", "))
		}
		if st.Records == 0 && st.ReadError == "" {
			why := st.NotTrace
			if why == "" {
				why = "no trace records"
			}
			probs = append(probs, why)
		}
		if len(probs) > 0 {
			lines = append(lines, fmt.Sprintf("  %s (%s): %s", in.Label, filepath.Base(in.Path), strings.Join(probs, "; ")))
		}
	}
	for _, ig := range res.Ignored {
		lines = append(lines, fmt.Sprintf("  ignored %s: %s", ig.Path, ig.Reason))
	}
	if res.SpansDropped > 0 || res.ArtifactsDropped > 0 {
		lines = append(lines, fmt.Sprintf("  kept the first %d phases and %d artifact references; %d phases and %d references not kept",
			len(res.Spans), len(res.Artifacts), res.SpansDropped, res.ArtifactsDropped))
	}
	if len(lines) == 0 {
		return
	}
	p.section("Input notes", len(lines))
	for i, l := range lines {
		if i == p.top {
			p.f("  … %d more (the JSON has them all: counts, ignored)\n", len(lines)-i)
			break
		}
		p.f("%s\n", l)
	}
}

func (p *printer) runtimes(res *compiles.Result) {
	if res.RuntimeNote == "" && len(res.RuntimeDeltas) == 0 {
		return
	}
	p.section("Graph runtime estimates across ranks", len(res.RuntimeDeltas))
	if res.RuntimeNote != "" {
		p.f("  %s\n", res.RuntimeNote)
	}
	for i, d := range res.RuntimeDeltas {
		if p.cut(i, len(res.RuntimeDeltas)) {
			break
		}
		p.f("  graph %d [%s]: %.3f ms delta (fastest %s %.3f ms, slowest %s %.3f ms)\n", d.Graph, d.CompileID, d.DeltaMs,
			d.Fastest, d.FastestMs, d.Slowest, d.SlowestMs)
	}
}

func (p *printer) parity(res *compiles.Result) {
	if len(res.CollectiveParity) == 0 {
		return
	}
	p.section("Output code vs collective schedule", len(res.CollectiveParity))
	for i, x := range res.CollectiveParity {
		if p.cut(i, len(res.CollectiveParity)) {
			break
		}
		p.f("  %s [%s] offset %d, %d collective(s) without wait_tensor  %s\n", p.who(x.Rank, x.Path), x.CompileID,
			x.Offset, x.MissingWaits, p.s.Dim(loc(x.Path, x.Line)))
	}
}

// topPhases lists the phases with the most self time.
func topPhases(m compiles.PhaseTimes, n int) string {
	type kv struct {
		k string
		v float64
	}
	var l []kv
	for _, p := range m {
		l = append(l, kv{p.Name, p.Seconds})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v || l[i].v == l[j].v && l[i].k < l[j].k })
	var out []string
	for i, x := range l {
		if i == n || x.v < 0.005 {
			break
		}
		out = append(out, fmt.Sprintf("%s %.2fs", x.k, x.v))
	}
	return strings.Join(out, ", ")
}

// WriteFindings prints the knowledge base's conclusions after the summary:
// each finding with up to three pieces of evidence and its first remedy.
func WriteFindings(w io.Writer, fs []record.Finding, opts Options) error {
	if len(fs) == 0 {
		return nil
	}
	p := &printer{w: w, s: report.Safe{Style: opts.Style}}
	p.f("\n%s\n", p.s.Bold(fmt.Sprintf("Findings (%d)", len(fs))))
	for _, f := range fs {
		p.f("  %s %s (%s) ×%d\n", p.s.Severity(string(f.Severity)), p.s.Bold(f.Title), f.Rule, f.Count)
		for i, ev := range f.Evidence {
			if i == 3 {
				break
			}
			where := ev.Path
			if ev.Line > 0 {
				where = fmt.Sprintf("%s:%d", ev.Path, ev.Line)
			}
			p.f("    %s %s\n", p.s.Dim(where), ev.Text)
		}
		if len(f.Remedy) > 0 {
			p.f("    → %s\n", f.Remedy[0])
		}
	}
	return p.err
}

func (p *printer) exports(res *compiles.Result) {
	if len(res.Exports) == 0 {
		return
	}
	n := 0
	for _, e := range res.Exports {
		n += len(e.Issues)
	}
	p.section("Export (torch.export) issues", n)
	for _, e := range res.Exports {
		where := p.who(e.Rank, e.Path)
		if len(e.Issues) == 0 {
			p.f("  %s: no issue; %d exported program(s)\n", where, len(e.Programs))
			continue
		}
		for i, is := range e.Issues {
			if p.cut(i, len(e.Issues)) {
				break
			}
			what := is.Expr
			if is.Result != "" {
				what += " → " + is.Result
			}
			if is.Op != "" {
				what = "torch.ops." + is.Op
			}
			p.f("  %s %s: %s  %s\n", where, p.s.Yellow(is.Type), what, p.s.Dim(loc(e.Path, is.Line)))
			if is.UserCode != "" {
				p.f("    user code: %s\n", is.UserCode)
			}
			if is.Reason != "" {
				p.f("    %s\n", p.s.Dim(clip(is.Reason, 200)))
			}
		}
	}
}

// shapes counts the symbolic-shape events per kind and lists the ones a
// reader acts on: sizes specialised to a constant, then guards.
func (p *printer) shapes(res *compiles.Result) {
	if len(res.Shapes) == 0 {
		return
	}
	count := map[string]int{}
	for _, se := range res.Shapes {
		count[se.Kind]++
	}
	var kinds []string
	for _, k := range []string{compiles.ShapeCreateSymbol, compiles.ShapeCreateUnbacked, compiles.ShapeSpecialization,
		compiles.ShapeGuardAdded, compiles.ShapeGuardAddedFast, compiles.ShapeRealTensors} {
		if count[k] > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, count[k]))
		}
	}
	p.section("Symbolic shapes", len(res.Shapes))
	p.f("  %s\n", strings.Join(kinds, ", "))
	shown := 0
	for _, want := range []string{compiles.ShapeSpecialization, compiles.ShapeGuardAdded, compiles.ShapeGuardAddedFast, compiles.ShapeCreateSymbol} {
		for _, se := range res.Shapes {
			if se.Kind != want {
				continue
			}
			if shown == p.top {
				p.f("  … more in the JSON (shapes) and the HTML report\n")
				return
			}
			shown++
			var what string
			switch se.Kind {
			case compiles.ShapeSpecialization:
				what = fmt.Sprintf("%s specialised to %s", se.Symbol, se.Value)
				if len(se.Sources) > 0 {
					what += " (" + strings.Join(se.Sources, ", ") + ")"
				}
			case compiles.ShapeCreateSymbol:
				what = fmt.Sprintf("%s = %s", se.Symbol, se.Value)
				if len(se.Sources) > 0 {
					what += " for " + strings.Join(se.Sources, ", ")
				}
			default:
				what = "guard " + se.Expr
			}
			p.f("  %s %s %s  %s\n", p.who(se.Rank, se.Path), compiles.Label(se.CompileID, se.Occurrence), clip(what, 160), p.s.Dim(loc(se.Path, se.Line)))
			if se.UserCode != "" {
				p.f("    user code: %s\n", se.UserCode)
			}
		}
	}
	if res.ShapesDropped > 0 {
		p.f("  %d more over the analysis cap\n", res.ShapesDropped)
	}
}

func (p *printer) provenance(res *compiles.Result) {
	if len(res.Provenance) == 0 {
		return
	}
	p.section("Inductor provenance (kernel → post-grad → pre-grad nodes)", len(res.Provenance))
	for i, pv := range res.Provenance {
		if p.cut(i, len(res.Provenance)) {
			break
		}
		extra := ""
		if pv.StackTraces > 0 {
			extra = fmt.Sprintf(", %d with stack traces", pv.StackTraces)
		}
		p.f("  %s %s %d kernel(s)%s  %s\n", p.who(pv.Rank, pv.Path), compiles.Label(pv.CompileID, pv.Occurrence), len(pv.Kernels), extra, p.s.Dim(loc(pv.Path, pv.Line)))
	}
}
