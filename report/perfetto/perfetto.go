// Package perfetto exports the compile phases of a trace analysis as Chrome
// trace-event JSON, the format ui.perfetto.dev and chrome://tracing open:
// {"traceEvents":[{"name","ph":"X","ts","dur","pid","tid","args"}, …]}.
// One pid per rank (input), one tid per OS process inside it, so Perfetto
// shows a track group per rank with the phase tree nested as it ran.
//
// Phases still open when a log ended are exported as complete events that
// last until the log's last event, with args.open = true, so the phase that
// hung is visible as the bar reaching the end of its track.
package perfetto

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/bringup-tool/bringup/analyze/compiles"
)

// Schema names this export; the object also carries the trace-event keys
// Perfetto reads (extra top-level keys are ignored by trace viewers).
const Schema = "bringup.perfetto/v1"

// event is one trace event. Dur is a pointer so metadata events omit it.
type event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// Pids assigns one Perfetto pid per input: its rank when known and unique,
// else 1000 + its position, so two unranked files never share a track.
func Pids(res *compiles.Result) map[string]int {
	use := map[int]int{}
	for _, in := range res.Inputs {
		use[in.Rank]++
	}
	pids := map[string]int{}
	for i, in := range res.Inputs {
		if in.Rank >= 0 && use[in.Rank] == 1 {
			pids[in.Path] = in.Rank
		} else {
			pids[in.Path] = 1000 + i
		}
	}
	return pids
}

// Write streams the phases of res to w as trace-event JSON. Memory is one
// event at a time beyond what res already holds.
func Write(w io.Writer, res *compiles.Result) error {
	if res == nil {
		return fmt.Errorf("perfetto: no analysis result to export")
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	pids := Pids(res)
	next := 1000 + len(res.Inputs)
	pidOf := func(path string) int {
		p, ok := pids[path]
		if !ok { // a phase from a path that is not an input: give it its own track
			p = next
			next++
			pids[path] = p
		}
		return p
	}
	fmt.Fprintf(bw, "{\"schema\":%q,\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", Schema)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	first := true
	emit := func(e *event) error {
		if !first {
			bw.WriteString(",")
		}
		first = false
		return enc.Encode(e) // Encode ends each event with a newline
	}

	// Name the tracks: process = rank, thread = OS pid.
	labels := map[string]string{}
	for _, in := range res.Inputs {
		l := in.Label
		if l == "" {
			l = filepath.Base(in.Path)
		}
		labels[in.Path] = l
	}
	type thread struct{ pid, tid int }
	threads := map[thread]bool{}
	for _, ph := range [][]compiles.Span{res.Spans, res.OpenSpans} {
		for i := range ph {
			threads[thread{pidOf(ph[i].Path), ph[i].PID}] = true
		}
	}
	paths := make([]string, 0, len(pids))
	for p := range pids {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool { return pids[paths[i]] < pids[paths[j]] })
	for _, p := range paths {
		name := labels[p]
		if name == "" {
			name = filepath.Base(p)
		}
		if err := emit(&event{Name: "process_name", Ph: "M", Pid: pids[p], Args: map[string]any{"name": name + " — " + filepath.Base(p)}}); err != nil {
			return err
		}
		if err := emit(&event{Name: "process_sort_index", Ph: "M", Pid: pids[p], Args: map[string]any{"sort_index": pids[p]}}); err != nil {
			return err
		}
	}
	ts := make([]thread, 0, len(threads))
	for t := range threads {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].pid != ts[j].pid {
			return ts[i].pid < ts[j].pid
		}
		return ts[i].tid < ts[j].tid
	})
	for _, t := range ts {
		if err := emit(&event{Name: "thread_name", Ph: "M", Pid: t.pid, Tid: t.tid, Args: map[string]any{"name": fmt.Sprintf("pid %d", t.tid)}}); err != nil {
			return err
		}
	}

	phase := func(p *compiles.Span, open bool) error {
		dur := p.DurUs
		if dur < 0 {
			dur = 0
		}
		args := map[string]any{"file": fmt.Sprintf("%s:%d", filepath.Base(p.Path), p.Line), "depth": p.Depth}
		if p.CompileID != "" {
			args["compile_id"] = p.CompileID
			if p.Occurrence > 0 {
				// "1/0#2": the second compile of that id in this input.
				args["unit"] = compiles.Ref(compiles.UnitOf(p.CompileID), p.Occurrence)
			}
		}
		if open {
			args["open"] = true
			if p.Innermost {
				args["running_at_end"] = true
			}
		}
		name := p.Name
		if open {
			name += " (open at end of log)"
		}
		cat := p.Category
		if cat == "" {
			cat = "compile"
		}
		return emit(&event{Name: name, Cat: cat, Ph: "X", Ts: p.StartUs, Dur: &dur, Pid: pidOf(p.Path), Tid: p.PID, Args: args})
	}
	for i := range res.Spans {
		if err := phase(&res.Spans[i], false); err != nil {
			return err
		}
	}
	for i := range res.OpenSpans {
		if err := phase(&res.OpenSpans[i], true); err != nil {
			return err
		}
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}
