package enginelog

import (
	"bytes"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/bringup-tool/bringup/litscan"
	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/ringcache"
)

// hdrKind is the logger header family a line carried. It decides how
// continuation lines are joined: vLLM and glog repeat their header on every
// line of a multi-line message, SGLang and ATOM print it on the first only.
type hdrKind uint8

const (
	hdrNone    hdrKind = iota
	hdrVLLM            // "INFO 12-17 13:32:44 [file.py:815] "
	hdrGlog            // "I0227 20:02:12.576000 139 torch/x.py:789] "
	hdrSGLang          // "[2025-10-29 11:25:58 TP6] "
	hdrATOM            // "[atom 06:33:57] "
	hdrTRT             // "[07/08/2025-19:47:15] [TRT-LLM] [RANK 1] [E] "
	hdrPython          // "2025-03-26 13:18:06,621 - lmdeploy - ERROR - ", "22:36:40 [INFO] "
	hdrHIP             // ":1:hip_memory.cpp:3354: " (ROCm's runtime log, AMD_LOG_LEVEL)
	hdrPytest          // "E   " (pytest's report of a failed test's error lines)
	hdrTracing         // "2023-10-16T06:54:28.059380Z ERROR text_generation_launcher: " (Rust's tracing)
)

// repeatsHeader reports whether continuation lines of this family carry the
// header again (so that "same header" means "same record").
func (h hdrKind) repeatsHeader() bool { return h == hdrVLLM || h == hdrGlog }

const maxLabels = 8

type span struct{ a, b int32 }

func (s span) of(b []byte) []byte { return b[s.a:s.b] }

// peeled is one physical line taken apart. Spans index line, which points
// into the chunk's read buffer or its ANSI-stripped copy; nothing here is
// allocated per line.
type peeled struct {
	// What the joiner reads of every line comes first, so it shares as
	// few cache lines as possible (another core wrote them).
	n         int64  // 1-based physical line number
	line      []byte // the line without '\n', trailing '\r' and ANSI escapes
	cutLen    int64  // >0: the line was cut; its original length
	skip      string // non-empty: the line is not used, and why
	procEnd   int32  // end of collector and process prefixes
	keyEnd    int32  // end of the logger header (without its separating space)
	body      span
	hdr       hdrKind
	validUTF8 bool
	// Set by peelBlock's line scan (false: not known): the line holds no
	// byte under 0x20, and none from 0x80.
	noCtl, ascii bool
	// nlabels here fills the bytes after the bools: the struct is 320
	// bytes, five cache lines, and what the joiner reads lies in the
	// first four of an entry (a block's lines, once past 32 KiB, are an
	// allocation of their own that starts on a page, so every entry
	// starts on a cache line; at 328 bytes most spanned five).
	nlabels int32
	// mask is the literal groups found in the body (Options.Scan); 0
	// without a scan.
	mask   uint64
	level  record.Level
	rank   record.Rank
	tm     time.Time
	repeat int
	// Computed by the peeler so the (serial) joiner does less: the labels
	// as shared strings when they are exactly a cached prefix run, the
	// emitter as a shared string, and whether the body is valid UTF-8.
	labelStrs []string
	emitStr   string
	collEnd   int32 // end of collector prefixes
	emitter   span
	labels    [maxLabels]span
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isWord(c byte) bool {
	return c == '_' || isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// digits returns the value of b[i:i+n] if all are digits, else -1.
func digits(b []byte, i, n int) int {
	if i < 0 || i+n > len(b) {
		return -1
	}
	v := 0
	for _, c := range b[i : i+n] {
		if !isDigit(c) {
			return -1
		}
		v = v*10 + int(c-'0')
	}
	return v
}

// atoi reads a run of digits at b[i:], returning value and end; end == i
// when there is none. Values are capped to stay in int range.
func atoi(b []byte, i int) (int, int) {
	v, j := 0, i
	for j < len(b) && isDigit(b[j]) {
		if v < 1e12 {
			v = v*10 + int(b[j]-'0')
		}
		j++
	}
	return v, j
}

// hms parses "HH:MM:SS" at b[i:].
func hms(b []byte, i int) (h, m, s int, ok bool) {
	h, m, s = digits(b, i, 2), digits(b, i+3, 2), digits(b, i+6, 2)
	if h < 0 || m < 0 || s < 0 || b[i+2] != ':' || b[i+5] != ':' || h > 23 || m > 59 || s > 60 {
		return 0, 0, 0, false
	}
	return h, m, s, true
}

func validMD(mo, d int) bool { return mo >= 1 && mo <= 12 && d >= 1 && d <= 31 }

// civil is a parsed date and time of day, turned into a time.Time only
// when needed (consecutive lines mostly share theirs: see timeCache).
type civil struct{ y, mo, d, h, m, s, ns int }

func (c civil) time() time.Time {
	return time.Date(c.y, time.Month(c.mo), c.d, c.h, c.m, c.s, c.ns, time.UTC)
}

// dateTime parses "YYYY-MM-DD HH:MM:SS" at the start of b and a fraction
// after '.' (or ',' too when comma is set, as Python's logging prints
// it); end is 0 when b does not start with one.
func dateTime(b []byte, comma bool) (c civil, end int) {
	return dateTimeSep(b, ' ', comma)
}

// isoStamp parses ISO 8601's "YYYY-MM-DDTHH:MM:SS[.fff][Z|±HH:MM]" at the
// start of b (what CI systems put before each line: Buildkite in
// brackets, GitHub Actions bare with seven fraction digits); fd is the
// number of fraction digits, end 0 when b does not start with one.
func isoStamp(b []byte) (c civil, fd, end int) {
	c, end = dateTimeSep(b, 'T', false)
	if end == 0 {
		return c, 0, 0
	}
	if end > 19 {
		fd = end - 20
	}
	switch {
	case end < len(b) && b[end] == 'Z':
		end++
	case end+6 <= len(b) && (b[end] == '+' || b[end] == '-') && b[end+3] == ':' && digits(b, end+1, 2) >= 0 && digits(b, end+4, 2) >= 0:
		end += 6
	}
	return c, fd, end
}

func dateTimeSep(b []byte, sep byte, comma bool) (c civil, end int) {
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || b[10] != sep {
		return c, 0
	}
	c.y, c.mo, c.d = digits(b, 0, 4), digits(b, 5, 2), digits(b, 8, 2)
	var ok bool
	c.h, c.m, c.s, ok = hms(b, 11)
	if c.y < 0 || !ok || !validMD(c.mo, c.d) {
		return c, 0
	}
	end = 19
	if end < len(b) && (b[end] == '.' || comma && b[end] == ',') {
		c.ns, end = frac(b, end+1)
	}
	return c, end
}

// timeCache avoids rebuilding a time.Time for consecutive lines that share
// a timestamp (most of them do: vLLM prints whole seconds).
type timeCache struct {
	key [40]byte
	n   int
	t   time.Time
}

func (c *timeCache) get(raw []byte) (time.Time, bool) {
	if len(raw) == c.n && len(raw) <= len(c.key) && bytes.Equal(c.key[:c.n], raw) {
		return c.t, true
	}
	return time.Time{}, false
}

// time is c's time for the stamp raw when it has it, else civ's, kept.
func (c *timeCache) time(raw []byte, civ civil) time.Time {
	if t, ok := c.get(raw); ok {
		return t
	}
	t := civ.time()
	c.put(raw, t)
	return t
}

func (c *timeCache) put(raw []byte, t time.Time) {
	if len(raw) <= len(c.key) {
		c.n = copy(c.key[:], raw)
		c.t = t
	}
}

// peeler holds per-goroutine scratch state for peeling lines.
type peeler struct {
	line peeled // the line being joined (joinBlock, the stitcher)
	tc   timeCache
	// The recent-value memos (ringcache), made by rings on first use.
	emitters ringcache.Ring[string]
	prefixes map[string]*prefixEntry
	recent   ringcache.Ring[*prefixEntry] // the prefix runs used last, of prefixes
	scan     *litscan.Grouped             // nil: no literal masks
	hdrs     ringcache.Ring[hdrEntry]
	// heads are the first 8 bytes of the last len(heads) headers stored
	// in hdrs, which replaces its oldest as heads does: a line with no
	// header tries them all at little cost.
	heads   [8]uint64
	nextHdr int
	// where vllmHeader found the timestamp, relative to the header's
	// start, for storeHeader
	hts, htsEnd int32
	masks       ringcache.Ring[maskEntry] // see maskOf
	lead        func(body []byte) uint64  // Options.Lead
	critical    uint64                    // Options.Critical
	maskMap     map[string]*maskKnown
	// prevKnown is the whole-body entry of the last body maskOf saw (nil:
	// none, or one longer than maxMemoBody): its follow predicts the
	// next body of a crash loop.
	prevKnown *maskKnown
}

// rings makes the peeler's ring memos (a zero peeler has none yet).
func (p *peeler) rings() {
	p.emitters = ringcache.New[string](16)
	p.recent = ringcache.New[*prefixEntry](8)
	p.hdrs = ringcache.New[hdrEntry](len(p.heads))
	p.masks = ringcache.New[maskEntry](8)
}

// prefixEntry is a parsed run of process prefixes.
type prefixEntry struct {
	key  string
	tail uint64 // key's last 8 bytes (0 when shorter)
	// open: key ends with ")", so recentPrefix leaves it to the slow
	// path (on a longer line the region would not end there)
	open   bool
	rank   record.Rank
	labels [maxLabels]span // relative to the run's start
	n      int
	strs   []string // the labels as strings (shared, read-only)
}

// prefixRegion finds, without judging them, where a run of "(…) " and
// "[…]:" groups at b[i:] ends; procPrefix decides what they mean.
func prefixRegion(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case '(':
			k := bytes.IndexByte(b[i:min(len(b), i+200)], ')')
			if k < 0 {
				return i
			}
			// "(X pid=1)foo" is no prefix (procPrefix says so too): the
			// region must not take it in, or the cache entry of a line
			// that ended at ")" would peel it.
			j := i + k + 1
			if j < len(b) {
				if b[j] != ' ' {
					return i
				}
				j++
			}
			i = j
		case '[':
			k := bytes.IndexByte(b[i:min(len(b), i+42)], ']')
			if k < 0 || i+k+1 >= len(b) || b[i+k+1] != ':' {
				return i
			}
			i += k + 2
			i += rankSpace(b, i-k-2, i)
		default:
			return i
		}
	}
	return i
}

