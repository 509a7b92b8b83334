// Package timeline builds the startup timeline of an engine boot from the
// engine's own log lines: per rank, the phases (weights load, Dynamo
// bytecode transform, Inductor compile per shape or compile range,
// compile-cache loads, CUDA-graph capture, ready) with start, end, seconds
// and whether they finished; and the longest silent stretches of a log.
// Markers follow ../shared/reference/log-formats.md §2.4, §3, §4 and §10,
// with the wording drift of past releases (takes|took, shape|compile range).
package timeline

import (
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/ringcache"
)

// Phase names.
const (
	PhaseLoad      = "load"       // model weights
	PhaseDynamo    = "dynamo"     // Dynamo bytecode transform
	PhaseInductor  = "inductor"   // Inductor compile of one shape / compile range (Detail)
	PhaseCacheLoad = "cache-load" // compiled graphs loaded from vLLM's compile cache
	PhaseAOTLoad   = "aot-load"   // whole AOT-compiled forward loaded (Dynamo and Inductor skipped)
	PhaseAOTSave   = "aot-save"   // AOT artifact written
	PhaseCompile   = "compile"    // torch.compile in total
	PhaseProfile   = "profile"    // memory profiling / warm-up run
	PhaseCUDAGraph = "cudagraph"  // CUDA-graph capture (Detail "piecewise" for SGLang's prefill graphs)
	PhaseReady     = "ready"      // engine ready; Seconds is the engine's own init time when printed
)

// A phase is a record.Phase: Rank, Name, Detail (the shape or compile
// range of an Inductor phase, "piecewise" for SGLang's prefill graphs),
// Start, End, Seconds, Status (record.PhaseDone, PhaseFailed,
// PhaseUnfinished), Path (the record's Source), Line (where the phase
// opened or, for a close-only marker, closed) and EndLine. Open is
// never set here: a phase still open has Status PhaseUnfinished or
// PhaseFailed.

// Gap is a silent stretch: no output between two timestamped records.
type Gap struct {
	Source  string    `json:"source"`
	Line    int       `json:"line"` // the last line before the silence
	Start   time.Time `json:"start"`
	Seconds float64   `json:"seconds"`
}

// GapsPerSource is how many of the longest gaps Finish keeps per source.
const GapsPerSource = 5

type rankKey struct {
	source string
	rank   string
}

// phaseID numbers the phase names in their sort order, so a rank's open
// and closed phases are arrays indexed by it (no string hashing per
// marker) and walking them goes by name, the order Finish sorts by.
type phaseID uint8

const (
	idAOTLoad phaseID = iota
	idAOTSave
	idCacheLoad
	idCompile
	idCUDAGraph
	idDynamo
	idInductor
	idLoad
	idProfile
	idReady
	nPhases
)

// phaseNames holds the name of each phaseID.
var phaseNames = [nPhases]string{PhaseAOTLoad, PhaseAOTSave, PhaseCacheLoad, PhaseCompile, PhaseCUDAGraph,
	PhaseDynamo, PhaseInductor, PhaseLoad, PhaseProfile, PhaseReady}

// phaseSet is a set of phaseIDs, one bit each.
type phaseSet uint16

func setOf(ids ...phaseID) phaseSet {
	var s phaseSet
	for _, id := range ids {
		s |= 1 << id
	}
	return s
}

func (s phaseSet) has(id phaseID) bool { return s&(1<<id) != 0 }

type rankState struct {
	key     rankKey
	open    [nPhases]*record.Phase
	closed  [nPhases]int32 // 1 + index in Builder.phases of the last closed phase by name (0 none)
	errLine int            // last error line seen on this rank (0 none)
}

type sourceState struct {
	first    int // order first seen
	last     time.Time
	lastLine int
	shift    time.Duration // added to year-less / date-less times after a rollover
	rawLast  time.Time
	rawNorm  time.Time // what clock gave for rawLast when it was fed
	settled  bool      // rawNorm and last are set (not zero), and the Builder has its memos
	gaps     []Gap
}

