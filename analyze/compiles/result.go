// Package compiles turns TORCH_TRACE events into compile units, graph
// breaks, recompiles, cache outcomes, compile phases and cross-rank
// divergence. Its Result is the whole analysis of one set of trace files;
// the JSON encoding of a Result is the bringup.trace/v1 document.
//
// A Result never holds a payload: artifacts worth showing are kept as
// references (torchtrace.PayloadRef) that renderers fetch one at a time with
// torchtrace.ReadPayload, so memory stays bounded whatever the input size.
package compiles

import (
	"encoding/json"
	"sort"

	"github.com/bringup-tool/bringup/ingest/torchtrace"
	"github.com/bringup-tool/bringup/record"
)

// Schema is the value of Result.Schema.
const Schema = "bringup.trace/v1"

// Result is the analysis of one or more trace files (ranks). Slices are
// never nil in a finished Result, so the JSON always carries every key.
type Result struct {
	Schema string `json:"schema"`
	// Inputs are the trace files read, in rank order (rank -1, unknown, last).
	Inputs []Input `json:"inputs"`
	// Ignored are files found in a directory argument that are not traces.
	Ignored     []Ignored     `json:"ignored"`
	Ranks       []RankSummary `json:"ranks"`
	Compiles    []Compile     `json:"compiles"`
	GraphBreaks []GraphBreak  `json:"graph_breaks"`
	Recompiles  []Recompile   `json:"recompiles"`
	// Frames summarises compiles per Dynamo frame (code object), with the
	// recompile limit in force and whether it was reached.
	Frames []FrameSummary `json:"frames"`
	Cache  []CacheEvent   `json:"cache"`
	// CacheStats counts outcomes per cache kind over all inputs.
	CacheStats map[string]CacheStat `json:"cache_stats"`
	// OpenSpans are chromium B events never closed by an E: what was
	// running when the log stopped.
	OpenSpans []Span `json:"open_phases"`
	// Phases are the closed phases (B/E pairs and X events), in start order
	// per input; capped at MaxSpans, with SpansDropped counting the rest.
	Spans        []Span `json:"phases"`
	SpansDropped int    `json:"phases_dropped"`
	// Collectives are the inductor_collective_schedule lists per graph.
	Collectives []CollectiveSchedule `json:"collectives"`
	// Runtimes are Inductor's per-graph runtime estimates and tensor-meta
	// fingerprints (inductor_runtime_and_tensor_meta), per input.
	Runtimes []GraphRuntime `json:"runtimes"`
	// RuntimeDeltas compare the estimates of each graph across inputs, when
	// every input compiled the same number of graphs; RuntimeNote says why
	// not otherwise.
	RuntimeDeltas []RuntimeDelta `json:"runtime_deltas"`
	RuntimeNote   string         `json:"runtime_note,omitempty"`
	// CollectiveParity lists graphs whose generated code disagrees with
	// Inductor's collective schedule (tlparse's collectives_parity.json):
	// collectives called a different number of times, or waits missing.
	CollectiveParity []ParityIssue `json:"collective_parity"`
	// ExecutionOrders are the last graph_execution order logged per input.
	ExecutionOrders []ExecutionOrder `json:"execution_orders"`
	Divergence      []Divergence     `json:"divergence"`
	// Artifacts are references to payloads worth showing (graphs, code,
	// guards, metrics, cache details, graph-break texts …); capped at
	// MaxArtifacts, with ArtifactsDropped counting the rest.
	Artifacts        []Artifact `json:"artifacts"`
	ArtifactsDropped int        `json:"artifacts_dropped"`
	// Links are the `link` events (name, url) per compile.
	Links []Link `json:"links"`
	// Shapes are the symbolic-shape events (symbols created, sizes
	// specialised, guards added), capped at MaxShapes (ShapesDropped).
	Shapes        []ShapeEvent `json:"shapes"`
	ShapesDropped int          `json:"shapes_dropped"`
	// Exports are what torch.export logged, per input that exported.
	Exports []ExportReport `json:"exports"`
	// Provenance maps generated kernels to FX nodes, per graph that logged
	// Inductor provenance tracking.
	Provenance []Provenance `json:"provenance"`
	// Versions are what the trace tells about the software (torch_version
	// artifact, compilation_metrics python/triton/cuda versions).
	Versions map[string]string `json:"versions"`
	// Findings are the rules that matched Subjects(res), most important
	// first (filled by Conclude's caller; empty when no rules were applied).
	Findings []record.Finding `json:"findings"`
	// Counts are the parser's counts keyed by input path.
	Counts map[string]*torchtrace.Stats `json:"counts"`
}

