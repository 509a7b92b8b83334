package compiles

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/bringup-tool/bringup/ingest/torchtrace"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/ringcache"
)

// defaultRank marks, inside one file, "the file's own rank" until it is
// known at the end (a file-name rank, or the first envelope rank).
const defaultRank = -2

// wantedArtifacts are the artifact payloads the analysis reads.
var wantedArtifacts = map[string]bool{
	"recompile_reasons": true, "dynamo_graph_break_reason": true,
	"fx_graph_cache_hit": true, "fx_graph_cache_miss": true, "fx_graph_cache_bypass": true,
	"aotautograd_cache_hit": true, "aotautograd_cache_miss": true, "aotautograd_cache_bypass": true,
	"aotautograd_cache_hash": true, "fx_graph_cache_hash": true,
	"inductor_collective_schedule": true, "graph_execution": true, "inductor_graph_execution": true,
	"torch_version": true, "inductor_runtime_and_tensor_meta": true,
	"inductor_provenance_tracking_node_mappings": true, "inductor_triton_kernel_to_post_grad_nodes": true,
	"inductor_post_to_pre_grad_nodes": true, "inductor_provenance_tracking_kernel_stack_traces": true,
}

// skipArtifactRef are event kinds not worth a payload reference: too many
// and shown in aggregate instead.
var skipArtifactRef = map[string]bool{
	"str": true, "chromium_event": true, "describe_tensor": true, "describe_storage": true,
	"describe_source": true,
}

// unit is one compile being assembled.
type unit struct {
	c           Compile
	attempts    intSet
	gbArtifacts int
	// skipMarked: one of the unit's dynamo_graph_break_reason records says
	// Dynamo gave up on the whole frame (skipMarker).
	skipMarked bool
	metrics    bool
	openB      bool
}

type fileAnalysis struct {
	in    Input
	lock  *int // first envelope rank, when the name gives none
	other map[int]bool

	units    map[unitK]*unit // the latest occurrence of each unit
	order    []*unit
	arts     []Artifact
	artsDrop int
	breaks   []GraphBreak
	cache    []CacheEvent
	colls    []CollectiveSchedule
	exec     *ExecutionOrder
	runtimes []GraphRuntime
	links    []Link
	// Symbolic shapes, export and provenance (shapes.go).
	shapes     []ShapeEvent
	shapesDrop int
	maxShapes  int
	export     *ExportReport
	prov       map[string]*Provenance // by unit Ref (or compile id outside units)
	provOrder  []string
	postToPre  map[string]map[string][]string
	// provMemo shares the kernels of node-mapping payloads seen before
	// (provMemoB bytes of keys); frameScratch holds a stack's frames.
	provMemo     map[provKey]any
	provMemoB    int
	frameScratch [][]byte
	versions     map[string]string
	limit        int
	limitHit     map[string]string // unit id -> reason text saying the limit was hit

	open     map[phaseKey][]int // indexes into openPh
	openPh   []Span
	closed   []Span
	dropped  int
	depth    map[int]int
	children map[int][]float64 // per pid, per open depth: time of the closed phases nested in it
	lastTs   float64
	// badChromium are (pid, line) of chromium events that could not be read.
	badChromium [][2]int
	lastLine    int                      // envelope line of the last event
	recentUnits ringcache.Ring[unitMemo] // see unitFor
	lastID      torchtrace.CompileID
	lastIDSet   bool
	lastIDStr   string
	names       map[string]string // interned strings
	stacks      map[string]record.Stack
	strings     []string // the interned string table, by index
	comps       map[string][]string
	compKey     []byte         // scratch: a component list's key
	compScratch []string       // scratch: a component list being parsed
	seen        map[string]int // scratch for parseCachePayloadSeen
	metricsBuf  []byte         // scratch for metricsSubset
	stackKey    []byte         // scratch for sharedStack
	maxSpans    int
	maxArts     int
}

type phaseKey struct {
	pid  int
	name string
	cid  string
}

func newFileAnalysis(in Input, maxSpans int) *fileAnalysis {
	return &fileAnalysis{maxArts: maxSpans * MaxArtifacts / MaxSpans, maxShapes: maxSpans * MaxShapes / MaxSpans,
		in: in, other: map[int]bool{}, units: map[unitK]*unit{}, versions: map[string]string{},
		limitHit: map[string]string{}, open: map[phaseKey][]int{}, depth: map[int]int{}, children: map[int][]float64{},
		names: map[string]string{}, stacks: map[string]record.Stack{}, comps: map[string][]string{}, maxSpans: maxSpans,
	}
}

func (f *fileAnalysis) want(ev *torchtrace.Event) bool {
	switch ev.Kind {
	case "chromium_event":
		return true
	case "artifact":
		return wantedArtifacts[ev.ArtifactName]
	}
	return false
}

// rankOf decides which rank an event belongs to inside this file.
func (f *fileAnalysis) rankOf(ev *torchtrace.Event) int {
	if f.in.RankFrom == "file_name" || ev.Rank == nil {
		return defaultRank
	}
	if f.lock == nil {
		r := *ev.Rank
		f.lock = &r
		return defaultRank
	}
	if *ev.Rank == *f.lock {
		return defaultRank
	}
	f.other[*ev.Rank] = true
	return *ev.Rank
}

func (f *fileAnalysis) unitFor(rank int, ev *torchtrace.Event, cid string) *unit {
	att := ev.ID.AttemptN()
	if f.recentUnits.Size() == 0 {
		f.recentUnits = ringcache.New[unitMemo](4)
	}
	// Consecutive events mostly belong to the same few compiles (an outer
	// one and the graphs compiled inside it): skip the key. A dynamo_start
	// may begin a new occurrence of a unit the memo holds: forget it all.
	if ev.Kind == "dynamo_start" {
		f.recentUnits.Reset()
	} else if m := f.recentUnits.Find(func(m *unitMemo) bool { return m.rank == rank && m.pid == ev.PID && m.cid == cid }); m != nil {
		m.u.attempts.add(att)
		return m.u
	}
	u := f.unitForKey(rank, ev)
	f.recentUnits.Put(unitMemo{rank: rank, pid: ev.PID, cid: cid, u: u})
	return u
}

// unitMemo is a recent event's compile: its rank, pid and compile id, and
// the unit they led to.
type unitMemo struct {
	rank, pid int
	cid       string
	u         *unit
}

