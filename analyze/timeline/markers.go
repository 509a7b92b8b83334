package timeline

import "strings"

// marker is one phase marker: the message prefixes that announce it and
// what such a line means. The table below is the one place the markers
// live; match, Markers and the tests are derived from it.
type marker struct {
	// prefixes: the message starts with one of them. Each is also the
	// literal Markers gives for it, so each is at least 11 bytes.
	prefixes []string
	// needs: the line must also hold it, or it is no marker.
	needs string
	id    phaseID
	// open: the line opens the phase; otherwise it closes it.
	open  bool
	ready bool // the engine is up: every open phase in the source is done
	// alone: closing Dynamo does not open Inductor after it (torch's own
	// "done tracing" line: the backend's lines say when it starts).
	alone bool
	// detail: a constant detail of the phase.
	detail string
	// secsAfter: the seconds are the number after this word;
	// secsBefore: the number that ends right before it. Neither: unknown.
	secsAfter, secsBefore string
	closes, drops, opens  phaseSet
	// read, when set, reads what a fixed field cannot say from the line.
	read func(s string, ev *event)
	// examples: real wordings the marker must recognise, at least one per
	// prefix (the tests run them).
	examples []string
}

// markers are the phase markers of ../shared/reference/log-formats.md
// §2.4, §3, §4 and §10, with the wording drift of past releases.
// No prefix is a prefix of another (a test checks it), so their order
// does not change what a line matches; it is the order of Markers.
var markers = []marker{
	{prefixes: []string{"Loading weights took"}, id: idLoad, secsAfter: "took",
		examples: []string{"Loading weights took 3.1 seconds"}},
	{prefixes: []string{"Loading model weights took", "Loading model from scratch"}, id: idLoad, read: readModelLoad,
		examples: []string{"Loading model weights took 14.2 GB and 9.1 seconds", "Loading model from scratch"}},
	{prefixes: []string{"Load weight begin"}, id: idLoad, open: true,
		examples: []string{"Load weight begin. avail mem=1 GB"}},
	{prefixes: []string{"Load weight end"}, id: idLoad, secsAfter: "elapsed=",
		examples: []string{"Load weight end. elapsed=2.0 s"}},
	{prefixes: []string{"Model loading took"}, id: idLoad, secsBefore: " second",
		examples: []string{"Model loading took 14 GiB and 9 seconds"}},
	{prefixes: []string{"Memory profiling takes", "Memory profiling took"}, id: idProfile, secsAfter: "profiling t",
		examples: []string{"Memory profiling takes 3.1 seconds", "Memory profiling took 3.1 seconds"}},
	{prefixes: []string{"Model warmup done"}, id: idReady, ready: true,
		examples: []string{"Model warmup done"}},
	{prefixes: []string{"Starting to load model"}, id: idLoad, open: true,
		examples: []string{"Starting to load model /m..."}},
	{prefixes: []string{"Start compiling function"}, id: idDynamo, open: true, opens: setOf(idCompile),
		examples: []string{"Start compiling function <code object forward>"}},
	{prefixes: []string{"Using cache directory:"}, needs: "torch.compile", id: idDynamo, open: true, opens: setOf(idCompile),
		examples: []string{"Using cache directory: /c/rank_0_0/backbone for vLLM's torch.compile"}},
	{prefixes: []string{"Dynamo bytecode transform time:"}, id: idDynamo, secsAfter: "time:",
		examples: []string{"Dynamo bytecode transform time: 3.00 s"}},
	{prefixes: []string{"Directly load the compiled graph"}, id: idCacheLoad, secsAfter: "took", drops: setOf(idInductor), read: readCacheShape,
		examples: []string{"Directly load the compiled graph(s) for dynamic shape from the cache, took 1.2 s"}},
	{prefixes: []string{"Directly load AOT compilation"}, id: idAOTLoad, drops: setOf(idDynamo, idInductor),
		examples: []string{"Directly load AOT compilation from /p"}},
	{prefixes: []string{"Compiling a graph for"}, id: idInductor, read: readInductorGraph,
		examples: []string{"Compiling a graph for dynamic shape takes 20.1 s"}},
	{prefixes: []string{"Cache the graph"}, id: idInductor, open: true,
		examples: []string{"Cache the graph for dynamic shape for later use"}},
	{prefixes: []string{"Capturing CUDA graph"}, id: idCUDAGraph, open: true, read: readCUDAGraphBar,
		examples: []string{"Capturing CUDA graphs (decode, FULL): 100%|##| 51/51 [00:11<00:00, 4.4it/s]"}},
	{prefixes: []string{"Capturing cudagraphs", "Capture cuda graph begin", "Capturing batches"}, id: idCUDAGraph, open: true,
		examples: []string{"Capturing cudagraphs for decoding", "Capture cuda graph begin.", "Capturing batches (bs=1 avail_mem=3 GB)"}},
	{prefixes: []string{"Capture cuda graph end"}, id: idCUDAGraph, secsAfter: "elapsed:",
		examples: []string{"Capture cuda graph end. Time elapsed: 9.0 s"}},
	{prefixes: []string{"Capture piecewise CUDA graph begin"}, id: idCUDAGraph, detail: "piecewise", open: true,
		examples: []string{"Capture piecewise CUDA graph begin."}},
	// A separate open slot would be cleaner; SGLang captures piecewise
	// graphs before the decode ones, so the slot is free.
	{prefixes: []string{"Capture piecewise CUDA graph end"}, id: idCUDAGraph, detail: "piecewise", secsAfter: "elapsed:",
		examples: []string{"Capture piecewise CUDA graph end. Time elapsed: 9 s"}},
	{prefixes: []string{"Compiling model again due to a load failure", "Cannot load aot compilation"}, id: idDynamo, open: true,
		examples: []string{"Compiling model again due to a load failure from /p", "Cannot load aot compilation from /p"}},
	{prefixes: []string{"Graph capturing finished in"}, id: idCUDAGraph, secsAfter: "finished in",
		examples: []string{"Graph capturing finished in 12 secs, took 0.5 GiB"}},
	{prefixes: []string{"Profiling CUDA graph memory"}, id: idCUDAGraph, open: true,
		examples: []string{"Profiling CUDA graph memory: PIECEWISE=51"}},
	{prefixes: []string{"Initial profiling/warmup run took"}, id: idProfile, secsAfter: "took",
		examples: []string{"Initial profiling/warmup run took 3.2 s"}},
	{prefixes: []string{"init engine ("}, needs: "took", id: idReady, ready: true, secsAfter: ") took",
		examples: []string{"init engine (profile, create kv cache, warmup model) took 60.1 seconds"}},
	{prefixes: []string{"saved AOT compiled function to"}, id: idAOTSave,
		examples: []string{"saved AOT compiled function to /p"}},
	{prefixes: []string{"torch.compile takes", "torch.compile took"}, id: idCompile, secsAfter: "torch.compile t", closes: setOf(idDynamo, idInductor),
		examples: []string{"torch.compile takes 40.1 s in total", "torch.compile took 40.1 s in total"}},
	{prefixes: []string{"The server is fired up and ready to roll"}, id: idReady, ready: true,
		examples: []string{"The server is fired up and ready to roll!"}},
	// uvicorn's, under the API servers of vLLM, SGLang and TGI's Python
	// front ends: the server answers requests from here on.
	{prefixes: []string{"Application startup complete"}, id: idReady, ready: true,
		examples: []string{"Application startup complete."}},
	// torch's own progress lines under TORCH_LOGS=dynamo,inductor
	// (symbolic_convert.py, output_graph.py, compile_fx.py; the "[0/0] "
	// compile id before them is the record's): every rank of a plain torch
	// run prints them, no engine needed. Step 2 names the backend; only
	// Inductor's is the inductor phase.
	{prefixes: []string{"Step 1: torchdynamo start tracing"}, id: idDynamo, open: true,
		examples: []string{"Step 1: torchdynamo start tracing forward /src/model.py:32"}},
	{prefixes: []string{"Step 1: torchdynamo done tracing"}, id: idDynamo, alone: true,
		examples: []string{"Step 1: torchdynamo done tracing forward (RETURN_VALUE)"}},
	{prefixes: []string{"Step 2: calling compiler function"}, needs: "inductor", id: idInductor, open: true, closes: setOf(idDynamo),
		examples: []string{"Step 2: calling compiler function inductor"}},
	{prefixes: []string{"Step 2: done compiler function"}, needs: "inductor", id: idInductor,
		examples: []string{"Step 2: done compiler function inductor"}},
	{prefixes: []string{"Step 3: torchinductor compiling"}, id: idInductor, open: true, closes: setOf(idDynamo),
		examples: []string{"Step 3: torchinductor compiling FORWARDS graph 0"}},
	{prefixes: []string{"Step 3: torchinductor done compiling"}, id: idInductor,
		examples: []string{"Step 3: torchinductor done compiling FORWARDS graph 0"}},
}

