// Package torchtrace reads TORCH_TRACE structured logs (what PyTorch writes
// under TORCH_TRACE=<dir>) as a stream: a glog prefix, one JSON envelope per
// line, and optional TAB-indented payload lines whose MD5 the envelope
// carries. It never holds a payload it was not asked for: a payload is hashed
// as it streams past, and its byte span is kept so ReadPayload can fetch it
// later. Bad lines, bad JSON and MD5 mismatches are counted with their line
// numbers; nothing in the input makes the scanner fail.
package torchtrace

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/ringcache"
)

// reserved are the envelope keys that are not event kinds (torch/_logging).
var reserved = map[string]bool{
	"rank": true, "compiled_autograd_id": true, "frame_id": true, "frame_compile_id": true,
	"attempt": true, "severity": true, "timestamp": true, "pathname": true, "thread": true,
	"subgraph_name": true, "has_payload": true, "stack": true,
}

// knownKinds are the event kinds tlparse 0.4.3 models plus the ones current
// PyTorch emits that it does not; anything else is counted as unknown.
var knownKinds = map[string]bool{
	"str": true, "dynamo_start": true, "dynamo_output_graph": true, "dynamo_guards": true,
	"dynamo_cpp_guards_str": true, "aot_forward_graph": true, "aot_backward_graph": true,
	"aot_inference_graph": true, "aot_joint_graph": true, "inductor_pre_grad_graph": true,
	"inductor_post_grad_graph": true, "compiled_autograd_graph": true,
	"optimize_ddp_split_graph": true, "optimize_ddp_split_child": true,
	"inductor_output_code": true, "graph_dump": true, "artifact": true, "link": true,
	"dump_file": true, "chromium_event": true, "compilation_metrics": true,
	"bwd_compilation_metrics": true, "aot_autograd_backward_compilation_metrics": true,
	"symbolic_shape_specialization": true, "guard_added_fast": true, "guard_added": true,
	"propagate_real_tensors_provenance": true, "expression_created": true,
	"create_unbacked_symbol": true, "missing_fake_kernel": true, "mismatched_fake_kernel": true,
	"exported_program": true, "describe_storage": true, "describe_tensor": true,
	"describe_source": true, "compilation_metrics_runtime": true,
	"bwd_compilation_metrics_runtime": true, "create_symbol": true,
}

// kindNames holds one string per known kind, so parsing an envelope does
// not allocate its kind.
var kindNames = func() map[string]string {
	m := map[string]string{}
	for k := range knownKinds {
		m[k] = k
	}
	return m
}()

// smallInts back the *int of small compile-id parts and ranks, shared and
// never written, instead of one allocation per field per event.
var smallInts = func() (a [4096]int) {
	for i := range a {
		a[i] = i
	}
	return
}()

// KnownKind reports whether an event kind is one the format documents.
func KnownKind(k string) bool { return knownKinds[k] }

// CompileID is the compile context of an event; a nil part was absent (or
// null) in the envelope.
type CompileID struct {
	Autograd *int `json:"compiled_autograd_id,omitempty"`
	Frame    *int `json:"frame_id,omitempty"`
	Compile  *int `json:"frame_compile_id,omitempty"`
	Attempt  *int `json:"attempt,omitempty"`
}

// Empty reports whether no id part is set (export, AOTInductor, events
// outside any compile).
func (c CompileID) Empty() bool { return c.Autograd == nil && c.Frame == nil && c.Compile == nil }

func part(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p)
}

// String is the id as PyTorch prints it without brackets: "0/0", "0/0_1"
// when the attempt is non-zero, "!1/0/0" under compiled autograd, "!0/-/-"
// for the compiled-autograd graph; "" when empty.
func (c CompileID) String() string {
	if c.Empty() {
		return ""
	}
	s := part(c.Frame) + "/" + part(c.Compile)
	if c.Attempt != nil && *c.Attempt > 0 {
		s += "_" + strconv.Itoa(*c.Attempt)
	}
	if c.Autograd != nil {
		s = "!" + strconv.Itoa(*c.Autograd) + "/" + s
	}
	return s
}

// Unit is the id without its attempt: all attempts of one compile share it.
func (c CompileID) Unit() string {
	d := c
	d.Attempt = nil
	return d.String()
}

// AttemptN is the attempt number, 0 when absent (runtime autotune events
// carry no attempt and belong to attempt 0, tlparse PR #101).
func (c CompileID) AttemptN() int {
	if c.Attempt == nil {
		return 0
	}
	return *c.Attempt
}