// Builder collects phases and gaps from records fed in order.
type Builder struct {
	ranks   map[rankKey]*rankState
	sources map[string]*sourceState
	phases  []record.Phase
	names   map[record.Rank]string // Rank.String, computed once per rank
	lastSrc string                 // records come in runs from one source
	lastSS  *sourceState
	// recentRanks and recentMarks: see rankState and match.
	recentRanks ringcache.Ring[recentRank]
	recentMarks ringcache.Ring[recentMark]
	bar         recentBar // see keepBar
	ev          event     // what matchFirst returns when no memo knew the line
	noMemo      bool      // tests: match every marker line afresh and normalize every time (the reference path)
	// Dropped counts phases not kept because MaxPhases was reached (a log
	// that repeats its startup markers endlessly).
	Dropped int
}

// MaxPhases bounds the phases kept, so memory does not grow with the log.
const MaxPhases = 50000

func (b *Builder) keep(p record.Phase) bool {
	if len(b.phases) >= MaxPhases {
		b.Dropped++
		return false
	}
	b.phases = append(b.phases, p)
	return true
}

func (b *Builder) rankName(r record.Rank) string {
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

// How many ranks Builder.rankState and marker lines Builder.match
// remember.
const (
	recentRankSize = 8
	recentMarkSize = 4
)

// New returns an empty Builder.
func New() *Builder {
	return &Builder{ranks: map[rankKey]*rankState{}, sources: map[string]*sourceState{}, recentRanks: ringcache.New[recentRank](recentRankSize),
		recentMarks: ringcache.New[recentMark](recentMarkSize)}
}

// maxShift bounds sourceState.shift: 200 years of rollovers.
const maxShift = 200 * 365 * 24 * time.Hour

// normalize makes times from one source monotonic enough across rollovers:
// vLLM prints no year (Dec 31 → Jan 1 goes back a year), ATOM prints no
// date at all (23:59:59 → 00:00:00 goes back a day).
func (s *sourceState) normalize(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	// Only a clock that went backwards can have rolled over; checking that
	// first keeps the calendar arithmetic off the common path.
	// (A shift is capped at maxShift: a log whose clock jumps back and
	// forth endlessly would overflow it into garbage times.)
	if !s.rawLast.IsZero() && t.Before(s.rawLast) && t.Year() == 0 && s.rawLast.Year() == 0 && s.shift < maxShift {
		back := s.rawLast.Sub(t)
		switch {
		case t.Month() == time.January && t.Day() == 1 && s.rawLast.Month() == time.January && s.rawLast.Day() == 1 && back > 12*time.Hour:
			// date-less clock (ATOM) passed midnight
			s.shift += 24 * time.Hour
		case back > 180*24*time.Hour:
			// month-day clock (vLLM, glog) passed new year
			s.shift += t.AddDate(1, 0, 0).Sub(t)
		}
	}
	s.rawLast = t
	if s.shift == 0 {
		return t
	}
	return t.Add(s.shift)
}

// sameClock: a and b are both set and read from clocks of one kind, both
// with a year or both without (vLLM's month-day, ATOM's time of day:
// year 0, or a few years on once normalize has counted rollovers), so
// that the time between them means something.
func sameClock(a, b time.Time) bool {
	return !a.IsZero() && !b.IsZero() && (a.Year() < yearlessBelow) == (b.Year() < yearlessBelow)
}

// yearlessBelow: the years of a clock printed without one, shifted by at
// most maxShift, stay below it.
const yearlessBelow = 1000

// Add feeds one record.
func (b *Builder) Add(rec record.Record) { b.Feed(&rec, true) }

// Feed feeds one record without copying it; Builder keeps nothing that
// points into rec.Text. With marks false the caller promises that no line
// of rec.Text holds one of Markers() (a scan it made anyway says so), and
// the text is not read: only the record's time, lines, level and rank
// count, which is what such a record can change.
func (b *Builder) Feed(rec *record.Record, marks bool) {
	// Most records: no marker, not an error (no level starting with E or
	// C), from the last source, and stamped with the second of the
	// source's last timed record (see feed): only the source's line moves.
	if ss := b.lastSS; !marks && ss != nil && ss.settled && rec.Time == ss.rawLast &&
		len(rec.Source) == len(b.lastSrc) && unsafe.StringData(rec.Source) == unsafe.StringData(b.lastSrc) &&
		(len(rec.Level) == 0 || rec.Level[0] != 'E' && rec.Level[0] != 'C') {
		ss.lastLine = rec.EndLine
		return
	}
	b.feed(rec, rec.Text, marks)
}

// FeedText is Feed(rec, true) with text in place of rec.Text, which is
// not read: a caller that holds the text apart (in a batch's memory) need
// not copy the record to set it. Builder keeps nothing that points into
// text.
func (b *Builder) FeedText(rec *record.Record, text string) { b.feed(rec, text, true) }

func (b *Builder) feed(rec *record.Record, text string, marks bool) {
	ss := b.lastSS
	if ss == nil || !sameString(rec.Source, b.lastSrc) {
		ss = b.source(rec.Source)
	}
	var t time.Time
	switch {
	case rec.Time.IsZero():
		// tqdm lines carry no header: use the last time seen (normalize
		// leaves a zero time alone).
		t = ss.last
		if rec.EndLine > ss.lastLine && !ss.last.IsZero() {
			ss.lastLine = rec.EndLine
		}
	case rec.Time == ss.rawLast && ss.settled && !b.noMemo:
		// The stamp of the source's last timed record (lines share their
		// second): normalize gives the time it gave then, which is not
		// after ss.last (nothing but a timed record moves either), so no
		// gap opens and last stays.
		t = ss.rawNorm
		ss.lastLine = rec.EndLine
	default:
		t = ss.clock(rec)
		ss.settled = ss.settled && !b.noMemo
	}
	isErr := rec.Level == record.LevelError || rec.Level == record.LevelCritical
	if marks {
		b.marks(rec, text, t, isErr)
	} else if isErr {
		b.rankState(rec).errLine = rec.Line
	}
}

// source returns the state of the source named s, and makes it the one
// the next records are checked against first.
//
//go:noinline
func (b *Builder) source(s string) *sourceState {
	ss := b.sources[s]
	if ss == nil {
		ss = &sourceState{first: len(b.sources)}
		b.sources[s] = ss
	}
	b.lastSrc, b.lastSS = s, ss
	return ss
}

// clock moves the source's clock to rec's time, which is not zero, and
// returns it normalized.
func (ss *sourceState) clock(rec *record.Record) time.Time {
	t := ss.normalize(rec.Time)
	if !t.IsZero() && !ss.last.IsZero() && !sameClock(ss.last, t) {
		// Two clocks in one source, one without a year (vLLM's "INFO
		// 02-22 17:20:58") and one with ("2025-02-22 17:20:59,847 - INFO
		// - "): the time between them is no silence. The dated clock
		// is the source's from the first time it shows; a time without
		// a year after it is read as no time.
		if t.Year() < yearlessBelow {
			t = time.Time{}
		} else {
			ss.last = time.Time{}
		}
	}
	ss.rawNorm = t // what clock gave for rawLast
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
		t = ss.last
		if rec.EndLine > ss.lastLine && !ss.last.IsZero() {
			ss.lastLine = rec.EndLine
		}
	}
	ss.settled = !ss.rawNorm.IsZero() && !ss.last.IsZero()
	return t
}

