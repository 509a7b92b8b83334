package compiles

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bringup-tool/bringup/ingest"
	"github.com/bringup-tool/bringup/ingest/torchtrace"
	"github.com/bringup-tool/bringup/input"
	"github.com/bringup-tool/bringup/record"
)

// Options tune an analysis.
type Options struct {
	// Progress, when set, is called from the reading goroutines with the
	// bytes read so far over all inputs and the total.
	Progress func(done, total int64)
	// Parallel bounds how many files are read at once (default GOMAXPROCS).
	Parallel int
}

// Analyze finds the trace files in args (files or directories) and
// analyses them. The error is for "could not run" only (nothing found, an
// argument unreadable); bad content is counted in the Result.
func Analyze(args []string, opts Options) (*Result, error) {
	inputs, ignored, err := Discover(args)
	if err != nil {
		return nil, err
	}
	return AnalyzeInputs(inputs, ignored, opts), nil
}

// countingReader reports progress as bytes go by.
type countingReader struct {
	r     io.Reader
	done  *atomic.Int64
	total int64
	tick  int64
	fn    func(done, total int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.fn != nil && n > 0 {
		d := c.done.Add(int64(n))
		if d-c.tick >= 4<<20 || err != nil {
			c.tick = d
			c.fn(d, c.total)
		}
	}
	return n, err
}

// AnalyzeInputs reads already discovered inputs, several at once.
func AnalyzeInputs(inputs []Input, ignored []Ignored, opts Options) *Result {
	par := opts.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	var total int64
	for _, in := range inputs {
		total += in.Bytes
	}
	// The caps are shared between files so that many ranks together stay
	// within them while they are read at once.
	perFile := max(MaxSpans/max(len(inputs), 1), 1000)
	verified := torchtrace.NewVerified()
	var done atomic.Int64
	files := make([]*fileAnalysis, len(inputs))
	stats := make([]*torchtrace.Stats, len(inputs))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := range inputs {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			files[i], stats[i] = analyzeFile(inputs[i], perFile, &countingReader{done: &done, total: total, fn: opts.Progress}, verified)
		}(i)
	}
	wg.Wait()
	if opts.Progress != nil {
		opts.Progress(total, total)
	}
	return merge(files, stats, ignored)
}

func analyzeFile(in Input, maxSpans int, cr *countingReader, verified *torchtrace.Verified) (*fileAnalysis, *torchtrace.Stats) {
	fa := newFileAnalysis(in, maxSpans)
	fail := func(err error) (*fileAnalysis, *torchtrace.Stats) {
		st := torchtrace.NewScanner(strings.NewReader(""), in.Path).Stats()
		st.ReadError = err.Error()
		fa.finish(st)
		return fa, st
	}
	f, err := input.Open(in.Path)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	cr.r = f
	r := io.Reader(cr)
	if torchtrace.Gzipped(f) {
		if r, err = torchtrace.Gunzip(cr); err != nil {
			return fail(err)
		}
	}
	head := &headCopy{r: r}
	sc := torchtrace.NewScanner(head, in.Path)
	sc.Want = fa.want
	scanPipelined(sc, fa, verified)
	st := sc.Stats()
	if err := sc.Err(); err != nil {
		st.ReadError = err.Error()
	}
	st.NotTrace = notTrace(st, head.b)
	fa.finish(st)
	return fa, st
}

// headCopy keeps the first bytes read through it, to say what an input
// that held no trace record holds instead.
type headCopy struct {
	r io.Reader
	b []byte
}

func (h *headCopy) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if k := min(n, ingest.HeadSize-len(h.b)); k > 0 {
		h.b = append(h.b, p[:k]...)
	}
	return n, err
}

// notTrace says why an input gave no TORCH_TRACE record ("" when it gave
// some, or when its read error says why).
func notTrace(st *torchtrace.Stats, head []byte) string {
	switch {
	case st.Records > 0 || st.ReadError != "":
		return ""
	case st.Bytes == 0:
		return "empty file"
	}
	if what := input.NotText(head); what != "" {
		return what + ", not a TORCH_TRACE log"
	}
	if st.Corrupted > 0 {
		return fmt.Sprintf("%d trace envelope(s), none readable (corrupted JSON)", st.Corrupted)
	}
	return fmt.Sprintf("%d line(s), none of them a TORCH_TRACE record (a glog prefix and a JSON envelope): an engine log? read it with bringup diagnose", st.Lines)
}

