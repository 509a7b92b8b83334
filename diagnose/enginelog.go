package diagnose

import (
	"io"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bringup-tool/bringup/analyze/timeline"
	"github.com/bringup-tool/bringup/analyze/versions"
	"github.com/bringup-tool/bringup/ingest/enginelog"
	"github.com/bringup-tool/bringup/ingest/pytrace"
	"github.com/bringup-tool/bringup/internal/litscan"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
)

// KindEngineLog is the built-in input kind: engine / launcher / PyTorch logs.
const KindEngineLog = "enginelog"

// maxEvidenceText bounds one evidence line so a 50 MB line stays out of the report.
const maxEvidenceText = 400

// logResult is what one engine log yielded; results are merged in input order.
type logResult struct {
	input      Input
	hits       *rules.Collector
	tracebacks []pytrace.Traceback
	phases     []timeline.Phase
	gaps       []timeline.Gap
	versions   map[string]string
	gpuUtil    string // gpu_memory_utilization as printed, "" when not seen
}

var gpuUtilRe = regexp.MustCompile(`gpu_memory_utilization[=:]?\s*\(?\s*([0-9]*\.?[0-9]+)`)

// gpuUtilWord gates gpuUtilRe: a strided scan instead of strings.Contains,
// whose byte search stops at every 'g' of a line.
var gpuUtilWord = litscan.New([]string{"gpu_memory_utilization"})

// batchSize records travel together between the pipeline's goroutines:
// big enough to make channel costs vanish, small enough to stay in cache.
const (
	batchSize = 512
	nBatches  = 8
)

type batch struct {
	recs []record.Record
	refs atomic.Int32 // consumers still reading it
}

// batchPool keeps batches between inputs: a directory of thousands of
// small logs would otherwise allocate nBatches × batchSize records each.
var batchPool = sync.Pool{New: func() any { return &batch{recs: make([]record.Record, 0, batchSize)} }}

// analyzeLog streams one engine log through the parser, the traceback
// extractor, the timeline and version detectors and the text rules. Only
// rule hits, tracebacks and phases are kept: memory does not grow with the
// size of the log.
//
// The parser's goroutine batches records; two consumers read every batch
// in order, one matching rules, detecting versions and extracting
// tracebacks, one building the timeline (about equal shares of the work
// since the literal gates made rules, versions and tracebacks cheap on
// ordinary lines), so a multi-core machine runs them side by side.
func analyzeLog(path string, r io.Reader, set *rules.Set) logResult {
	res := logResult{input: Input{Path: path, Kind: KindEngineLog}, hits: rules.NewCollector()}
	// Batches are taken from the pool as the parser fills them: a small
	// log uses one.
	free := make(chan *batch, nBatches)
	made := 0
	next := func() *batch {
		if made < nBatches && len(free) == 0 {
			made++
			return batchPool.Get().(*batch)
		}
		return <-free
	}
	toMatch := make(chan *batch, nBatches)
	toFacts := make(chan *batch, nBatches)
	release := func(b *batch) {
		if b.refs.Add(-1) == 0 {
			b.recs = b.recs[:0]
			free <- b
		}
	}

	var wg sync.WaitGroup
	wg.Add(2)
	x := pytrace.NewExtractor()
	tl := timeline.New()
	var vd versions.Detector
	go func() { // rules, versions and tracebacks
		defer wg.Done()
		m := matcher{set: set, res: &res, fields: map[string]string{}}
		for b := range toMatch {
			for i := range b.recs {
				m.match(&b.recs[i])
				vd.Add(b.recs[i])
				x.Add(b.recs[i])
			}
			release(b)
		}
	}()
	go func() { // timeline
		defer wg.Done()
		for b := range toFacts {
			for i := range b.recs {
				tl.Add(b.recs[i])
			}
			release(b)
		}
	}()

	cur := next()
	send := func() {
		cur.refs.Store(2)
		toMatch <- cur
		toFacts <- cur
	}
	st, err := enginelog.Parse(r, path, func(rec record.Record) {
		cur.recs = append(cur.recs, rec)
		if len(cur.recs) == batchSize {
			send()
			cur = next()
		}
	})
	if len(cur.recs) > 0 {
		send()
	} else {
		free <- cur // never sent: no consumer will release it
	}
	close(toMatch)
	close(toFacts)
	wg.Wait()
	// Every batch is back in free: drop the records' strings and keep the
	// batches for the next input.
	for ; made > 0; made-- {
		b := <-free
		clear(b.recs[:cap(b.recs)])
		b.recs = b.recs[:0]
		batchPool.Put(b)
	}

	res.input.Bytes, res.input.Records, res.input.Skipped = st.Bytes, st.Records, st.Skipped
	for _, s := range st.SkipSamples {
		res.input.SkipSamples = append(res.input.SkipSamples, Skip{Line: s.Line, Reason: s.Reason})
	}
	if err != nil {
		res.input.Error = err.Error()
	}
	res.tracebacks = x.Finish()
	res.phases, res.gaps = tl.Finish()
	res.versions = vd.Versions()
	return res
}