// marks matches every line of text (rec's) against the markers and
// applies what they mean at time t, after marking the rank failed at
// rec's line when isErr.
func (b *Builder) marks(rec *record.Record, text string, t time.Time, isErr bool) {
	var rs *rankState // rec's rank, looked up when needed
	if isErr {
		rs = b.rankState(rec)
		rs.errLine = rec.Line
	}
	// Every line: unprefixed continuation lines (SGLang, tqdm bars joined
	// into one record) can carry markers too.
	for n := rec.Line; ; n++ {
		e, end := b.matchFirst(text)
		if e != nil {
			if rs == nil {
				rs = b.rankState(rec)
			}
			if !e.plainOpen || rs.open[e.id] == nil { // else apply would change nothing (a progress bar going on)
				b.apply(rs, e, t, n)
			}
		} else if strings.HasPrefix(text, "Traceback (most recent call last)") { // no '\n' in it: the first line's prefix
			if rs == nil {
				rs = b.rankState(rec)
			}
			rs.errLine = n
		}
		if end >= len(text) {
			break
		}
		text = text[end+1:]
	}
}

// sameString is a == b, without a call when both are the same bytes (a
// record's source, a rank's role: every record of an input shares one
// string).
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// rankState returns the state of rec's rank in rec's source. The ranks of
// a log take turns (TP=8 workers each print the same lines), so the last
// few are kept in a ring compared field by field before any map is
// hashed, the one that followed the last hit last time first.
func (b *Builder) rankState(rec *record.Record) *rankState {
	// Probe/At/Hit, not Find: Find calls its match through a func value
	// on every record, which this hot loop cannot afford.
	r := &b.recentRanks
	for k := range r.Len() {
		at := r.Probe(k)
		if e := r.At(at); sameRank(&e.rank, &rec.Rank) && sameString(e.source, rec.Source) {
			return r.Hit(at).rs
		}
	}
	return b.newRank(rec)
}