// Caps that keep a Result bounded on any input size.
const (
	MaxSpans     = 100_000
	MaxArtifacts = 100_000
)

// Input is one trace file that was read.
type Input struct {
	Path string `json:"path"`
	// Rank is the rank the file stands for: from its name
	// (dedicated_log_torch_trace_rank_N…), else the first envelope rank,
	// else -1.
	Rank     int    `json:"rank"`
	RankFrom string `json:"rank_from"` // "file_name" | "envelope" | "none"
	Bytes    int64  `json:"bytes"`
	// Label names the input in reports: "rank 3", or the file name; with
	// several runs, "<run> rank 3".
	Label string `json:"label"`
	// Run names the run the input belongs to when the inputs hold several
	// (a folder of unrelated TORCH_TRACE runs); "" when they are one run.
	Run string `json:"run,omitempty"`
	// group is where Discover found the input (a directory argument's
	// folder; "" for a file named on the command line), groupName that
	// folder as runs are named.
	group, groupName string
}

// Ignored is a file in a directory argument that was not read as a trace.
type Ignored struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// RankSummary is the per-rank roll-up.
type RankSummary struct {
	Rank  int    `json:"rank"`
	Label string `json:"label"`
	// Run is the run of the rank's inputs, when there are several runs.
	Run            string   `json:"run,omitempty"`
	Paths          []string `json:"paths"`
	Compiles       int      `json:"compiles"`
	Failed         int      `json:"failed"`
	Restarted      int      `json:"restarted"`
	Unfinished     int      `json:"unfinished"`
	GraphBreaks    int      `json:"graph_breaks"`
	Recompiles     int      `json:"recompiles"`
	CacheHits      int      `json:"cache_hits"`
	CacheMisses    int      `json:"cache_misses"`
	CacheBypasses  int      `json:"cache_bypasses"`
	OpenSpans      int      `json:"open_phases"`
	CompileSeconds float64  `json:"compile_seconds"`
	PIDs           []int    `json:"pids"`
	FirstTime      string   `json:"first_time,omitempty"`
	LastTime       string   `json:"last_time,omitempty"`
}

// Compile statuses.
const (
	StatusOK        = "ok"         // compilation_metrics without failure or restart
	StatusFailed    = "failed"     // compilation_metrics with a fail_type
	StatusRestarted = "restarted"  // finished after one or more restarts (graph breaks)
	StatusEmpty     = "empty"      // finished, but the graph had no ops
	StatusRunning   = "running"    // no metrics and a phase of it still open at the end
	StatusNoMetrics = "no_metrics" // no compilation_metrics record (never finished, or not logged)
)

