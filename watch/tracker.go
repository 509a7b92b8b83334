package watch

import (
	"bytes"
	"fmt"
	"time"
	"unsafe"

	"github.com/bringup-tool/bringup/analyze/timeline"
	"github.com/bringup-tool/bringup/analyze/versions"
	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/litscan"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/store"
)

// engineTracker follows a boot's output with the same parser and timeline
// as `bringup diagnose`: enginelog's live front end turns lines into
// records, the timeline builder turns them into phases per rank.
type engineTracker struct {
	source   string
	live     *enginelog.Live
	timeline *timeline.Builder
	versions versions.Detector
	ranks    map[int]string      // pid → rank as logged
	idents   map[int]record.Rank // pid → what its prefix said
	year     int                 // vLLM prints no year: phases get the run's
	finished []record.Phase
	records  int
	full     int                 // records parsed in full before lines may be skipped
	prefixes map[string]struct{} // process prefixes ("(Worker_TP0 pid=7) ") seen on a parsed line
}

// maxRanks bounds the pid → rank map against output that invents pids.
const maxRanks = 1 << 14

// NewEngineTracker returns the Tracker for a boot whose output is saved
// at source (used in the phases' locations).
func NewEngineTracker(source string) Tracker {
	t := &engineTracker{source: source, timeline: timeline.New(), ranks: map[int]string{}, idents: map[int]record.Rank{}, year: time.Now().Year(),
		full: versionRecords, prefixes: map[string]struct{}{}}
	t.live = enginelog.NewLive(source, t.record)
	return t
}

func (t *engineTracker) record(rec record.Record) {
	// Rank.String formats: name each pid once (a flood repeats a handful).
	if pid := rec.Rank.PID; pid > 0 && len(t.ranks) < maxRanks {
		if _, ok := t.ranks[pid]; !ok {
			t.ranks[pid] = rec.Rank.String()
			t.idents[pid] = rec.Rank
		}
	}
	t.timeline.Add(rec)
	// Engines print their versions in the startup banner; scanning every
	// record of a flood for them costs a fifth of the live parse.
	if t.records < t.full {
		t.records++
		t.versions.Add(rec)
	}
}

// versionRecords is how many records are searched for versions (and
// parsed in full whatever they hold).
const versionRecords = 100000

// Write parses a chunk of whole lines. Past the first records (the
// banner, where the versions are), a chunk that holds no phase marker or
// traceback header is parsed sparsely: a line that opens a vLLM record of
// a non-error level from a process already seen cannot change the phases,
// the failed ranks or the pid → rank names, so it is only counted. The
// last line of a chunk is always parsed, to keep the timeline's clock (the
// end of a phase still open) current. This takes the live parse of a
// flooding boot from ~280 to ~40 ns a line.
func (t *engineTracker) Write(data []byte) {
	if t.records < t.full || len(data) == 0 || phaseMarkers.Any(unsafe.String(&data[0], len(data))) {
		t.live.Write(data)
		return
	}
	parseFrom, skipped := 0, 0 // the pending run: lines to parse, or lines skipped
	for i := 0; i < len(data); {
		end := len(data)
		if k := bytes.IndexByte(data[i:], '\n'); k >= 0 {
			end = i + k + 1
		}
		if end < len(data) && t.skippable(data[i:end]) {
			if parseFrom < i {
				t.live.Write(data[parseFrom:i])
			}
			skipped++
			parseFrom = end
		} else if skipped > 0 {
			t.live.Skip(skipped)
			skipped = 0
		}
		i = end
	}
	t.live.Skip(skipped) // never pending: the last line is parsed
	if parseFrom < len(data) {
		t.live.Write(data[parseFrom:])
	}
}

var phaseMarkers = litscan.New(timeline.Markers())

// prefixEnd returns where the process prefix at the start of line ends
// (after its first ") "), -1 if it does not within 128 bytes.
func prefixEnd(line []byte) int {
	for i := 0; i < min(len(line), 128); {
		k := bytes.IndexByte(line[i:min(len(line), 128)], ')')
		if k < 0 {
			return -1
		}
		i += k + 1
		if i < len(line) && line[i] == ' ' {
			return i + 1
		}
	}
	return -1
}

// maxPrefixes bounds the process prefixes remembered (output that invents
// them is then parsed in full).
const maxPrefixes = 256

// skippable: line opens a vLLM record ("INFO 11-29 23:00:00 [f.py:1] …",
// maybe after a process prefix seen before) of a level that is not an
// error. The caller has checked that the chunk holds no phase marker. A
// prefix seen for the first time is remembered and its line parsed, so
// the pid gets its rank name.
func (t *engineTracker) skippable(line []byte) bool {
	rest := line
	if len(line) > 0 && line[0] == '(' {
		k := prefixEnd(line)
		if k < 0 {
			return false
		}
		if _, ok := t.prefixes[string(line[:k])]; !ok {
			if len(t.prefixes) < maxPrefixes {
				t.prefixes[string(line[:k])] = struct{}{}
			}
			return false
		}
		rest = line[k:]
	}
	var n int
	switch {
	case bytes.HasPrefix(rest, []byte("INFO ")):
		n = 5
	case bytes.HasPrefix(rest, []byte("DEBUG ")):
		n = 6
	case bytes.HasPrefix(rest, []byte("WARNING ")):
		n = 8
	default:
		return false
	}
	return len(rest) > n && rest[n] >= '0' && rest[n] <= '9'
}

func (t *engineTracker) Flush()              { t.live.Flush() }
func (t *engineTracker) Rank(pid int) string { return t.ranks[pid] }

func (t *engineTracker) Identity(pid int) record.Rank {
	if r, ok := t.idents[pid]; ok {
		return r
	}
	return record.NoRank
}
func (t *engineTracker) Versions() map[string]string { return t.versions.Versions() }

func (t *engineTracker) current() []record.Phase {
	if t.finished != nil {
		return t.finished
	}
	return t.timeline.Current()
}

// Ready reports the engine's ready line (vLLM "init engine … took",
// SGLang "The server is fired up", ATOM "Model warmup done").
func (t *engineTracker) Ready() (bool, string) {
	for _, p := range t.current() {
		if p.Name == timeline.PhaseReady {
			return true, fmt.Sprintf("%s printed its ready line at %s:%d", orEngine(p.Rank), p.Path, max(p.EndLine, p.Line))
		}
	}
	return false, ""
}

// Phases converts the timeline for the run record.
func (t *engineTracker) Phases() []store.Phase {
	src := t.current()
	out := make([]store.Phase, 0, len(src))
	for _, p := range src {
		out = append(out, store.Phase{
			Rank: p.Rank, Name: p.Name, Detail: p.Detail, Status: p.Status,
			Start: t.anchor(p.Start), End: t.anchor(p.End), Seconds: p.Seconds,
			Open: p.Status != record.PhaseDone, Line: p.Line,
		})
	}
	return out
}

// Finish closes the timeline (open phases become unfinished or failed).
func (t *engineTracker) Finish() {
	t.live.Flush()
	if t.finished == nil {
		t.finished, _ = t.timeline.Finish()
		if t.finished == nil {
			t.finished = []record.Phase{}
		}
	}
}

// anchor gives a year-less log time (vLLM) the year of the run.
func (t *engineTracker) anchor(ts time.Time) time.Time {
	if ts.IsZero() || ts.Year() != 0 {
		return ts
	}
	return ts.AddDate(t.year, 0, 0)
}

func orEngine(rank string) string {
	if rank == "" {
		return "the engine"
	}
	return rank
}