// sameRank is *a == *b, the pid (which tells workers apart) first.
func sameRank(a, b *record.Rank) bool {
	return a.PID == b.PID && a.TP == b.TP && a.DP == b.DP && a.PP == b.PP && a.EP == b.EP && a.Global == b.Global &&
		sameString(a.Role, b.Role)
}

// newRank is rankState for a rank not among the recent ones.
//
//go:noinline
func (b *Builder) newRank(rec *record.Record) *rankState {
	key := rankKey{rec.Source, b.rankName(rec.Rank)}
	rs := b.ranks[key]
	if rs == nil {
		rs = &rankState{key: key}
		b.ranks[key] = rs
	}
	b.recentRanks.Put(recentRank{rank: rec.Rank, source: rec.Source, rs: rs})
	return rs
}

type recentRank struct {
	rank   record.Rank
	source string
	rs     *rankState
}

// match is the package's match with a memo of the last few marker lines:
// every rank of a TP group prints the same marker, often to the byte. The
// memo is a ringcache.Ring of recentMarkSize lines, the oldest replaced
// first; an entry keeps a copy of its line (the caller's text may be
// reused) and its event's detail points into that copy; the event
// returned is applied before the next call, and apply copies the detail
// it keeps.
func (b *Builder) match(line string) (event, bool) {
	if b.noMemo {
		return match(line)
	}
	if bar := &b.bar; bar.prefix != "" && len(line) > len(bar.prefix) && line[:len(bar.prefix)] == bar.prefix &&
		!strings.Contains(line[len(bar.prefix):], "100%|") {
		return bar.ev, true
	}
	if e := b.recentMarks.Find(func(e *recentMark) bool { return e.line == line }); e != nil {
		return e.ev, true
	}
	return b.matchNew(line)
}

// matchFirst is match on the first line of text, and where that line
// ends (len(text) when it is the only one). The event, nil when the line
// is no marker, holds until the next call. A line the memos know is
// compared in place, so the usual one-line record is not searched for
// its end first; what the memos hold has no '\n', so a memo line that
// text starts with, followed by '\n' or nothing, is text's first line.
func (b *Builder) matchFirst(text string) (*event, int) {
	if b.noMemo {
		line, _, _ := strings.Cut(text, "\n")
		ev, ok := match(line)
		if !ok {
			return nil, len(line)
		}
		b.ev = ev
		return &b.ev, len(line)
	}
	end := -1 // not known yet
	if bar := &b.bar; bar.prefix != "" && len(text) > len(bar.prefix) && text[0] == bar.prefix[0] && text[:len(bar.prefix)] == bar.prefix {
		rest := text[len(bar.prefix):]
		if k := strings.IndexByte(rest, '\n'); k >= 0 {
			rest = rest[:k]
		}
		end = len(bar.prefix) + len(rest)
		if len(rest) > 0 && !strings.Contains(rest, "100%|") {
			return &bar.ev, end
		}
	}
	r := &b.recentMarks // Probe/At/Hit inline, as in rankState
	for k := range r.Len() {
		at := r.Probe(k)
		e := r.At(at)
		if n := len(e.line); n <= len(text) && text[0] == e.line[0] && (n == len(text) || text[n] == '\n') && text[:n] == e.line {
			r.Hit(at)
			return &e.ev, n
		}
	}
	if end < 0 {
		if end = strings.IndexByte(text, '\n'); end < 0 {
			end = len(text)
		}
	}
	ev, ok := b.matchNew(text[:end])
	if !ok {
		return nil, end
	}
	b.ev = ev
	return &b.ev, end
}