func (f *fileAnalysis) unitForKey(rank int, ev *torchtrace.Event) *unit {
	id := ev.ID.Unit()
	// Keyed by process too: before pytorch#184772 forked workers wrote
	// into their parent's file, each with its own compile ids.
	key := unitKey(rank, ev.PID, id)
	u := f.units[key]
	att := ev.ID.AttemptN()
	// The same id compiled again (torch._dynamo.reset(), or one file holding
	// several runs): a new dynamo_start at an attempt already seen starts a
	// new occurrence.
	occ := 0
	if u != nil && ev.Kind == "dynamo_start" && (u.hasStart(att) || (u.metrics && att == 0)) {
		occ = u.c.Occurrence + 1
		u = nil
	}
	if u == nil {
		u = &unit{}
		u.c = Compile{Rank: rank, PID: ev.PID, Path: f.in.Path, ID: id, Occurrence: occ, FrameID: ev.ID.Frame,
			FrameCompileID: ev.ID.Compile, AutogradID: ev.ID.Autograd, Status: StatusNoMetrics,
			RestartReasons: []string{}, Artifacts: []int{}, Cache: []int{}, Line: ev.Line}
		f.units[key] = u
		f.order = append(f.order, u)
	}
	u.attempts.add(att)
	return u
}

// unitK keys a compile unit: a struct, not a joined string, so the
// lookups per chromium event allocate nothing.
type unitK struct {
	rank, pid int
	id        string
}

func unitKey(rank, pid int, id string) unitK { return unitK{rank, pid, id} }

// starts records which attempts had a dynamo_start (kept in the attempts
// map as negative keys to avoid another map).
func (u *unit) hasStart(att int) bool { return u.attempts.has(-1 - att) }

// intSet is a set of ints, a short slice while small: a compile unit has
// one to a few attempts, and a map per unit cost ~300 bytes on traces with
// tens of thousands of units.
type intSet struct {
	small []int
	big   map[int]bool
}

func (s *intSet) has(x int) bool {
	if s.big != nil {
		return s.big[x]
	}
	for _, y := range s.small {
		if y == x {
			return true
		}
	}
	return false
}

func (s *intSet) add(x int) {
	if s.has(x) {
		return
	}
	if s.big == nil && len(s.small) < 16 {
		s.small = append(s.small, x)
		return
	}
	if s.big == nil {
		s.big = make(map[int]bool, 32)
		for _, y := range s.small {
			s.big[y] = true
		}
		s.small = nil
	}
	s.big[x] = true
}

func (s *intSet) each(fn func(int)) {
	for _, y := range s.small {
		fn(y)
	}
	for y := range s.big {
		fn(y)
	}
}

// add takes one event. It never touches the scanner, so events can be
// analysed on another goroutine than the one reading them; the interned
// string table is rebuilt here from the "str" events themselves.
func (f *fileAnalysis) add(ev *torchtrace.Event) {
	f.lastLine = ev.Line
	rank := f.rankOf(ev)
	var u *unit
	cid := f.idString(ev.ID)
	if !ev.ID.Empty() {
		u = f.unitFor(rank, ev, cid)
	}
	art := -1 // index in f.arts of this event's reference
	if !skipArtifactRef[ev.Kind] && (ev.HasPayload != "" || isMetaArtifact(ev.Kind)) {
		a := Artifact{Rank: rank, CompileID: cid, Kind: ev.Kind, Name: ev.ArtifactName, Line: ev.Line,
			PayloadRef: ev.Payload, MD5OK: ev.MD5OK}
		if ev.HasPayload == "" {
			a.PayloadRef = ev.Envelope
			a.Envelope = true
			a.MD5OK = true // nothing to check
		} else if ev.MD5OK {
			hex.Decode(a.MD5[:], []byte(ev.HasPayload))
		}
		if a.Name == "" {
			a.Name = ev.Kind
		}
		a.Name = f.intern(a.Name)
		a.Kind = f.intern(a.Kind)
		if ev.Kind == "artifact" {
			if v, ok := torchtrace.Field(ev.Meta, "encoding"); ok {
				a.Encoding, _ = torchtrace.StringValue(v)
			}
		}
		if len(f.arts) < f.maxArts {
			if u != nil {
				u.c.Artifacts = append(u.c.Artifacts, len(f.arts))
			}
			art = len(f.arts)
			f.arts = append(f.arts, a)
		} else {
			f.artsDrop++
		}
	}
	switch ev.Kind {
	case "str":
		if str, idx, ok := torchtrace.InternEntry(ev.Meta); ok && idx >= 0 && idx <= len(f.strings)+1024 { // in order in practice; a corrupted index must not allocate gigabytes
			for len(f.strings) <= idx {
				f.strings = append(f.strings, "")
			}
			f.strings[idx] = str
		}
	case "dynamo_start":
		if u != nil {
			u.attempts.add(-1 - ev.ID.AttemptN())
			if len(u.c.Stack) == 0 {
				u.c.Stack = f.sharedStack(f.stack(ev.Meta))
				if len(u.c.Stack) > 0 && u.c.Frame.File == "" {
					u.c.Frame = u.c.Stack[0]
				}
			}
		}
	case "compilation_metrics":
		if u != nil {
			f.metrics(u, ev)
		}
	case "chromium_event":
		f.chromium(rank, ev)
	case "link":
		var m struct{ Name, URL string }
		if json.Unmarshal(ev.Meta, &m) == nil {
			f.links = append(f.links, Link{Rank: rank, CompileID: cid, Name: m.Name, URL: m.URL})
		}
	case "artifact":
		f.artifact(rank, u, ev, art)
	case "exported_program":
		f.exportedProgram(art)
	case "missing_fake_kernel", "mismatched_fake_kernel":
		f.fakeKernel(ev)
	default:
		if shapeKinds[ev.Kind] {
			f.shape(rank, u, ev, cid)
		}
	}
}

func isMetaArtifact(kind string) bool {
	switch kind {
	case "compilation_metrics", "bwd_compilation_metrics", "aot_autograd_backward_compilation_metrics",
		"compilation_metrics_runtime", "bwd_compilation_metrics_runtime", "dynamo_start", "link",
		"symbolic_shape_specialization", "guard_added_fast", "guard_added", "missing_fake_kernel",
		"mismatched_fake_kernel", "propagate_real_tensors_provenance", "create_symbol", "create_unbacked_symbol":
		return true
	}
	return false
}