// rankSpace is 1 when the "[…]:" prefix at b[start:end] is PyTorch's
// "[rank0]: ", which puts one space between itself and the line it
// prefixes (a traceback's "[rank0]:   File …", "[rank0]: ValueError: …"):
// that space is the prefix's, not the body's, or every line of the
// traceback would read indented one column more and its exception line as
// source. torchrun's "[default0]:" adds no space; "[rank0]:[W108 …]" has
// none to take.
func rankSpace(b []byte, start, end int) int {
	if end < len(b) && b[end] == ' ' && end-start > 7 && string(b[start+1:start+5]) == "rank" {
		return 1
	}
	return 0
}

func (p *peeler) cachedPrefix(key []byte) *prefixEntry {
	if len(key) == 0 {
		return nil
	}
	if e := p.recent.Find(func(e **prefixEntry) bool { return (*e).key == string(key) }); e != nil {
		return *e
	}
	if e := p.prefixes[string(key)]; e != nil {
		p.recent.Put(e)
		return e
	}
	return nil
}

// recentPrefix finds, among the recently used prefix runs, one that b[i:]
// starts with and that prefixRegion would end right after: the same
// answer as cachedPrefix(b[i:prefixRegion(b, i)]) without the region scan.
// A run that ended at its line's end without a separator (")" last) is
// left to the slow path: on a longer line the region would not take it.
func (p *peeler) recentPrefix(b []byte, i int) *prefixEntry {
	r := b[i:]
	// Ranks take turns, each printing a few lines: the ring tries the
	// run that followed the last hit first.
	for k := range p.recent.Len() {
		at := p.recent.Probe(k)
		e := *p.recent.At(at)
		n := len(e.key)
		// The tail compare covers the key's last 8 bytes.
		if n < 8 || n > len(r) || e.open || le64b(r, n-8) != e.tail || string(r[:n-8]) != e.key[:n-8] {
			continue
		}
		// prefixRegion stops at once on a byte that opens no group.
		if n < len(r) && (r[n] == '(' || r[n] == '[') && prefixRegion(b, i+n) != i+n {
			return nil // more groups follow: a longer run
		}
		// "[rank0]:" cached from "[rank0]:[W…]" is "[rank0]: " here.
		if n < len(r) && r[n] == ' ' {
			if j := strings.LastIndexByte(e.key, '['); j >= 0 && rankSpace(b, i+j, i+n) == 1 {
				return nil
			}
		}
		p.recent.Hit(at)
		return e
	}
	return nil
}

