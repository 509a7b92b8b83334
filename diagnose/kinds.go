package diagnose

import (
	"bufio"
	"bytes"
	"io"

	"github.com/bringup-tool/bringup/analyze/compiles"
	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/ingest/stackdump"
	"github.com/bringup-tool/bringup/ingest/torchtrace"
	"github.com/bringup-tool/bringup/rules"
)

// KindTorchTrace is the kind of a TORCH_TRACE structured log input.
const KindTorchTrace = "torchtrace"

// inputKind is one kind of input diagnose reads: its name (inputs[].kind),
// how sure it is that an input with this path and these first bytes is of
// this kind (0 = not mine, 100 = certainly mine), and what reading one
// yields. br is positioned at the input's start; head is its first
// ingest.HeadSize bytes.
type inputKind struct {
	name    string
	sniff   func(path string, head []byte) int
	analyze func(path string, br *bufio.Reader, head []byte, rd reading) fileResult
}

// inputKinds is every kind of input diagnose reads; adding one is adding
// a line here. The most confident sniff wins, the earlier kind on a tie.
var inputKinds = []inputKind{
	{KindReport, sniffReport, notAnInput},
	{KindEngineLog, enginelog.Sniff, analyzeEngineLog},
	{KindStacks, stackdump.Sniff, readBoth(analyzed(KindStacks, analyzeStackDump))},
	{KindTorchTrace, torchtrace.Sniff, analyzed(KindTorchTrace, analyzeTorchTrace)},
}

// detect is the kind that claims the input most confidently; nil when none does.
func detect(path string, head []byte) *inputKind {
	var best *inputKind
	bestScore := 0
	for i := range inputKinds {
		if s := inputKinds[i].sniff(path, head); s > bestScore {
			best, bestScore = &inputKinds[i], s
		}
	}
	return best
}

// Analysis is what an analyzer of one input kind other than engine logs
// reports.
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

// analyzed is an input kind's reading through an Analyzer.
func analyzed(kind string, fn Analyzer) func(string, *bufio.Reader, []byte, reading) fileResult {
	return func(path string, br *bufio.Reader, _ []byte, _ reading) fileResult {
		a, err := fn(path, br)
		in := Input{Path: path, Kind: kind, Records: a.Records, Skipped: a.Skipped}
		if err != nil {
			in.Error = err.Error()
		}
		return fileResult{input: in, analysis: &a}
	}
}

// maxReadBoth bounds the stack-dump input that is held in memory to be
// read as a log too; past it the dump is read as a dump alone.
const maxReadBoth = 64 << 20

// readBoth reads a stack-dump input with kind's reader and with the
// engine-log reader, so the floor sees the fatal errors in it: a
// faulthandler report ("Fatal Python error: Segmentation fault", then
// "Current thread 0x…") is a dump and a crash, and a vLLM log with a dump
// inside is a log whose dump is bucketed. The dump keeps the input's
// kind, records and facts. When the input holds no log lines (a dump
// alone), only its complete fatal errors are taken from the log reading:
// the text rules are the stack rules' business there, and frames with no
// exception line are the dump's threads, not a cut traceback.
func readBoth(kind func(string, *bufio.Reader, []byte, reading) fileResult) func(string, *bufio.Reader, []byte, reading) fileResult {
	return func(path string, br *bufio.Reader, head []byte, rd reading) fileResult {
		data, err := io.ReadAll(io.LimitReader(br, maxReadBoth+1))
		if err != nil || len(data) > maxReadBoth {
			return kind(path, bufio.NewReader(io.MultiReader(bytes.NewReader(data), br)), head, rd)
		}
		fix := enginelog.DetectPaste(head)
		dump, dumpHead := data, head
		if fix.Any() {
			// A dump the paste quoted or indented (a faulthandler report
			// under "> "): the dump reader reads it as it was printed.
			if dd, err := io.ReadAll(enginelog.Depaste(bytes.NewReader(data), fix)); err == nil {
				dump, dumpHead = dd, dd[:min(len(dd), len(head))]
			}
		}
		fr := kind(path, bufio.NewReader(bytes.NewReader(dump)), dumpHead, rd)
		lr := analyzeLog(path, enginelog.Depaste(bytes.NewReader(data), fix), rd)
		if fr.input.Error != "" && !bytes.Contains(data, []byte("(most recent call first)")) && len(lr.tracebacks)+len(lr.fatals) > 0 {
			// Sniffed as a dump ("Fatal Python error: Aborted" among a
			// crash's last lines) but unreadable as one and without a
			// single thread's stack, and it holds fatal errors: it is a
			// log excerpt, read whole as one.
			return fileResult{log: &lr, input: lr.input}
		}
		if !enginelog.HoldsLogLines(head) {
			lr.hits, lr.ruleLines = rules.NewCollector(), nil
			lr.phases, lr.gaps, lr.versions = nil, nil, nil
			kept := lr.tracebacks[:0]
			for _, tb := range lr.tracebacks {
				if tb.Root().Type != "" {
					kept = append(kept, tb)
				}
			}
			lr.tracebacks = kept
		}
		lr.input = fr.input
		fr.log = &lr
		return fr
	}
}

// analyzeEngineLog reads an engine log. A pasted excerpt (quoted,
// indented, colour codes without ESC) is repaired line by line; a log as
// the engine wrote it is not.
func analyzeEngineLog(path string, br *bufio.Reader, head []byte, rd reading) fileResult {
	lr := analyzeLog(path, enginelog.Depaste(br, enginelog.DetectPaste(head)), rd)
	return fileResult{log: &lr, input: lr.input}
}

// analyzeTorchTrace reads a TORCH_TRACE file: its compile failures, graph
// breaks, open phases, recompiles and cache outcomes are the subjects,
// its bringup.trace/v1 document the facts.
func analyzeTorchTrace(path string, r io.Reader) (Analysis, error) {
	t, err := compiles.DiagnoseAnalyzer(path, r)
	if err != nil {
		return Analysis{}, err
	}
	return Analysis{Records: t.Records, Skipped: t.Skipped, Subjects: t.Subjects, Versions: t.Result.Versions, Facts: t.Result}, nil
}
