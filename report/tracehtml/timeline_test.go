package tracehtml

import (
	"math"
	"strings"
	"testing"

	"github.com/bringup-tool/bringup/analyze/compiles"
)

func TestLayoutTimelineMergesSubPixelPhases(t *testing.T) {
	// 10 000 phases of 1µs spread over 10 ms, plus one long phase: the
	// layout must stay bounded (about a bar per pixel) and keep the long one.
	var lane tlLane
	long := compiles.Span{Name: "entire_frame_compile", StartUs: 0, DurUs: 10_000, Depth: 0}
	lane.Phases = append(lane.Phases, tlPhase{P: &long})
	for i := 0; i < 10_000; i++ {
		p := compiles.Span{Name: "Scheduler.fused_nodes", StartUs: float64(i), DurUs: 1, Depth: 1}
		lane.Phases = append(lane.Phases, tlPhase{P: &p})
	}
	open := compiles.Span{Name: "GraphLowering.run", StartUs: 5000, DurUs: 5000, Depth: 2, Innermost: true}
	lane.Phases = append(lane.Phases, tlPhase{P: &open, Open: true})
	tv := layoutTimeline([]tlLane{{Name: "rank 0", Phases: lane.Phases}})
	if tv == nil {
		t.Fatal("no timeline for 10 002 phases")
	}
	if len(tv.Bars) > 2*int(tlWidth) {
		t.Errorf("%d bars for a %g-unit-wide plot: sub-pixel phases were not merged", len(tv.Bars), tlWidth)
	}
	if tv.Dropped == 0 {
		t.Error("Dropped = 0, want the merged phases counted")
	}
	var sawLong, sawOpen bool
	for _, b := range tv.Bars {
		if strings.HasPrefix(b.Title, "entire_frame_compile") {
			sawLong = true
			if b.W < tlWidth-tlGutter-tlRight-1 {
				t.Errorf("long phase drawn %g wide, want the whole plot", b.W)
			}
		}
		if b.Class == "f-open" {
			sawOpen = true
			if !strings.Contains(b.Title, "running when the log ended") {
				t.Errorf("open innermost phase title = %q", b.Title)
			}
		}
		if b.X < tlGutter-0.01 || b.X+b.W > tlWidth+0.01 {
			t.Errorf("bar %q outside the plot: x=%g w=%g", b.Title, b.X, b.W)
		}
	}
	if !sawLong || !sawOpen {
		t.Errorf("long phase drawn: %v, open phase drawn: %v", sawLong, sawOpen)
	}
	if len(tv.Ticks) < 2 {
		t.Errorf("ticks = %v, want an axis", tv.Ticks)
	}
}

func TestLayoutTimelineEmpty(t *testing.T) {
	if tv := layoutTimeline([]tlLane{{Name: "rank 0"}}); tv != nil {
		t.Errorf("timeline for no phases = %+v, want nil (the page says there are no timing events)", tv)
	}
}

func TestPhaseClass(t *testing.T) {
	for name, want := range map[string]string{
		"dynamo": "f-dynamo", "entire_frame_compile": "f-dynamo", "bytecode_tracing": "f-dynamo",
		"backend_compile": "f-aot", "create_aot_dispatcher_function": "f-aot",
		"inductor_compile": "f-inductor", "GraphLowering.run": "f-inductor", "_recursive_post_grad_passes": "f-inductor",
		"code_gen": "f-codegen", "async_compile.wait": "f-codegen", "CachingAutotuner.benchmark_all_configs": "f-codegen",
		"fx_graph_cache_hit": "f-cache", "cudagraphify": "f-cudagraph", "gc": "f-other",
	} {
		if got := phaseClass(name); got != want {
			t.Errorf("phaseClass(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestUnitID(t *testing.T) {
	for in, want := range map[string]string{"0/0": "0/0", "0/0_1": "0/0", "!1/2/3_4": "!1/2/3", "": "", "-/-": "-/-"} {
		if got := unitID(in); got != want {
			t.Errorf("unitID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLayoutTimelineIgnoresAbsurdTimes(t *testing.T) {
	// Corrupt chromium timestamps (found by FuzzWriteEscapes: an overflowing
	// span made the tick loop run forever) are left out, not drawn.
	good := compiles.Span{Name: "dynamo", StartUs: 1.7e15, DurUs: 1e6}
	huge := compiles.Span{Name: "dynamo", StartUs: 1e308, DurUs: 1e308}
	neg := compiles.Span{Name: "dynamo", StartUs: -1e308, DurUs: 1e308}
	tv := layoutTimeline([]tlLane{{Name: "rank 0", Phases: []tlPhase{{P: &good}, {P: &huge}, {P: &neg}}}})
	if tv == nil || len(tv.Bars) != 1 {
		t.Fatalf("timeline = %+v, want the one sane phase", tv)
	}
	if len(tv.Ticks) < 2 || len(tv.Ticks) > 12 {
		t.Errorf("%d ticks", len(tv.Ticks))
	}
	if ts := niceTicks(math.Inf(1)); len(ts) != 1 {
		t.Errorf("niceTicks(+Inf) = %v", ts)
	}
}
