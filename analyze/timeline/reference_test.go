package timeline

// The Builder as it was before phases were numbered (maps keyed by phase
// name, events carrying name lists) and before the text-prefix memo:
// FuzzFeedSame checks the Builder against it. Only the parts that
// changed are here; it shares the rest (normalize, addGap, number …) with
// the package. It matches every marker afresh and normalizes every time.

import (
	"sort"
	"strings"
	"time"

	"github.com/bringup-tool/bringup/record"
)

type refRankState struct {
	open    map[string]*Phase
	closed  map[string]int // index in refBuilder.phases of the last closed phase by name
	errLine int            // last error line seen on this rank (0 none)
}

type refBuilder struct {
	ranks   map[rankKey]*refRankState
	sources map[string]*sourceState
	phases  []Phase
	names   map[record.Rank]string // Rank.String, computed once per rank
	lastSrc string                 // records come in runs from one source
	lastSS  *sourceState
	// recentRanks and recentMarks: see refRankState and match.
	recentRanks [8]refRecentRank
	nextRank    int
	lastRank    int  // where the last hit in recentRanks was
	noMemo      bool // tests: match every marker line afresh and normalize every time (the reference path)
	// Dropped counts phases not kept because MaxPhases was reached (a log
	// that repeats its startup markers endlessly).
	Dropped int
}

func (b *refBuilder) keep(p Phase) bool {
	if len(b.phases) >= MaxPhases {
		b.Dropped++
		return false
	}
	b.phases = append(b.phases, p)
	return true
}

func (b *refBuilder) rankName(r record.Rank) string {
	if s, ok := b.names[r]; ok {
		return s
	}
	if b.names == nil {
		b.names = map[record.Rank]string{}
	}
	s := r.String()
	if len(b.names) < 1<<16 {
		b.names[r] = s
	}
	return s
}

// newRef returns an empty refBuilder.
func newRef() *refBuilder {
	return &refBuilder{ranks: map[rankKey]*refRankState{}, sources: map[string]*sourceState{}, noMemo: true}
}

func (b *refBuilder) Add(rec record.Record) { b.Feed(&rec, true) }

// Feed feeds one record without copying it; refBuilder keeps nothing that
// points into rec.Text. With marks false the caller promises that no line
// of rec.Text holds one of Markers() (a scan it made anyway says so), and
// the text is not read: only the record's time, lines, level and rank
// count, which is what such a record can change.
func (b *refBuilder) Feed(rec *record.Record, marks bool) {
	ss := b.lastSS
	if ss == nil || rec.Source != b.lastSrc {
		if ss = b.sources[rec.Source]; ss == nil {
			ss = &sourceState{first: len(b.sources)}
			b.sources[rec.Source] = ss
		}
		b.lastSrc, b.lastSS = rec.Source, ss
	}
	var t time.Time
	if !rec.Time.IsZero() && rec.Time == ss.rawLast && !ss.rawNorm.IsZero() && !ss.last.IsZero() && !b.noMemo {
		// The stamp of the source's last timed record (lines share their
		// second): normalize gives the time it gave then, which is not
		// after ss.last (nothing but a timed record moves either), so no
		// gap opens and last stays.
		t = ss.rawNorm
		ss.lastLine = rec.EndLine
	} else {
		t = ss.normalize(rec.Time)
		if !rec.Time.IsZero() {
			ss.rawNorm = t // what normalize gave for rawLast
		}
		if !t.IsZero() {
			if !ss.last.IsZero() {
				if d := t.Sub(ss.last); d >= time.Second {
					ss.addGap(Gap{Source: rec.Source, Line: ss.lastLine, Start: ss.last, Seconds: d.Seconds()})
				}
			}
			if t.After(ss.last) || ss.last.IsZero() {
				ss.last = t
			}
			ss.lastLine = rec.EndLine
		} else {
			t = ss.last // tqdm lines carry no header: use the last time seen
			if rec.EndLine > ss.lastLine && !ss.last.IsZero() {
				ss.lastLine = rec.EndLine
			}
		}
	}

	isErr := rec.Level == record.LevelError || rec.Level == record.LevelCritical
	var rs *refRankState
	var key rankKey
	state := func() *refRankState {
		if rs == nil {
			rs, key = b.refRankState(rec)
		}
		return rs
	}
	if isErr {
		state().errLine = rec.Line
	}
	if !marks {
		return
	}
	// Every line: unprefixed continuation lines (SGLang, tqdm bars joined
	// into one record) can carry markers too.
	text := rec.Text
	for n := rec.Line; ; n++ {
		line, rest, more := strings.Cut(text, "\n")
		if m, ok := b.match(line); ok {
			st := state()
			b.apply(st, key, m, t, n, rec)
		} else if strings.HasPrefix(line, "Traceback (most recent call last)") {
			state().errLine = n
		}
		if !more {
			break
		}
		text = rest
	}
}