// Compile is one compile unit: one [frame/compile] (all its attempts), or
// a compiled-autograd graph, on one input.
type Compile struct {
	Rank int `json:"rank"`
	// PID is the process that compiled it: one file may hold several
	// (forked workers before pytorch#184772), each with its own ids.
	PID  int    `json:"pid"`
	Path string `json:"path"`
	// ID is "frame/compile", "!ca/frame/compile" under compiled autograd.
	ID string `json:"id"`
	// Occurrence counts earlier compiles with the same id on the same input
	// (torch._dynamo.reset(), or several runs in one file); 0 for the first.
	Occurrence     int    `json:"occurrence,omitempty"`
	FrameID        *int   `json:"frame_id,omitempty"`
	FrameCompileID *int   `json:"frame_compile_id,omitempty"`
	AutogradID     *int   `json:"compiled_autograd_id,omitempty"`
	Attempts       int    `json:"attempts"`
	Status         string `json:"status"`
	FailType       string `json:"fail_type"`
	FailReason     string `json:"fail_reason"`
	FailUserFrame  string `json:"fail_user_frame,omitempty"` // file:line
	// FailChain is the exception chain in the reason, innermost first
	// (FailChain); FailPhase the component that raised: dynamo, backend,
	// aot-autograd or inductor.
	FailChain []string `json:"fail_chain,omitempty"`
	FailPhase string   `json:"fail_phase,omitempty"`
	// FellBack: the compile failed softly and Dynamo ran the frame eagerly
	// (the run went on): the unit's graph-break record says it skipped the
	// frame, or the frame reached its recompile limit (fellBack).
	FellBack bool `json:"fell_back,omitempty"`
	// UserCode is the best user frame the trace has for this unit,
	// "fn (file:line)": the failing line of a failure, else the function
	// compiled, else the innermost dynamo_start frame.
	UserCode       string   `json:"user_code,omitempty"`
	GraphBreaks    int      `json:"graph_breaks"`
	RestartReasons []string `json:"restart_reasons"`
	// RecompileReasons say why this compile happened after an earlier one
	// of the same frame (recompile_reasons artifact, metrics recompile_reason).
	RecompileReasons []string `json:"recompile_reasons,omitempty"`
	Seconds          Seconds  `json:"seconds"`
	// PhaseSeconds is the self time of each chromium phase of this compile
	// (B/E pairs and X events, by name, nested phases subtracted, so the
	// values add up to the outermost phase), e.g. {"async_compile.wait": 3.0}.
	PhaseSeconds PhaseTimes `json:"phase_seconds,omitempty"`
	// Frame is the user frame being compiled: co_name/co_filename/
	// co_firstlineno from the metrics, else the innermost dynamo_start frame.
	Frame record.Frame `json:"frame"`
	// Stack is the dynamo_start stack, innermost first (interned file names
	// resolved), capped at 64 frames.
	Stack      record.Stack `json:"stack,omitempty"`
	CacheSize  *int         `json:"cache_size,omitempty"`
	GraphOps   *int         `json:"graph_op_count,omitempty"`
	GuardCount *int         `json:"guard_count,omitempty"`
	// Line is the envelope line of the first event of this compile.
	Line int `json:"line"`
	// MetricsLine is the line of its compilation_metrics (0 when none).
	MetricsLine int `json:"metrics_line,omitempty"`
	// DynamoError is a reference to the dynamo_error traceback, if logged.
	DynamoError *torchtrace.PayloadRef `json:"dynamo_error,omitempty"`
	// Artifacts index Result.Artifacts: this compile's payloads in log order.
	Artifacts []int `json:"artifacts"`
	// Cache indexes Result.Cache.
	Cache []int `json:"cache"`
}

// PhaseTimes are a compile's phase self times by name: in JSON an object
// {"name": seconds}, keys sorted, as a map prints. A slice, not a map: a
// huge trace holds one per compile unit, and a map of a dozen phases took
// 630 bytes, the slice 24 per phase.
type PhaseTimes []PhaseTime

// PhaseTime is the self time of one phase name.
type PhaseTime struct {
	Name    string
	Seconds float64
}

// Get returns the seconds of a phase name (0 when absent).
func (p PhaseTimes) Get(name string) float64 {
	for _, x := range p {
		if x.Name == name {
			return x.Seconds
		}
	}
	return 0
}

// add adds seconds to a name; like adding to a map that stops taking
// writes at 256 names.
func (p *PhaseTimes) add(name string, s float64) {
	if len(*p) >= 256 {
		return
	}
	for i := range *p {
		if (*p)[i].Name == name {
			(*p)[i].Seconds += s
			return
		}
	}
	*p = append(*p, PhaseTime{name, s})
}