// Unread lists the inputs that gave no TORCH_TRACE record, with why.
func Unread(res *Result) []Ignored {
	var out []Ignored
	for _, in := range res.Inputs {
		st := res.Counts[in.Path]
		switch {
		case st == nil:
			out = append(out, Ignored{Path: in.Path, Reason: "not read"})
		case st.ReadError != "":
			out = append(out, Ignored{Path: in.Path, Reason: st.ReadError})
		case st.Records == 0:
			out = append(out, Ignored{Path: in.Path, Reason: st.NotTrace})
		}
	}
	return out
}

func merge(files []*fileAnalysis, stats []*torchtrace.Stats, ignored []Ignored) *Result {
	res := &Result{
		Schema: Schema, Ignored: ignored, Ranks: []RankSummary{}, Compiles: []Compile{},
		GraphBreaks: []GraphBreak{}, Recompiles: []Recompile{}, Frames: []FrameSummary{},
		Cache: []CacheEvent{}, CacheStats: map[string]CacheStat{}, OpenSpans: []Span{}, Spans: []Span{},
		Collectives: []CollectiveSchedule{}, ExecutionOrders: []ExecutionOrder{},
		Runtimes: []GraphRuntime{}, RuntimeDeltas: []RuntimeDelta{}, CollectiveParity: []ParityIssue{}, Divergence: []Divergence{},
		Artifacts: []Artifact{}, Links: []Link{}, Shapes: []ShapeEvent{}, Exports: []ExportReport{}, Provenance: []Provenance{}, Versions: map[string]string{}, Findings: []record.Finding{},
		Counts: map[string]*torchtrace.Stats{},
	}
	if res.Ignored == nil {
		res.Ignored = []Ignored{}
	}
	statsBy := map[string]*torchtrace.Stats{}
	inputs := make([]Input, len(files))
	for i, f := range files {
		statsBy[f.in.Path] = stats[i]
		f.in.Bytes = stats[i].Bytes
		inputs[i] = f.in
	}
	sortInputs(inputs)
	assignRuns(inputs, statsBy)
	sort.SliceStable(inputs, func(i, j int) bool { return inputs[i].Run < inputs[j].Run })
	labelInputs(inputs)
	order := map[string]int{}
	for i, in := range inputs {
		order[in.Path] = i
	}
	sort.SliceStable(files, func(i, j int) bool { return order[files[i].in.Path] < order[files[j].in.Path] })
	res.Inputs = inputs
	// Sized once: on a huge trace these are tens of thousands of entries,
	// and growing them by doubling left the old arrays as garbage.
	nc, nk := 0, 0
	for _, f := range files {
		nc += len(f.order)
		nk += len(f.cache)
	}
	res.Compiles = make([]Compile, 0, nc)
	res.Cache = make([]CacheEvent, 0, nk)
	for i, f := range files {
		f.in = inputs[i]
		res.Counts[f.in.Path] = statsBy[f.in.Path]
		artBase := len(res.Artifacts)
		res.Artifacts = append(res.Artifacts, f.arts...)
		res.ArtifactsDropped += f.artsDrop

		cacheBase := len(res.Cache)
		res.Cache = append(res.Cache, f.cache...)
		for _, u := range f.order {
			c := u.c
			for j := range c.Artifacts {
				c.Artifacts[j] += artBase
			}
			for j := range c.Cache {
				c.Cache[j] += cacheBase
			}
			res.Compiles = append(res.Compiles, c)
		}
		// The units were copied: drop them (and their lookup) now.
		f.order, f.units = nil, nil
		f.recentUnits.Reset()
		for _, gb := range f.breaks {
			if gb.Artifact >= 0 {
				gb.Artifact += artBase
			}
			res.GraphBreaks = append(res.GraphBreaks, gb)
		}
		res.Collectives = append(res.Collectives, f.colls...)
		res.Runtimes = append(res.Runtimes, f.runtimes...)
		if f.exec != nil {
			res.ExecutionOrders = append(res.ExecutionOrders, *f.exec)
		}
		res.Links = append(res.Links, f.links...)
		res.Shapes = appendCapped(res.Shapes, f.shapes, MaxShapes, &res.ShapesDropped)
		res.ShapesDropped += f.shapesDrop
		if f.export != nil {
			e := *f.export
			e.Rank = f.in.Rank
			for j := range e.Programs {
				e.Programs[j] += artBase
			}
			res.Exports = append(res.Exports, e)
		}
		for _, k := range f.provOrder {
			p := *f.prov[k]
			for j := range p.Artifacts {
				p.Artifacts[j] += artBase
			}
			res.Provenance = append(res.Provenance, p)
		}
		res.OpenSpans = append(res.OpenSpans, f.openPh...)
		res.Spans = appendCapped(res.Spans, f.closed, MaxSpans, &res.SpansDropped)
		res.SpansDropped += f.dropped
		for k, v := range f.versions {
			if res.Versions[k] == "" {
				res.Versions[k] = v
			}
		}
	}
	capArtifacts(res)
	phaseOccurrences(res)
	restartBreaks(res)
	res.GraphBreaks = dedupeBreaks(res.GraphBreaks)
	recompiles(res)
	frames(res, files)
	cacheStats(res)
	explainMisses(res)
	collectiveParity(res)
	rankSummaries(res)
	divergence(res)
	return res
}