// refRankState returns the state of rec's rank in rec's source. The ranks of
// a log take turns (TP=8 workers each print the same lines), so the last
// few are kept in a list compared field by field before any map is hashed.
func (b *refBuilder) refRankState(rec *record.Record) (*refRankState, rankKey) {
	for k := range len(b.recentRanks) {
		at := (b.lastRank + k) % len(b.recentRanks) // the last hit first
		e := &b.recentRanks[at]
		if e.rs != nil && e.rank.PID == rec.Rank.PID && e.rank == rec.Rank && e.key.source == rec.Source {
			b.lastRank = at
			return e.rs, e.key
		}
	}
	key := rankKey{rec.Source, b.rankName(rec.Rank)}
	rs := b.ranks[key]
	if rs == nil {
		rs = &refRankState{open: map[string]*Phase{}, closed: map[string]int{}}
		b.ranks[key] = rs
	}
	b.lastRank = b.nextRank % len(b.recentRanks)
	b.recentRanks[b.lastRank] = refRecentRank{rank: rec.Rank, key: key, rs: rs}
	b.nextRank++
	return rs, key
}

type refRecentRank struct {
	rank record.Rank
	key  rankKey
	rs   *refRankState
}

// match is the package's match with a memo of the last few marker lines:
// every rank of a TP group prints the same marker, often to the byte. An
// entry keeps its line in a buffer of its own (the caller's text may be
// reused), which is overwritten only when the entry is replaced; the refEvent
// returned is applied before the next call, and apply copies the detail it

func (b *refBuilder) match(line string) (refEvent, bool) { return refMatch(line) }

type refEvent struct {
	name   string
	detail string
	open   bool     // opens the phase
	close  bool     // closes it
	secs   float64  // duration printed on the line; <0 unknown
	closes []string // other phases this line closes (done)
	drops  []string // open phases this line shows never ran (a cache hit skips Inductor)
	opens  []string // other phases this line opens
	ready  bool     // the engine is up: every open phase in the source is done
}