// matchNew is match on a line the memos did not know, which it then
// remembers when it is a marker.
func (b *Builder) matchNew(line string) (event, bool) {
	ev, ok := match(line)
	if ok && ev.open && !ev.close && ev.id == idCUDAGraph && ev.detail != "" && len(line) <= 512 {
		if b.keepBar(line, ev) {
			return ev, ok
		}
	}
	if ok && len(line) <= 512 {
		kept := strings.Clone(line)
		e := b.recentMarks.Put(recentMark{line: kept, ev: ev})
		e.ev.detail = rebase(ev.detail, line, kept)
	}
	return ev, ok
}

// rebase returns the substring of to at the place sub has in from, or sub
// itself when it is not a piece of from (a constant detail).
func rebase(sub, from, to string) string {
	if sub == "" || from == "" {
		return sub
	}
	p := uintptr(unsafe.Pointer(unsafe.StringData(sub)))
	f := uintptr(unsafe.Pointer(unsafe.StringData(from)))
	if p < f || p+uintptr(len(sub)) > f+uintptr(len(from)) {
		return sub
	}
	off := int(p - f)
	return to[off : off+len(sub)]
}

// keepBar remembers the line of a progress bar that is still running
// ("Capturing CUDA graphs (decode, FULL):  52%|#####     | 35/67 [00:08<…")
// up to its "):" as bar.prefix: every line that starts with those bytes and
// holds no "100%|" after them matches to the same event (match looks at
// nothing past the "):" but for "100%|", which cannot straddle it), while
// their counts and rates change on every line and would miss the memo.
// It reports whether line was kept.
func (b *Builder) keepBar(line string, ev event) bool {
	p := uintptr(unsafe.Pointer(unsafe.StringData(ev.detail)))
	f := uintptr(unsafe.Pointer(unsafe.StringData(line)))
	if p < f || p+uintptr(len(ev.detail)) > f+uintptr(len(line)) {
		return false
	}
	end := int(p-f) + len(ev.detail)
	if !strings.HasPrefix(line[end:], "):") || !strings.HasPrefix(strings.TrimLeft(line, " "), "Capturing CUDA graph") {
		return false
	}
	prefix := line[:end+2]
	if strings.Contains(prefix, "100%|") {
		return false
	}
	bar := &b.bar
	bar.buf = append(bar.buf[:0], prefix...)
	bar.prefix = unsafe.String(unsafe.SliceData(bar.buf), len(bar.buf))
	bar.ev = ev
	bar.ev.detail = rebase(ev.detail, prefix, bar.prefix)
	return true
}

type recentBar struct {
	buf    []byte
	prefix string // buf's bytes
	ev     event
}

type recentMark struct {
	line string // a copy of the marker line, never empty
	ev   event
}

// addGap keeps the GapsPerSource longest gaps, longest first, an earlier
// one first among equals (what a stable sort of all of them would keep),
// by insertion: a log that ticks every second adds a gap per second.
func (s *sourceState) addGap(g Gap) {
	k := len(s.gaps)
	for k > 0 && s.gaps[k-1].Seconds < g.Seconds {
		k--
	}
	if k >= GapsPerSource {
		return
	}
	s.gaps = append(s.gaps, Gap{})
	copy(s.gaps[k+1:], s.gaps[k:])
	s.gaps[k] = g
	if len(s.gaps) > GapsPerSource {
		s.gaps = s.gaps[:GapsPerSource]
	}
}

// event is what a marker line means.
type event struct {
	id    phaseID
	open  bool // opens the phase
	close bool // closes it
	ready bool // the engine is up: every open phase in the source is done
	alone bool // closing Dynamo does not open Inductor (see marker.alone)
	// plainOpen: open, and nothing else (the phase's own opening line)
	plainOpen bool
	closes    phaseSet // other phases this line closes (done)
	drops     phaseSet // open phases this line shows never ran (a cache hit skips Inductor)
	opens     phaseSet // other phases this line opens
	detail    string
	secs      float64 // duration printed on the line; <0 unknown
}

// name is the name of the event's phase.
func (e *event) name() string { return phaseNames[e.id] }

