package tracehtml

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/analyze/compiles"
)

// Timeline geometry is computed here, in Go, so the page needs no script to
// draw it: an inline SVG with one lane per input, one row per nesting depth.

const (
	tlWidth   = 1200.0 // SVG user units; the SVG scales to the page width
	tlGutter  = 110.0  // room for lane labels
	tlRight   = 12.0
	tlTop     = 22.0
	tlRowH    = 13.0
	tlRowGap  = 2.0
	tlLaneGap = 12.0
	// tlMaxRows bounds rows per lane: deeper phases are drawn on the last row.
	tlMaxRows = 8
)

type timelineView struct {
	Width, Height float64
	Ticks         []tick
	Lanes         []laneView
	Bars          []bar
	Legend        []legendItem
	Dropped       int // phases merged into a neighbour because they were under a pixel
	// Relative: the inputs' clocks are too far apart for one axis, so each
	// lane starts at its own first phase.
	Relative bool
}

type tick struct {
	X     float64
	Label string
}

type laneView struct {
	Name   string
	Full   string
	LabelY float64
}

type bar struct {
	X, Y, W, H float64
	Class      string
	Title      string
	Href       string
}

type legendItem struct{ Class, Name string }

var legend = []legendItem{
	{"f-dynamo", "Dynamo (tracing, guards)"},
	{"f-aot", "AOTAutograd / backend"},
	{"f-inductor", "Inductor (lowering, scheduling)"},
	{"f-codegen", "codegen, Triton compile, autotune"},
	{"f-cache", "cache"},
	{"f-cudagraph", "CUDA graphs"},
	{"f-other", "other"},
	{"f-open", "still open when the log ended"},
}

// phaseClass sorts a chromium phase name into a colour family.
func phaseClass(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "cache"):
		return "f-cache"
	case strings.Contains(n, "cudagraph"):
		return "f-cudagraph"
	case strings.Contains(n, "code_gen"), strings.Contains(n, "codegen"), strings.Contains(n, "triton"),
		strings.Contains(n, "async_compile"), strings.Contains(n, "compile_file"), strings.Contains(n, "autotun"),
		strings.Contains(n, "benchmark"), strings.Contains(n, "pycodecache"), strings.Contains(n, "load_by_key_path"):
		return "f-codegen"
	case strings.Contains(n, "inductor"), strings.Contains(n, "graphlowering"), strings.Contains(n, "scheduler"),
		strings.Contains(n, "pre_grad"), strings.Contains(n, "post_grad"), strings.Contains(n, "compile_fx"):
		return "f-inductor"
	case strings.Contains(n, "aot"), strings.Contains(n, "backend_compile"), strings.Contains(n, "joint_graph"):
		return "f-aot"
	case strings.Contains(n, "dynamo"), strings.Contains(n, "entire_frame_compile"), strings.Contains(n, "compile_attempt"),
		strings.Contains(n, "bytecode_tracing"), strings.Contains(n, "build_guards"), strings.Contains(n, "_compile"):
		return "f-dynamo"
	}
	return "f-other"
}

// tlLane is one lane's input to the layout: phases in any order.
type tlLane struct {
	Name   string
	Phases []tlPhase
}

type tlPhase struct {
	P    *compiles.Span
	Open bool
	Href string
}