func (b *refBuilder) apply(rs *refRankState, key rankKey, e refEvent, t time.Time, line int, rec *record.Record) {
	// A detail is a piece of the record's text, which Feed's caller may
	// reuse: every Phase keeps a copy (keepDetail).
	for _, n := range e.drops {
		delete(rs.open, n)
	}
	if e.ready {
		for k, other := range b.ranks {
			if k.source == key.source && other != rs {
				for n := range other.open {
					b.close(other, n, t, line, -1)
				}
			}
		}
		for n := range rs.open {
			if n != e.name {
				b.close(rs, n, t, line, -1)
			}
		}
	}
	for _, n := range e.opens {
		if rs.open[n] == nil {
			rs.open[n] = &Phase{Rank: key.rank, Name: n, Start: t, Source: rec.Source, Line: line}
		}
	}
	for _, n := range e.closes {
		if p := rs.open[n]; p != nil {
			b.close(rs, n, t, line, -1)
		}
	}
	switch {
	case e.open && !e.close:
		if rs.open[e.name] == nil {
			rs.open[e.name] = &Phase{Rank: key.rank, Name: e.name, Detail: keepDetail(e.detail), Start: t, Source: rec.Source, Line: line}
		}
	case e.close:
		if p := rs.open[e.name]; p != nil {
			if e.detail != "" && e.detail != p.Detail {
				p.Detail = keepDetail(e.detail)
			}
			b.close(rs, e.name, t, line, e.secs)
			if e.name == PhaseDynamo && rs.open[PhaseInductor] == nil {
				// Dynamo done (its phase was opened by "Using cache directory"): Inductor starts now too.
				rs.open[PhaseInductor] = &Phase{Rank: key.rank, Name: PhaseInductor, Start: t, Source: rec.Source, Line: line}
			}
			return
		}
		// A second closing line for a phase that just closed (vLLM logs
		// "Loading weights took" then "Model loading took") extends it.
		if k, ok := rs.closed[e.name]; ok && e.detail == "" && b.phases[k].Detail == "" && !t.IsZero() &&
			within(t.Sub(b.phases[k].End), 0, 5*time.Second) {
			q := &b.phases[k]
			q.End, q.EndLine = t, line
			if e.secs > q.Seconds {
				q.Seconds = e.secs
				q.Start = startOf(t, e.secs)
			}
			return
		}
		p := Phase{Rank: key.rank, Name: e.name, Detail: keepDetail(e.detail), End: t, Status: StatusDone,
			Source: rec.Source, Line: line, EndLine: line}
		if e.secs >= 0 {
			p.Seconds = e.secs
			p.Start = startOf(t, e.secs)
		} else {
			p.Start = t
		}
		if b.keep(p) {
			rs.closed[e.name] = len(b.phases) - 1
		}
	}
	// Dynamo done: Inductor starts compiling right away.
	if e.name == PhaseDynamo && e.close && rs.open[PhaseInductor] == nil {
		rs.open[PhaseInductor] = &Phase{Rank: key.rank, Name: PhaseInductor, Start: t, Source: rec.Source, Line: line}
	}
}

// yearZero is the earliest time a report can hold (JSON writes years 0
// to 9999); vLLM's year-less times are in year 0 already.

func (b *refBuilder) close(rs *refRankState, name string, t time.Time, line int, secs float64) {
	p := rs.open[name]
	delete(rs.open, name)
	p.End = t
	p.EndLine = line
	p.Status = StatusDone
	if secs >= 0 {
		p.Seconds = secs
	} else if !t.IsZero() && !p.Start.IsZero() {
		p.Seconds = t.Sub(p.Start).Seconds()
	}
	if b.keep(*p) {
		rs.closed[name] = len(b.phases) - 1
	}
}

// Finish returns the phases (in source order, then by line) and the
// longest gaps per source (longest first). Phases still open end at the
// last time seen in their source: failed when their rank logged an error
// after they opened, else unfinished.
func (b *refBuilder) Finish() (phases []Phase, gaps []Gap) {
	var open []Phase
	for key, rs := range b.ranks {
		ss := b.sources[key.source]
		for name, p := range rs.open {
			delete(rs.open, name)
			p.End = ss.last
			p.EndLine = ss.lastLine
			if !p.End.IsZero() && !p.Start.IsZero() {
				p.Seconds = p.End.Sub(p.Start).Seconds()
			}
			p.Status = StatusUnfinished
			if rs.errLine >= p.Line {
				p.Status = StatusFailed
			}
			open = append(open, *p)
		}
	}
	// Phases opened on the same line of the same rank ("compile" and
	// "dynamo") come out of maps: order them by name so the report is the
	// same on every run.
	sort.Slice(open, func(i, j int) bool {
		a, c := open[i], open[j]
		if a.Line != c.Line {
			return a.Line < c.Line
		}
		if a.Rank != c.Rank {
			return a.Rank < c.Rank
		}
		return a.Name < c.Name
	})
	phases = append(b.phases, open...)
	sort.SliceStable(phases, func(i, j int) bool {
		a, c := phases[i], phases[j]
		if a.Source != c.Source {
			return b.sources[a.Source].first < b.sources[c.Source].first
		}
		if a.Line != c.Line {
			return a.Line < c.Line
		}
		return a.Rank < c.Rank
	})
	var srcs []string
	for s := range b.sources {
		srcs = append(srcs, s)
	}
	sort.Slice(srcs, func(i, j int) bool { return b.sources[srcs[i]].first < b.sources[srcs[j]].first })
	for _, s := range srcs {
		g := b.sources[s].gaps
		sort.SliceStable(g, func(i, j int) bool { return g[i].Seconds > g[j].Seconds })
		gaps = append(gaps, g...)
	}
	return phases, gaps
}