func le64b(b []byte, i int) uint64 {
	b = b[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// hdrEntry is a vLLM header already parsed: "INFO 11-29 00:00:32
// [metrics.py:455] " repeats on the lines every rank prints in that second.
type hdrEntry struct {
	key  []byte // the header bytes with the space after it
	head uint64 // key's first 8 bytes
	tail uint64 // key's last 8 bytes
	// mid is key's 8 bytes that end where its timestamp does (at midAt
	// on): headers of one emitter printed in other seconds differ there.
	mid       uint64
	midAt     int32
	ts, tsEnd int32 // the timestamp "MM-DD HH:MM:SS[.fff]", relative
	level     record.Level
	emitter   span // relative to the header's start
	emitStr   string
	tm        time.Time
	keyEnd    int32 // relative
}

// cachedHeader peels a vLLM header at b[i:] that is a recent one byte for
// byte. vllmHeader reads nothing past the space after "]", so equal bytes
// give an equal result. A recent header that differs only in its
// timestamp is peeled by retime.
func (p *peeler) cachedHeader(l *peeled, b []byte, i int) (int, bool) {
	r := b[i:]
	if len(r) < 9 {
		return 0, false
	}
	head := le64b(r, 0) // "INFO 11-": a line with no header fails here
	// Each rank prints the same headers in the same order: the ring
	// tries first the entry that followed the last hit last time.
	var cand *hdrEntry
	for k := range p.hdrs.Len() {
		if k == 1 && cand == nil && !p.anyHead(head) {
			return 0, false // a line with no header, mostly
		}
		at := p.hdrs.Probe(k)
		e := p.hdrs.At(at)
		n := len(e.key)
		if e.head != head || n == 0 || n > len(r) || le64b(r, n-8) != e.tail {
			continue
		}
		if le64b(r, int(e.midAt)) != e.mid || string(r[:n]) != string(e.key) {
			if cand == nil {
				cand = e // most likely the same header in another second
			}
			continue
		}
		p.hdrs.Hit(at)
		l.hdr = hdrVLLM
		l.level = e.level
		l.emitter = span{int32(i) + e.emitter.a, int32(i) + e.emitter.b}
		l.emitStr = e.emitStr
		l.tm = e.tm
		l.keyEnd = int32(i) + e.keyEnd
		return i + n, true
	}
	if cand != nil {
		return p.retime(l, b, i, cand)
	}
	return 0, false
}

// anyHead reports whether some header entry starts with the 8 bytes head.
func (p *peeler) anyHead(head uint64) bool {
	h := &p.heads
	return h[0] == head || h[1] == head || h[2] == head || h[3] == head ||
		h[4] == head || h[5] == head || h[6] == head || h[7] == head
}

// retime peels a vLLM header at b[i:] that is the one of entry at but for
// its timestamp: every second brings new headers that differ from the
// last second's only there. When the bytes before and after the
// timestamp are the entry's, vllmHeader would find the same level word,
// the timestamp at the same place (if it parses and ends where the
// entry's did) and the same emitter after it: only the time is new. The
// header is then stored as a new entry, as a slow-path peel would.
func (p *peeler) retime(l *peeled, b []byte, i int, e *hdrEntry) (int, bool) {
	r := b[i:]
	n, ts, te := len(e.key), int(e.ts), int(e.tsEnd)
	if ts <= 0 || te <= ts || te >= n || n > len(r) ||
		string(r[:ts]) != string(e.key[:ts]) || string(r[te:n]) != string(e.key[te:n]) {
		return 0, false
	}
	c, end, ok := vllmTime(r, ts)
	if !ok || end != te {
		return 0, false
	}
	l.hdr = hdrVLLM
	l.level = e.level
	l.emitter = span{int32(i) + e.emitter.a, int32(i) + e.emitter.b}
	l.emitStr = e.emitStr
	l.keyEnd = int32(i) + e.keyEnd
	l.tm = p.tc.time(r[ts:te], c)
	p.hts, p.htsEnd = e.ts, e.tsEnd
	p.storeHeader(l, b, i, i+n)
	return i + n, true
}

// storeHeader keeps the vLLM header just peeled at b[i:j] for the lines
// that repeat it.
func (p *peeler) storeHeader(l *peeled, b []byte, i, j int) {
	if l.hdr != hdrVLLM || j-i < 9 || j-i > 300 || b[j-1] != ' ' {
		return
	}
	if p.hts <= 0 || p.htsEnd < 8 || int(p.htsEnd) >= j-i {
		return // not where vllmHeader leaves a timestamp: keep no entry
	}
	e := p.hdrs.Add() // the oldest entry, overwritten: its key buffer is reused
	e.key = append(e.key[:0], b[i:j]...)
	e.head = le64b(e.key, 0)
	p.heads[p.nextHdr%len(p.heads)] = e.head
	p.nextHdr++
	e.tail = le64b(e.key, len(e.key)-8)
	e.ts, e.tsEnd = p.hts, p.htsEnd
	e.midAt = p.htsEnd - 8
	e.mid = le64b(e.key, int(e.midAt))
	e.level = l.level
	e.emitter = span{l.emitter.a - int32(i), l.emitter.b - int32(i)}
	e.emitStr = l.emitStr
	e.tm = l.tm
	e.keyEnd = l.keyEnd - int32(i)
}

func (p *peeler) storePrefix(key []byte, l *peeled, start, n0 int) {
	if p.prefixes == nil {
		p.prefixes = map[string]*prefixEntry{}
	}
	if len(p.prefixes) >= 4096 {
		return
	}
	e := &prefixEntry{key: string(key), rank: l.rank, open: len(key) > 0 && key[len(key)-1] == ')'}
	if len(key) >= 8 {
		e.tail = le64b(key, len(key)-8)
	}
	for k := n0; k < int(l.nlabels); k++ {
		e.labels[e.n] = span{l.labels[k].a - int32(start), l.labels[k].b - int32(start)}
		e.strs = append(e.strs, strings.ToValidUTF8(string(l.labels[k].of(l.line)), "\uFFFD"))
		e.n++
	}
	p.prefixes[e.key] = e
	p.recent.Put(e)
}

// peel takes one cleaned line apart: collector prefixes, process prefixes
// (nested), then one logger header, then the body.
func (p *peeler) peel(l *peeled) {
	if p.hdrs.Size() == 0 {
		p.rings()
	}
	b := l.line
	l.rank = record.NoRank
	l.nlabels = 0
	l.hdr = hdrNone
	l.level = ""
	l.emitter = span{}
	l.repeat = 0
	l.tm = time.Time{}
	i := 0

	// A paste's indent before a process prefix (" (Worker_TP0 pid=1) …"),
	// when the depaster had no run of lines to tell it by.
	if len(b) > 2 && b[0] == ' ' {
		k := 1
		for k < 4 && k < len(b) && b[k] == ' ' {
			k++
		}
		if p.procPrefixAt(b, k) {
			i = k
		}
	}
	// Collector prefixes: at most two (e.g. a shipper timestamp and a
	// container name).
	for k := 0; k < 2; k++ {
		j := p.collector(l, b, i)
		if j == i && i < len(b) && (isDigit(b[i]) || b[i] >= 'a' && b[i] <= 'z') {
			j = p.tokenBeforeProc(l, b, i)
		}
		if j == i {
			break
		}
		i = j
	}
	l.collEnd = int32(i)
	// Process prefixes, nested: "(EngineCore_DP0 pid=1) (Worker_TP7 pid=2) ",
	// "[rank0]:", "[default3]:". The first may have lost its "(". The same
	// few prefixes start almost every line, so parsed ones are cached.
	var c *prefixEntry
	end := i
	if i < len(b) && (b[i] == '(' || b[i] == '[') {
		if c = p.recentPrefix(b, i); c != nil {
			end = i + len(c.key)
		} else {
			end = prefixRegion(b, i)
			c = p.cachedPrefix(b[i:end])
		}
	}
	l.labelStrs = nil
	// With no collector prefix (i == 0) the rank is still the NoRank set
	// above.
	if c != nil && (i == 0 || l.rank == record.NoRank) {
		l.rank = c.rank
		if l.nlabels == 0 && i == 0 {
			// No collector prefix: the run's labels are the line's.
			l.labels = c.labels
			l.nlabels = int32(c.n)
			l.labelStrs = c.strs
		} else {
			if l.nlabels == 0 {
				l.labelStrs = c.strs
			}
			for k := 0; k < c.n; k++ {
				l.addLabel(i+int(c.labels[k].a), i+int(c.labels[k].b))
			}
		}
		i = end
	} else {
		start, n0, rank0 := i, l.nlabels, l.rank
		for k := 0; k < 6; k++ {
			j := p.procPrefix(l, b, i, k == 0 && i == 0)
			if j == i {
				break
			}
			i = j
		}
		if i == end && end > start && rank0 == record.NoRank {
			p.storePrefix(b[start:end], l, start, int(n0))
		}
	}
	l.procEnd = int32(i)
	l.keyEnd = int32(i)
	n0 := l.nlabels
	p.hts, p.htsEnd = 0, 0
	if j, ok := p.cachedHeader(l, b, i); ok {
		i = j
	} else {
		i = p.header(l, b, i)
		if l.nlabels != n0 {
			l.labelStrs = nil // glog compile-id tags are labels too
		}
		l.emitStr = p.emitter(l.emitter.of(b))
		p.storeHeader(l, b, int(l.procEnd), i)
	}
	l.body = span{int32(i), int32(len(b))}
	// tqdm redraws a line with '\r': keep what a terminal would show last.
	if !l.noCtl && bytes.IndexByte(b[i:], '\r') >= 0 {
		l.body.a = int32(i + bytes.LastIndexByte(b[i:], '\r') + 1)
	}
	body := l.body.of(b)
	l.validUTF8 = l.ascii || utf8.Valid(body)
	// Meta-internal torch builds append these to every glog line.
	if len(body) > 0 && body[len(body)-1] == '"' {
		if k := bytes.LastIndex(body, []byte(` #threadId="`)); k >= 0 {
			l.body.b = l.body.a + int32(k)
			body = l.body.of(b)
		}
	}
	// Ray: " [repeated 30x across cluster]".
	if len(body) > 0 && body[len(body)-1] == ']' {
		const suf = "x across cluster]"
		if bytes.HasSuffix(body, []byte(suf)) {
			e := len(body) - len(suf)
			s := e
			for s > 0 && isDigit(body[s-1]) {
				s--
			}
			const pre = " [repeated "
			if s < e && s >= len(pre) && string(body[s-len(pre):s]) == pre {
				l.repeat, _ = atoi(body, s)
				l.body.b = l.body.a + int32(s-len(pre))
			}
		}
	}
	l.mask = 0
	if p.scan != nil {
		if body := l.body.of(b); len(body) > 0 {
			l.mask = p.maskOf(body)
		}
		if l.level == record.LevelCritical {
			l.mask |= p.critical
		}
	}
}

// fresh is body's mask computed afresh: the scan's, and Lead's bits. (A
// body alike but for its numbers gets the same Lead bits: what Lead reads,
// an exception type at the start, is the same.)
func (p *peeler) fresh(text string, body []byte) uint64 {
	m := p.scan.Mask(text)
	if p.lead != nil {
		m |= p.lead(body)
	}
	return m
}

// maskOf is p.scan.Mask of body, from a memo of the last few bodies when
// it is one of them byte for byte, or one of them but for its numbers and
// no literal holding a digit can be on either (litscan.SameButNumbers,
// Grouped.NumbersMatter): the workers of a TP group print the same
// messages one after another, most of them again and again with other
// numbers (throughput, progress bars, timings), and comparing a body
// costs a fraction of scanning it. Past the ring (a ringcache of 8, the
// oldest replaced first) bodies of up to maxMemoBody bytes are kept whole
// in maskMap, each with the body that followed it last time: a crash loop
// repeats tracebacks longer than the ring, and that prediction is one
// compare where the map's lookup hashes the body.
func (p *peeler) maskOf(body []byte) uint64 {
	text := unsafe.String(&body[0], len(body))
	// The ring's guess first, the entry that followed the last hit last
	// time (the ranks print the same few messages in the same order);
	// then the body that followed the last one the last time it came,
	// one compare: a crash loop prints the same tracebacks again and
	// again, each longer than the ring; then the ring's others.
	n := p.masks.Len()
	for k := 0; k < n; k++ {
		at := p.masks.Probe(k)
		e := p.masks.At(at)
		// Its body, or one alike but for numbers no literal can be on.
		if old := unsafe.String(unsafe.SliceData(e.body), len(e.body)); e.numbers && old == text || !e.numbers && litscan.SameButNumbers(old, text) {
			p.masks.Hit(at)
			p.prevKnown = e.known
			return e.mask
		}
		if k > 0 {
			continue
		}
		if f := p.prevKnown; f != nil && f.follow != nil && f.follow.body == text {
			p.prevKnown = f.follow
			return f.follow.mask
		}
	}
	if len(body) > maxMemoBody {
		p.prevKnown = nil
		return p.fresh(text, body)
	}
	// Bodies that come back after more than a few others are looked up
	// whole.
	known := p.maskMap[text]
	keep := known
	if known == nil {
		known = &maskKnown{body: string(body), mask: p.fresh(text, body), numbers: p.scan.NumbersMatter(text)}
		keep = known
		if p.maskMap == nil {
			p.maskMap = map[string]*maskKnown{}
		}
		if len(p.maskMap) < maxMemoBodies {
			p.maskMap[known.body] = known
		} else {
			keep = nil // not kept: nothing links to it (no chain grows)
		}
	}
	if p.prevKnown != nil && keep != nil {
		p.prevKnown.follow = keep
	}
	p.prevKnown = keep
	e := p.masks.Add() // the oldest entry, overwritten: its body buffer is reused
	e.body = append(e.body[:0], body...)
	e.mask, e.numbers, e.known = known.mask, known.numbers, keep
	return known.mask
}

// The mask memo keeps bodies of up to maxMemoBody bytes, and up to
// maxMemoBodies of them looked up whole (a few MiB per peeler at most).
const (
	maxMemoBody   = 512
	maxMemoBodies = 4096
)

// maskKnown is a body's mask and whether its numbers matter (see
// maskEntry), remembered by the whole body, and the body that came
// right after it the last time (nil: none known).
type maskKnown struct {
	body    string
	mask    uint64
	numbers bool
	follow  *maskKnown
}

type maskEntry struct {
	body []byte
	mask uint64
	// numbers: a body that differs from this one in its numbers may
	// differ in its mask (only an equal one takes it).
	numbers bool
	known   *maskKnown // the body's whole-body entry (nil: not kept)
}

func (l *peeled) addLabel(a, b int) {
	if l.nlabels < maxLabels {
		l.labels[l.nlabels] = span{int32(a), int32(b)}
		l.nlabels++
	}
}

var monthNames = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// collector peels one collector prefix at b[i:] and returns the new offset
// (i when there is none): kubectl "[pod/x/y] ", a log shipper's
// "2026-04-19 12:10:56.886 | ", journald "Aug 19 18:30:22 host unit[pid]: ",
// docker compose "name   | ".
func (p *peeler) collector(l *peeled, b []byte, i int) int {
	r := b[i:]
	if len(r) == 0 {
		return i
	}
	switch {
	case r[0] == '[':
		if len(r) > 5 && string(r[:5]) == "[pod/" {
			if k := bytes.IndexByte(r[:min(len(r), 300)], ']'); k > 0 {
				l.addLabel(i, i+k+1)
				if k+1 < len(r) && r[k+1] == ' ' {
					return i + k + 2
				}
				return i + k + 1
			}
		}
		// "[2026-02-24T20:21:58Z] ": a CI system's stamp (Buildkite).
		if len(r) > 21 && isDigit(r[1]) {
			if c, _, e := isoStamp(r[1:]); e > 0 && e+2 < len(r) && r[e+1] == ']' && r[e+2] == ' ' {
				l.tm = c.time()
				l.addLabel(i, i+e+2)
				return i + e + 3
			}
		}
		// "[80746] [rank0]:…": a bracketed number that a collector put
		// before each line (a viewer's line number, a sequence), seen
		// only in front of a process prefix: taken alone, "[3] x" is as
		// likely a message's own list item or a shell's job number.
		if _, e := atoi(r, 1); e > 1 && e+1 < len(r) && r[e] == ']' && r[e+1] == ' ' {
			if next := i + e + 2; p.procPrefixAt(b, next) {
				l.addLabel(i, i+e+1)
				return next
			}
		}
		return i
	case isDigit(r[0]):
		// "YYYY-MM-DD HH:MM:SS[.fff] | "
		if dt, j := dateTime(r, false); j > 0 && j+2 < len(r) && r[j] == ' ' && r[j+1] == '|' && r[j+2] == ' ' {
			l.tm = dt.time()
			l.addLabel(i, i+j)
			return i + j + 3
		}
		// "2024-05-01T10:00:00.1234567Z ": GitHub Actions' stamp (seven
		// fraction digits), docker logs --timestamps' (nine, always), or
		// any ISO stamp before a process prefix. A bare stamp before
		// other text is left to the header (TGI's "…Z ERROR
		// text_generation_launcher: …", six digits).
		if c, fd, j := isoStamp(r); j > 0 && j+1 < len(r) && r[j] == ' ' && (fd == 7 || fd == 9 || p.procPrefixAt(b, i+j+1)) {
			l.tm = c.time()
			l.addLabel(i, i+j)
			return i + j + 1
		}
		return i
	case r[0] >= 'A' && r[0] <= 'Z' && len(r) > 16 && r[3] == ' ':
		// journald: "Aug 19 18:30:22 host unit[pid]: "
		mo := 0
		for k, n := range monthNames {
			if string(r[:3]) == n {
				mo = k + 1
				break
			}
		}
		if mo > 0 {
			d := digits(r, 4, 2)
			if r[4] == ' ' {
				d = digits(r, 5, 1)
			}
			h, m, s, ok := hms(r, 7)
			if d > 0 && ok && r[15] == ' ' {
				host := bytes.IndexByte(r[16:min(len(r), 16+256)], ' ')
				if host > 0 {
					u := r[16+host+1:]
					colon := bytes.Index(u[:min(len(u), 256)], []byte("]: "))
					open := bytes.IndexByte(u[:max(colon, 0)], '[')
					if colon > 0 && open > 0 {
						pid, e := atoi(u, open+1)
						if e == open+1+len(u[open+1:colon]) && pid > 0 {
							l.rank.PID = pid
							l.tm = time.Date(0, time.Month(mo), d, h, m, s, 0, time.UTC)
							end := i + 16 + host + 1 + colon + 2
							l.addLabel(i, end)
							return end + 1
						}
					}
				}
			}
		}
		fallthrough
	default:
		if k, e := composePrefix(r); e > 0 {
			l.addLabel(i, i+k)
			return i + e
		}
		return i
	}
}

// tokenBeforeProc takes a word with a digit in it, starting with a digit
// or a lower-case letter, before a process prefix as a collector's
// prefix: srun --label's "0: [rank0]:…", pdsh's "node01: [default3]:…", a
// log file's step name "0000-steps/0 [default6]:[rank6]:…". A word that
// ends in ':' is taken only when it is a task number or a lower-case host
// name, not an exception's type ("RuntimeError: [Rank 0] …"). It returns
// i when there is none.
func (p *peeler) tokenBeforeProc(l *peeled, b []byte, i int) int {
	j, digit, upper := i, false, false
	for ; j < len(b) && j-i < 80; j++ {
		c := b[j]
		if isDigit(c) {
			digit = true
		} else if c >= 'A' && c <= 'Z' {
			upper = true
		} else if !(c >= 'a' && c <= 'z' || c == '_' || c == '-' || c == '.' || c == '/' || c == ':') {
			break
		}
	}
	if !digit || j == i || j+1 >= len(b) || b[j] != ' ' || b[j+1] != '[' && b[j+1] != '(' {
		return i
	}
	if b[j-1] == ':' && upper {
		return i
	}
	if !p.procPrefixAt(b, j+1) {
		return i
	}
	l.addLabel(i, j)
	return j + 1
}

// composePrefix reads docker compose's "name<pad>| " (at least one pad
// space) at the start of r: the name's end k and the body's start e, 0
// when r does not start so.
func composePrefix(r []byte) (k, e int) {
	for k < len(r) && k < 64 && (isWord(r[k]) || r[k] == '-' || r[k] == '.') {
		k++
	}
	if k == 0 || k >= len(r) || r[k] != ' ' {
		return 0, 0
	}
	e = k
	for e < len(r) && r[e] == ' ' {
		e++
	}
	if e < len(r) && r[e] == '|' && (e+1 == len(r) || r[e+1] == ' ') {
		if e+1 == len(r) {
			return k, e + 1
		}
		return k, e + 2
	}
	return 0, 0
}

// frac reads fractional-second digits at b[i:] and returns nanoseconds.
func frac(b []byte, i int) (int, int) {
	ns, n, j := 0, 0, i
	for j < len(b) && isDigit(b[j]) {
		if n < 9 {
			ns = ns*10 + int(b[j]-'0')
			n++
		}
		j++
	}
	for ; n < 9 && n > 0; n++ {
		ns *= 10
	}
	return ns, j
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && b[i] == ' ' {
		i++
	}
	return i
}

// procPrefix peels one process prefix at b[i:]: "(Name[ extra] pid=N[, ip=A]) "
// (A an IPv4 address or a bracketed IPv6 one)
// (vLLM, Ray), or "[name3]:" (torchrun, PyTorch's "[rank0]:"). damaged
// allows the opening "(" to be missing, as in pasted first lines.
func (p *peeler) procPrefix(l *peeled, b []byte, i int, damaged bool) int {
	r := b[i:]
	if len(r) < 3 {
		return i
	}
	if r[0] == '[' {
		// "[default0]:", "[rank3]:", "[0]:"
		k := 1
		for k < len(r) && k < 40 && (r[k]|0x20 >= 'a' && r[k]|0x20 <= 'z' || r[k] == '_') {
			k++
		}
		d := k
		n, e := atoi(r, k)
		if e == d || e+1 >= len(r) || r[e] != ']' || r[e+1] != ':' {
			return i
		}
		l.rank.Global = n
		l.addLabel(i, i+e+2)
		// No separator follows "]:" (what follows is the body as printed),
		// except PyTorch's "[rank0]: ".
		return i + e + 2 + rankSpace(b, i, i+e+2)
	}
	start := 0
	if r[0] == '(' {
		start = 1
	} else if !damaged || !isWord(r[0]) {
		return i
	}
	end := bytes.IndexByte(r[:min(len(r), 200)], ')')
	if end < 0 {
		return i
	}
	in := r[start:end]
	if start == 1 && rayAutoscaler(in) && end+1 < len(r) && r[end+1] == ' ' {
		// Ray's driver prints its autoscaler's events under "(autoscaler
		// +7s) ": no process of the run, a label.
		l.addLabel(i, i+end+1)
		return i + end + 2
	}
	pidAt := bytes.Index(in, []byte("pid="))
	if pidAt <= 0 || in[pidAt-1] != ' ' {
		return i
	}
	pid, pe := atoi(in, pidAt+4)
	if pe == pidAt+4 {
		return i
	}
	// After the pid only ", ip=…" may follow.
	if pe < len(in) {
		rest := in[pe:]
		if len(rest) < 6 || string(rest[:5]) != ", ip=" {
			return i
		}
		addr := rest[5:]
		if len(addr) > 2 && addr[0] == '[' && addr[len(addr)-1] == ']' {
			addr = addr[1 : len(addr)-1] // IPv6, as Ray prints it: ip=[2605:340::a7c]
		}
		for _, c := range addr {
			if !(isDigit(c) || c == '.' || c == ':' || c|0x20 >= 'a' && c|0x20 <= 'f') {
				return i
			}
		}
	}
	name := in[:pidAt-1]
	// Name tokens: the process name, then optional "rank=N", "TP0".
	nameEnd := bytes.IndexByte(name, ' ')
	if nameEnd < 0 {
		nameEnd = len(name)
	}
	if nameEnd == 0 {
		return i
	}
	for _, c := range name {
		if !(isWord(c) || c == ' ' || c == '=' || c == '-' || c == '.' || c == ':') {
			return i
		}
	}
	var rk record.Rank = l.rank
	rk.PID = pid
	role := p.roleAndIndices(name[:nameEnd], &rk)
	for rest := name[nameEnd:]; len(rest) > 0; {
		var tok []byte
		tok, rest = nextField(rest)
		if len(tok) > 5 && string(tok[:5]) == "rank=" {
			if n, e := atoi(tok, 5); e == len(tok) {
				rk.Global = n
			}
			continue
		}
		record.ParseRankComponent(tok, &rk)
	}
	rk.Role = role
	e := end + 1
	if e < len(r) && r[e] != ' ' {
		// "(X pid=1)foo": not a prefix.
		return i
	}
	l.rank = rk
	l.addLabel(i, i+e)
	// Exactly one separating space: more is the body's own indentation.
	if e < len(r) {
		e++
	}
	return i + e
}

// procPrefixAt reports whether a process prefix starts at b[i:], as
// procPrefix would read one, without touching the line being peeled.
// rankFields reads the space-separated rank tokens of SGLang's header
// ("DP0 TP1") into rk: how many there were, and false when a field is no
// rank token.
func rankFields(in []byte, rk *record.Rank) (int, bool) {
	n := 0
	for rest := in; len(bytes.TrimLeft(rest, " ")) > 0; n++ {
		var tok []byte
		tok, rest = nextField(rest)
		if !record.ParseRankComponent(tok, rk) {
			return n, false
		}
	}
	return n, true
}

// rayAutoscaler: the inside of Ray's "(autoscaler +7s)", "(autoscaler
// +1m30s)" prefix.
func rayAutoscaler(in []byte) bool {
	rest, ok := bytes.CutPrefix(in, []byte("autoscaler +"))
	if !ok || len(rest) == 0 || rest[len(rest)-1] != 's' {
		return false
	}
	for _, c := range rest {
		if !isDigit(c) && c != 'h' && c != 'm' && c != 's' {
			return false
		}
	}
	return true
}

func (p *peeler) procPrefixAt(b []byte, i int) bool {
	if i >= len(b) || b[i] != '[' && b[i] != '(' {
		return false
	}
	var tmp peeled
	tmp.rank = record.NoRank
	return p.procPrefix(&tmp, b, i, false) > i
}

// roleAndIndices splits "EngineCore_DP0", "Worker_PP1_TP3", "EngineCore_0"
// into the role and its parallel indices (set on rk). A trailing bare
// number is the DP index (vLLM 0.10's "EngineCore_0").
func (p *peeler) roleAndIndices(name []byte, rk *record.Rank) string {
	end := len(name)
	for end > 0 {
		u := bytes.LastIndexByte(name[:end], '_')
		if u <= 0 {
			break
		}
		part := name[u+1 : end]
		if !record.ParseRankComponent(part, rk) {
			if n, e := atoi(part, 0); e == len(part) && e > 0 {
				rk.DP = n
			} else {
				break
			}
		}
		end = u
	}
	return internRole(name[:end])
}

// nextField splits off the next space-separated token (bytes.Fields
// without its allocation).
func nextField(b []byte) (tok, rest []byte) {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' {
		j++
	}
	return b[i:j], b[j:]
}

// emitter returns a shared string for an emitter ("worker.py:267"): a
// log has few, and each repeats on many lines.
func (p *peeler) emitter(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if e := p.emitters.Find(func(e *string) bool { return *e == string(b) }); e != nil {
		return *e
	}
	return *p.emitters.Put(strings.ToValidUTF8(string(b), "\uFFFD"))
}

var knownRoles = map[string]string{}

func init() {
	for _, r := range []string{"Worker", "EngineCore", "APIServer", "VllmWorker", "VllmWorkerProcess",
		"RayWorkerWrapper", "_MapWorker", "scheduler", "DPCoordinator", "ApiServer"} {
		knownRoles[r] = r
	}
}

// internRole returns a shared string for common roles; read-only map, so
// safe from any goroutine.
func internRole(b []byte) string {
	if s, ok := knownRoles[string(b)]; ok {
		return s
	}
	return string(b)
}

var levelWords = [...]struct {
	w   string
	lvl record.Level
}{
	{"INFO", record.LevelInfo}, {"WARNING", record.LevelWarning}, {"ERROR", record.LevelError},
	{"DEBUG", record.LevelDebug}, {"CRITICAL", record.LevelCritical}, {"WARN", record.LevelWarning},
}

// levelWord reads a level word and the space after it at the start of r
// (the first of levelWords that is there), and returns the level and its
// length with the space; "" when there is none. The first letter picks
// the words to try.
func levelWord(r []byte) (record.Level, int) {
	if len(r) == 0 {
		return "", 0
	}
	switch r[0] {
	case 'I':
		return levelWordAt(r, 0)
	case 'W':
		if lvl, n := levelWordAt(r, 1); n > 0 {
			return lvl, n
		}
		return levelWordAt(r, 5)
	case 'E':
		return levelWordAt(r, 2)
	case 'D':
		return levelWordAt(r, 3)
	case 'C':
		return levelWordAt(r, 4)
	}
	return "", 0
}

func levelWordAt(r []byte, k int) (record.Level, int) {
	w := &levelWords[k]
	if len(r) > len(w.w) && string(r[:len(w.w)]) == w.w && r[len(w.w)] == ' ' {
		return w.lvl, len(w.w) + 1
	}
	return "", 0
}

func glogLevel(c byte) record.Level {
	switch c {
	case 'I':
		return record.LevelInfo
	case 'W':
		return record.LevelWarning
	case 'E':
		return record.LevelError
	case 'V':
		return record.LevelDebug
	case 'C':
		return record.LevelCritical
	}
	return ""
}

// header peels one logger header at b[i:] and returns the body offset.
func (p *peeler) header(l *peeled, b []byte, i int) int {
	r := b[i:]
	if len(r) < 9 {
		return i
	}
	c := r[0]
	switch {
	case c == '[':
		return p.bracketHeader(l, b, i)
	case c >= 'A' && c <= 'Z':
		if j := p.vllmHeader(l, b, i); j != i {
			return j
		}
		if j := p.glogHeader(l, b, i); j != i {
			return j
		}
		if j := p.uvicornHeader(l, b, i); j != i {
			return j
		}
		if j := p.loggingHeader(l, b, i); j != i {
			return j
		}
		if c == 'E' && r[1] == ' ' && r[2] == ' ' && r[3] == ' ' {
			// pytest's failure report marks the error's lines "E   ",
			// indented as the source they follow ("E   ModuleNotFoundError:
			// No module named 'flashinfer'", "E           RuntimeError: …").
			k := 4
			for k < len(r) && r[k] == ' ' {
				k++
			}
			l.hdr = hdrPytest
			l.level = record.LevelError
			l.keyEnd = int32(i + k)
			return i + k
		}
		return i
	case isDigit(c):
		return p.pythonHeader(l, b, i)
	case c == ':':
		return p.hipHeader(l, b, i)
	case c >= 'a' && c <= 'z' && l.procEnd > 0:
		return p.emitterHeader(l, b, i)
	}
	return i
}

// uvicornLevels are the level names that uvicorn's default formatter
// prints, padded with the colon to uvicornWidth: "INFO:     Application
// startup complete.", "ERROR:    Exception in ASGI application" (a logger
// in that format prints it before every line of a traceback: "ERROR:
// File \"…\", line 215, in makedirs").
var uvicornLevels = [...]struct {
	name  string
	level record.Level
}{{"INFO:", record.LevelInfo}, {"WARNING:", record.LevelWarning}, {"ERROR:", record.LevelError}, {"DEBUG:", record.LevelDebug}}

// uvicornWidth is the column uvicorn's message starts at (its level
// prefix is padded to 9 and a space follows).
const uvicornWidth = 10

// uvicornHeader: the level prefix of uvicorn's log lines, which the API
// servers of vLLM and SGLang print through (the server's start, an
// exception in a request's handler). Only the exact padding is a header: a
// plain "ERROR: …" line keeps its word.
func (p *peeler) uvicornHeader(l *peeled, b []byte, i int) int {
	r := b[i:]
	if len(r) <= uvicornWidth || r[uvicornWidth-1] != ' ' || r[4] != ':' && r[5] != ':' && r[7] != ':' {
		return i // (most lines: told by three bytes)
	}
	for _, u := range uvicornLevels {
		if r[0] != u.name[0] || string(r[:len(u.name)]) != u.name {
			continue
		}
		for k := len(u.name); k < uvicornWidth; k++ {
			if r[k] != ' ' {
				return i
			}
		}
		l.hdr = hdrPython
		l.level = u.level
		l.keyEnd = int32(i + len(u.name) - 1)
		return i + uvicornWidth
	}
	return i
}

// loggingHeader: Python logging's default format, which a script gets
// from logging.basicConfig() or from the first call on the root logger:
// "LEVEL:logger.name:message" ("WARNING:torch._dynamo:Encountered an
// exception in identify_mutated_tensors, …", "INFO:root:…"). The logger's
// name is the emitter. A level word with a space or no name after its
// colon ("ERROR: …", "ERROR:: …") is a message's own word.
func (p *peeler) loggingHeader(l *peeled, b []byte, i int) int {
	r := b[i:]
	k := bytes.IndexByte(r[:min(len(r), 9)], ':')
	if k < 4 {
		return i // (most lines: no colon in the first nine bytes)
	}
	var lvl record.Level
	for _, lw := range levelWords {
		if len(lw.w) == k && string(r[:k]) == lw.w {
			lvl = lw.lvl
			break
		}
	}
	if lvl == "" {
		return i
	}
	e := k + 1
	for e < len(r) && e < k+1+96 && (isWord(r[e]) || r[e] == '.' && e > k+1) {
		e++
	}
	if e == k+1 || e >= len(r) || r[e] != ':' || r[e-1] == '.' || isDigit(r[k+1]) {
		return i
	}
	l.hdr = hdrPython
	l.level = lvl
	l.emitter = span{int32(i + k + 1), int32(i + e)}
	l.keyEnd = int32(i + e)
	return i + e + 1
}

// emitterHeader: what is left of vLLM's header after a process prefix
// when its level and time were cut away (a paste, Ray's de-duplicated
// lines): "(RayWorkerWrapper pid=193386) worker_base.py:572] KeyError: …".
// The emitter is read; the level is not known.
func (p *peeler) emitterHeader(l *peeled, b []byte, i int) int {
	r := b[i:]
	k := 0
	for k < len(r) && k < 64 && (isWord(r[k]) || r[k] == '.') {
		k++
	}
	if k < 4 || k+3 >= len(r) || r[k] != ':' || string(r[k-3:k]) != ".py" {
		return i
	}
	e := k + 1
	for e < len(r) && isDigit(r[e]) {
		e++
	}
	if e == k+1 || e+1 >= len(r) || r[e] != ']' || r[e+1] != ' ' {
		return i
	}
	l.hdr = hdrVLLM
	l.emitter = span{int32(i), int32(i + e)}
	l.keyEnd = int32(i + e + 1)
	return i + e + 2
}

// tracingHeader: the format of Rust's tracing-subscriber, which TGI's
// launcher and router and other Rust services print: an ISO 8601 time,
// the level right-aligned in five columns, the target and ": "
// ("2023-10-16T06:54:28.059380Z ERROR text_generation_launcher: Shard 0
// failed to start", "…Z  INFO shard-manager: text_generation_launcher: …").
func (p *peeler) tracingHeader(l *peeled, b []byte, i int) int {
	r := b[i:]
	c, _, end := isoStamp(r)
	if end == 0 || end+8 >= len(r) || r[end] != ' ' {
		return i
	}
	k := end + 1
	if r[k] == ' ' {
		k++
	}
	var lvl record.Level
	n := 0
	if bytes.HasPrefix(r[k:], []byte("TRACE ")) {
		lvl, n = record.LevelDebug, 6
	} else if lvl, n = levelWord(r[k:]); lvl == "" {
		return i
	}
	k += n
	t := k
	for t < len(r) && t < k+96 && (isWord(r[t]) || r[t] == ':' || r[t] == '-' || r[t] == '.') {
		if r[t] == ':' && t+1 < len(r) && r[t+1] == ' ' {
			break
		}
		t++
	}
	if t == k || t+1 >= len(r) || r[t] != ':' || r[t+1] != ' ' {
		return i
	}
	l.hdr = hdrTracing
	l.level = lvl
	l.tm = p.tc.time(r[:end], c)
	l.emitter = span{int32(i + k), int32(i + t)}
	l.keyEnd = int32(i + t + 1)
	return i + t + 2
}

// hipHeader: ROCm's runtime (CLR) log line, printed when AMD_LOG_LEVEL is
// set: ":LEVEL:file.cpp[ padding]:LINE[ padding]: " (1 error, 2 warning,
// 3 info, 4 and up debug), as in ":1:rocmemory.cpp :1043: Failed to
// create memory for IPC".
func (p *peeler) hipHeader(l *peeled, b []byte, i int) int {
	r := b[i:]
	if len(r) < 10 || !isDigit(r[1]) || r[2] != ':' {
		return i
	}
	var lvl record.Level
	switch r[1] {
	case '0':
		return i
	case '1':
		lvl = record.LevelError
	case '2':
		lvl = record.LevelWarning
	case '3':
		lvl = record.LevelInfo
	default:
		lvl = record.LevelDebug
	}
	k := 3
	for k < len(r) && k < 48 && (isWord(r[k]) || r[k] == '.') {
		k++
	}
	fileEnd := k
	if fileEnd == 3 || !bytes.HasSuffix(r[3:fileEnd], []byte(".cpp")) && !bytes.HasSuffix(r[3:fileEnd], []byte(".hpp")) && !bytes.HasSuffix(r[3:fileEnd], []byte(".h")) {
		return i
	}
	for k < len(r) && r[k] == ' ' {
		k++
	}
	if k >= len(r) || r[k] != ':' {
		return i
	}
	k++
	for k < len(r) && r[k] == ' ' {
		k++
	}
	e := k
	for e < len(r) && isDigit(r[e]) {
		e++
	}
	if e == k {
		return i
	}
	for e < len(r) && r[e] == ' ' {
		e++ // newer runtimes pad the number too: ":652 : "
	}
	if e >= len(r) || r[e] != ':' {
		return i
	}
	k = e + 1
	if k < len(r) && r[k] == ' ' {
		k++
	}
	l.hdr = hdrHIP
	l.level = lvl
	l.keyEnd = int32(i + k)
	return i + k
}

// pythonHeader: the formats people give Python's logging module, which
// trainers, launchers and LMDeploy print: a time ("HH:MM:SS", or
// "YYYY-MM-DD HH:MM:SS" with an optional ",fff" or ".fff"), then the level
// as "[LEVEL] " or as " - LEVEL - " with an optional logger name before
// it (" - lmdeploy - ERROR - "), then an optional "[Rank N] " that names
// the process's global rank.
func (p *peeler) pythonHeader(l *peeled, b []byte, i int) int {
	r := b[i:]
	if len(r) > 20 && r[10] == 'T' {
		return p.tracingHeader(l, b, i)
	}
	var c civil
	k := 0
	if len(r) >= 19 && r[4] == '-' {
		if c, k = dateTime(r, true); k == 0 {
			return i
		}
	} else {
		var ok bool
		if c.h, c.m, c.s, ok = hms(r, 0); !ok {
			return i
		}
		k = 8
	}
	ts, tsEnd := 0, k
	if k+3 >= len(r) || r[k] != ' ' {
		return i
	}
	k++
	var lvl record.Level
	switch {
	case r[k] == '[':
		lv, n := bracketLevel(r[k+1:])
		if lv == "" || k+n+2 >= len(r) || r[k+n+2] != ' ' {
			return i
		}
		lvl, k = lv, k+n+3
	case r[k] == '-' && r[k+1] == ' ':
		k += 2
		for pass := 0; pass < 2 && lvl == ""; pass++ {
			sp := bytes.Index(r[k:min(len(r), k+64)], []byte(" - "))
			if sp <= 0 {
				return i
			}
			w := r[k : k+sp+1] // the word and the space after it
			if lv, n := levelWord(w); lv != "" && n == len(w) {
				lvl = lv
			} else if pass == 1 || bytes.IndexByte(w[:sp], ' ') >= 0 {
				return i
			}
			k += sp + 3
		}
		if lvl == "" {
			return i
		}
	default:
		return i
	}
	if k > len(r) {
		k = len(r)
	}
	l.hdr = hdrPython
	l.level = lvl
	if c.y == 0 {
		l.tm = time.Date(0, 1, 1, c.h, c.m, c.s, 0, time.UTC)
	} else {
		l.tm = p.tc.time(r[ts:tsEnd], c)
	}
	l.keyEnd = int32(i + k - 1)
	if bytes.HasPrefix(r[k:], []byte("[Rank ")) {
		if n, e := atoi(r, k+6); e > k+6 && e+1 < len(r) && r[e] == ']' && r[e+1] == ' ' {
			l.rank.Global = n
			k = e + 2
		}
	}
	return i + k
}

// bracketLevel reads a level word that ends at a ']' ("INFO]"): the level
// and the word's length.
func bracketLevel(r []byte) (record.Level, int) {
	for _, lw := range levelWords {
		if len(r) > len(lw.w) && string(r[:len(lw.w)]) == lw.w && r[len(lw.w)] == ']' {
			return lw.lvl, len(lw.w)
		}
	}
	return "", 0
}

// vllmHeader: "LEVEL MM-DD HH:MM:SS[.fff] [file.py:NN] " (brackets optional
// before about 0.8: "INFO 12-20 20:25:46 worker.py:241] ").
func (p *peeler) vllmHeader(l *peeled, b []byte, i int) int {
	r := b[i:]
	lvl, k := levelWord(r)
	if lvl == "" {
		return i
	}
	word := k // the level word and its space
	k = skipSpace(r, k)
	ts := k
	c, k, ok := vllmTime(r, k)
	timeless := false
	if !ok {
		// Its form without the time ("WARNING [ray_utils.py:556] "):
		// a logging config that leaves the time out, a paste that cut
		// it. Only with the brackets.
		if k = ts; k >= len(r) || r[k] != '[' || k != word {
			return i
		}
		timeless = true
	}
	tsEnd := k
	k = skipSpace(r, k)
	if !timeless && k == tsEnd || k >= len(r) {
		return i
	}
	fs := k
	if r[k] == '[' {
		fs++
	}
	close := bytes.IndexByte(r[fs:min(len(r), fs+256)], ']')
	if close <= 0 {
		return i
	}
	fe := fs + close
	colon := bytes.LastIndexByte(r[fs:fe], ':')
	if colon <= 0 {
		return i
	}
	if _, e := atoi(r, fs+colon+1); e != fe || e == fs+colon+1 {
		return i
	}
	if fe+1 < len(r) && r[fe+1] != ' ' {
		return i
	}
	l.hdr = hdrVLLM
	l.level = lvl
	l.emitter = span{int32(i + fs), int32(i + fe)}
	if !timeless {
		l.tm = p.tc.time(r[ts:tsEnd], c)
		p.hts, p.htsEnd = int32(ts), int32(tsEnd)
	}
	l.keyEnd = int32(i + fe + 1)
	if fe+1 < len(r) {
		return i + fe + 2
	}
	return i + fe + 1
}

// vllmTime parses vLLM's "MM-DD HH:MM:SS[.fff]" at r[k:] (the year is
// 0); end is where it stops.
func vllmTime(r []byte, k int) (c civil, end int, ok bool) {
	if len(r) < k+14 || r[k+2] != '-' || r[k+5] != ' ' {
		return c, 0, false
	}
	c.mo, c.d = digits(r, k, 2), digits(r, k+3, 2)
	c.h, c.m, c.s, ok = hms(r, k+6)
	if !ok || !validMD(c.mo, c.d) {
		return civil{}, 0, false
	}
	k += 14
	if k < len(r) && r[k] == '.' {
		c.ns, k = frac(r, k+1)
	}
	return c, k, true
}

// glogHeader: "I0227 20:02:12.576000 139718474198016 torch/_inductor/graph.py:789] "
// then optional "[0/0] " compile id and "[__artifact] " tags.
func (p *peeler) glogHeader(l *peeled, b []byte, i int) int {
	r := b[i:]
	lvl := glogLevel(r[0])
	if lvl == "" || len(r) < 30 || r[5] != ' ' || r[14] != '.' {
		return i
	}
	mo, d := digits(r, 1, 2), digits(r, 3, 2)
	h, m, s, ok := hms(r, 6)
	if !ok || !validMD(mo, d) {
		return i
	}
	ns, k := frac(r, 15)
	if k == 15 || k >= len(r) || r[k] != ' ' {
		return i
	}
	tsEnd := k
	pid, e := atoi(r, k+1)
	if e == k+1 || e >= len(r) || r[e] != ' ' {
		return i
	}
	fs := e + 1
	close := bytes.IndexByte(r[fs:min(len(r), fs+512)], ']')
	if close <= 0 {
		return i
	}
	fe := fs + close
	colon := bytes.LastIndexByte(r[fs:fe], ':')
	if colon <= 0 || bytes.IndexByte(r[fs:fe], ' ') >= 0 {
		return i
	}
	if _, e := atoi(r, fs+colon+1); e != fe {
		return i
	}
	l.hdr = hdrGlog
	l.level = lvl
	// Current torch prints the pid here; 2024 builds printed a thread id,
	// which is larger than any pid (pid_max is at most 2^22).
	if pid > 0 && pid <= 1<<22 && l.rank.PID == 0 {
		l.rank.PID = pid
	}
	l.emitter = span{int32(i + fs), int32(i + fe)}
	raw := r[1:tsEnd]
	if t, ok := p.tc.get(raw); ok {
		l.tm = t
	} else {
		l.tm = time.Date(0, time.Month(mo), d, h, m, s, ns, time.UTC)
		p.tc.put(raw, l.tm)
	}
	k = fe + 1
	keyEnd := k
	// Tags: "[0/0]", "[0/1_1]", "[!0/0]", "[__graph_breaks]".
	for n := 0; n < 2 && k+3 < len(r) && r[k] == ' ' && r[k+1] == '['; n++ {
		cl := bytes.IndexByte(r[k+2:min(len(r), k+2+64)], ']')
		if cl <= 0 {
			break
		}
		tag := r[k+2 : k+2+cl]
		if !isCompileTag(tag) {
			break
		}
		l.addLabel(i+k+1, i+k+3+cl)
		k += 3 + cl
		keyEnd = k
	}
	l.keyEnd = int32(i + keyEnd)
	if k < len(r) && r[k] == ' ' {
		k++
	}
	return i + k
}

func isCompileTag(t []byte) bool {
	if len(t) > 2 && t[0] == '_' && t[1] == '_' {
		for _, c := range t[2:] {
			if !isWord(c) {
				return false
			}
		}
		return true
	}
	slash := false
	for _, c := range t {
		switch {
		case c == '/':
			slash = true
		case isDigit(c) || c == '!' || c == '_' || c == '-':
		default:
			return false
		}
	}
	return slash
}

// bracketHeader: SGLang "[2025-10-29 11:25:58 DP7 TP7] " or ATOM
// "[atom 06:33:57] ".
func (p *peeler) bracketHeader(l *peeled, b []byte, i int) int {
	r := b[i:]
	if bytes.HasPrefix(r, []byte(trtCppTag)) {
		return p.trtCppHeader(l, b, i)
	}
	cl := bytes.IndexByte(r[:min(len(r), 128)], ']')
	if cl < 0 {
		return i
	}
	in := r[1:cl]
	next := cl + 1
	if next < len(r) {
		if r[next] != ' ' {
			return i
		}
		next++
	}
	if len(in) == 19 && in[2] == '/' && in[5] == '/' && in[10] == '-' {
		return p.trtHeader(l, b, i, in, next)
	}
	if len(in) >= 19 && in[4] == '-' && in[7] == '-' && in[10] == ' ' {
		dt, k := dateTime(in, true)
		if k == 0 {
			return i
		}
		tsEnd := k
		rk := l.rank
		if _, ok := rankFields(in[k:], &rk); !ok {
			return i
		}
		l.rank = rk
		l.hdr = hdrSGLang
		raw := in[:tsEnd]
		if t, ok := p.tc.get(raw); ok {
			l.tm = t
		} else {
			l.tm = dt.time()
			p.tc.put(raw, l.tm)
		}
		l.keyEnd = int32(i + cl + 1)
		if n, e, lvl := torchLogger(r[next:]); n > 0 {
			// torch 2.0/2.1's own format: "[time] logger.name: [LEVEL] ".
			l.level = lvl
			l.emitter = span{int32(i + next), int32(i + next + e)}
			l.keyEnd = int32(i + next + n - 1)
			return i + next + n
		}
		return i + next
	}
	// SGLang's header with its time cut off by the paste: "[TP1] ",
	// "[DP0 TP3] ".
	if next > cl+1 && len(in) >= 3 && len(in) <= 24 && in[1] == 'P' {
		rk := l.rank
		if n, ok := rankFields(in, &rk); ok && n > 0 {
			l.rank = rk
			l.hdr = hdrSGLang
			l.keyEnd = int32(i + cl + 1)
			return i + next
		}
	}
	// ATOM: "[name HH:MM:SS]"; aiter logs "[aiter] " with no time.
	sp := bytes.IndexByte(in, ' ')
	if sp < 0 && len(in) > 1 && len(in) <= 16 && in[0]|0x20 >= 'a' && in[0]|0x20 <= 'z' && next > cl+1 {
		for _, c := range in {
			if !isWord(c) {
				return i
			}
		}
		l.hdr = hdrATOM
		l.emitter = span{int32(i + 1), int32(i + cl)}
		l.keyEnd = int32(i + cl + 1)
		return i + next
	}
	if next < len(r) && next > cl+1 && isDigit(r[next]) {
		// A component's tag before Python logging's header ("[Router
		// (Python)] 2025-01-09 00:28:10 - ERROR - …", sgl-router).
		if j := p.pythonHeader(l, b, i+next); j != i+next {
			l.addLabel(i, i+cl+1)
			return j
		}
	}
	if sp <= 0 || len(in) != sp+9 {
		return i
	}
	for _, c := range in[:sp] {
		if !isWord(c) {
			return i
		}
	}
	h, m, s, ok := hms(in, sp+1)
	if !ok {
		return i
	}
	l.hdr = hdrATOM
	l.emitter = span{int32(i + 1), int32(i + 1 + sp)}
	l.tm = time.Date(0, 1, 1, h, m, s, 0, time.UTC)
	l.keyEnd = int32(i + cl + 1)
	return i + next
}

// trtCppTag starts the lines of TensorRT-LLM's C++ logger:
// "[TensorRT-LLM][ERROR] …", "[TensorRT-LLM][RANK 0][INFO] …".
const trtCppTag = "[TensorRT-LLM]"

// trtCppHeader reads TensorRT-LLM's C++ logger header at b[i:], which
// starts with trtCppTag.
func (p *peeler) trtCppHeader(l *peeled, b []byte, i int) int {
	r := b[i:]
	k := len(trtCppTag)
	rk := l.rank
	if bytes.HasPrefix(r[k:], []byte("[RANK ")) {
		n, e := atoi(r, k+6)
		if e == k+6 || e >= len(r) || r[e] != ']' {
			return i
		}
		rk.Global = n
		k = e + 1
	}
	if k >= len(r) || r[k] != '[' {
		return i
	}
	e := bytes.IndexByte(r[k:min(len(r), k+10)], ']')
	if e < 0 {
		return i
	}
	var lvl record.Level
	switch string(r[k+1 : k+e]) {
	case "TRACE", "DEBUG", "VERBOSE":
		lvl = record.LevelDebug
	case "INFO":
		lvl = record.LevelInfo
	case "WARNING", "WARN":
		lvl = record.LevelWarning
	case "ERROR":
		lvl = record.LevelError
	case "FATAL", "CRITICAL":
		lvl = record.LevelCritical
	default:
		return i
	}
	k += e + 1
	l.rank = rk
	l.level = lvl
	l.hdr = hdrTRT
	l.keyEnd = int32(i + k)
	if k < len(r) && r[k] == ' ' {
		k++
	}
	return i + k
}

// trtHeader: TensorRT-LLM's Python logger, "[MM/DD/YYYY-HH:MM:SS]
// [TRT-LLM] [RANK 1] [E] " (the rank only under MPI, the level one letter:
// V, I, W, E, F), and trtexec's, "[MM/DD/YYYY-HH:MM:SS] [E] ". in is the time between the first brackets, next the
// offset after them in b[i:].
func (p *peeler) trtHeader(l *peeled, b []byte, i int, in []byte, next int) int {
	mo, d, y := digits(in, 0, 2), digits(in, 3, 2), digits(in, 6, 4)
	h, m, s, ok := hms(in, 11)
	if !ok || y < 0 || !validMD(mo, d) {
		return i
	}
	r := b[i+next:]
	const tag = "[TRT-LLM] "
	k := len(tag)
	if !bytes.HasPrefix(r, []byte(tag)) {
		// TensorRT's own tools (trtexec) print the level letter right
		// after the time: "[05/25/2023-20:44:13] [E] Error[1]: …".
		if len(r) < 4 || r[0] != '[' || r[2] != ']' || r[3] != ' ' || !bytes.ContainsRune([]byte("VDIWEF"), rune(r[1])) {
			return i
		}
		k = 0
	}
	rk := l.rank
	if bytes.HasPrefix(r[k:], []byte("[RANK ")) {
		n, e := atoi(r, k+6)
		if e == k+6 || e+1 >= len(r) || r[e] != ']' || r[e+1] != ' ' {
			return i
		}
		rk.Global = n
		k = e + 2
	}
	if k+4 > len(r) || r[k] != '[' || r[k+2] != ']' || r[k+3] != ' ' {
		return i
	}
	var lvl record.Level
	switch r[k+1] {
	case 'V', 'D':
		lvl = record.LevelDebug
	case 'I':
		lvl = record.LevelInfo
	case 'W':
		lvl = record.LevelWarning
	case 'E':
		lvl = record.LevelError
	case 'F':
		lvl = record.LevelCritical
	default:
		return i
	}
	l.rank = rk
	l.level = lvl
	l.hdr = hdrTRT
	l.tm = time.Date(y, time.Month(mo), d, h, m, s, 0, time.UTC)
	l.keyEnd = int32(i + next + k + 3)
	return i + next + k + 4
}

// torchLogger reads torch 2.0/2.1's logger field, "torch._dynamo.convert_frame:
// [WARNING] ", at the start of r: its length with the space after it, the
// end of the logger's name and the level; 0 when r does not start so.
func torchLogger(r []byte) (n, nameEnd int, lvl record.Level) {
	k := 0
	for k < len(r) && k < 96 && (isWord(r[k]) || r[k] == '.') {
		k++
	}
	if k == 0 || k+4 >= len(r) || r[k] != ':' || r[k+1] != ' ' || r[k+2] != '[' {
		return 0, 0, ""
	}
	cl := bytes.IndexByte(r[k+3:min(len(r), k+13)], ']')
	if cl <= 0 {
		return 0, 0, ""
	}
	w := r[k+3 : k+3+cl]
	e := k + 3 + cl + 1
	if e < len(r) && r[e] != ' ' {
		return 0, 0, ""
	}
	for _, lw := range levelWords {
		if string(w) == lw.w {
			return min(e+1, len(r)), k, lw.lvl
		}
	}
	return 0, 0, ""
}