// stack resolves a dynamo_start stack (outermost first in the log) into a
// record.Stack (innermost first), dropping Dynamo's own trailing frames.
func (f *fileAnalysis) stack(meta json.RawMessage) record.Stack {
	var m struct {
		Stack []struct {
			Line     int             `json:"line"`
			Name     string          `json:"name"`
			Filename json.RawMessage `json:"filename"`
		} `json:"stack"`
	}
	if json.Unmarshal(meta, &m) != nil {
		return nil
	}
	var st record.Stack
	for i := len(m.Stack) - 1; i >= 0 && len(st) < 64; i-- {
		fr := m.Stack[i]
		file := ""
		if n, err := strconv.Atoi(string(fr.Filename)); err == nil {
			file = f.str(n)
			if file == "" {
				file = fmt.Sprintf("<interned %d>", n)
			}
		} else {
			_ = json.Unmarshal(fr.Filename, &file)
		}
		if len(st) == 0 && (strings.HasSuffix(file, "_dynamo/convert_frame.py") || strings.HasSuffix(file, "_dynamo/eval_frame.py")) {
			continue
		}
		st = append(st, record.Frame{Func: fr.Name, File: file, Line: fr.Line})
	}
	return st
}

type metricsRec struct {
	CoName                *string         `json:"co_name"`
	CoFilename            *string         `json:"co_filename"`
	CoFirstlineno         *int            `json:"co_firstlineno"`
	CacheSize             *int            `json:"cache_size"`
	GuardCount            *int            `json:"guard_count"`
	GraphOpCount          *int            `json:"graph_op_count"`
	FailType              *string         `json:"fail_type"`
	FailReason            *string         `json:"fail_reason"`
	FailUserFrameFilename *string         `json:"fail_user_frame_filename"`
	FailUserFrameLineno   *int            `json:"fail_user_frame_lineno"`
	RestartReasons        json.RawMessage `json:"restart_reasons"`
	NumGraphBreaks        *int            `json:"num_graph_breaks"`
	RecompileReason       *string         `json:"recompile_reason"`
	DynamoConfig          *string         `json:"dynamo_config"`
	PythonVersion         *string         `json:"python_version"`
	TritonVersion         *string         `json:"triton_version"`
	CudaVersion           *string         `json:"cuda_version"`
	EntireFrameS          *float64        `json:"entire_frame_compile_time_s"`
	BackendS              *float64        `json:"backend_compile_time_s"`
	InductorS             *float64        `json:"inductor_compile_time_s"`
	CodeGenS              *float64        `json:"code_gen_time_s"`
	BeforeRestartS        *float64        `json:"dynamo_time_before_restart_s"`
	DurationUs            *float64        `json:"duration_us"`
	DynamoUs              *float64        `json:"dynamo_cumulative_compile_time_us"`
	AOTUs                 *float64        `json:"aot_autograd_cumulative_compile_time_us"`
	InductorUs            *float64        `json:"inductor_cumulative_compile_time_us"`
	CodeGenUs             *float64        `json:"inductor_code_gen_cumulative_compile_time_us"`
	TritonUs              *float64        `json:"triton_compile_time_us"`
	AutotuneUs            *float64        `json:"compile_time_autotune_time_us"`
	BeforeRestartUs       *float64        `json:"dynamo_compile_time_before_restart_us"`
	PreGradUs             *float64        `json:"pre_grad_pass_time_us"`
	PostGradUs            *float64        `json:"post_grad_pass_time_us"`
	JointUs               *float64        `json:"joint_graph_pass_time_us"`
	CudagraphifyUs        *float64        `json:"runtime_cudagraphify_time_us"`
	GCUs                  *float64        `json:"gc_time_us"`
}

// smallInts backs sharedInt; nothing writes through a Compile's counts.
var smallInts = func() (a [4096]int) {
	for i := range a {
		a[i] = i
	}
	return
}()

// sharedInt returns a pointer to the same value, shared for small ones.
func sharedInt(p *int) *int {
	if p != nil && *p >= 0 && *p < len(smallInts) {
		return &smallInts[*p]
	}
	return p
}

func fv(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func us(p *float64) float64 { return fv(p) / 1e6 }

// stringList reads a JSON string or list of strings (other values are
// rendered as JSON text).
func stringList(raw []byte) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil
		}
		return []string{one}
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		var s string
		if json.Unmarshal(x, &s) == nil {
			out = append(out, s)
		} else if string(x) != "null" {
			out = append(out, string(x))
		}
	}
	return out
}

var limitRE = regexp.MustCompile(`(?i)(recompile_limit|cache_size_limit|cache limit|RecompileLimit)`)

// metricsKeys are the JSON names of metricsRec's fields.
var metricsKeys = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeOf(metricsRec{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = true
	}
	return m
}()

