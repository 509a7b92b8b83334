package compiles

import (
	"io"
	"os"
	"path/filepath"

	"github.com/bringup-tool/bringup/ingest/torchtrace"
	"github.com/bringup-tool/bringup/rules"
)

// Diagnosed is one trace file as bringup diagnose sees it.
type Diagnosed struct {
	Records, Skipped int64
	// Subjects are for the rules; Result is the file's bringup.trace/v1
	// document (diagnose's facts[path]).
	Subjects []rules.Subject
	Result   *Result
}

// DiagnoseAnalyzer analyses one trace file for bringup diagnose: its
// compile failures, graph breaks, open phases, recompiles, recompile limits
// and cache outcomes become Subjects for the rules. diagnose sees one file
// at a time, so cross-rank divergence is added once per directory: when the
// file is the lowest-ranked of several rank files beside each other, the
// rank files of that directory are compared and their divergence subjects
// join this file's.
func DiagnoseAnalyzer(path string, r io.Reader) (Diagnosed, error) {
	in := Input{Path: path, Rank: torchtrace.RankFromName(path), RankFrom: "file_name"}
	if in.Rank < 0 {
		in.RankFrom = "none"
	}
	fa := newFileAnalysis(in, MaxSpans)
	sc := torchtrace.NewScanner(r, path)
	sc.Want = fa.want
	scanPipelined(sc, fa, torchtrace.NewVerified())
	st := sc.Stats()
	if err := sc.Err(); err != nil {
		return Diagnosed{}, err
	}
	fa.finish(st)
	res := merge([]*fileAnalysis{fa}, []*torchtrace.Stats{st}, nil)
	res.Divergence = []Divergence{} // one file has nothing to diverge from
	subs := Subjects(res)
	if siblings := rankSiblings(path); len(siblings) > 1 && siblings[0] == path {
		inputs, _, err := Discover(siblings)
		if err == nil {
			all := AnalyzeInputs(inputs, nil, Options{})
			for _, s := range Subjects(&Result{Divergence: all.Divergence, Inputs: all.Inputs}) {
				subs = append(subs, s)
			}
			res.Divergence = all.Divergence
		}
	}
	return Diagnosed{
		Records:  int64(st.Records),
		Skipped:  int64(st.Corrupted + st.NonGlog),
		Subjects: subs,
		Result:   res,
	}, nil
}

// rankSiblings lists the rank files in path's directory, lowest rank first
// (just path when it is not a rank file or is read from stdin).
func rankSiblings(path string) []string {
	if path == "-" || torchtrace.RankFromName(path) < 0 {
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return nil
	}
	var in []Input
	for _, e := range entries {
		p := filepath.Join(filepath.Dir(path), e.Name())
		if e.Type().IsRegular() && torchtrace.RankFromName(p) >= 0 {
			in = append(in, Input{Path: p, Rank: torchtrace.RankFromName(p)})
		}
	}
	sortInputs(in)
	out := make([]string, len(in))
	for i, x := range in {
		out[i] = x.Path
	}
	if len(out) > 0 && filepath.Clean(out[0]) == filepath.Clean(path) {
		out[0] = path
	}
	return out
}