// tracebackHeader is the literal Markers adds for the traceback header a
// Builder watches for on error lines.
const tracebackHeader = "Traceback (most recent call last)"

// readModelLoad: vLLM's "Loading model weights took … seconds" closes the
// load; its "Loading model from scratch" (no time) opens it.
func readModelLoad(s string, ev *event) {
	if strings.Contains(s, "took") {
		ev.close, ev.secs = true, numberBefore(s, " second")
		return
	}
	ev.open, ev.close = true, false
}

// readCacheShape: the shape or compile range loaded from the cache.
func readCacheShape(s string, ev *event) {
	ev.detail = shapeOf(s, " for ", " from the cache")
}

// readInductorGraph: "Compiling a graph for <shape> takes|took N s".
func readInductorGraph(s string, ev *event) {
	if k := strings.LastIndex(s, " takes "); k >= 0 {
		ev.secs = number(s, k+7)
		ev.detail = shapeOf(s, "Compiling a graph for ", " takes ")
	} else if k := strings.LastIndex(s, " took "); k >= 0 {
		ev.secs = number(s, k+6)
		ev.detail = shapeOf(s, "Compiling a graph for ", " took ")
	}
}

// readCUDAGraphBar: vLLM's tqdm bar, "Capturing CUDA graphs (decode,
// FULL): 100%|…| 51/51 [00:11<00:00, …]"; the detail is what the
// parenthesis names, and the bar at 100% closes the phase.
func readCUDAGraphBar(s string, ev *event) {
	if k := strings.Index(s[:min(len(s), 25)], " ("); k >= 0 { // k < 24
		if e := strings.Index(s[k:], "):"); e > 0 {
			ev.detail = s[k+2 : k+e]
		}
	}
	if strings.Contains(s, "100%|") {
		ev.open, ev.close, ev.secs = false, true, tqdmElapsed(s)
	}
}