// metricsSubset returns the members of a compilation_metrics object that
// json.Unmarshal into metricsRec can use, as a smaller object into buf:
// the record has ~100 members and the decode of all of them was a tenth of
// the analysis. Decoding the subset gives the same metricsRec and the same
// error: unknown members are ignored by encoding/json (the envelope was
// already validated), ASCII keys match a field when their lower case is its
// name, and keys with other bytes are kept for encoding/json to fold.
// dynamo_config (a long string) is left out when dropConfig and it is a
// string or null. ok is false when meta is not an object.
func metricsSubset(meta, buf []byte, dropConfig bool) ([]byte, bool) {
	buf = append(buf[:0], '{')
	var low [64]byte
	ok := torchtrace.EachFieldBytes(meta, func(k, v []byte) {
		keep := false
		ascii := true
		for _, c := range k {
			if c >= 0x80 {
				ascii = false
				break
			}
		}
		if !ascii {
			keep = true
		} else if len(k) <= len(low) {
			l := low[:len(k)]
			for i, c := range k {
				if c >= 'A' && c <= 'Z' {
					c += 'a' - 'A'
				}
				l[i] = c
			}
			keep = metricsKeys[string(l)]
			if keep && dropConfig && string(l) == "dynamo_config" && len(v) > 0 && (v[0] == '"' || v[0] == 'n') {
				keep = false
			}
		}
		if !keep {
			return
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		if plainKey(k) {
			buf = append(append(append(buf, '"'), k...), '"')
		} else {
			kj, _ := json.Marshal(string(k))
			buf = append(buf, kj...)
		}
		buf = append(buf, ':')
		buf = append(buf, v...)
	})
	return append(buf, '}'), ok
}

// plainKey: printable ASCII with nothing to escape.
func plainKey(k []byte) bool {
	for _, c := range k {
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func (f *fileAnalysis) metrics(u *unit, ev *torchtrace.Event) {
	var m metricsRec
	meta := ev.Meta
	if sub, ok := metricsSubset(meta, f.metricsBuf, f.limit != 0); ok {
		meta, f.metricsBuf = sub, sub
	}
	if json.Unmarshal(meta, &m) != nil {
		return
	}
	u.metrics = true
	c := &u.c
	c.MetricsLine = ev.Line
	// What a compile keeps is interned (a repeated frame, file or failure
	// is stored once) and small counts point into one shared table: a huge
	// trace holds one Compile per unit, and these were most of its bytes.
	if m.CoName != nil {
		c.Frame.Func = f.intern(*m.CoName)
	}
	if m.CoFilename != nil {
		c.Frame.File = f.intern(*m.CoFilename)
	}
	if m.CoFirstlineno != nil {
		c.Frame.Line = *m.CoFirstlineno
	}
	c.CacheSize, c.GuardCount, c.GraphOps = sharedInt(m.CacheSize), sharedInt(m.GuardCount), sharedInt(m.GraphOpCount)
	if m.FailType != nil && *m.FailType != "" {
		c.FailType = f.intern(*m.FailType)
		if m.FailReason != nil {
			c.FailReason = f.intern(*m.FailReason)
		}
		if m.FailUserFrameFilename != nil && *m.FailUserFrameFilename != "" {
			c.FailUserFrame = *m.FailUserFrameFilename
			if m.FailUserFrameLineno != nil {
				c.FailUserFrame += ":" + strconv.Itoa(*m.FailUserFrameLineno)
			}
		}
		if limitRE.MatchString(c.FailType + " " + c.FailReason) {
			f.limitHit[c.ID] = c.FailType + ": " + c.FailReason
		}
	}
	for _, r := range stringList(m.RestartReasons) {
		r = f.intern(r)
		c.RestartReasons = append(c.RestartReasons, r)
		if limitRE.MatchString(r) {
			f.limitHit[c.ID] = r
		}
	}
	if m.RecompileReason != nil && *m.RecompileReason != "" {
		c.RecompileReasons = appendNew(c.RecompileReasons, f.intern(*m.RecompileReason))
	}
	if m.NumGraphBreaks != nil {
		c.GraphBreaks = *m.NumGraphBreaks
	}
	s := &c.Seconds
	if m.DurationUs != nil || m.DynamoUs != nil {
		s.Source = "us"
		s.Total = us(m.DurationUs)
		s.Dynamo, s.AOTAutograd, s.Inductor, s.CodeGen = us(m.DynamoUs), us(m.AOTUs), us(m.InductorUs), us(m.CodeGenUs)
		s.Triton, s.Autotune, s.BeforeRestart = us(m.TritonUs), us(m.AutotuneUs), us(m.BeforeRestartUs)
		s.PreGrad, s.PostGrad, s.JointGraph = us(m.PreGradUs), us(m.PostGradUs), us(m.JointUs)
		s.Cudagraphify, s.GC = us(m.CudagraphifyUs), us(m.GCUs)
	} else {
		s.Source = "s"
	}
	// The older seconds fields, kept when the newer ones are absent.
	if s.Total == 0 {
		s.Total = fv(m.EntireFrameS)
	}
	if s.Backend == 0 {
		s.Backend = fv(m.BackendS)
	}
	if s.Inductor == 0 {
		s.Inductor = fv(m.InductorS)
	}
	if s.CodeGen == 0 {
		s.CodeGen = fv(m.CodeGenS)
	}
	if s.BeforeRestart == 0 {
		s.BeforeRestart = fv(m.BeforeRestartS)
	}
	if s.Total == 0 {
		s.Total = s.Dynamo // the cumulative dynamo time includes the backend
	}
	if m.DynamoConfig != nil && f.limit == 0 {
		var cfg map[string]any
		if json.Unmarshal([]byte(*m.DynamoConfig), &cfg) == nil {
			for _, k := range []string{"recompile_limit", "cache_size_limit"} {
				if v, ok := cfg[k].(float64); ok && v > 0 && v < 1e9 {
					f.limit = int(v)
					break
				}
			}
		}
	}
	for k, p := range map[string]*string{"python": m.PythonVersion, "triton": m.TritonVersion, "cuda": m.CudaVersion} {
		// python_version is sys.version ("3.11.13 (main, Jun 5 2025, …) [Clang …]"):
		// the version is its first word.
		if p != nil && f.versions[k] == "" {
			if w := strings.Fields(*p); len(w) > 0 {
				f.versions[k] = w[0]
			}
		}
	}
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

type cachePayload struct {
	Key          *string
	Components   []string // "name=hash"
	BypassReason *string
	Detailed     *string
	State        *string
	TimeSavedMs  *float64
	TimeSavedNs  *float64
}

// parseCachePayload reads a cache artifact by field lookups; the
// components list (hashed inputs, often whole graphs) is reduced to
// "name=hash" without decoding the values. intern turns a built
// "name=hash" into a (shared) string.
func parseCachePayload(body []byte, intern func([]byte) string) (cachePayload, bool) {
	return parseCachePayloadSeen(body, intern, map[string]int{}, nil)
}

// parseCachePayloadSeen is parseCachePayload with a caller-owned (emptied)
// map for the component names seen, so a file's many cache artifacts do
// not each build one, and a scratch slice the components are appended to
// (p.Components aliases it; nil when there are none, as before).
func parseCachePayloadSeen(body []byte, intern func([]byte) string, seen map[string]int, scratch []string) (cachePayload, bool) {
	var p cachePayload
	str := func(v []byte) *string {
		s, ok := torchtrace.StringValue(v)
		if !ok {
			return nil
		}
		return &s
	}
	flt := func(v []byte) *float64 {
		f, ok := torchtrace.FloatValue(v)
		if !ok {
			return nil
		}
		return &f
	}
	clear(seen)
	var buf []byte
	ok := torchtrace.EachFieldBytes(body, func(k, v []byte) {
		switch string(k) {
		case "key":
			p.Key = str(v)
		case "cache_bypass_reason":
			p.BypassReason = str(v)
		case "cache_status_detailed":
			p.Detailed = str(v)
		case "cache_state":
			p.State = str(v)
		case "time_saved_ms":
			p.TimeSavedMs = flt(v)
		case "time_saved_ns":
			p.TimeSavedNs = flt(v)
		case "components":
			torchtrace.EachElement(v, func(e []byte) {
				name, hash, ok := component(e)
				if !ok {
					return
				}
				n := seen[string(name)] + 1
				if n == 1 {
					seen[intern(name)] = n // shared key: no allocation per name
				} else {
					seen[string(name)] = n
				}
				buf = append(append(buf[:0], name...), '=')
				buf = append(buf, hash...)
				if n > 1 { // a repeated name keeps its place: "name#2=hash"
					buf = append(append(append(buf[:0], name...), '#'), strconv.Itoa(n)...)
					buf = append(append(buf, '='), hash...)
				}
				if p.Components == nil {
					p.Components = scratch[:0]
				}
				p.Components = append(p.Components, intern(buf))
			})
		}
	})
	return p, ok
}

// component splits a raw JSON string "[hash] name: value" into name and
// hash, decoding only when the prefix holds escapes.
func component(raw []byte) (name, hash []byte, ok bool) {
	if len(raw) < 4 || raw[0] != '"' || raw[1] != '[' {
		return nil, nil, false
	}
	end := bytes.IndexByte(raw, ']')
	if end < 0 {
		return nil, nil, false
	}
	colon := bytes.IndexByte(raw[end:], ':')
	if colon < 0 || end+2 > end+colon {
		return nil, nil, false
	}
	hash = raw[2:end]
	name = raw[end+2 : end+colon]
	if bytes.IndexByte(name, '\\') >= 0 || bytes.IndexByte(hash, '\\') >= 0 {
		s, ok := torchtrace.StringValue(raw)
		if !ok {
			return nil, nil, false
		}
		m := componentRE.FindStringSubmatch(s)
		if m == nil {
			return nil, nil, false
		}
		return []byte(m[2]), []byte(m[1]), true
	}
	return name, hash, true
}

// provMemoBytes bounds the keys of a file's provenance memo (shapes.go).
const provMemoBytes = 8 << 20

// sharedComponents returns the list for comps, shared with every earlier
// identical list of the file (repeated compiles hash the same inputs).
// The key is built in a scratch buffer: a list seen before costs no
// allocation (joining and keeping every list was a fifth of the bytes
// allocated).
func (f *fileAnalysis) sharedComponents(comps []string) []string {
	key := f.compKey[:0]
	for i, c := range comps {
		if i > 0 {
			key = append(key, '\n')
		}
		key = append(key, c...)
	}
	f.compKey = key
	if shared, ok := f.comps[string(key)]; ok {
		return shared
	}
	var own []string
	if len(comps) > 0 {
		own = append(make([]string, 0, len(comps)), comps...)
	}
	if len(f.comps) < 10_000 {
		f.comps[string(key)] = own
	}
	return own
}

// componentRE splits "[hash] name: value".
var componentRE = regexp.MustCompile(`^\[([0-9a-z]+)\] ([^:]*):`)

func (f *fileAnalysis) artifact(rank int, u *unit, ev *torchtrace.Event, art int) {
	name := ev.ArtifactName
	cid := ev.ID.String()
	body := ev.Body
	switch {
	case name == "recompile_reasons":
		if u != nil {
			for _, r := range stringList(body) {
				r = f.intern(r)
				u.c.RecompileReasons = appendNew(u.c.RecompileReasons, r)
				if limitRE.MatchString(r) {
					f.limitHit[u.c.ID] = r
				}
			}
		}
	case name == "dynamo_graph_break_reason":
		gb := parseGraphBreak(string(body))
		gb.Count = 1
		gb.Ranks = []int{rank}
		gb.Source = "dynamo_graph_break_reason"
		gb.Evidence = record.Evidence{Path: f.in.Path, Line: ev.Line, Text: firstLine(string(body))}
		gb.Artifact = len(f.arts) - 1
		gb.CompileIDs = []string{}
		if u != nil {
			u.gbArtifacts++
			u.skipMarked = u.skipMarked || skipMarker(body)
			gb.CompileIDs = []string{Ref(u.c.ID, u.c.Occurrence)}
			if gb.UserCode == "" && gb.UserFrame != "" {
				gb.UserCode = u.c.Frame.Func + " (" + gb.UserFrame + ")"
			}
		} else if cid != "" {
			gb.CompileIDs = []string{ev.ID.Unit()}
		}
		if gb.UserCode == "" {
			gb.UserCode = gb.UserFrame
		}
		f.breaks = append(f.breaks, gb)
	case provenanceArtifacts[name]:
		f.provenance(rank, u, ev, f.idString(ev.ID), art)
	case name == "dynamo_error":
		if u != nil {
			ref := ev.Payload
			u.c.DynamoError = &ref
		}
	case strings.HasPrefix(name, "fx_graph_cache_") || strings.HasPrefix(name, "aotautograd_cache_"):
		if f.seen == nil {
			f.seen = map[string]int{}
		}
		p, ok := parseCachePayloadSeen(body, f.internBytes, f.seen, f.compScratch[:0])
		if !ok {
			return
		}
		ce := CacheEvent{Rank: rank, Path: f.in.Path, Line: ev.Line, CompileID: cid}
		if u != nil {
			ce.Occurrence = u.c.Occurrence
		}
		if strings.HasPrefix(name, "fx_graph_cache_") {
			ce.Kind = CacheFXGraph
		} else {
			ce.Kind = CacheAOTAutograd
		}
		outcome := name[strings.LastIndexByte(name, '_')+1:]
		if outcome == "hash" {
			if p.State == nil {
				return // the key alone (older traces): no outcome to report
			}
			outcome = *p.State
			ce.FromHash = true
		}
		switch outcome {
		case OutcomeHit, OutcomeMiss, OutcomeBypass:
		default:
			return
		}
		ce.Outcome = outcome
		if p.BypassReason != nil {
			ce.Reason = f.intern(strings.TrimSpace(*p.BypassReason))
		} else if p.Detailed != nil && *p.Detailed != outcome {
			ce.Reason = f.intern(*p.Detailed)
		}
		if p.Key != nil {
			ce.Key = f.intern(*p.Key)
		}
		ce.TimeSavedMs = fv(p.TimeSavedMs)
		if ce.TimeSavedMs == 0 && p.TimeSavedNs != nil {
			ce.TimeSavedMs = *p.TimeSavedNs / 1e6
		}
		// Repeated compiles hash the same inputs: share one list (the
		// list is parsed into a scratch slice, see sharedComponents).
		ce.Components = f.sharedComponents(p.Components)
		if p.Components != nil {
			f.compScratch = p.Components[:0]
		}
		if u != nil {
			u.c.Cache = append(u.c.Cache, len(f.cache))
		}
		f.cache = append(f.cache, ce)
	case name == "inductor_collective_schedule":
		var ops []string
		if json.Unmarshal(body, &ops) == nil {
			f.colls = append(f.colls, CollectiveSchedule{Rank: rank, Path: f.in.Path, CompileID: cid, Ops: ops})
		}
	case name == "graph_execution" || name == "inductor_graph_execution":
		var p struct {
			Order []struct {
				CompileID string `json:"compile_id"`
			} `json:"graph_execution_order"`
		}
		if json.Unmarshal(body, &p) == nil && p.Order != nil {
			eo := &ExecutionOrder{Rank: rank, Path: f.in.Path, Order: []string{}}
			for _, o := range p.Order {
				eo.Order = append(eo.Order, o.CompileID)
			}
			f.exec = eo
		}
	case name == "inductor_runtime_and_tensor_meta":
		var p struct {
			Ops []struct {
				Name    string          `json:"name"`
				Type    string          `json:"type"`
				Runtime float64         `json:"estimated_runtime_ns"`
				Outputs json.RawMessage `json:"outputs"`
			} `json:"ops"`
		}
		if json.Unmarshal(body, &p) != nil {
			return
		}
		// The tensor-meta fingerprint leaves the runtimes out: ranks may
		// estimate differently and still agree on shapes (tlparse's check).
		h := md5.New()
		var ns float64
		for _, op := range p.Ops {
			ns += op.Runtime
			var out bytes.Buffer
			_ = json.Compact(&out, op.Outputs)
			fmt.Fprintf(h, "%s|%s|%s\n", op.Name, op.Type, out.Bytes())
		}
		f.runtimes = append(f.runtimes, GraphRuntime{Rank: rank, Path: f.in.Path, CompileID: cid, Ops: len(p.Ops),
			EstimatedMs: ns / 1e6, TensorMeta: hex.EncodeToString(h.Sum(nil))[:12]})
	case name == "torch_version":
		var p struct {
			Version string `json:"pytorch_version"`
			Commit  string `json:"commit"`
		}
		if json.Unmarshal(body, &p) == nil && p.Version != "" {
			f.versions["torch"] = p.Version
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

var (
	gbAtRE     = regexp.MustCompile(`(?m)^Graph break(?: in user code)? at ([^\n]+?):(\d+)\s*$`)
	gbReasonRE = regexp.MustCompile(`(?m)^Graph Break Reason:\s*(.*)$`)
	gbIDRE     = regexp.MustCompile(`\b[Gg][Bb](\d{4})\b`)
	gbFileRE   = regexp.MustCompile(`File "([^"]+)", line (\d+)(?:, in (\S+))?`)
	gbTypeRE   = regexp.MustCompile(`(?m)^\s*(?:Graph break type|gb_type):\s*(.*)$`)
)

// parseGraphBreak reads a dynamo_graph_break_reason text:
// "Graph break in user code at f:l\nGraph Break Reason: …\nUser code traceback: …".
func parseGraphBreak(text string) GraphBreak {
	gb := GraphBreak{Artifact: -1}
	var fileLine string
	if m := gbAtRE.FindStringSubmatch(text); m != nil {
		gb.UserFrame = m[1] + ":" + m[2]
		fileLine = m[1] + `", line ` + m[2] + ", in "
	}
	if loc := gbReasonRE.FindStringSubmatchIndex(text); loc != nil {
		gb.Reason, gb.GBType = realBreak(text[loc[2]:])
	} else {
		gb.Reason = firstLine(text)
	}
	if gb.UserFrame == "" {
		if i := strings.Index(text, "User code traceback"); i >= 0 {
			if ms := gbFileRE.FindAllStringSubmatch(text[i:], -1); len(ms) > 0 {
				last := ms[len(ms)-1]
				gb.UserFrame = last[1] + ":" + last[2]
				if last[3] != "" {
					gb.UserCode = last[3] + " (" + gb.UserFrame + ")"
				}
			}
		}
	} else if i := strings.Index(text, fileLine); i >= 0 {
		// The traceback names the function of the break's own line.
		fn, _, _ := strings.Cut(text[i+len(fileLine):], "\n")
		if fn = strings.TrimSpace(fn); fn != "" {
			gb.UserCode = fn + " (" + gb.UserFrame + ")"
		}
	}
	if m := gbIDRE.FindStringSubmatch(text); m != nil {
		gb.GBID = "GB" + m[1]
		gb.URL = "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb" + m[1] + ".html"
	}
	if m := gbTypeRE.FindStringSubmatch(text); m != nil {
		gb.GBType = strings.TrimSpace(m[1])
	}
	return gb
}

// gbWrappers open the reason Dynamo wraps around the break itself
// (torch 2.15: "Encountered graph break when attempting to trace CALL: …:",
// "Failed to handle graph break gracefully. … Graph break encountered:").
var gbWrappers = []string{
	"Encountered graph break when attempting to trace",
	"Failed to handle graph break gracefully",
	"Graph break encountered",
}

// realBreak reads the break from a graph-break reason text (from its first
// line on): the first line, or, when that is Dynamo's wrapper, the first
// non-blank line after it. gbType is that line when the Unsupported block
// follows it ("  Explanation:" next), as torch prints its gb_type.
func realBreak(text string) (reason, gbType string) {
	first, rest, _ := strings.Cut(text, "\n")
	reason = strings.TrimSpace(first)
	next, after := nextLine(rest)
	wrapper := false
	for _, w := range gbWrappers {
		if strings.HasPrefix(reason, w) {
			wrapper = true
			break
		}
	}
	if next != "" && (wrapper || strings.HasSuffix(reason, ":") && strings.HasPrefix(strings.TrimSpace(firstLine(after)), "Explanation:")) {
		reason = next
		if strings.HasPrefix(strings.TrimSpace(firstLine(after)), "Explanation:") {
			gbType = reason
		}
		return reason, gbType
	}
	if strings.HasPrefix(strings.TrimSpace(firstLine(rest)), "Explanation:") {
		gbType = reason
	}
	return reason, gbType
}

// nextLine is the first non-blank line of text, trimmed, and what follows it.
func nextLine(text string) (line, rest string) {
	for text != "" {
		var l string
		l, text, _ = strings.Cut(text, "\n")
		if l = strings.TrimSpace(l); l != "" {
			if l == "User code traceback:" || strings.HasPrefix(l, "Traceback (most recent call last)") {
				return "", ""
			}
			return l, text
		}
	}
	return "", ""
}

type chromiumEvent struct {
	Name string   `json:"name"`
	Ph   string   `json:"ph"`
	Cat  string   `json:"cat"`
	Ts   float64  `json:"ts"`
	Dur  *float64 `json:"dur"`
	Args struct {
		CompileID json.RawMessage `json:"compile_id"`
	} `json:"args"`
}

// str returns interned string i ("" when unknown).
func (f *fileAnalysis) str(i int) string {
	if i >= 0 && i < len(f.strings) {
		return f.strings[i]
	}
	return ""
}

// intern shares repeated strings (phase names, compile ids, cache
// components) so that a huge trace of repeated compiles costs memory in
// proportion to what is distinct, not to its length.
func (f *fileAnalysis) intern(s string) string {
	if x, ok := f.names[s]; ok {
		return x
	}
	if len(f.names) < 200_000 && len(s) <= 4096 {
		f.names[s] = s
	}
	return s
}

// internBytes is intern without allocating for strings seen before.
func (f *fileAnalysis) internBytes(b []byte) string {
	if x, ok := f.names[string(b)]; ok {
		return x
	}
	return f.intern(string(b))
}

// internValue is intern for a raw JSON string value, without allocating
// when the string was seen before.
func (f *fileAnalysis) internValue(v []byte) string {
	if b, ok := torchtrace.RawString(v); ok {
		if x, ok := f.names[string(b)]; ok {
			return x
		}
	}
	s, _ := torchtrace.StringValue(v)
	return f.intern(s)
}

// idString prints a compile id once per run of events with the same id.
func (f *fileAnalysis) idString(id torchtrace.CompileID) string {
	eq := func(a, b *int) bool { return a == b || a != nil && b != nil && *a == *b }
	if f.lastIDSet && eq(id.Autograd, f.lastID.Autograd) && eq(id.Frame, f.lastID.Frame) &&
		eq(id.Compile, f.lastID.Compile) && eq(id.Attempt, f.lastID.Attempt) {
		return f.lastIDStr
	}
	f.lastID, f.lastIDSet, f.lastIDStr = id, true, f.intern(id.String())
	return f.lastIDStr
}

// sharedStack returns an identical earlier stack instead of a new copy.
func (f *fileAnalysis) sharedStack(st record.Stack) record.Stack {
	if len(st) == 0 {
		return st
	}
	// The key is each frame as record.Frame.String prints it, one per
	// line, built in a scratch buffer: a lookup that hits allocates nothing.
	b := f.stackKey[:0]
	for _, fr := range st {
		b = append(b, fr.Func...)
		b = append(b, " ("...)
		b = append(b, fr.File...)
		if fr.Line > 0 {
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(fr.Line), 10)
		}
		b = append(b, ")\n"...)
	}
	f.stackKey = b
	if x, ok := f.stacks[string(b)]; ok {
		return x
	}
	if len(f.stacks) < 10_000 {
		f.stacks[string(b)] = st
	}
	return st
}

func (f *fileAnalysis) chromium(rank int, ev *torchtrace.Event) {
	if ev.BodyTruncated {
		f.badChromium = append(f.badChromium, [2]int{ev.PID, ev.Line})
		return
	}
	// Field lookups instead of a struct decode: chromium events are the
	// most frequent record and this is the hot path.
	var ce chromiumEvent
	var args []byte
	ok := torchtrace.EachFieldBytes(ev.Body, func(k, v []byte) {
		switch string(k) {
		case "name":
			ce.Name = f.internValue(v)
		case "ph":
			ce.Ph = f.internValue(v)
		case "cat":
			ce.Cat = f.internValue(v)
		case "ts":
			ce.Ts, _ = torchtrace.FloatValue(v)
		case "dur":
			if d, ok := torchtrace.FloatValue(v); ok {
				ce.Dur = &d
			}
		case "args":
			args = v
		}
	})
	if !ok || ce.Name == "" {
		// Bad chromium JSON is skipped, as tlparse does since 0.4.3; kept
		// in mind because it may have been the E of a phase left open.
		f.badChromium = append(f.badChromium, [2]int{ev.PID, ev.Line})
		return
	}
	if ce.Ts > f.lastTs {
		f.lastTs = ce.Ts
	}
	switch ce.Ph {
	case "B", "E", "X":
	default:
		// Instant and other events end here: their args (a cache
		// event's are its whole component list) need no second walk.
		return
	}
	if args != nil {
		if v, ok := torchtrace.Field(args, "compile_id"); ok {
			ce.Args.CompileID = v
		}
	}
	cid := f.idString(ev.ID)
	if len(ce.Args.CompileID) > 0 {
		if s, ok := torchtrace.StringValue(ce.Args.CompileID); ok && s != "" && s != "None" {
			cid = s
		}
	}
	name := f.intern(ce.Name)
	k := phaseKey{ev.PID, name, cid}
	switch ce.Ph {
	case "B":
		f.openPh = append(f.openPh, Span{Rank: rank, Path: f.in.Path, PID: ev.PID, Name: name, CompileID: cid,
			Category: f.intern(ce.Cat), StartUs: ce.Ts, Depth: f.depth[ev.PID], Line: ev.Line})
		f.open[k] = append(f.open[k], len(f.openPh)-1)
		f.depth[ev.PID]++
		f.children[ev.PID] = append(f.children[ev.PID], 0)
		if u := f.units[unitKey(rank, ev.PID, unitOf(cid))]; u != nil {
			u.openB = true
		}
	case "E":
		st := f.open[k]
		if len(st) == 0 {
			return
		}
		i := st[len(st)-1]
		if len(st) == 1 {
			delete(f.open, k)
		} else {
			f.open[k] = st[:len(st)-1]
		}
		p := f.openPh[i]
		f.openPh[i].Name = "" // closed
		p.DurUs = ce.Ts - p.StartUs
		f.depth[ev.PID]--
		// Self time: the phase minus the phases nested in it.
		self := p.DurUs
		if st := f.children[ev.PID]; len(st) > 0 {
			self -= st[len(st)-1]
			st = st[:len(st)-1]
			if len(st) > 0 {
				st[len(st)-1] += p.DurUs
			}
			f.children[ev.PID] = st
		}
		f.phaseTime(rank, p, max(self, 0))
		f.keep(p)
		f.compactOpen()
	case "X":
		p := Span{Rank: rank, Path: f.in.Path, PID: ev.PID, Name: name, CompileID: cid, Category: f.intern(ce.Cat),
			StartUs: ce.Ts, DurUs: fv(ce.Dur), Depth: f.depth[ev.PID], Line: ev.Line}
		if p.StartUs+p.DurUs > f.lastTs {
			f.lastTs = p.StartUs + p.DurUs
		}
		self := p.DurUs
		if st := f.children[ev.PID]; len(st) > 0 {
			st[len(st)-1] += p.DurUs
		}
		f.phaseTime(rank, p, self)
		f.keep(p)
	}
}

// phaseTime adds a closed phase's self time (its nested phases
// subtracted) to its compile, by phase name: where the compile's time went.
// Done as events stream, so it is complete even past the phase cap.
func (f *fileAnalysis) phaseTime(rank int, p Span, selfUs float64) {
	if p.CompileID == "" || selfUs <= 0 {
		return
	}
	u := f.units[unitKey(rank, p.PID, unitOf(p.CompileID))]
	if u == nil {
		return
	}
	u.c.PhaseSeconds.add(p.Name, selfUs/1e6)
}

func (f *fileAnalysis) keep(p Span) {
	if len(f.closed) < f.maxSpans {
		f.closed = append(f.closed, p)
	} else {
		f.dropped++
	}
}

// compactOpen drops closed entries from the tail of openPh so it stays as
// small as the number of phases open at once.
func (f *fileAnalysis) compactOpen() {
	for len(f.openPh) > 0 && f.openPh[len(f.openPh)-1].Name == "" {
		f.openPh = f.openPh[:len(f.openPh)-1]
	}
}

// UnitOf strips the attempt from a printed compile id ("0/0_1" -> "0/0"):
// the id of the compile unit an event belongs to.
func UnitOf(cid string) string { return unitOf(cid) }

// unitOf strips the attempt from a printed compile id ("0/0_1" -> "0/0").
func unitOf(cid string) string {
	if i := strings.LastIndexByte(cid, '_'); i > 0 && !strings.Contains(cid[i:], "/") {
		return cid[:i]
	}
	return cid
}

// finish resolves the file's rank and completes each compile unit.
func (f *fileAnalysis) finish(st *torchtrace.Stats) {
	if f.in.RankFrom != "file_name" {
		if f.lock != nil {
			f.in.Rank, f.in.RankFrom = *f.lock, "envelope"
		}
	}
	fix := func(r *int) {
		if *r == defaultRank {
			*r = f.in.Rank
		}
	}
	for _, u := range f.order {
		c := &u.c
		fix(&c.Rank)
		if cap(c.PhaseSeconds) > len(c.PhaseSeconds) { // kept to the end: no growth slack
			c.PhaseSeconds = append(PhaseTimes(nil), c.PhaseSeconds...)
		}
		n := 0
		u.attempts.each(func(a int) {
			if a >= 0 {
				n++
			}
		})
		c.Attempts = n
		if c.GraphBreaks == 0 {
			if u.gbArtifacts > 0 {
				c.GraphBreaks = u.gbArtifacts
			} else {
				c.GraphBreaks = len(c.RestartReasons)
			}
		}
		if c.FailType != "" {
			c.FailChain = FailChain(c.FailType, c.FailReason)
			c.FailPhase = failPhase(c.FailType, c.FailChain, c.FailReason, c.PhaseSeconds)
		}
		if uc := bestUserFrame(c); uc.Func != "" || uc.File != "" {
			c.UserCode = f.intern(uc.String())
		}
		c.FellBack = fellBack(c, u.skipMarked)
		switch {
		case c.FailType != "":
			c.Status = StatusFailed
		case !u.metrics && u.openB:
			c.Status = StatusNoMetrics
		case !u.metrics:
			c.Status = StatusNoMetrics
		case len(c.RestartReasons) > 0:
			c.Status = StatusRestarted
		case c.GraphOps != nil && *c.GraphOps == 0:
			c.Status = StatusEmpty
		default:
			c.Status = StatusOK
		}
	}
	for i := range f.arts {
		fix(&f.arts[i].Rank)
	}
	for i := range f.breaks {
		fix(&f.breaks[i].Ranks[0])
		f.breaks[i].Evidence.Rank = rankText(f.breaks[i].Ranks[0])
	}
	for i := range f.cache {
		fix(&f.cache[i].Rank)
	}
	for i := range f.colls {
		fix(&f.colls[i].Rank)
	}
	if f.exec != nil {
		fix(&f.exec.Rank)
	}
	for i := range f.links {
		fix(&f.links[i].Rank)
	}
	for i := range f.runtimes {
		fix(&f.runtimes[i].Rank)
	}
	for i := range f.closed {
		fix(&f.closed[i].Rank)
	}
	// Closed phases were kept in end order; present them in start order.
	sort.SliceStable(f.closed, func(i, j int) bool { return f.closed[i].StartUs < f.closed[j].StartUs })
	// Open phases: what was running when the log stopped.
	innermost := map[int]int{}
	var open []Span
	for _, p := range f.openPh {
		if p.Name == "" {
			continue
		}
		fix(&p.Rank)
		p.DurUs = f.lastTs - p.StartUs
		open = append(open, p)
	}
	sort.SliceStable(open, func(i, j int) bool { return open[i].StartUs < open[j].StartUs })
	for i := range open {
		for _, b := range f.badChromium {
			// A bad event that is the last record was cut by the end of
			// the log: the process stopped there either way.
			if b[0] == open[i].PID && b[1] > open[i].Line && b[1] != f.lastLine {
				open[i].Uncertain = true
				break
			}
		}
	}
	for i, p := range open {
		if p.Uncertain {
			continue
		}
		if j, ok := innermost[p.PID]; !ok || p.Depth >= open[j].Depth {
			innermost[p.PID] = i
		}
	}
	for _, i := range innermost {
		open[i].Innermost = true
	}
	f.openPh = open
	// A compile with a phase still open and no metrics was running at the end.
	for _, p := range open {
		if p.Uncertain {
			continue
		}
		for _, u := range f.order {
			if u.c.Rank == p.Rank && u.c.PID == p.PID && u.c.ID == unitOf(p.CompileID) && !u.metrics && u.c.FailType == "" {
				u.c.Status = StatusRunning
			}
		}
	}
}

// rankText names a trace rank the way every other source names a launcher
// rank ("rank2"), so findings from traces and logs share rank labels.
func rankText(r int) string {
	if r < 0 {
		return ""
	}
	rk := record.NoRank
	rk.Global = r
	return rk.Key()
}