// layoutTimeline places bars. Bars narrower than a pixel that fall on the
// previous bar's pixel in the same row are merged into it, so the SVG stays
// bounded (a few thousand rects) whatever the number of phases.
func layoutTimeline(lanes []tlLane) *timelineView {
	lanes = finitePhases(lanes)
	// Each lane's own time range: ranks normally share a clock, but inputs
	// from different runs (or days) do not, and one shared axis would squash
	// them all into slivers. Then every lane starts at its own first event.
	type laneSpan struct{ lo, hi float64 }
	spans := make([]laneSpan, len(lanes))
	minT, maxT, widest := math.Inf(1), math.Inf(-1), 0.0
	for i, l := range lanes {
		sp := laneSpan{math.Inf(1), math.Inf(-1)}
		for _, p := range l.Phases {
			sp.lo = math.Min(sp.lo, p.P.StartUs)
			sp.hi = math.Max(sp.hi, p.P.StartUs+math.Max(p.P.DurUs, 0))
		}
		spans[i] = sp
		if len(l.Phases) > 0 {
			minT, maxT = math.Min(minT, sp.lo), math.Max(maxT, sp.hi)
			widest = math.Max(widest, sp.hi-sp.lo)
		}
	}
	if math.IsInf(minT, 1) {
		return nil
	}
	tv := &timelineView{Width: tlWidth, Legend: legend}
	span := maxT - minT
	if span > 10*widest && len(lanes) > 1 {
		tv.Relative = true
		span = widest
	}
	if span <= 0 {
		span = 1
	}
	plotW := tlWidth - tlGutter - tlRight
	scale := plotW / span
	y := tlTop
	for li, l := range lanes {
		if len(l.Phases) == 0 {
			continue
		}
		base := minT
		if tv.Relative {
			base = spans[li].lo
		}
		rows := 1
		for _, p := range l.Phases {
			rows = max(rows, min(p.P.Depth, tlMaxRows-1)+1)
		}
		name := l.Name
		if r := []rune(name); len(r) > 15 {
			name = string(r[:14]) + "…"
		}
		tv.Lanes = append(tv.Lanes, laneView{Name: name, Full: l.Name, LabelY: y + tlRowH - 2})
		phases := append([]tlPhase(nil), l.Phases...)
		sort.SliceStable(phases, func(i, j int) bool { return phases[i].P.StartUs < phases[j].P.StartUs })
		last := make([]int, rows) // index in tv.Bars of each row's last bar, -1 none
		lastEnd := make([]float64, rows)
		for i := range last {
			last[i] = -1
		}
		for _, p := range phases {
			row := min(max(p.P.Depth, 0), rows-1)
			x := tlGutter + (p.P.StartUs-base)*scale
			w := math.Max(p.P.DurUs, 0) * scale
			if j := last[row]; j >= 0 && w < 1 && x <= lastEnd[row]+0.5 && !p.Open {
				b := &tv.Bars[j]
				end := math.Max(lastEnd[row], x+w)
				b.W = round2(math.Max(end-b.X, 1))
				lastEnd[row] = end
				if !strings.HasSuffix(b.Title, "merged)") {
					b.Title += "\n(and shorter phases merged)"
				}
				tv.Dropped++
				continue
			}
			cls := phaseClass(p.P.Name)
			state := ""
			if p.Open {
				cls, state = "f-open", " — still open when the log ended"
				if p.P.Innermost {
					state = " — running when the log ended (innermost open phase)"
				}
			}
			title := fmt.Sprintf("%s%s\n%s  [%s]  line %d\nstarts +%s, lasts %s", p.P.Name, state, l.Name,
				orDash(p.P.CompileID), p.P.Line, fmtDur((p.P.StartUs-base)/1e6), fmtDur(p.P.DurUs/1e6))
			tv.Bars = append(tv.Bars, bar{
				X: round2(x), Y: round2(y + float64(row)*(tlRowH+tlRowGap)), W: round2(math.Max(w, 1)), H: tlRowH,
				Class: cls, Title: title, Href: p.Href,
			})
			last[row] = len(tv.Bars) - 1
			lastEnd[row] = x + math.Max(w, 1)
		}
		y += float64(rows)*(tlRowH+tlRowGap) + tlLaneGap
	}
	tv.Height = round2(y)
	for _, t := range niceTicks(span / 1e6) {
		tv.Ticks = append(tv.Ticks, tick{X: round2(tlGutter + t*1e6*scale), Label: fmtDur(t)})
	}
	return tv
}

// finitePhases drops phases whose times are not finite numbers or whose
// end overflows: a corrupt chromium event must not bend the whole axis.
func finitePhases(lanes []tlLane) []tlLane {
	out := make([]tlLane, len(lanes))
	for i, l := range lanes {
		out[i].Name = l.Name
		for _, p := range l.Phases {
			end := p.P.StartUs + p.P.DurUs
			if math.IsNaN(end) || math.IsInf(end, 0) || math.Abs(p.P.StartUs) > 1e17 || math.Abs(p.P.DurUs) > 1e17 {
				continue
			}
			out[i].Phases = append(out[i].Phases, p)
		}
	}
	return out
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// niceTicks returns 4–10 round tick positions (seconds) across [0, span].
func niceTicks(span float64) []float64 {
	if !(span > 0) || math.IsInf(span, 0) {
		return []float64{0}
	}
	raw := span / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ts []float64
	for t := 0.0; t <= span*1.0001 && len(ts) < 12; t += step {
		ts = append(ts, t)
	}
	return ts
}

// fmtDur prints seconds the way a person reads a duration.
func fmtDur(s float64) string {
	switch {
	case s == 0:
		return "0s"
	case s < 1e-3:
		return fmt.Sprintf("%.0fµs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.3gms", s*1e3)
	case s < 120:
		return fmt.Sprintf("%.3gs", s)
	case s < 7200:
		return fmt.Sprintf("%dm%02ds", int(s)/60, int(s)%60)
	}
	return fmt.Sprintf("%.1fh", s/3600)
}