// appendCapped appends more to list up to limit elements in all, counting
// the ones left out in dropped.
func appendCapped[T any](list, more []T, limit int, dropped *int) []T {
	room := max(limit-len(list), 0)
	if room >= len(more) {
		return append(list, more...)
	}
	*dropped += len(more) - room
	return append(list, more[:room]...)
}

// restartBreaks turns compilation_metrics restart_reasons into graph
// breaks for compiles that logged no dynamo_graph_break_reason artifact.
func restartBreaks(res *Result) {
	withArtifact := map[string]bool{}
	for _, gb := range res.GraphBreaks {
		for _, id := range gb.CompileIDs {
			withArtifact[gb.Evidence.Path+"|"+id] = true
		}
	}
	for _, c := range res.Compiles {
		ref := Ref(c.ID, c.Occurrence)
		if withArtifact[c.Path+"|"+ref] {
			continue
		}
		for _, r := range c.RestartReasons {
			reason := strings.Trim(strings.TrimSpace(r), `'"`)
			real, gbType := realBreak(reason)
			if real != strings.TrimSpace(firstLine(reason)) {
				reason = real // the wrapper is no reason; the break after it is
			}
			gb := GraphBreak{
				Reason: reason, GBType: gbType, Count: 1, CompileIDs: []string{ref}, UserCode: c.UserCode,
				Ranks: []int{c.Rank}, Source: "restart_reasons", Artifact: -1,
				Evidence: record.Evidence{Path: c.Path, Line: c.MetricsLine, Rank: rankText(c.Rank), Text: firstLine(r)},
			}
			if c.Frame.Func != "" || c.Frame.File != "" {
				gb.Function = c.Frame.String()
			}
			if m := gbIDRE.FindStringSubmatch(r); m != nil {
				gb.GBID = "GB" + m[1]
				gb.URL = "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb" + m[1] + ".html"
			}
			res.GraphBreaks = append(res.GraphBreaks, gb)
		}
	}
}