// number reads the first decimal number in s at or after index i.

func refMatch(s string) (refEvent, bool) {
	s = strings.TrimLeft(s, " ")
	if len(s) < 8 {
		return refEvent{}, false
	}
	none := -1.0
	switch s[0] {
	case 'L':
		switch {
		case strings.HasPrefix(s, "Loading weights took"):
			return refEvent{name: PhaseLoad, close: true, secs: after(s, "took")}, true
		case strings.HasPrefix(s, "Loading model weights took"), strings.HasPrefix(s, "Loading model from scratch"):
			if strings.Contains(s, "took") {
				return refEvent{name: PhaseLoad, close: true, secs: numberBefore(s, " second")}, true
			}
			return refEvent{name: PhaseLoad, open: true, secs: none}, true
		case strings.HasPrefix(s, "Load weight begin"):
			return refEvent{name: PhaseLoad, open: true, secs: none}, true
		case strings.HasPrefix(s, "Load weight end"):
			return refEvent{name: PhaseLoad, close: true, secs: after(s, "elapsed=")}, true
		}
	case 'M':
		switch {
		case strings.HasPrefix(s, "Model loading took"):
			return refEvent{name: PhaseLoad, close: true, secs: numberBefore(s, " second")}, true
		case strings.HasPrefix(s, "Memory profiling takes"), strings.HasPrefix(s, "Memory profiling took"):
			return refEvent{name: PhaseProfile, close: true, secs: after(s, "profiling t")}, true
		case strings.HasPrefix(s, "Model warmup done"):
			return refEvent{name: PhaseReady, close: true, secs: none, ready: true}, true
		}
	case 'S':
		switch {
		case strings.HasPrefix(s, "Starting to load model"):
			return refEvent{name: PhaseLoad, open: true, secs: none}, true
		case strings.HasPrefix(s, "Start compiling function"):
			return refEvent{name: PhaseDynamo, open: true, secs: none, opens: []string{PhaseCompile}}, true
		}
	case 'U':
		if strings.HasPrefix(s, "Using cache directory:") && strings.Contains(s, "torch.compile") {
			return refEvent{name: PhaseDynamo, open: true, secs: none, opens: []string{PhaseCompile}}, true
		}
	case 'D':
		switch {
		case strings.HasPrefix(s, "Dynamo bytecode transform time:"):
			return refEvent{name: PhaseDynamo, close: true, secs: after(s, "time:")}, true
		case strings.HasPrefix(s, "Directly load the compiled graph"):
			ev := refEvent{name: PhaseCacheLoad, close: true, secs: after(s, "took"), drops: []string{PhaseInductor}}
			ev.detail = shapeOf(s, " for ", " from the cache")
			return ev, true
		case strings.HasPrefix(s, "Directly load AOT compilation"):
			return refEvent{name: PhaseAOTLoad, close: true, secs: none, drops: []string{PhaseDynamo, PhaseInductor}}, true
		}
	case 'C':
		switch {
		case strings.HasPrefix(s, "Compiling a graph for"):
			ev := refEvent{name: PhaseInductor, close: true, secs: -1}
			if k := strings.LastIndex(s, " takes "); k >= 0 {
				ev.secs = number(s, k+7)
				ev.detail = shapeOf(s, "Compiling a graph for ", " takes ")
			} else if k := strings.LastIndex(s, " took "); k >= 0 {
				ev.secs = number(s, k+6)
				ev.detail = shapeOf(s, "Compiling a graph for ", " took ")
			}
			return ev, true
		case strings.HasPrefix(s, "Cache the graph"):
			return refEvent{name: PhaseInductor, open: true, secs: none}, true
		case strings.HasPrefix(s, "Capturing CUDA graph"):
			// vLLM's tqdm bar: "Capturing CUDA graphs (decode, FULL): 100%|…| 51/51 [00:11<00:00, …]".
			ev := refEvent{name: PhaseCUDAGraph, open: true, secs: none}
			if k := strings.Index(s[:min(len(s), 25)], " ("); k >= 0 { // k < 24
				if e := strings.Index(s[k:], "):"); e > 0 {
					ev.detail = s[k+2 : k+e]
				}
			}
			if strings.Contains(s, "100%|") {
				ev.open, ev.close, ev.secs = false, true, tqdmElapsed(s)
			}
			return ev, true
		case strings.HasPrefix(s, "Capturing cudagraphs"), strings.HasPrefix(s, "Capture cuda graph begin"), strings.HasPrefix(s, "Capturing batches"):
			return refEvent{name: PhaseCUDAGraph, open: true, secs: none}, true
		case strings.HasPrefix(s, "Capture cuda graph end"):
			return refEvent{name: PhaseCUDAGraph, close: true, secs: after(s, "elapsed:")}, true
		case strings.HasPrefix(s, "Capture piecewise CUDA graph begin"):
			return refEvent{name: PhaseCUDAGraph, detail: "piecewise", open: true, secs: none}, true
		case strings.HasPrefix(s, "Capture piecewise CUDA graph end"):
			// A separate open slot would be cleaner; SGLang captures
			// piecewise graphs before the decode ones, so the slot is free.
			return refEvent{name: PhaseCUDAGraph, detail: "piecewise", close: true, secs: after(s, "elapsed:")}, true
		case strings.HasPrefix(s, "Compiling model again due to a load failure"), strings.HasPrefix(s, "Cannot load aot compilation"):
			return refEvent{name: PhaseDynamo, open: true, secs: none}, true
		}
	case 'G':
		if strings.HasPrefix(s, "Graph capturing finished in") {
			return refEvent{name: PhaseCUDAGraph, close: true, secs: after(s, "finished in")}, true
		}
	case 'P':
		if strings.HasPrefix(s, "Profiling CUDA graph memory") {
			return refEvent{name: PhaseCUDAGraph, open: true, secs: none}, true
		}
	case 'I':
		if strings.HasPrefix(s, "Initial profiling/warmup run took") {
			return refEvent{name: PhaseProfile, close: true, secs: after(s, "took")}, true
		}
	case 'i':
		if strings.HasPrefix(s, "init engine (") && strings.Contains(s, "took") {
			return refEvent{name: PhaseReady, close: true, secs: after(s, ") took"), ready: true}, true
		}
	case 's':
		if strings.HasPrefix(s, "saved AOT compiled function to") {
			return refEvent{name: PhaseAOTSave, close: true, secs: none}, true
		}
	case 't':
		if strings.HasPrefix(s, "torch.compile takes") || strings.HasPrefix(s, "torch.compile took") {
			return refEvent{name: PhaseCompile, close: true, secs: after(s, "torch.compile t"), closes: []string{PhaseDynamo, PhaseInductor}}, true
		}
	case 'T':
		if strings.HasPrefix(s, "The server is fired up and ready to roll") {
			return refEvent{name: PhaseReady, close: true, secs: none, ready: true}, true
		}
	}
	return refEvent{}, false
}

// tqdmElapsed reads the elapsed time of a tqdm bar: "[00:11<00:00, 3.1it/s]"
// or "[1:02:03<…"; -1 when absent.

func within(d, lo, hi time.Duration) bool { return d >= lo && d <= hi }