// matcher matches log records against the text rules.
type matcher struct {
	set    *rules.Set
	res    *logResult
	fields map[string]string // reused: Match does not keep it
}

func (m *matcher) match(rec *record.Record) {
	if m.res.gpuUtil == "" && gpuUtilWord.Any(rec.Text) {
		if g := gpuUtilRe.FindStringSubmatch(rec.Text); g != nil {
			m.res.gpuUtil = g[1]
		}
	}
	// Versions are not final while streaming: match without them and
	// apply the gates once the whole run is read (Rule.Allows).
	m.fields["role"] = rec.Rank.Role
	sub := rules.Subject{Text: rec.Text, Fields: m.fields}
	hits := m.set.Match(sub, nil)
	if len(hits) == 0 {
		return
	}
	rank := rec.Rank.String()
	for _, rule := range hits {
		off := locate(rule, rec.Text)
		if off == -2 {
			continue // only quoted source code of a traceback matched
		}
		ev := record.Evidence{Path: rec.Source, Line: rec.Line, Rank: rank}
		ev.Line, ev.Text = lineAt(*rec, off)
		sub.Evidence = ev
		m.res.hits.Add(rule, sub)
	}
}

// locate finds where a rule's text matched, skipping matches on the source
// lines a traceback quotes under each frame (`raise RuntimeError(f"Failed
// to run autotuning code block: {e}")` is code, not the error). It returns
// -1 for a rule without text and -2 when every match was quoted code.
func locate(r *rules.Rule, text string) int {
	off := r.Locate(text)
	for off >= 0 && isQuotedCode(text, off) {
		end := strings.IndexByte(text[off:], '\n')
		if end < 0 {
			return -2
		}
		off = r.LocateFrom(text, off+end+1)
		if off < 0 {
			return -2
		}
	}
	return off
}

// isQuotedCode: the line holding off quotes an error rather than raising
// it: a source line under a `File "…", line N, in f` line, or vLLM's
// collective_rpc re-raise of a worker's error ("Worker failed with error
// '…', please check the stack trace above for the root cause"), whose rank
// is the engine process, not a rank that failed.
func isQuotedCode(text string, off int) bool {
	start := strings.LastIndexByte(text[:off], '\n')
	end := strings.IndexByte(text[off:], '\n')
	if end < 0 {
		end = len(text)
	} else {
		end += off
	}
	if strings.Contains(text[start+1:end], "please check the stack trace above for the root cause") {
		return true
	}
	if start < 0 {
		return false
	}
	prev := text[:start]
	prev = prev[strings.LastIndexByte(prev, '\n')+1:]
	return strings.HasPrefix(strings.TrimSpace(prev), `File "`)
}

// lineAt turns a byte offset in a (joined, multi-line) record into the
// physical line number and that line's text.
func lineAt(rec record.Record, off int) (int, string) {
	text := rec.Text
	if off < 0 || off > len(text) {
		off = 0
	}
	n := strings.Count(text[:off], "\n")
	start := strings.LastIndexByte(text[:off], '\n') + 1
	end := strings.IndexByte(text[off:], '\n')
	if end < 0 {
		end = len(text)
	} else {
		end += off
	}
	return rec.Line + n, clip(strings.TrimSpace(text[start:end]))
}

func clip(s string) string {
	if len(s) <= maxEvidenceText {
		return s
	}
	cut := maxEvidenceText
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut-- // do not split a UTF-8 sequence
	}
	return s[:cut] + "…"
}
