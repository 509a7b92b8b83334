package watch

import (
	"fmt"
	"time"

	"github.com/bringup-tool/bringup/analyze/timeline"
	"github.com/bringup-tool/bringup/analyze/versions"
	"github.com/bringup-tool/bringup/ingest/enginelog"
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
	ranks    map[int]string // pid → rank as logged
	year     int            // vLLM prints no year: phases get the run's
	finished []timeline.Phase
	records  int
}

// maxRanks bounds the pid → rank map against output that invents pids.
const maxRanks = 1 << 14

// NewEngineTracker returns the Tracker for a boot whose output is saved
// at source (used in the phases' locations).
func NewEngineTracker(source string) Tracker {
	t := &engineTracker{source: source, timeline: timeline.New(), ranks: map[int]string{}, year: time.Now().Year()}
	t.live = enginelog.NewLive(source, t.record)
	return t
}

func (t *engineTracker) record(rec record.Record) {
	// Rank.String formats: name each pid once (a flood repeats a handful).
	if pid := rec.Rank.PID; pid > 0 && len(t.ranks) < maxRanks {
		if _, ok := t.ranks[pid]; !ok {
			t.ranks[pid] = rec.Rank.String()
		}
	}
	t.timeline.Add(rec)
	// Engines print their versions in the startup banner; scanning every
	// record of a flood for them costs a fifth of the live parse.
	if t.records < versionRecords {
		t.records++
		t.versions.Add(rec)
	}
}

// versionRecords is how many records are searched for versions.
const versionRecords = 100000

func (t *engineTracker) Write(lines []byte)          { t.live.Write(lines) }
func (t *engineTracker) Flush()                      { t.live.Flush() }
func (t *engineTracker) Rank(pid int) string         { return t.ranks[pid] }
func (t *engineTracker) Versions() map[string]string { return t.versions.Versions() }

func (t *engineTracker) current() []timeline.Phase {
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
			return true, fmt.Sprintf("%s printed its ready line at %s:%d", orEngine(p.Rank), p.Source, max(p.EndLine, p.Line))
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
			Open: p.Status != timeline.StatusDone,
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
			t.finished = []timeline.Phase{}
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