// PayloadRef locates a payload inside its file without holding it: the byte
// span of its TAB-prefixed lines.
type PayloadRef struct {
	Path   string `json:"path"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
}

// Event is one envelope with what the scanner learned about its payload.
type Event struct {
	Line int // 1-based line of the envelope
	// Envelope is the byte span of the envelope line itself (ReadEnvelope).
	Envelope PayloadRef
	Level    byte   // glog level letter, always 'V' in practice
	Time     string // "MMDD HH:MM:SS.uuuuuu" as printed (glog has no year)
	PID      int    // the process id (tlparse calls it "thread")
	Emitter  string // "torch/_dynamo/utils.py:1931"
	Kind     string // the event key: "dynamo_start", "artifact", "str", …
	// Meta is the event's own value (the metadata object), still raw.
	Meta json.RawMessage
	ID   CompileID
	Rank *int
	// ArtifactName is metadata.name for "artifact" events (and graph_dump, link, dump_file).
	ArtifactName string
	// HasPayload is the MD5 the envelope announced; "" when none.
	HasPayload string
	Payload    PayloadRef
	// PayloadLines is the number of payload lines that followed.
	PayloadLines int
	// MD5OK is set once the payload has been read: whether it matched.
	MD5OK bool
	// Body is the payload text, only when the scanner's Want said so (and it
	// was no larger than MaxBody); BodyTruncated says it was cut.
	Body          []byte
	BodyTruncated bool
	// MD5Deferred says the scanner left the MD5 check to the caller
	// (Scanner.DeferMD5): MD5OK is not set yet, HashInput is the payload
	// as hashed.
	MD5Deferred bool
	HashInput   []byte
}

// Stats are the counts of one input file; their JSON is the "counts" entry
// of bringup.trace/v1.
type Stats struct {
	Bytes              int64          `json:"bytes"`
	Lines              int            `json:"lines"`
	Records            int            `json:"records"`
	Corrupted          int            `json:"corrupted"`
	CorruptedLines     Skips          `json:"corrupted_lines,omitempty"`
	NonGlog            int            `json:"non_glog"`
	NonGlogLines       Skips          `json:"non_glog_lines,omitempty"`
	Blank              int            `json:"blank"`
	OrphanPayloadLines int            `json:"orphan_payload_lines"`
	PayloadMD5Mismatch int            `json:"payload_md5_mismatch"`
	MD5MismatchLines   Skips          `json:"payload_md5_mismatch_lines,omitempty"`
	Oversize           int            `json:"oversize_lines,omitempty"`
	Events             map[string]int `json:"events"`
	Unknown            map[string]int `json:"unknown_events,omitempty"`
	UnknownFields      map[string]int `json:"unknown_fields,omitempty"`
	Artifacts          map[string]int `json:"artifacts"`
	CompileIDs         []string       `json:"compile_ids"`
	CompilationMetrics int            `json:"compilation_metrics"`
	Failed             int            `json:"failed"`
	ChromiumEvents     int            `json:"chromium_events"`
	Ranks              []int          `json:"ranks"`
	PIDs               []int          `json:"pids"`
	StringTable        int            `json:"string_table"`
	// NoFinalNewline says the last line had no newline (a writer killed
	// mid-record, a file still being written, or just an edited file).
	NoFinalNewline bool   `json:"no_final_newline,omitempty"`
	FirstTime      string `json:"first_time,omitempty"`
	LastTime       string `json:"last_time,omitempty"`
	ReadError      string `json:"read_error,omitempty"`
	// NotTrace says, for an input that held no record and could be read,
	// why not: empty, binary, UTF-16, lines that are not a trace's.
	NotTrace string `json:"not_trace,omitempty"`

	seenIDs   map[string]bool
	seenRanks map[int]bool
	seenPIDs  map[int]bool
}

// maxKeptLines bounds the lists of bad lines in Stats.
const maxKeptLines = 20

// The reasons of the bad lines Stats keeps, one per list.
const (
	ReasonOversize    = "envelope line longer than the scanner's limit"
	ReasonCorrupted   = "corrupted envelope: its JSON does not parse"
	ReasonNonGlog     = "not a TORCH_TRACE envelope line"
	ReasonMD5Mismatch = "payload MD5 does not match the envelope's has_payload"
)

// Skips are bad lines of one TORCH_TRACE file, each a record.Skip (the
// path left empty: the file is the Counts key). bringup.trace/v1 writes
// them as a list of line numbers, as it always has.
type Skips []record.Skip

// Lines are the skips' line numbers in order.
func (ss Skips) Lines() []int {
	lines := make([]int, len(ss))
	for i, s := range ss {
		lines[i] = s.Line
	}
	return lines
}

// MarshalJSON writes the line numbers.
func (ss Skips) MarshalJSON() ([]byte, error) { return json.Marshal(ss.Lines()) }

// UnmarshalJSON reads a list of line numbers back; the reasons are not
// in the document, so they stay empty.
func (ss *Skips) UnmarshalJSON(b []byte) error {
	var lines []int
	if err := json.Unmarshal(b, &lines); err != nil {
		return err
	}
	*ss = nil
	for _, l := range lines {
		*ss = append(*ss, record.Skip{Line: l})
	}
	return nil
}

func keepLine(list Skips, n int, reason string) Skips {
	if len(list) < maxKeptLines {
		list = append(list, record.Skip{Line: n, Reason: reason})
	}
	return list
}

func newStats() *Stats {
	return &Stats{
		Events: map[string]int{}, Artifacts: map[string]int{},
		CompileIDs: []string{}, Ranks: []int{}, PIDs: []int{},
		seenIDs: map[string]bool{}, seenRanks: map[int]bool{}, seenPIDs: map[int]bool{},
	}
}

// Scanner limits.
const (
	// maxInternGap bounds how far past the table's end an interned index
	// may point: PyTorch numbers them in order, and a corrupted index must
	// not make the table allocate gigabytes.
	maxInternGap = 1024
	// MaxEnvelope is the longest envelope line kept; longer ones are counted
	// as oversize and corrupted (an envelope is metadata, never this big).
	MaxEnvelope = 64 << 20
	// MaxBody is the default largest payload handed to Want-ed events.
	MaxBody = 16 << 20
)

// Scanner streams events out of one TORCH_TRACE file.
type Scanner struct {
	path             string
	r                io.Reader
	buf              []byte // read buffer
	bufStart, bufEnd int
	eof              bool
	pos              int64 // file offset of buf[bufStart]
	line             int   // lines consumed so far
	err              error

	// Want decides, for an envelope that announces a payload, whether the
	// payload text should be kept in Event.Body (up to MaxBody bytes).
	Want    func(ev *Event) bool
	MaxBody int

	strings     []string // interning table, by index
	stats       *Stats
	ev          Event
	pending     []byte // an envelope line read while finishing the previous payload
	pendingLine int
	pendingPos  int64
	hasPending  bool
	md5         hash.Hash
	lineBuf     []byte
	prefix      prefixCache

	// BorrowBody makes Event.Body point into a buffer the scanner reuses:
	// valid only until the next call to Next, and no allocation per kept
	// payload (growing a fresh Body line by line was the scan's largest
	// allocation). Callers that keep bodies copy them.
	BorrowBody bool
	bodyBuf    []byte

	// DeferMD5 leaves the MD5 check of payloads up to MaxDeferredHash
	// bytes to the caller, so it can run on another goroutine: such an
	// event has MD5Deferred set and its HashInput (valid until the next
	// Next); the caller checks it with CheckMD5 and counts a mismatch with
	// Stats.AddMD5Mismatch. Larger payloads are checked here as usual.
	DeferMD5  bool
	deferring bool
	hashIn    []byte

	names   map[string]string // artifact names, shared
	lastID  CompileID         // the compile id of the last record and its string
	lastIDs string
	hasID   bool
}

// NewScanner reads TORCH_TRACE records from r; path names the input in
// counts and payload references.
func NewScanner(r io.Reader, path string) *Scanner { return newScanner(r, path, 1<<20) }

func newScanner(r io.Reader, path string, bufSize int) *Scanner {
	return &Scanner{
		path: path, r: r, buf: make([]byte, bufSize), MaxBody: MaxBody,
		stats: newStats(), md5: md5.New(),
	}
}

// Stats returns the counts so far (complete once Next returned false).
func (s *Scanner) Stats() *Stats { return s.stats }

// Err is the read error that stopped the scan, if any (never a format error).
func (s *Scanner) Err() error { return s.err }

// String returns interned string i, or "" when unknown.
func (s *Scanner) String(i int) string {
	if i >= 0 && i < len(s.strings) {
		return s.strings[i]
	}
	return ""
}

// Event is the current event, valid until the next call to Next.
func (s *Scanner) Event() *Event { return &s.ev }

// fill makes sure buf holds a whole line starting at bufStart, or as much as
// fits. It returns the line (with its "\n" when complete) and whether it is
// complete.
func (s *Scanner) readLine() (line []byte, complete bool, ok bool) {
	for {
		if i := bytes.IndexByte(s.buf[s.bufStart:s.bufEnd], '\n'); i >= 0 {
			line = s.buf[s.bufStart : s.bufStart+i+1]
			return line, true, true
		}
		if s.eof {
			if s.bufStart < s.bufEnd {
				return s.buf[s.bufStart:s.bufEnd], true, true
			}
			return nil, false, false
		}
		// Move the partial line to the front and read more.
		if s.bufStart > 0 {
			n := copy(s.buf, s.buf[s.bufStart:s.bufEnd])
			s.bufStart, s.bufEnd = 0, n
		}
		if s.bufEnd == len(s.buf) {
			// A line longer than the buffer: hand out what we have.
			return s.buf[s.bufStart:s.bufEnd], false, true
		}
		n, err := s.r.Read(s.buf[s.bufEnd:])
		s.bufEnd += n
		if err != nil {
			if err != io.EOF {
				s.err = err
			}
			s.eof = true
		}
	}
}

// consume advances past n bytes of the buffer.
func (s *Scanner) consume(n int) {
	s.bufStart += n
	s.pos += int64(n)
}

// nextPiece returns the next line, or the next piece of an over-long line.
// first says this piece starts a line.
type piece struct {
	data     []byte
	off      int64
	first    bool
	complete bool // the piece ends its line
}

func (s *Scanner) next(p *piece, midLine bool) bool {
	data, complete, ok := s.readLine()
	if !ok {
		return false
	}
	p.data, p.off, p.first, p.complete = data, s.pos, !midLine, complete
	s.consume(len(data))
	if complete {
		s.line++
		if len(data) == 0 || data[len(data)-1] != '\n' {
			s.stats.NoFinalNewline = true
		}
	}
	return true
}

// Shared one-byte slices: a literal passed to an interface method would
// be allocated on every payload line.
var (
	newline        = []byte{'\n'}
	carriageReturn = []byte{'\r'}
)

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

// Next advances to the next event. It returns false at the end of input.
func (s *Scanner) Next() bool {
	var p piece
	for {
		var line []byte
		var lineNo int
		var lineOff int64
		if s.hasPending {
			line, lineNo, lineOff = s.pending, s.pendingLine, s.pendingPos
			s.hasPending = false
		} else {
			if !s.next(&p, false) {
				s.stats.Bytes = s.pos
				return false
			}
			lineNo, lineOff = s.line, p.off
			if !p.complete {
				lineNo = s.line + 1
				// An over-long line: only a payload line (handled below)
				// or an envelope up to MaxEnvelope is worth keeping.
				if p.data[0] == '\t' {
					s.stats.Lines++
					s.stats.OrphanPayloadLines++
					s.skipRest(&p)
					continue
				}
				l, ok := s.longLine(&p)
				if !ok {
					s.stats.Lines++
					s.stats.Oversize++
					s.stats.Corrupted++
					s.stats.CorruptedLines = keepLine(s.stats.CorruptedLines, lineNo, ReasonOversize)
					continue
				}
				line = l
			} else {
				line = p.data
			}
			s.stats.Lines++
		}
		body := trimEOL(line)
		if len(body) == 0 {
			s.stats.Blank++
			continue
		}
		if body[0] == '\t' {
			// Payload lines with no envelope announcing them.
			s.stats.OrphanPayloadLines++
			continue
		}
		if !s.parseEnvelope(body, lineNo) {
			continue
		}
		s.ev.Envelope = PayloadRef{Path: s.path, Offset: lineOff, Length: int64(len(line))}
		s.readPayload(lineOff + int64(len(line)))
		return true
	}
}

// skipRest discards the remainder of an over-long line.
func (s *Scanner) skipRest(p *piece) {
	for !p.complete {
		if !s.next(p, true) {
			return
		}
	}
}

// longLine gathers an over-long envelope line up to MaxEnvelope.
func (s *Scanner) longLine(p *piece) ([]byte, bool) {
	s.lineBuf = append(s.lineBuf[:0], p.data...)
	for !p.complete {
		if !s.next(p, true) {
			break
		}
		if len(s.lineBuf)+len(p.data) > MaxEnvelope {
			s.skipRest(p)
			return nil, false
		}
		s.lineBuf = append(s.lineBuf, p.data...)
	}
	return s.lineBuf, true
}

// glog prefix: <L><MMDD> <HH:MM:SS>.<usec6> <pid> <path>:<line>] <json>
// Parsed by hand: a regexp per line would dominate the cost.
func parsePrefix(b []byte) (level byte, ts string, pid int, emitter string, rest []byte, ok bool) {
	return parsePrefixCached(b, nil)
}

// prefixCache keeps the last timestamp and the recent emitter strings:
// consecutive records mostly share the timestamp, and a trace's records
// come from a few emitters in turn (convert_frame, output_graph,
// compile_fx…); allocating both per record showed up.
type prefixCache struct {
	ts       string
	emitters ringcache.Ring[string]
}

// emitter is b as a string, shared with the last record from that
// emitter.
func (c *prefixCache) emitter(b []byte) string {
	if c.emitters.Size() == 0 {
		c.emitters = ringcache.New[string](8)
	}
	if e := c.emitters.Find(func(s *string) bool { return *s == string(b) }); e != nil {
		return *e
	}
	return *c.emitters.Put(string(b))
}

func parsePrefixCached(b []byte, c *prefixCache) (level byte, ts string, pid int, emitter string, rest []byte, ok bool) {
	// Minimum: "V0403 07:28:48.051000 1 a:1] {"
	if len(b) < 30 {
		return
	}
	switch b[0] {
	case 'V', 'I', 'W', 'E', 'C', 'D':
	default:
		return
	}
	for _, i := range [...]int{1, 2, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16, 17, 18, 19, 20} {
		if b[i] < '0' || b[i] > '9' {
			return
		}
	}
	if b[5] != ' ' || b[8] != ':' || b[11] != ':' || b[14] != '.' || b[21] != ' ' {
		return
	}
	if c != nil && c.ts == string(b[1:21]) {
		ts = c.ts
	} else {
		ts = string(b[1:21])
		if c != nil {
			c.ts = ts
		}
	}
	i := 22
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		pid = pid*10 + int(b[i]-'0')
		i++
	}
	if i == 22 || i >= len(b) || b[i] != ' ' {
		return
	}
	i++
	// path:line] — the path may hold colons (Windows) but not "] ".
	end := bytes.Index(b[i:], []byte("] "))
	if end < 0 {
		return
	}
	if c != nil {
		emitter = c.emitter(b[i : i+end])
	} else {
		emitter = string(b[i : i+end])
	}
	if c := strings.LastIndexByte(emitter, ':'); c <= 0 {
		return
	}
	return b[0], ts, pid, emitter, b[i+end+2:], true
}

func intPtr(raw []byte) *int {
	n, ok := IntValue(raw)
	if !ok {
		return nil
	}
	if n >= 0 && n < len(smallInts) {
		return &smallInts[n]
	}
	// A copy escapes, not n: taking &n would put every call's n on the heap.
	m := n
	return &m
}

func (s *Scanner) parseEnvelope(body []byte, lineNo int) bool {
	st := s.stats
	level, ts, pid, emitter, js, ok := parsePrefixCached(body, &s.prefix)
	if !ok {
		st.NonGlog++
		st.NonGlogLines = keepLine(st.NonGlogLines, lineNo, ReasonNonGlog)
		return false
	}
	ev := Event{Line: lineNo, Level: level, Time: ts, PID: pid, Emitter: emitter}
	var hasPayload []byte
	valid := eachFieldBytes(js, func(kb []byte, v []byte) {
		switch string(kb) {
		case "rank":
			ev.Rank = intPtr(v)
		case "compiled_autograd_id":
			ev.ID.Autograd = intPtr(v)
		case "frame_id":
			ev.ID.Frame = intPtr(v)
		case "frame_compile_id":
			ev.ID.Compile = intPtr(v)
		case "attempt":
			ev.ID.Attempt = intPtr(v)
		case "has_payload":
			hasPayload = v
		default:
			if reserved[string(kb)] {
				return
			}
			k, ok := kindNames[string(kb)]
			if !ok {
				k = string(kb)
			}
			if ev.Kind == "" {
				ev.Kind, ev.Meta = k, v
				return
			}
			// A second non-reserved key: forward-compatible data. Keep the
			// kind deterministic (the known one wins, else the smaller name).
			other := k
			if (!knownKinds[ev.Kind] && knownKinds[k]) || (!knownKinds[ev.Kind] && !knownKinds[k] && k < ev.Kind) {
				other = ev.Kind
				ev.Kind, ev.Meta = k, v
			}
			if st.UnknownFields == nil {
				st.UnknownFields = map[string]int{}
			}
			st.UnknownFields[other]++
		}
	})
	if !valid {
		st.Corrupted++
		st.CorruptedLines = keepLine(st.CorruptedLines, lineNo, ReasonCorrupted)
		// A corrupted envelope may still announce a payload: skip its lines
		// so they are not mistaken for orphans.
		if bytes.Contains(js, []byte(`"has_payload"`)) {
			s.ev = Event{}
			s.skipPayload()
		}
		return false
	}
	if ev.Kind == "" {
		// Only reserved keys (e.g. a bare top-level stack): still a record.
		ev.Kind = "unknown"
		if bytes.Contains(js, []byte(`"stack"`)) {
			ev.Kind = "stack"
		}
	}
	if hasPayload != nil {
		ev.HasPayload, _ = StringValue(hasPayload)
		if ev.HasPayload == "" {
			ev.HasPayload = "?" // announced but unreadable: still read the lines
		}
	}
	// Metadata is decoded only where needed, by field lookup.
	metaString := func(key string) string {
		v, ok := Field(ev.Meta, key)
		if !ok {
			return ""
		}
		return s.internValue(v)
	}
	switch ev.Kind {
	case "artifact", "graph_dump", "link", "dump_file", "optimize_ddp_split_child":
		ev.ArtifactName = metaString("name")
	case "inductor_output_code":
		ev.ArtifactName = metaString("filename")
	case "str":
		if str, idx, ok := InternEntry(ev.Meta); ok && idx >= 0 && idx <= len(s.strings)+maxInternGap {
			for len(s.strings) <= idx {
				s.strings = append(s.strings, "")
			}
			s.strings[idx] = str
			st.StringTable = len(s.strings)
		}
	}
	st.Records++
	st.Events[ev.Kind]++
	if !knownKinds[ev.Kind] {
		if st.Unknown == nil {
			st.Unknown = map[string]int{}
		}
		st.Unknown[ev.Kind]++
	}
	if ev.Kind == "artifact" && ev.ArtifactName != "" {
		st.Artifacts[ev.ArtifactName]++
	}
	if id := s.idString(ev.ID); id != "" && !st.seenIDs[id] {
		st.seenIDs[id] = true
		st.CompileIDs = append(st.CompileIDs, id)
	}
	if ev.Rank != nil && !st.seenRanks[*ev.Rank] {
		st.seenRanks[*ev.Rank] = true
		st.Ranks = append(st.Ranks, *ev.Rank)
	}
	if !st.seenPIDs[pid] {
		st.seenPIDs[pid] = true
		st.PIDs = append(st.PIDs, pid)
	}
	switch ev.Kind {
	case "compilation_metrics":
		st.CompilationMetrics++
		if v, ok := Field(ev.Meta, "fail_type"); ok {
			if ft, _ := StringValue(v); ft != "" {
				st.Failed++
			}
		}
	case "chromium_event":
		st.ChromiumEvents++
	}
	if st.FirstTime == "" {
		st.FirstTime = ts
	}
	st.LastTime = ts
	s.ev = ev
	return true
}

// skipPayload passes over the TAB lines after a corrupted envelope.
func (s *Scanner) skipPayload() {
	var p piece
	for {
		data, _, ok := s.readLine()
		if !ok || len(data) == 0 || data[0] != '\t' {
			return
		}
		s.next(&p, false)
		s.stats.Lines++
		s.skipRest(&p)
	}
}

// readPayload hashes (and, when wanted, keeps) the TAB lines that follow the
// current envelope. The payload is the lines with one TAB stripped, a
// trailing "\r" removed, joined with "\n" (tlparse's definition).
func (s *Scanner) readPayload(start int64) {
	ev := &s.ev
	ev.Payload = PayloadRef{Path: s.path, Offset: start}
	if ev.HasPayload == "" {
		return
	}
	want := s.Want != nil && s.Want(ev)
	s.md5.Reset()
	s.deferring = s.DeferMD5
	s.hashIn = s.hashIn[:0]
	var p piece
	first := true
	for {
		data, _, ok := s.readLine()
		if !ok || len(data) == 0 || data[0] != '\t' {
			break
		}
		s.next(&p, false)
		s.stats.Lines++
		ev.PayloadLines++
		if !first {
			s.hashWrite(newline)
			if want {
				s.appendBody(ev, newline)
			}
		}
		first = false
		// Stream the line in pieces; strip the TAB from the first and the
		// EOL from the last.
		chunk := p.data[1:]
		for {
			last := p.complete
			c := chunk
			if last {
				c = trimEOL(c)
			} else if n := len(c); n > 0 && c[n-1] == '\r' {
				// A '\r' at a piece boundary might be the line's last byte:
				// hold it back until the next piece says.
				c = c[:n-1]
			}
			s.hashWrite(c)
			if want {
				s.appendBody(ev, c)
			}
			if last {
				break
			}
			heldCR := len(chunk) > 0 && chunk[len(chunk)-1] == '\r'
			if !s.next(&p, true) {
				break
			}
			if heldCR && !(p.complete && len(trimEOL(p.data)) == 0 && len(p.data) > 0 && p.data[0] == '\n') {
				s.hashWrite(carriageReturn)
				if want {
					s.appendBody(ev, carriageReturn)
				}
			}
			chunk = p.data
		}
	}
	ev.Payload.Length = s.pos - start
	if s.BorrowBody && ev.Body != nil {
		s.bodyBuf = ev.Body[:0]
	}
	if s.deferring {
		ev.MD5Deferred, ev.HashInput = true, s.hashIn
		return
	}
	ev.MD5OK = ev.HasPayload == md5Hex(s.md5)
	if !ev.MD5OK {
		s.stats.AddMD5Mismatch(ev.Line)
	}
}

// MaxDeferredHash is the largest payload whose MD5 DeferMD5 leaves to the
// caller; a larger one is hashed by the scanner as it streams (never held):
// copying big payloads to another goroutine cost more in allocation than
// the hashing it moved.
const MaxDeferredHash = 256 << 10

// hashWrite feeds the payload MD5, or, while deferring, collects its input
// for the caller (up to MaxDeferredHash, then hashes it here after all).
func (s *Scanner) hashWrite(b []byte) {
	if s.deferring {
		if len(s.hashIn)+len(b) <= MaxDeferredHash {
			s.hashIn = append(s.hashIn, b...)
			return
		}
		s.deferring = false
		s.md5.Write(s.hashIn)
		s.hashIn = s.hashIn[:0]
	}
	s.md5.Write(b)
}

func md5Hex(h hash.Hash) string {
	var sum [md5.Size]byte
	var hexSum [2 * md5.Size]byte
	hex.Encode(hexSum[:], h.Sum(sum[:0]))
	return string(hexSum[:])
}

// CheckMD5 does the check the scanner deferred (Event.MD5Deferred): whether
// the MD5 of ev.HashInput is the one the envelope announced. It allocates
// nothing.
func CheckMD5(ev *Event) bool {
	sum := md5.Sum(ev.HashInput)
	var hexSum [2 * md5.Size]byte
	hex.Encode(hexSum[:], sum[:])
	return ev.HasPayload == string(hexSum[:])
}

// AddMD5Mismatch counts a payload whose MD5 did not match, keeping the
// first line numbers in file order whatever order they are added in (the
// scanner counts the payloads it hashed, a caller those it deferred).
func (st *Stats) AddMD5Mismatch(line int) {
	st.PayloadMD5Mismatch++
	i := sort.Search(len(st.MD5MismatchLines), func(i int) bool { return st.MD5MismatchLines[i].Line >= line })
	if i >= maxKeptLines {
		return
	}
	st.MD5MismatchLines = slices.Insert(st.MD5MismatchLines, i, record.Skip{Line: line, Reason: ReasonMD5Mismatch})
	if len(st.MD5MismatchLines) > maxKeptLines {
		st.MD5MismatchLines = st.MD5MismatchLines[:maxKeptLines]
	}
}

func (s *Scanner) appendBody(ev *Event, b []byte) {
	limit := s.MaxBody
	if len(ev.Body)+len(b) > limit {
		ev.BodyTruncated = true
		b = b[:limit-len(ev.Body)]
	}
	if ev.Body == nil {
		if s.BorrowBody {
			ev.Body = s.bodyBuf[:0]
		} else {
			ev.Body = make([]byte, 0, min(max(512, len(b)), limit))
		}
	}
	ev.Body = append(ev.Body, b...)
}

// ReadPayload fetches one payload by its reference: the lines with their
// TAB stripped, joined with "\n".
func ReadPayload(ref PayloadRef) (string, error) {
	var sb strings.Builder
	if err := CopyPayload(&sb, ref); err != nil {
		return "", err
	}
	return sb.String(), nil
}

// CopyPayload streams one payload to w without holding it whole.
func CopyPayload(w io.Writer, ref PayloadRef) error {
	f, done, err := refReader(ref.Path)
	if err != nil {
		return err
	}
	defer done()
	if ref.Length == 0 {
		return nil
	}
	// One fetch reads ref.Length bytes once: a buffer that size instead of
	// the stream scanner's 1 MiB keeps thousands of fetches (the HTML report
	// fetches every payload it shows) from being allocation-bound.
	sc := newScanner(io.NewSectionReader(f, ref.Offset, ref.Length), ref.Path, int(min(max(ref.Length+1, 4096), 1<<20)))
	var p piece
	first := true
	for sc.next(&p, false) {
		if len(p.data) == 0 || p.data[0] != '\t' {
			return fmt.Errorf("%s: offset %d is not a payload line", ref.Path, p.off+ref.Offset)
		}
		if !first {
			if _, err := w.Write(newline); err != nil {
				return err
			}
		}
		first = false
		chunk := p.data[1:]
		for {
			c := chunk
			if p.complete {
				c = trimEOL(c)
			}
			if _, err := w.Write(c); err != nil {
				return err
			}
			if p.complete || !sc.next(&p, true) {
				break
			}
			chunk = p.data
		}
	}
	return sc.err
}

// EnvelopeValue fetches one envelope line by its reference and returns
// the raw value of one of its keys (the event kind's key holds the
// metadata): what ReadEnvelope(ref)[key] is, errors included, without
// decoding every key into a map (the HTML report reads the metadata of
// thousands of payload-less events this way). found is false when the key
// is absent.
func EnvelopeValue(ref PayloadRef, key string) (val []byte, found bool, err error) {
	f, done, err := refReader(ref.Path)
	if err != nil {
		return nil, false, err
	}
	b := make([]byte, ref.Length)
	_, err = f.ReadAt(b, ref.Offset)
	done()
	if err != nil && err != io.EOF {
		return nil, false, err
	}
	_, _, _, _, js, ok := parsePrefix(trimEOL(b))
	if ok && eachFieldBytes(js, func(k, v []byte) {
		if string(k) == key { // the last one wins, as in a map
			val, found = v, true
		}
	}) {
		return val, found, nil
	}
	// Not an envelope, or not valid JSON: ReadEnvelope says why, in its words.
	m, err := ReadEnvelope(ref)
	if err != nil {
		return nil, false, err
	}
	val, found = m[key]
	return val, found, nil
}

// ReadEnvelope fetches one envelope line by its reference and returns its
// keys, still raw (the event kind's value holds the metadata).
func ReadEnvelope(ref PayloadRef) (map[string]json.RawMessage, error) {
	f, done, err := refReader(ref.Path)
	if err != nil {
		return nil, err
	}
	defer done()
	b := make([]byte, ref.Length)
	if _, err := f.ReadAt(b, ref.Offset); err != nil && err != io.EOF {
		return nil, err
	}
	_, _, _, _, js, ok := parsePrefix(trimEOL(b))
	if !ok {
		return nil, fmt.Errorf("%s: offset %d is not an envelope line", ref.Path, ref.Offset)
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(js, &m); err != nil {
		return nil, fmt.Errorf("%s: offset %d: %v", ref.Path, ref.Offset, err)
	}
	return m, nil
}

// RankFileRE matches the file names PyTorch gives rank traces:
// dedicated_log_torch_trace_rank_<N>[_<anything>].log, and the same
// gzipped (….log.gz).
var RankFileRE = regexp.MustCompile(`^dedicated_log_torch_trace_rank_(\d+)(?:_[^/]*)?\.log(?:\.gz)?$`)

// RankFromName returns the rank a trace file's name gives, or -1.
func RankFromName(path string) int {
	m := RankFileRE.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return -1
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return n
}

// Sniff says how sure it is that an input is a TORCH_TRACE log: the
// PyTorch file name, or glog lines carrying a JSON envelope.
func Sniff(path string, head []byte) int {
	base := filepath.Base(path)
	if strings.HasPrefix(base, "dedicated_log_torch_trace") && len(head) > 0 {
		if looksLikeTrace(head) > 0 {
			return 95
		}
		return 60
	}
	return looksLikeTrace(head)
}

// looksLikeTrace scores the first lines: glog prefixes whose body is a JSON
// object (human TORCH_LOGS lines have text there instead).
func looksLikeTrace(head []byte) int {
	good, bad := 0, 0
	for len(head) > 0 && good+bad < 8 {
		i := bytes.IndexByte(head, '\n')
		var line []byte
		if i < 0 {
			line, head = head, nil
		} else {
			line, head = head[:i], head[i+1:]
		}
		line = trimEOL(line)
		if len(line) == 0 || line[0] == '\t' {
			continue
		}
		if _, _, _, _, rest, ok := parsePrefix(line); ok && len(rest) > 1 && rest[0] == '{' && rest[1] == '"' {
			good++
		} else {
			bad++
		}
	}
	switch {
	case good >= 2 && bad == 0:
		return 90
	case good >= 1 && good >= bad:
		return 70
	}
	return 0
}

// internValue decodes a raw JSON string, sharing the result between
// records: artifact names repeat on every compile.
func (s *Scanner) internValue(v []byte) string {
	if b, ok := RawString(v); ok {
		if x, ok := s.names[string(b)]; ok {
			return x
		}
	}
	str, _ := StringValue(v)
	if len(str) <= 256 && len(s.names) < 4096 {
		if s.names == nil {
			s.names = map[string]string{}
		}
		s.names[str] = str
	}
	return str
}

// idString prints a compile id once per run of records with the same id.
func (s *Scanner) idString(id CompileID) string {
	eq := func(a, b *int) bool { return a == b || a != nil && b != nil && *a == *b }
	if s.hasID && eq(id.Autograd, s.lastID.Autograd) && eq(id.Frame, s.lastID.Frame) &&
		eq(id.Compile, s.lastID.Compile) && eq(id.Attempt, s.lastID.Attempt) {
		return s.lastIDs
	}
	s.lastID, s.lastIDs, s.hasID = id, id.String(), true
	return s.lastIDs
}