// event is what the line means.
func (m *marker) event(s string) event {
	ev := event{id: m.id, open: m.open, close: !m.open, ready: m.ready, alone: m.alone, detail: m.detail,
		closes: m.closes, drops: m.drops, opens: m.opens, secs: -1}
	switch {
	case m.secsAfter != "":
		ev.secs = after(s, m.secsAfter)
	case m.secsBefore != "":
		ev.secs = numberBefore(s, m.secsBefore)
	}
	if m.read != nil {
		m.read(s, &ev)
	}
	return ev
}

// prefixed is one prefix of a marker.
type prefixed struct {
	prefix string
	m      *marker
}

// byFirst indexes the markers' prefixes by their first byte, so the common
// line (no marker) costs one lookup; markerWords lists them in table order
// and the traceback header.
var byFirst, markerWords = indexMarkers()

func indexMarkers() (idx [256][]prefixed, words []string) {
	for i := range markers {
		m := &markers[i]
		for _, p := range m.prefixes {
			idx[p[0]] = append(idx[p[0]], prefixed{p, m})
			words = append(words, p)
		}
	}
	return idx, append(words, tracebackHeader)
}

// matchLine recognises a phase marker at the start of s (leading blanks
// skipped).
func matchLine(s string) (event, bool) {
	s = strings.TrimLeft(s, " ")
	if len(s) < 8 {
		return event{}, false
	}
	for _, p := range byFirst[s[0]] {
		if strings.HasPrefix(s, p.prefix) {
			if p.m.needs != "" && !strings.Contains(s, p.m.needs) {
				return event{}, false
			}
			return p.m.event(s), true
		}
	}
	return event{}, false
}

// Markers returns literals such that a record none of whose lines holds
// any of them cannot change the phases (it can still move the clock and
// the gaps, and an error-level record marks its rank as failed). A live
// reader flooded with output (bringup watch) uses them to skip the parse
// of lines that cannot matter. The caller must not modify the slice.
func Markers() []string { return markerWords }
