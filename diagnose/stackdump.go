package diagnose

// Stack dumps in bringup diagnose: the analyzer for inputs the stackdump
// format claims reads the dump, buckets it and hands the stack signals to
// diagnose's rule pass.

import (
	"errors"
	"io"

	"github.com/bringup-tool/bringup/ingest/stackdump"
	"github.com/bringup-tool/bringup/rules"
	"github.com/bringup-tool/bringup/stacks"
)

// StackFacts is what diagnose shows of a dump under facts[path].
type StackFacts struct {
	Verdict   string            `json:"verdict"`
	Level     string            `json:"level"`
	Processes int               `json:"processes"`
	Buckets   []*stacks.Bucket  `json:"buckets"`
	Shared    stacks.Shared     `json:"shared"`
	Outliers  []stacks.Outlier  `json:"outliers"`
	Snapshots []stacks.Progress `json:"snapshots,omitempty"`
	// Where is the headline (where the ranks are), concluded with the
	// builtin stack rules and the versions the dump tells (Python only);
	// diagnose, which knows the run's torch version, calls
	// Analysis.Conclude(stacks.Conclude(set, versions)) and reads
	// Analysis.Where again so the headline agrees with its findings.
	Where    stacks.Where     `json:"where"`
	Analysis *stacks.Analysis `json:"-"`
}

// errNoStack: the input looked like a dump but holds no stack.
var errNoStack = errors.New("no stack found in the dump")

// analyzeStackDump is the Analyzer for stack dumps.
func analyzeStackDump(path string, r io.Reader) (Analysis, error) {
	res, err := stackdump.Parse(r, path)
	if err != nil {
		return Analysis{}, err
	}
	if len(res.Processes) == 0 {
		if res.Interleaved != nil {
			return Analysis{}, errors.New(res.Interleaved.String())
		}
		return Analysis{}, errNoStack
	}
	opt := stacks.Options{Level: stacks.DefaultLevel}
	if set, err := rules.Builtin(); err == nil {
		opt.Conclude = stacks.Conclude(set, stacks.Versions(res.Processes))
	}
	a := stacks.Analyze(res.Processes, opt)
	out := Analysis{Skipped: int64(len(res.Warnings)), Versions: map[string]string{}}
	for _, p := range res.Processes {
		out.Records += int64(len(p.Threads))
	}
	for k, v := range stacks.Versions(res.Processes) {
		out.Versions[k] = v
	}
	for _, s := range a.Signals {
		out.Subjects = append(out.Subjects, stacks.Subject(s))
	}
	// diagnose matches the rules on the subjects itself (with the run's
	// versions and user rules): the findings here only shape the headline.
	out.Facts = StackFacts{Verdict: a.Where.Text, Level: a.Level.String(), Processes: len(a.Current), Buckets: a.Buckets,
		Shared: a.Shared, Outliers: a.Outliers, Snapshots: a.Progress, Where: a.Where, Analysis: a}
	return out, nil
}