// MarshalJSON prints the times as the map[string]float64 they stand for.
func (p PhaseTimes) MarshalJSON() ([]byte, error) {
	m := make(map[string]float64, len(p))
	for _, x := range p {
		m[x.Name] = x.Seconds
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the object MarshalJSON writes, names sorted.
func (p *PhaseTimes) UnmarshalJSON(b []byte) error {
	var m map[string]float64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*p = (*p)[:0]
	for k, v := range m {
		*p = append(*p, PhaseTime{k, v})
	}
	sort.Slice(*p, func(i, j int) bool { return (*p)[i].Name < (*p)[j].Name })
	return nil
}

// Seconds is the time breakdown from compilation_metrics: the older *_s
// fields and the newer *_us fields, normalised to seconds. Zero = not logged.
type Seconds struct {
	Total         float64 `json:"total"` // entire frame: duration_us or entire_frame_compile_time_s
	Dynamo        float64 `json:"dynamo,omitempty"`
	AOTAutograd   float64 `json:"aot_autograd,omitempty"`
	Backend       float64 `json:"backend,omitempty"`
	Inductor      float64 `json:"inductor,omitempty"`
	CodeGen       float64 `json:"code_gen,omitempty"`
	Triton        float64 `json:"triton,omitempty"`
	Autotune      float64 `json:"autotune,omitempty"`
	BeforeRestart float64 `json:"before_restart,omitempty"`
	PreGrad       float64 `json:"pre_grad,omitempty"`
	PostGrad      float64 `json:"post_grad,omitempty"`
	JointGraph    float64 `json:"joint_graph,omitempty"`
	Cudagraphify  float64 `json:"cudagraphify,omitempty"`
	GC            float64 `json:"gc,omitempty"`
	// Source is "us" when the microsecond fields were present, "s" for the
	// older seconds fields, "" when no metrics.
	Source string `json:"source,omitempty"`
}

// GraphBreak is one distinct graph break: same reason at the same user
// frame, counted over every compile and rank it occurred in.
type GraphBreak struct {
	Reason    string `json:"reason"`
	UserFrame string `json:"user_frame"` // "file:line" ("" when unknown)
	// GBID is the graph-break registry id ("GB0124") when the text has one,
	// and URL its page.
	GBID   string `json:"gb_id,omitempty"`
	GBType string `json:"gb_type,omitempty"`
	URL    string `json:"url,omitempty"`
	Count  int    `json:"count"`
	// CompileIDs are the units it occurred in, as Refs ("1/0", "1/0#2").
	CompileIDs []string `json:"compile_ids"`
	Ranks      []int    `json:"ranks"`
	// Source is where it was read: "dynamo_graph_break_reason" (artifact)
	// or "restart_reasons" (compilation_metrics).
	Source string `json:"source"`
	// Function is the compiled function, "co_name (file:line)", when the
	// break comes from restart_reasons (which carry no user frame).
	Function string `json:"function,omitempty"`
	// UserCode is the user frame as reports show it, "fn (file:line)": the
	// break's own line with its function when the text names one, else
	// the compiled function.
	UserCode string          `json:"user_code,omitempty"`
	Evidence record.Evidence `json:"evidence"`
	// Artifact indexes Result.Artifacts (the first full text), -1 if none.
	Artifact int `json:"artifact"`
}

// Recompile is one recompile of a frame with its reasons.
type Recompile struct {
	Rank      int    `json:"rank"`
	CompileID string `json:"compile_id"`
	// Occurrence is the unit's (Compile.Occurrence): which compile of a
	// repeated id this is.
	Occurrence int             `json:"occurrence,omitempty"`
	Frame      string          `json:"frame"` // co_name (file:line) when known
	Reasons    []string        `json:"reasons"`
	Evidence   record.Evidence `json:"evidence"`
}

// FrameSummary is one Dynamo frame (frame_id) on one input: how many
// compiles it took and the recompile limit in force.
type FrameSummary struct {
	Rank     int    `json:"rank"`
	PID      int    `json:"pid"`
	Path     string `json:"path"`
	FrameID  int    `json:"frame_id"`
	Name     string `json:"name"` // co_name
	File     string `json:"file"`
	Line     int    `json:"line"`
	Compiles int    `json:"compiles"`
	// Limit is dynamo_config recompile_limit / cache_size_limit as logged
	// (0 when the config was not logged).
	Limit int `json:"limit"`
	// LimitHit: compiles reached the limit, or a reason/failure says so;
	// later calls of this frame run eagerly (silently, unless fullgraph).
	LimitHit bool            `json:"limit_hit"`
	Evidence record.Evidence `json:"evidence"`
}

// Cache kinds and outcomes.
const (
	CacheFXGraph     = "fx_graph"
	CacheAOTAutograd = "aotautograd"
	OutcomeHit       = "hit"
	OutcomeMiss      = "miss"
	OutcomeBypass    = "bypass"
)

// CacheEvent is one cache lookup of one graph.
type CacheEvent struct {
	Rank      int    `json:"rank"`
	Path      string `json:"path"`
	Line      int    `json:"line"`
	CompileID string `json:"compile_id"`
	// Occurrence is the unit's (Compile.Occurrence).
	Occurrence int    `json:"occurrence,omitempty"`
	Kind       string `json:"kind"`    // fx_graph | aotautograd
	Outcome    string `json:"outcome"` // hit | miss | bypass
	// FromHash says the outcome is the cache_state of an older
	// *_cache_hash artifact, not the name of a *_cache_hit/miss/bypass one
	// (tlparse counts only the latter).
	FromHash bool `json:"from_hash,omitempty"`
	// Reason is the bypass reason, or the detailed status when it says more
	// than the outcome.
	Reason      string  `json:"reason"`
	Key         string  `json:"key,omitempty"`
	TimeSavedMs float64 `json:"time_saved_ms,omitempty"`
	// Components are "name=hash" of the hashed inputs (values dropped).
	Components []string `json:"-"`
	// Differs explains a miss by the nearest hit of the same graph in
	// another rank or run: which hash components differ.
	Differs *CacheDiff `json:"differs,omitempty"`
}

// CacheDiff names the other lookup a miss was compared with.
type CacheDiff struct {
	Rank      int    `json:"rank"`
	Path      string `json:"path"`
	Line      int    `json:"line"`
	CompileID string `json:"compile_id"`
	// Occurrence is the other lookup's (CacheEntry.Occurrence): which
	// compile of CompileID on its input it belongs to.
	Occurrence int      `json:"occurrence,omitempty"`
	Components []string `json:"components"` // names whose hash differs (or exist on one side only)
	// SameKey: both lookups computed the same key, so nothing in the inputs
	// changed; the entry was absent (cache cleared, other cache directory,
	// or not written yet).
	SameKey bool `json:"same_key,omitempty"`
}

// CacheStat counts outcomes of one cache kind.
type CacheStat struct {
	Hit    int `json:"hit"`
	Miss   int `json:"miss"`
	Bypass int `json:"bypass"`
}

// Span is one chromium event span of a TORCH_TRACE (what bringup.trace/v1
// calls a phase): one process, in microseconds since the epoch (StartUs,
// DurUs), nested (Depth) and tied to a compile id. It is the evidence of
// a startup phase, not one: the startup phase of a rank is record.Phase
// (seconds, wall-clock start and end, a status), and PhaseOf names the
// startup phase a span's name belongs to.
type Span struct {
	Rank      int    `json:"rank"`
	Path      string `json:"path"`
	PID       int    `json:"pid"`
	Name      string `json:"name"`
	CompileID string `json:"compile_id,omitempty"`
	// Occurrence is the unit's (Compile.Occurrence) when the log repeats
	// the id: the phases of one id, in log order, start a new occurrence at
	// each outermost phase once the current one already has one.
	Occurrence int     `json:"occurrence,omitempty"`
	Category   string  `json:"cat,omitempty"`
	StartUs    float64 `json:"start_us"` // chromium ts (µs since the epoch)
	DurUs      float64 `json:"dur_us"`   // for an open phase: until the last event of its input
	Depth      int     `json:"depth"`    // nesting depth in its process (0 = outermost)
	Line       int     `json:"line"`     // envelope line of the B (or X) event
	// Innermost marks, among open phases, the deepest one of its process:
	// the phase that was running when the log stopped.
	Innermost bool `json:"innermost,omitempty"`
	// Uncertain marks an open phase whose process later logged a chromium
	// event that could not be read (bad JSON, MD5 mismatch): its E may be
	// that event, so it is reported but not concluded on.
	Uncertain bool `json:"uncertain,omitempty"`
}

// CollectiveSchedule is the collective ops Inductor scheduled in one graph.
type CollectiveSchedule struct {
	Rank      int      `json:"rank"`
	Path      string   `json:"path"`
	CompileID string   `json:"compile_id"`
	Ops       []string `json:"ops"`
}

// ParityIssue is one graph whose output code and collective schedule
// disagree.
type ParityIssue struct {
	Rank      int    `json:"rank"`
	Path      string `json:"path"`
	CompileID string `json:"compile_id"`
	// Offset sums, over collective ops (waits excluded), the difference
	// between calls in the code and entries in the schedule.
	Offset int `json:"offset"`
	// MissingWaits is collectives called minus wait_tensor calls.
	MissingWaits int            `json:"missing_waits"`
	CodeOps      map[string]int `json:"code_ops"`
	ScheduleOps  map[string]int `json:"schedule_ops"`
	Line         int            `json:"line"` // of the output code envelope
}

// GraphRuntime is Inductor's estimate for one compiled graph.
type GraphRuntime struct {
	Rank        int     `json:"rank"`
	Path        string  `json:"path"`
	CompileID   string  `json:"compile_id"`
	Ops         int     `json:"ops"`
	EstimatedMs float64 `json:"estimated_ms"`
	// TensorMeta fingerprints the ops and their output shapes, strides and
	// dtypes (runtimes left out).
	TensorMeta string `json:"tensor_meta"`
}

// RuntimeDelta is the spread of one graph's estimated runtime over inputs.
type RuntimeDelta struct {
	Run       string  `json:"run,omitempty"`
	Graph     int     `json:"graph"` // position in each input's compile order
	CompileID string  `json:"compile_id"`
	DeltaMs   float64 `json:"delta_ms"`
	Fastest   string  `json:"fastest"` // input label
	FastestMs float64 `json:"fastest_ms"`
	Slowest   string  `json:"slowest"`
	SlowestMs float64 `json:"slowest_ms"`
}

// ExecutionOrder is the graph execution order an input last logged.
type ExecutionOrder struct {
	Rank  int      `json:"rank"`
	Path  string   `json:"path"`
	Order []string `json:"order"` // compile ids
}

// Divergence kinds.
const (
	DivCompileIDs    = "compile_ids"
	DivGraphCount    = "graph_count"
	DivCache         = "cache_pattern"
	DivCollectives   = "collective_schedule"
	DivExecOrder     = "execution_order"
	DivMissingRank   = "missing_rank"
	DivEmptyRank     = "empty_rank"
	DivCompileStatus = "compile_status"
	DivTensorMeta    = "tensor_meta"
)

// Divergence is one way the ranks disagree, with the groups of ranks that
// agree with each other.
type Divergence struct {
	Kind string `json:"kind"`
	// Run is the run whose ranks disagree, when the inputs hold several
	// runs (runs are never compared with each other).
	Run     string     `json:"run,omitempty"`
	Summary string     `json:"summary"`
	Groups  []DivGroup `json:"groups"`
}

// DivGroup is a set of inputs that share one value.
type DivGroup struct {
	Ranks  []int    `json:"ranks"`
	Labels []string `json:"labels"`
	Value  string   `json:"value"`
}

// Artifact is a reference to one payload (or one payload-less event worth
// listing), never the payload itself.
type Artifact struct {
	Rank      int    `json:"rank"`
	CompileID string `json:"compile_id"` // with attempt suffix; "" outside any compile
	// Kind is the envelope key (dynamo_output_graph, inductor_output_code,
	// artifact, …); Name the artifact/graph_dump name or output file name,
	// else the kind.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Encoding is "json" or "string" for artifact events.
	Encoding string `json:"encoding,omitempty"`
	Line     int    `json:"line"`
	torchtrace.PayloadRef
	// Envelope: the event has no payload and the reference spans its
	// envelope line (fetch with torchtrace.ReadEnvelope; the metadata is the
	// value under Kind). Otherwise fetch with torchtrace.ReadPayload.
	Envelope bool `json:"envelope,omitempty"`
	MD5OK    bool `json:"md5_ok"`
	// MD5 is the payload's MD5, set only when the payload matched the one
	// its envelope announced (zero otherwise): it names the payload's
	// content, so a renderer can show identical payloads (every rank's copy
	// of a graph, a repeated log) from one file. Not part of the JSON
	// document.
	MD5 [16]byte `json:"-"`
}

// Link is a `link` event.
type Link struct {
	Rank      int    `json:"rank"`
	CompileID string `json:"compile_id"`
	Name      string `json:"name"`
	URL       string `json:"url"`
}