func (b *Builder) apply(rs *rankState, e *event, t time.Time, line int) {
	key, source := &rs.key, rs.key.source
	// A detail is a piece of the record's text, which Feed's caller may
	// reuse: every Phase keeps a copy (keepDetail).
	if e.drops != 0 {
		for n := range nPhases {
			if e.drops.has(n) {
				rs.open[n] = nil
			}
		}
	}
	if e.ready {
		for k, other := range b.ranks {
			if k.source == key.source && other != rs {
				for n := range nPhases {
					if other.open[n] != nil {
						b.close(other, n, t, line, -1)
					}
				}
			}
		}
		for n := range nPhases {
			if n != e.id && rs.open[n] != nil {
				b.close(rs, n, t, line, -1)
			}
		}
	}
	if e.opens != 0 {
		for n := range nPhases {
			if e.opens.has(n) && rs.open[n] == nil {
				rs.open[n] = &record.Phase{Rank: key.rank, Name: phaseNames[n], Start: t, Path: source, Line: line}
			}
		}
	}
	if e.closes != 0 {
		for n := range nPhases {
			if e.closes.has(n) && rs.open[n] != nil {
				b.close(rs, n, t, line, -1)
			}
		}
	}
	switch {
	case e.open && !e.close:
		if rs.open[e.id] == nil {
			rs.open[e.id] = &record.Phase{Rank: key.rank, Name: phaseNames[e.id], Detail: keepDetail(e.detail), Start: t, Path: source, Line: line}
		}
	case e.close:
		if p := rs.open[e.id]; p != nil {
			if e.detail != "" && e.detail != p.Detail {
				p.Detail = keepDetail(e.detail)
			}
			b.close(rs, e.id, t, line, e.secs)
			if e.id == idDynamo && !e.alone && rs.open[idInductor] == nil {
				// Dynamo done (its phase was opened by "Using cache directory"): Inductor starts now too.
				rs.open[idInductor] = &record.Phase{Rank: key.rank, Name: PhaseInductor, Start: t, Path: source, Line: line}
			}
			return
		}
		// A second closing line for a phase that just closed (vLLM logs
		// "Loading weights took" then "Model loading took") extends it.
		if k := rs.closed[e.id] - 1; k >= 0 && e.detail == "" && b.phases[k].Detail == "" && !t.IsZero() &&
			withinSecs(t, b.phases[k].End, 5) {
			q := &b.phases[k]
			q.End, q.EndLine = t, line
			if e.secs > q.Seconds {
				q.Seconds = e.secs
				q.Start = startOf(t, e.secs)
			}
			return
		}
		p := record.Phase{Rank: key.rank, Name: phaseNames[e.id], Detail: keepDetail(e.detail), End: t, Status: record.PhaseDone,
			Path: source, Line: line, EndLine: line}
		if e.secs >= 0 {
			p.Seconds = e.secs
			p.Start = startOf(t, e.secs)
		} else {
			p.Start = t
		}
		if b.keep(p) {
			rs.closed[e.id] = int32(len(b.phases))
		}
	}
	// Dynamo done: Inductor starts compiling right away.
	if e.id == idDynamo && e.close && !e.alone && rs.open[idInductor] == nil {
		rs.open[idInductor] = &record.Phase{Rank: key.rank, Name: PhaseInductor, Start: t, Path: source, Line: line}
	}
}

// yearZero is the earliest time a report can hold (JSON writes years 0
// to 9999); vLLM's year-less times are in year 0 already.
var yearZero = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)

// startOf is t less secs seconds, the start of a phase a marker closes
// with its duration, but not before yearZero: a phase closed at 00:00:10
// on Jan 1 of a year-less log, or a garbage duration, made a time the
// report could not be written with ("year outside of range").
func startOf(t time.Time, secs float64) time.Time {
	if secs*float64(time.Second) >= float64(t.Sub(yearZero)) {
		return yearZero
	}
	return t.Add(-time.Duration(secs * float64(time.Second)))
}

// withinSecs reports whether t is u or at most max seconds after it:
// 0 <= t.Sub(u) <= max s. Sub checks its result for overflow by adding
// it back, more than all the rest here costs; the second count decides
// alone but for a difference within a second of 0 or max. (Times come
// from log text: no monotonic clock reading, which Sub would prefer.)
func withinSecs(t, u time.Time, max int64) bool {
	ds := t.Unix() - u.Unix()
	if ds < 0 || ds > max {
		return false
	}
	d := ds*int64(time.Second) + int64(t.Nanosecond()-u.Nanosecond())
	return d >= 0 && d <= max*int64(time.Second)
}

