package diagnose

import (
	"regexp"
	"strings"

	"github.com/bringup-tool/bringup/diagnose/fatal"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
)

// A launcher says in its own words which rank failed, in lines no rank
// prefix marks: TGI's "Shard 0 failed to start". That rank is involved in
// the failure, so the floor adds it (with the line as evidence) to the
// finding of the error the log printed last before. A rank the launcher
// then stopped ("Shutting down shards", then INFO "Shard terminated
// rank=1") did not fail: it is not added, as watch's own stop is not the
// boot's failure.

//
// A process also says that it is ending in its own words, under its own
// rank prefix: torch's ProcessGroupNCCL warns, as its process exits
// without destroy_process_group, "[rank0]:[W108 …] … process group has NOT
// been destroyed before we destruct ProcessGroupNCCL". Right after an
// error printed with no rank (its traceback unprefixed, as Python prints
// it), that is the same process exiting from it: the error is that rank's.

// endedRow is one wording: lit gates it (12 bytes or more), re's first
// group is the global rank; a row with no group is a process's own word
// on its exit, whose rank is the record's (own).
type endedRow struct {
	lit string
	re  *regexp.Regexp
}

var endedRows = []endedRow{
	{" failed to start", regexp.MustCompile(`\bShard (\d+) failed to start\b`)},
	{"has NOT been destroyed", regexp.MustCompile(`process group has NOT been destroyed`)},
	// torch 2.4+'s wording of the same exit warning.
	{"was not called before program exit", regexp.MustCompile(`destroy_process_group\(\) was not called before program exit`)},
}

// ownExitLines is how many lines after an error printed with no rank a
// process's own exit word may come to name its rank: the process exits
// right after printing it.
const ownExitLines = 3

// torchrunRootCause heads the entry of torchrun's ChildFailedError table
// for the child that failed first: the others ("Failures:") followed it.
const torchrunRootCause = "Root Cause (first observed failure):"

func endedLiterals() []string {
	out := make([]string, len(endedRows), len(endedRows)+1)
	for i, r := range endedRows {
		out[i] = r.lit
	}
	return append(out, torchrunRootCause)
}

// endedLine is a line that says a rank's process ended.
type endedLine struct {
	line int
	rank record.Rank
	text string
	own  bool // the process's own word, under its rank prefix
	// rootCause: the line is torchrun's torchrunRootCause, which names
	// no rank itself; the child exit after it is the first failure.
	rootCause bool
}

// noteEnded adds the lines of rec that say a rank ended to es.
func noteEnded(es []endedLine, rec *record.Record) []endedLine {
	for i, l := range strings.Split(rec.Text, "\n") {
		if len(es) >= maxAdviceLines {
			break
		}
		if strings.Contains(l, torchrunRootCause) {
			es = append(es, endedLine{line: rec.Line + i, rank: record.NoRank, text: torchrunRootCause, rootCause: true})
			continue
		}
		for _, row := range endedRows {
			if !strings.Contains(l, row.lit) {
				continue
			}
			if m := row.re.FindStringSubmatch(l); m != nil {
				r, own := record.NoRank, len(m) == 1
				if own {
					if r = rec.Rank; r.Key() == "" {
						break // no rank printed: it names none
					}
				} else {
					r.Global = atoi(m[1])
				}
				es = append(es, endedLine{line: rec.Line + i, rank: r, text: clip(strings.TrimSpace(l)), own: own})
				break
			}
		}
	}
	return es
}

// attachEnded gives the error printed last before a launcher's line that a
// rank ended (within nearLines) that rank, unless it has it already.
func attachEnded(occs []occurrence, hits *rules.Collector) {
	for i := range occs {
		o := &occs[i]
		if len(o.log.ended) == 0 || len(o.added) == 0 || o.wrapper || o.dupOf > 0 {
			continue
		}
		for _, e := range o.log.ended {
			if e.rootCause || e.line < o.line || e.line > o.end+nearLines || laterError(occs, o, e.line) {
				continue
			}
			if e.own && (o.rank.Key() != "" || e.line > o.end+ownExitLines) {
				continue // another process's exit, or not right after the error
			}
			rank := e.rank.String()
			if sameIndex(o.rank, e.rank) {
				continue
			}
			sub := o.sub
			sub.Evidence = record.Evidence{Path: o.log.input.Path, Line: e.line, Rank: rank, Text: e.text}
			for _, r := range o.added {
				hits.Add(r, sub)
			}
		}
	}
}

// laterError: another error of o's log that was added to findings starts
// after o and at or before line (the line is that one's).
func laterError(occs []occurrence, o *occurrence, line int) bool {
	for i := range occs {
		if p := &occs[i]; p != o && p.log == o.log && len(p.added) > 0 && !p.wrapper && p.dupOf == 0 && p.line > o.line && p.line <= line {
			return true
		}
	}
	return false
}

// sameIndex: a names the global rank b does.
func sameIndex(a, b record.Rank) bool {
	return a.Global >= 0 && a.Global == b.Global
}

// firstObserved moves the child exit that torchrun's table names as the
// first observed failure before the log's other fatal lines, so that when
// only children's exits are known the verdict's root is that child's, not
// the one the table happened to list first.
func firstObserved(lg *logResult) {
	for _, e := range lg.ended {
		if !e.rootCause {
			continue
		}
		for i := range lg.fatals {
			if fl := lg.fatals[i]; fl.hit.Kind == fatal.ChildExit && fl.line > e.line {
				copy(lg.fatals[1:i+1], lg.fatals[:i])
				lg.fatals[0] = fl
				return
			}
		}
	}
}
