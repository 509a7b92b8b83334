package diagnose

import (
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/bringup-tool/bringup/rules"
)

// Analysis is what an analyzer of one input kind reports.
type Analysis struct {
	Records, Skipped int64
	// Subjects are matched against the rules once the run's versions are
	// known; their Evidence should name path and line.
	Subjects []rules.Subject
	// Versions the input revealed ("torch" -> "2.10.0"), same keys as
	// rules.Versions.
	Versions map[string]string
	// Facts is the analyzer's own model of the input, put in the JSON
	// diagnosis under facts[path]; nil for none.
	Facts any
}

// Analyzer reads one input of its kind. path is "-" for stdin. An error
// marks the input as unusable in inputs[] and the run goes on.
type Analyzer func(path string, r io.Reader) (Analysis, error)

var (
	analyzersMu sync.RWMutex
	analyzers   = map[string]Analyzer{}
)

// RegisterAnalyzer plugs an analyzer in for an input kind: the Name of the
// ingest.Format that claims the input ("torchtrace", "stackdump"). Call it
// from the analyzer package's init; the binary imports that package. The
// kind "enginelog" is built in.
func RegisterAnalyzer(kind string, fn Analyzer) {
	analyzersMu.Lock()
	defer analyzersMu.Unlock()
	if kind == KindEngineLog {
		panic(fmt.Sprintf("diagnose: kind %q is built in", kind))
	}
	analyzers[kind] = fn
}

// Analyzers lists the registered kinds.
func Analyzers() []string {
	analyzersMu.RLock()
	defer analyzersMu.RUnlock()
	out := []string{KindEngineLog}
	for k := range analyzers {
		out = append(out, k)
	}
	sort.Strings(out[1:])
	return out
}

func analyzerFor(kind string) Analyzer {
	analyzersMu.RLock()
	defer analyzersMu.RUnlock()
	return analyzers[kind]
}