// keepDetail copies a detail out of the record's text: Feed's caller may
// reuse the text's memory once Feed returns.
func keepDetail(d string) string { return strings.Clone(d) }

func (b *Builder) close(rs *rankState, id phaseID, t time.Time, line int, secs float64) {
	p := rs.open[id]
	rs.open[id] = nil
	p.End = t
	p.EndLine = line
	p.Status = record.PhaseDone
	if secs >= 0 {
		p.Seconds = secs
	} else if sameClock(p.Start, t) {
		p.Seconds = t.Sub(p.Start).Seconds()
	}
	if b.keep(*p) {
		rs.closed[id] = int32(len(b.phases))
	}
}

// Finish returns the phases (in source order, then by line) and the
// longest gaps per source (longest first). Phases still open end at the
// last time seen in their source: failed when their rank logged an error
// after they opened, else unfinished.
func (b *Builder) Finish() (phases []record.Phase, gaps []Gap) {
	var open []record.Phase
	for key, rs := range b.ranks {
		ss := b.sources[key.source]
		for id, p := range rs.open {
			if p == nil {
				continue
			}
			rs.open[id] = nil
			p.End = ss.last
			p.EndLine = ss.lastLine
			if sameClock(p.Start, p.End) {
				p.Seconds = p.End.Sub(p.Start).Seconds()
			}
			p.Status = record.PhaseUnfinished
			if rs.errLine >= p.Line {
				p.Status = record.PhaseFailed
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
		if a.Path != c.Path {
			return b.sources[a.Path].first < b.sources[c.Path].first
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
func number(s string, i int) float64 {
	for i < len(s) && !(s[i] >= '0' && s[i] <= '9') {
		i++
	}
	j := i
	for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
		j++
	}
	if j == i {
		return -1
	}
	v, err := strconv.ParseFloat(strings.TrimRight(s[i:j], "."), 64)
	if err != nil {
		return -1
	}
	return v
}

// after returns the number following the first occurrence of word in s.
func after(s, word string) float64 {
	k := strings.Index(s, word)
	if k < 0 {
		return -1
	}
	return number(s, k+len(word))
}

// numberBefore reads the number that ends right before suffix (e.g. "6.1
// seconds" → 6.1).
func numberBefore(s, suffix string) float64 {
	k := strings.Index(s, suffix)
	if k <= 0 {
		return -1
	}
	j := k
	for j > 0 && (s[j-1] >= '0' && s[j-1] <= '9' || s[j-1] == '.') {
		j--
	}
	return number(s[:k], j)
}

// shapeOf extracts the shape or compile range from "Compiling a graph for
// <X> takes", "Directly load the compiled graph(s) for <X> from the cache".
func shapeOf(s, pre, post string) string {
	k := strings.Index(s, pre)
	if k < 0 {
		return ""
	}
	rest := s[k+len(pre):]
	e := strings.Index(rest, post)
	if e < 0 {
		return ""
	}
	return strings.TrimSpace(rest[:e])
}

// match recognises a phase marker (the table in markers.go) on the first
// line of a record's text.
func match(s string) (event, bool) {
	ev, ok := matchLine(s)
	ev.plainOpen = ev.open && !ev.close && !ev.ready && ev.closes|ev.drops|ev.opens == 0
	return ev, ok
}

// tqdmElapsed reads the elapsed time of a tqdm bar: "[00:11<00:00, 3.1it/s]"
// or "[1:02:03<…"; -1 when absent.
func tqdmElapsed(s string) float64 {
	k := strings.LastIndex(s, " [")
	if k < 0 {
		return -1
	}
	e := strings.IndexByte(s[k:], '<')
	if e < 0 {
		return -1
	}
	secs := 0.0
	for _, part := range strings.Split(s[k+2:k+e], ":") {
		v, err := strconv.Atoi(part)
		if err != nil {
			return -1
		}
		secs = secs*60 + float64(v)
	}
	return secs
}