// dedupeBreaks merges breaks with the same reason at the same place,
// keeping first-seen order, then sorts by count.
func dedupeBreaks(list []GraphBreak) []GraphBreak {
	idx := map[string]int{}
	out := []GraphBreak{}
	for _, gb := range list {
		key := gb.GBID + "|" + gb.Reason + "|" + gb.UserFrame + "|" + gb.Function
		i, ok := idx[key]
		if !ok {
			idx[key] = len(out)
			out = append(out, gb)
			continue
		}
		o := &out[i]
		o.Count += gb.Count
		for _, id := range gb.CompileIDs {
			o.CompileIDs = appendNew(o.CompileIDs, id)
		}
		for _, r := range gb.Ranks {
			o.Ranks = appendInt(o.Ranks, r)
		}
	}
	for i := range out {
		sort.Ints(out[i].Ranks)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	return out
}

func appendInt(list []int, n int) []int {
	for _, x := range list {
		if x == n {
			return list
		}
	}
	return append(list, n)
}

func recompiles(res *Result) {
	for _, c := range res.Compiles {
		if len(c.RecompileReasons) == 0 {
			continue
		}
		frame := ""
		if c.Frame.Func != "" || c.Frame.File != "" {
			frame = c.Frame.String()
		}
		line := c.Line
		res.Recompiles = append(res.Recompiles, Recompile{
			Rank: c.Rank, CompileID: c.ID, Occurrence: c.Occurrence, Frame: frame, Reasons: c.RecompileReasons,
			Evidence: record.Evidence{Path: c.Path, Line: line, Rank: rankText(c.Rank), Text: firstLine(c.RecompileReasons[0])},
		})
	}
}

// frames counts compiles per Dynamo frame and checks the recompile limit.
func frames(res *Result, files []*fileAnalysis) {
	type key struct {
		path  string
		rank  int
		pid   int
		frame int
	}
	limits := map[string]int{}
	hits := map[string]map[string]string{}
	for _, f := range files {
		limits[f.in.Path] = f.limit
		hits[f.in.Path] = f.limitHit
	}
	idx := map[key]int{}
	compileIDs := map[key]map[int]bool{}
	for _, c := range res.Compiles {
		if c.FrameID == nil || c.AutogradID != nil {
			continue
		}
		k := key{c.Path, c.Rank, c.PID, *c.FrameID}
		i, ok := idx[k]
		if !ok {
			i = len(res.Frames)
			idx[k] = i
			compileIDs[k] = map[int]bool{}
			res.Frames = append(res.Frames, FrameSummary{Rank: c.Rank, PID: c.PID, Path: c.Path, FrameID: *c.FrameID,
				Limit: limits[c.Path], Evidence: record.Evidence{Path: c.Path, Line: c.Line, Rank: rankText(c.Rank)}})
		}
		fs := &res.Frames[i]
		if fs.Name == "" && c.Frame.Func != "" {
			fs.Name, fs.File, fs.Line = c.Frame.Func, c.Frame.File, c.Frame.Line
		}
		if c.FrameCompileID != nil {
			compileIDs[k][*c.FrameCompileID] = true
		}
		fs.Compiles = len(compileIDs[k])
		if why, ok := hits[c.Path][c.ID]; ok {
			fs.LimitHit = true
			fs.Evidence = record.Evidence{Path: c.Path, Line: c.Line, Rank: rankText(c.Rank), Text: firstLine(why)}
		}
	}
	for i := range res.Frames {
		fs := &res.Frames[i]
		if fs.Limit > 0 && fs.Compiles >= fs.Limit && !fs.LimitHit {
			fs.LimitHit = true
			fs.Evidence.Text = fmt.Sprintf("%d compiles of %s reached the recompile limit (%d)", fs.Compiles, fs.Name, fs.Limit)
		}
	}
}

func cacheStats(res *Result) {
	for _, ce := range res.Cache {
		s := res.CacheStats[ce.Kind]
		switch ce.Outcome {
		case OutcomeHit:
			s.Hit++
		case OutcomeMiss:
			s.Miss++
		case OutcomeBypass:
			s.Bypass++
		}
		res.CacheStats[ce.Kind] = s
	}
}

// explainMisses compares each miss with the closest hit of the same graph
// (same cache kind and compile id, or the same graph hash) elsewhere: in
// another rank or input, or an earlier occurrence in the same file. Hits
// are indexed by graph, and only the most recent few per graph are
// compared, so this stays linear on huge traces.
func explainMisses(res *Result) {
	const perKey = 8
	type hit struct {
		i    int
		comp map[string]string
	}
	// A file shares one Components slice between lookups with the same
	// list, so the maps and the differences are computed once per distinct
	// list (per pair of lists) instead of once per lookup: a huge trace of
	// repeated compiles has thousands of lookups and a handful of lists.
	maps := map[*string]map[string]string{}
	compOf := func(list []string) map[string]string {
		m, ok := maps[&list[0]]
		if !ok {
			m = compMap(list)
			maps[&list[0]] = m
		}
		return m
	}
	diffs := map[[2]*string][]string{}
	byKey := map[string][]hit{}
	add := func(k string, h hit) {
		l := byKey[k]
		for _, x := range l {
			if x.i == h.i {
				return
			}
		}
		if len(l) == perKey {
			l = l[1:]
		}
		byKey[k] = append(l, h)
	}
	for i, ce := range res.Cache {
		if ce.Outcome != OutcomeHit || len(ce.Components) == 0 {
			continue
		}
		h := hit{i, compOf(ce.Components)}
		add(ce.Kind+"|id|"+ce.CompileID, h)
		if g := graphHash(h.comp); g != "" {
			add(ce.Kind+"|gm|"+g, h)
		}
	}
	if len(byKey) == 0 {
		return
	}
	var cands []hit
	for i := range res.Cache {
		m := &res.Cache[i]
		if m.Outcome != OutcomeMiss || len(m.Components) == 0 {
			continue
		}
		mc := compOf(m.Components)
		cands = append(cands[:0], byKey[m.Kind+"|id|"+m.CompileID]...)
		if g := graphHash(mc); g != "" {
			cands = append(cands, byKey[m.Kind+"|gm|"+g]...)
		}
		best, bestDiff := -1, []string(nil)
		for _, h := range cands {
			hc := &res.Cache[h.i]
			if hc.Path == m.Path && hc.Rank == m.Rank && hc.Line == m.Line {
				continue
			}
			k := [2]*string{&m.Components[0], &hc.Components[0]}
			d, ok := diffs[k]
			if !ok {
				d = diffComponents(mc, h.comp)
				diffs[k] = d
			}
			if best < 0 || len(d) < len(bestDiff) {
				best, bestDiff = h.i, d
			}
		}
		if best < 0 {
			continue
		}
		hc := res.Cache[best]
		m.Differs = &CacheDiff{Rank: hc.Rank, Path: hc.Path, Line: hc.Line, CompileID: hc.CompileID, Occurrence: hc.Occurrence,
			Components: bestDiff, SameKey: m.Key != "" && m.Key == hc.Key}
		if m.Differs.Components == nil {
			m.Differs.Components = []string{}
		}
	}
}

func compMap(list []string) map[string]string {
	m := make(map[string]string, len(list))
	for _, c := range list {
		if i := strings.LastIndexByte(c, '='); i > 0 {
			m[c[:i]] = c[i+1:]
		}
	}
	return m
}

// graphHash is the hash of the graph component itself ("gm" for the FX
// graph cache), which names the graph across runs.
func graphHash(m map[string]string) string { return m["gm"] }

func diffComponents(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func rankSummaries(res *Result) {
	byLabel := map[string]int{}
	runOf := map[string]string{}
	rankKey := func(run string, rank int) string {
		if run != "" {
			return run + " rank " + strconv.Itoa(rank)
		}
		return "rank " + strconv.Itoa(rank)
	}
	for _, in := range res.Inputs {
		runOf[in.Path] = in.Run
		key := in.Label
		if in.Rank >= 0 {
			key = rankKey(in.Run, in.Rank)
		}
		i, ok := byLabel[key]
		if !ok {
			i = len(res.Ranks)
			byLabel[key] = i
			res.Ranks = append(res.Ranks, RankSummary{Rank: in.Rank, Label: key, Run: in.Run, Paths: []string{}, PIDs: []int{}})
		}
		rs := &res.Ranks[i]
		rs.Paths = append(rs.Paths, in.Path)
		if st := res.Counts[in.Path]; st != nil {
			for _, p := range st.PIDs {
				rs.PIDs = appendInt(rs.PIDs, p)
			}
			if rs.FirstTime == "" {
				rs.FirstTime = st.FirstTime
			}
			if st.LastTime != "" {
				rs.LastTime = st.LastTime
			}
		}
	}
	find := func(path string, rank int) *RankSummary {
		for i := range res.Ranks {
			rs := &res.Ranks[i]
			for _, p := range rs.Paths {
				if p == path && (rank == rs.Rank || rs.Rank < 0 || rank < 0) {
					return rs
				}
			}
		}
		// Another rank interleaved into a file: give it its own summary.
		key := rankKey(runOf[path], rank)
		if i, ok := byLabel[key]; ok {
			return &res.Ranks[i]
		}
		byLabel[key] = len(res.Ranks)
		res.Ranks = append(res.Ranks, RankSummary{Rank: rank, Label: key, Run: runOf[path], Paths: []string{path}, PIDs: []int{}})
		return &res.Ranks[len(res.Ranks)-1]
	}
	for _, c := range res.Compiles {
		rs := find(c.Path, c.Rank)
		rs.Compiles++
		rs.CompileSeconds += c.Seconds.Total
		rs.GraphBreaks += c.GraphBreaks
		switch c.Status {
		case StatusFailed:
			rs.Failed++
		case StatusRestarted:
			rs.Restarted++
		case StatusRunning:
			rs.Unfinished++
		}
		if len(c.RecompileReasons) > 0 {
			rs.Recompiles++
		}
	}
	for _, ce := range res.Cache {
		rs := find(ce.Path, ce.Rank)
		switch ce.Outcome {
		case OutcomeHit:
			rs.CacheHits++
		case OutcomeMiss:
			rs.CacheMisses++
		case OutcomeBypass:
			rs.CacheBypasses++
		}
	}
	for _, p := range res.OpenSpans {
		find(p.Path, p.Rank).OpenSpans++
	}
}

// base is a short name for a path in messages.
func base(p string) string { return filepath.Base(p) }

// capArtifacts keeps the merged artifact references within MaxArtifacts
// (many files at their own caps can exceed it) and drops indexes past it.
func capArtifacts(res *Result) {
	if len(res.Artifacts) <= MaxArtifacts {
		return
	}
	res.ArtifactsDropped += len(res.Artifacts) - MaxArtifacts
	res.Artifacts = res.Artifacts[:MaxArtifacts]
	for i := range res.Compiles {
		c := &res.Compiles[i]
		kept := c.Artifacts[:0]
		for _, a := range c.Artifacts {
			if a < MaxArtifacts {
				kept = append(kept, a)
			}
		}
		c.Artifacts = kept
	}
	for i := range res.GraphBreaks {
		if res.GraphBreaks[i].Artifact >= MaxArtifacts {
			res.GraphBreaks[i].Artifact = -1
		}
	}
}

// needsMeta are the event kinds whose metadata the analysis reads; other
// events cross the pipeline without it.
var needsMeta = map[string]bool{
	"str": true, "dynamo_start": true, "compilation_metrics": true, "link": true, "artifact": true,
	"missing_fake_kernel": true, "mismatched_fake_kernel": true,
	ShapeCreateSymbol: true, ShapeCreateUnbacked: true, ShapeSpecialization: true,
	ShapeGuardAdded: true, ShapeGuardAddedFast: true, ShapeRealTensors: true,
}

// scanPipelined reads a file on three goroutines, in batches: the scanner
// (line splitting, envelope JSON), the MD5 check of the payloads (a fifth of
// the work, left to its own stage with Scanner.DeferMD5), and the analysis
// (this one). The metadata the analysis reads, the kept payload bodies and
// the bytes to hash alias the scanner's buffers; they are copied into the
// batch's arena. The analysis copies whatever it keeps, so once a batch is
// analysed its arena and event slice are reused: the copies cost neither
// allocations nor GC cycles (they are most of the payload bytes). A batch
// closes at 512 events or 1 MiB of copied bytes, which bounds what is in
// flight.
func scanPipelined(sc *torchtrace.Scanner, fa *fileAnalysis, verified *torchtrace.Verified) {
	sc.BorrowBody = true
	sc.DeferMD5 = true
	scanned := make(chan *evBatch, 2)
	checked := make(chan *evBatch, 2)
	free := make(chan *evBatch, 8)
	get := func() *evBatch {
		select {
		case b := <-free:
			return b
		default:
			return &evBatch{evs: make([]torchtrace.Event, 0, batchEvents), arena: make([]byte, 0, arenaSize)}
		}
	}
	go func() {
		defer close(scanned)
		b := get()
		for sc.Next() {
			ev := *sc.Event()
			if !needsMeta[ev.Kind] {
				ev.Meta = nil
			}
			if !b.fits(&ev) || len(b.evs) == batchEvents {
				scanned <- b
				b = get()
			}
			// A kept body that is not truncated is the hash input, byte
			// for byte (the scanner appends the same pieces to both):
			// one copy serves both.
			same := ev.HashInput != nil && ev.Body != nil && !ev.BodyTruncated && len(ev.Body) == len(ev.HashInput)
			ev.Meta = b.copy(ev.Meta)
			ev.Body = b.copy(ev.Body)
			if same {
				ev.HashInput = ev.Body
			} else {
				ev.HashInput = b.copy(ev.HashInput)
			}
			b.evs = append(b.evs, ev)
		}
		if len(b.evs) > 0 {
			scanned <- b
		}
	}()
	var mismatch []int // lines of deferred payloads whose MD5 did not match
	go func() {
		defer close(checked)
		for b := range scanned {
			for i := range b.evs {
				if ev := &b.evs[i]; ev.MD5Deferred {
					ev.MD5OK = verified.CheckMD5(ev)
					if !ev.MD5OK {
						mismatch = append(mismatch, ev.Line)
					}
					ev.HashInput = nil
				}
			}
			checked <- b
		}
	}()
	for b := range checked {
		for i := range b.evs {
			fa.add(&b.evs[i])
		}
		clear(b.evs)
		b.evs, b.arena, b.total = b.evs[:0], b.arena[:0], 0
		select {
		case free <- b:
		default:
		}
	}
	// Both goroutines are done: the stats are the scanner's alone again.
	st := sc.Stats()
	for _, line := range mismatch {
		st.AddMD5Mismatch(line)
	}
}

const (
	batchEvents = 512
	arenaSize   = 1 << 20
	// ownAlloc: a copy larger than this gets its own allocation (not
	// reused) instead of a place in the arena.
	ownAlloc = arenaSize / 4
)

// evBatch is a batch of events and the arena holding their copied bytes.
type evBatch struct {
	evs   []torchtrace.Event
	arena []byte
	total int // bytes copied, in the arena or not
}

// fits says whether ev's bytes fit in the batch: in all, arena and own
// allocations together, a batch holds at most arenaSize bytes (or one
// event), so what is in flight stays bounded whatever the payload sizes.
// An empty batch takes any event: the arena part of one event is at most
// 3*ownAlloc < arenaSize.
func (b *evBatch) fits(ev *torchtrace.Event) bool {
	return len(b.evs) == 0 || b.total+len(ev.Meta)+len(ev.Body)+len(ev.HashInput) <= arenaSize
}

// copy returns a copy of x in the arena (nil stays nil, so "no body" is
// still nil); fits must have been checked for the event.
func (b *evBatch) copy(x []byte) []byte {
	if x == nil {
		return nil
	}
	b.total += len(x)
	if len(x) > ownAlloc {
		return append(make([]byte, 0, len(x)), x...)
	}
	n := len(b.arena)
	b.arena = append(b.arena, x...)
	return b.arena[n:len(b.arena):len(b.arena)]
}

// phaseOccurrences gives each phase the occurrence of its unit when an
// input compiled the same id more than once. Phases carry no occurrence:
// the phases of one id, in log order, start a new occurrence at each
// outermost (depth 0) phase once the current occurrence already has one.
func phaseOccurrences(res *Result) {
	type k struct {
		path string
		pid  int
		id   string
	}
	count := map[k]int{}
	for _, c := range res.Compiles {
		if c.Occurrence > 0 {
			kk := k{c.Path, c.PID, c.ID}
			count[kk] = max(count[kk], c.Occurrence+1)
		}
	}
	if len(count) == 0 {
		return
	}
	var list []*Span
	for _, ps := range [][]Span{res.Spans, res.OpenSpans} {
		for i := range ps {
			if count[k{ps[i].Path, ps[i].PID, unitOf(ps[i].CompileID)}] > 1 {
				list = append(list, &ps[i])
			}
		}
	}
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].Path != list[j].Path {
			return list[i].Path < list[j].Path
		}
		return list[i].Line < list[j].Line
	})
	type cursor struct{ occ, outer int }
	cur := map[k]*cursor{}
	for _, p := range list {
		kk := k{p.Path, p.PID, unitOf(p.CompileID)}
		c := cur[kk]
		if c == nil {
			c = &cursor{}
			cur[kk] = c
		}
		if p.Depth == 0 {
			if c.outer > 0 && c.occ+1 < count[kk] {
				c.occ, c.outer = c.occ+1, 0
			}
			c.outer++
		}
		p.Occurrence = c.occ
	}
}
