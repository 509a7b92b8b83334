// Package enginelog parses serving-engine boot logs (vLLM, SGLang, ATOM,
// torchrun, Ray, PyTorch glog, behind docker compose / kubectl / journald
// collectors) into record.Records: one per log message, continuation lines
// joined, prefixes peeled into rank, pid, level, time and emitter.
//
// Parse streams: a reader goroutine cuts the input into blocks of whole
// lines, a second goroutine peels prefixes off every line, and the calling
// goroutine joins continuation lines and calls emit. Memory stays bounded by
// a few blocks whatever the input size; a line longer than MaxLine is cut
// and noted, never held whole.
package enginelog

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/bringup-tool/bringup/ingest"
	"github.com/bringup-tool/bringup/internal/litscan"
	"github.com/bringup-tool/bringup/record"
)

// Skip is a physical line that could not be used, and why.
type Skip struct {
	Line   int
	Reason string
}

// Stats says how much was read and what was left out.
type Stats struct {
	Bytes, Lines, Records int64
	Skipped               int64
	SkipSamples           []Skip // the first MaxSkipSamples skips
	// Recognized counts lines that carried a known prefix or logger header;
	// zero on a file that is not an engine log at all.
	Recognized int64
	// Cut counts lines longer than MaxLine (kept, truncated; also in Skipped).
	Cut int64
	// InvalidUTF8 counts records whose text held invalid UTF-8, replaced
	// with U+FFFD.
	InvalidUTF8 int64
}

const (
	// MaxLine is the longest physical line kept; longer ones are cut here.
	MaxLine = 256 << 10
	// MaxSkipSamples is how many skipped lines Stats keeps by location.
	MaxSkipSamples = 20
	// maxRecordLines / maxRecordBytes bound one joined record so a file of
	// unprefixed lines cannot build one huge record.
	maxRecordLines = 20000
	maxRecordBytes = 4 << 20

	blockSize = 1 << 20
	nBlocks   = 4
	// firstBlock is the size a block starts at: the first block of an input
	// grows to blockSize only when the input fills it, so a directory of
	// thousands of small logs does not allocate and clear megabytes each.
	firstBlock = 64 << 10
)

func init() {
	ingest.Register(ingest.Format{Name: "enginelog", Sniff: Sniff})
}

// blockPool keeps read blocks between Parse calls: diagnose may parse
// thousands of small files.
var blockPool = sync.Pool{New: func() any { return &block{buf: make([]byte, firstBlock), ready: make(chan struct{}, 1)} }}

// grow gives b a full-size buffer, keeping its first n bytes.
func (b *block) grow(n int) {
	buf := make([]byte, blockSize)
	copy(buf, b.buf[:n])
	b.buf = buf
}

// block is a run of whole lines read from the input, with the lines peeled.
type block struct {
	buf    []byte // backing read buffer (blockSize, or firstBlock until the input fills it)
	data   []byte // whole lines; the input's last line may lack '\n'
	clean  []byte // scratch for ANSI-stripped copies of lines
	lines  []peeled
	cutLen int64 // >0: data is one line that was cut; its full length
	err    error // read error after data (not io.EOF)
	first  int64 // number of the block's first line
	ready  chan struct{}
}

// Parse streams r and calls emit for each Record in input order.
//
// Work is spread over the CPUs: one goroutine reads blocks of whole lines
// (numbering them), several peel the lines of different blocks at once,
// and the calling goroutine takes the blocks back in order, joins
// continuation lines and calls emit. emit is only ever called from the
// caller's goroutine.
func Parse(r io.Reader, source string, emit func(record.Record)) (Stats, error) {
	return ParseWith(r, source, Options{}, func(rec *record.Record, _ uint64, _ []byte) { emit(*rec) })
}

// Options tune ParseWith.
type Options struct {
	// Scan, when set, runs over the body of every line in the parallel
	// peel stage; a record's mask is the union of its lines' masks (every
	// bit set when its text held invalid UTF-8, which was replaced). A
	// literal holding '\n' or only blanks can span or lose a line join:
	// the caller must not put such literals in Scan.
	Scan *litscan.Grouped
	// RawText: records are emitted with Text unset and no string built;
	// the text argument of emit holds it.
	RawText bool
	// Slot, when set, gives the Record the next record is built in, and
	// emit is called with that pointer (a caller that keeps records in an
	// array of its own saves copying each). It is called when a record
	// starts, once per record, after the previous record was emitted;
	// the parser writes to it until emitting it, and never after.
	Slot func() *record.Record
}

// ParseWith is Parse for a caller that takes records by pointer: rec and
// text (the record's text, valid UTF-8) are only valid during the call to
// emit, which must copy what it keeps. mask is the record's literal groups
// (see Options.Scan), 0 without a scan.
func ParseWith(r io.Reader, source string, opt Options, emit func(rec *record.Record, mask uint64, text []byte)) (Stats, error) {
	peelers := min(max(runtime.GOMAXPROCS(0), 1), 4)
	nb := peelers + 3
	// Blocks are taken from the pool only as the reader needs them: a
	// small input uses one.
	free := make(chan *block, nb)
	made := 0
	done := make(chan struct{})
	defer close(done)
	next := func() *block { // nil: Parse is returning
		if made < nb && len(free) == 0 {
			made++
			return blockPool.Get().(*block)
		}
		select {
		case b := <-free:
			return b
		case <-done:
			return nil
		}
	}
	read := make(chan *block, nb)  // to the peelers, any of which may take it
	order := make(chan *block, nb) // to the joiner, in input order

	var bytesRead int64
	go func() {
		defer close(read)
		defer close(order)
		bytesRead = readBlocks(r, next, func(b *block) bool {
			select {
			case order <- b:
			case <-done:
				return false
			}
			select {
			case read <- b:
				return true
			case <-done:
				return false
			}
		}, done)
	}()
	for i := 0; i < peelers; i++ {
		go func() {
			p := peeler{scan: opt.Scan}
			for b := range read {
				p.peelBlock(b, b.first-1)
				b.ready <- struct{}{}
			}
		}()
	}

	j := &joiner{source: source, emitPtr: emit, raw: opt.RawText, slot: opt.Slot, labels: map[string][]string{}}
	var err error
	for b := range order {
		<-b.ready
		for k := range b.lines {
			j.add(&b.lines[k])
		}
		if b.err != nil {
			err = fmt.Errorf("%s: read: %w", source, b.err)
		}
		j.detach()
		if poisonBlocks {
			for i := range b.buf {
				b.buf[i] = 0xA5
			}
			for i := range b.clean[:cap(b.clean)] {
				b.clean[:cap(b.clean)][i] = 0xA5
			}
		}
		free <- b
	}
	j.flush()
	// The reader has exited (order is closed), so every block it made is
	// back in free: keep them for the next Parse.
	for ; made > 0; made-- {
		b := <-free
		b.data, b.lines = nil, b.lines[:0]
		blockPool.Put(b)
	}
	j.st.Bytes = bytesRead
	return j.st, err
}

// poisonBlocks (tests): overwrite a block's memory when the joiner is done
// with it, so a record still pointing into it shows up as wrong text.
var poisonBlocks bool

// readBlocks fills blocks with whole lines. It returns the number of bytes
// read. A line longer than a block is cut at MaxLine, the rest discarded
// while counting its length.
func readBlocks(r io.Reader, next func() *block, out func(*block) bool, done <-chan struct{}) int64 {
	var total int64
	var carry []byte // tail of the previous block: the start of a partial line
	eof := false
	line := int64(1)
	send := func(b *block) bool {
		// Number the lines here so blocks can be peeled in any order.
		b.first = line
		if b.cutLen > 0 {
			line++
		} else if n := len(b.data); n > 0 {
			line += int64(bytes.Count(b.data, []byte{'\n'}))
			if b.data[n-1] != '\n' {
				line++
			}
		}
		return out(b)
	}
	for !eof || len(carry) > 0 {
		b := next()
		if b == nil {
			return total
		}
		b.cutLen, b.err = 0, nil
		if total > 0 && len(b.buf) < blockSize {
			b.grow(0) // only an input's first block starts small
		}
		n := copy(b.buf, carry)
		carry = nil
		for {
			for n < len(b.buf) && !eof {
				m, err := r.Read(b.buf[n:])
				n += m
				total += int64(m)
				if err == io.EOF {
					eof = true
				} else if err != nil {
					b.err = err
					eof = true
				}
			}
			if eof || len(b.buf) >= blockSize {
				break
			}
			b.grow(n) // a small first block filled up: the input is not small
		}
		if k := bytes.LastIndexByte(b.buf[:n], '\n'); k >= 0 {
			b.data = b.buf[:k+1]
			carry = b.buf[k+1 : n] // read by the next iteration before b is reused
			if eof && len(carry) > 0 {
				// The final line without '\n' goes in this block, unless the
				// block is full (then it needs its own).
				if n < len(b.buf) {
					b.data = b.buf[:n]
					carry = nil
				}
			}
			if len(carry) > 0 {
				// carry aliases b.buf; copy it out before b can be recycled.
				carry = append([]byte(nil), carry...)
			}
			if !send(b) {
				return total
			}
			continue
		}
		if eof {
			b.data = b.buf[:n]
			if !send(b) {
				return total
			}
			return total
		}
		// A full block with no newline: cut the line at MaxLine and skip
		// to its end, reusing the block's tail as scratch.
		length := int64(n)
		scratch := b.buf[MaxLine:]
		for !eof {
			m, err := r.Read(scratch)
			total += int64(m)
			if k := bytes.IndexByte(scratch[:m], '\n'); k >= 0 {
				length += int64(k)
				carry = append([]byte(nil), scratch[k+1:m]...)
				break
			}
			length += int64(m)
			if err != nil {
				if err != io.EOF {
					b.err = err
				}
				eof = true
			}
		}
		b.data = b.buf[:MaxLine]
		b.cutLen = length
		if !send(b) {
			return total
		}
	}
	return total
}

// peelBlock splits b.data into lines and peels each. line is the number of
// the last line already seen; it returns the new one.
func (p *peeler) peelBlock(b *block, line int64) int64 {
	b.lines = b.lines[:0]
	b.clean = b.clean[:0]
	data := b.data
	for len(data) > 0 {
		raw, rest, noCtl, ascii := scanLine(data)
		data = rest
		line++
		// Grow without zeroing: peel sets every field it uses.
		if len(b.lines) < cap(b.lines) {
			b.lines = b.lines[:len(b.lines)+1]
		} else {
			b.lines = append(b.lines, peeled{})
		}
		l := &b.lines[len(b.lines)-1]
		l.n, l.cutLen, l.skip, l.line = line, 0, "", nil
		l.noCtl, l.ascii = noCtl, ascii
		if noCtl {
			// No '\r', NUL or ESC to look for.
			if b.cutLen == 0 && len(raw) > MaxLine {
				l.cutLen = int64(len(raw))
				raw = raw[:MaxLine]
			} else if b.cutLen > 0 {
				l.cutLen = b.cutLen
			}
			l.line = raw
			p.peel(l)
			continue
		}
		if b.cutLen > 0 {
			l.cutLen = b.cutLen
		} else if len(raw) > MaxLine {
			l.cutLen = int64(len(raw))
			raw = raw[:MaxLine]
		}
		for len(raw) > 0 && raw[len(raw)-1] == '\r' {
			raw = raw[:len(raw)-1]
		}
		if bytes.IndexByte(raw, 0) >= 0 {
			l.skip = "binary data (NUL bytes), not a log line"
			continue
		}
		if bytes.IndexByte(raw, 0x1b) >= 0 {
			start := len(b.clean)
			b.clean = stripANSI(b.clean, raw)
			raw = b.clean[start:len(b.clean):len(b.clean)]
		}
		l.line = raw
		p.peel(l)
	}
	return line
}

// stripANSI appends src to dst without ANSI escape sequences (CSI
// "ESC [ params letter", OSC "ESC ] … BEL|ESC \", and two-byte escapes).
func stripANSI(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		c := src[i]
		if c != 0x1b {
			// Copy the run up to the next ESC at once.
			k := bytes.IndexByte(src[i:], 0x1b)
			if k < 0 {
				return append(dst, src[i:]...)
			}
			dst = append(dst, src[i:i+k]...)
			i += k
			continue
		}
		i++
		if i >= len(src) {
			break
		}
		switch src[i] {
		case '[':
			i++
			for i < len(src) && !(src[i] >= 0x40 && src[i] <= 0x7e) {
				i++
			}
			i++
		case ']':
			for i < len(src) && src[i] != 0x07 && !(src[i] == 0x1b && i+1 < len(src) && src[i+1] == '\\') {
				i++
			}
			if i < len(src) && src[i] == 0x1b {
				i++
			}
			i++
		default:
			i++
		}
	}
	return dst
}

// joiner turns peeled lines into records, joining continuation lines.
type joiner struct {
	source  string
	emitPtr func(*record.Record, uint64, []byte)
	raw     bool // Options.RawText
	st      Stats
	mask    uint64 // union of the open record's line masks

	open   bool
	rec    *record.Record // the open record: &recBuf, or from slot
	recBuf record.Record
	slot   func() *record.Record // Options.Slot
	hdr    hdrKind
	key    []byte // prefix bytes continuation lines must repeat
	proc   []byte // process/collector prefix bytes of the first line
	text   []byte // the record's text: a line's body (borrowed) or buf
	owned  bool   // text is in buf
	// buf, keyBuf, procBuf: the joiner's own copies (see detach).
	buf, keyBuf, procBuf []byte
	valid                bool // every joined body was valid UTF-8
	lines                int
	lastEnd              int64

	labels     map[string][]string
	recent     [8]recentLabels
	nextRecent int
	scratch    []byte
}

func newJoiner(source string, emit func(record.Record)) *joiner {
	return &joiner{source: source, emitPtr: func(rec *record.Record, _ uint64, _ []byte) { emit(*rec) }, labels: map[string][]string{}}
}

func (j *joiner) skip(line int64, reason string) {
	j.st.Skipped++
	if len(j.st.SkipSamples) < MaxSkipSamples {
		j.st.SkipSamples = append(j.st.SkipSamples, Skip{Line: int(line), Reason: reason})
	}
}

func (j *joiner) add(l *peeled) {
	j.st.Lines++
	if l.cutLen > 0 {
		j.st.Cut++
		j.skip(l.n, fmt.Sprintf("line is %d bytes long; kept the first %d", l.cutLen, MaxLine))
	}
	if l.skip != "" {
		j.skip(l.n, l.skip)
		j.flush() // binary data breaks any record
		return
	}
	if l.nlabels > 0 || l.hdr != hdrNone {
		j.st.Recognized++
	}
	body := l.body.of(l.line)
	if j.open && j.continues(l) {
		j.own()
		j.text = append(j.text, '\n')
		j.text = append(j.text, body...)
		j.buf = j.text
		j.valid = j.valid && l.validUTF8
		j.mask |= l.mask
		j.lines++
		j.rec.EndLine = int(l.n)
		return
	}
	j.flush()
	if l.hdr == hdrNone && len(bytes.TrimSpace(body)) == 0 {
		// A blank line that would open a record of its own carries nothing.
		return
	}
	j.open = true
	j.hdr = l.hdr
	// Borrowed from the block until the record continues or the block is
	// handed back (detach): most records are one line, emitted before.
	j.key = l.line[:l.keyEnd:l.keyEnd]
	j.proc = l.line[:l.procEnd:l.procEnd]
	j.text, j.owned = body, false
	j.lines = 1
	j.valid = l.validUTF8
	j.mask = l.mask
	if j.slot != nil {
		j.rec = j.slot()
	} else {
		j.rec = &j.recBuf
	}
	*j.rec = record.Record{
		Source:  j.source,
		Line:    int(l.n),
		EndLine: int(l.n),
		Kind:    record.KindLogLine,
		Rank:    l.rank,
		Time:    l.tm,
		Level:   l.level,
		Emitter: l.emitStr,
		Labels:  l.labelStrs,
		Repeat:  l.repeat,
	}
	if j.rec.Labels == nil && l.nlabels > 0 {
		j.rec.Labels = j.labelsOf(l)
	}
}

// continues says whether l is a continuation line of the open record.
func (j *joiner) continues(l *peeled) bool {
	if j.lines >= maxRecordLines || len(j.text) >= maxRecordBytes || l.n != int64(j.rec.EndLine)+1 {
		return false
	}
	switch {
	case l.hdr.repeatsHeader():
		// vLLM / glog: the same header (to the second) on every line.
		return j.hdr == l.hdr && bytes.Equal(j.key, l.line[:l.keyEnd])
	case l.hdr != hdrNone:
		return false
	}
	// No header: SGLang and ATOM print theirs on the first line only;
	// unprefixed output (raw tracebacks) runs on until something else.
	if j.hdr.repeatsHeader() {
		return false
	}
	return bytes.Equal(j.proc, l.line[:l.procEnd])
}

// own moves the open record's text into the joiner's buffer.
func (j *joiner) own() {
	if !j.owned {
		j.buf = append(j.buf[:0], j.text...)
		j.text, j.owned = j.buf, true
	}
}

// detach copies what the open record borrows from the lines just added:
// their memory is reused once the caller moves on.
func (j *joiner) detach() {
	if !j.open {
		return
	}
	j.own()
	j.keyBuf = append(j.keyBuf[:0], j.key...)
	j.procBuf = append(j.procBuf[:0], j.proc...)
	j.key, j.proc = j.keyBuf, j.procBuf
}

func (j *joiner) flush() {
	if !j.open {
		return
	}
	j.open = false
	text := j.text
	// Trailing blank lines belong to no message. A record of one line
	// holds no '\n' and has none (nor is its last byte read: the line is
	// in memory a peeler's core wrote).
	for j.lines > 1 && len(text) > 0 && (text[len(text)-1] == '\n' || text[len(text)-1] == ' ') {
		if k := bytes.LastIndexByte(text, '\n'); k >= 0 && len(bytes.TrimSpace(text[k:])) == 0 {
			text = text[:k]
			continue
		}
		break
	}
	if !j.valid && !utf8.Valid(text) {
		j.st.InvalidUTF8++
		text = bytes.ToValidUTF8(text, []byte("\uFFFD"))
		j.mask = ^uint64(0) // the replacement may have made or broken a literal
	}
	j.rec.Text = ""
	if !j.raw {
		j.rec.Text = string(text)
	}
	j.st.Records++
	j.emitPtr(j.rec, j.mask, text)
}

const maxInterned = 4096

// labelsOf returns the peeled prefixes as strings, shared between records
// with the same prefixes (callers must not modify Labels).
func (j *joiner) labelsOf(l *peeled) []string {
	if l.nlabels == 0 {
		return nil
	}
	j.scratch = j.scratch[:0]
	for k := 0; k < int(l.nlabels); k++ {
		j.scratch = append(j.scratch, l.labels[k].of(l.line)...)
		j.scratch = append(j.scratch, 0)
	}
	for k := range j.recent {
		if j.recent[k].key != "" && j.recent[k].key == string(j.scratch) {
			return j.recent[k].labels
		}
	}
	if s, ok := j.labels[string(j.scratch)]; ok {
		j.remember(s)
		return s
	}
	out := make([]string, l.nlabels)
	for k := 0; k < int(l.nlabels); k++ {
		lb := l.labels[k].of(l.line)
		if !utf8.Valid(lb) {
			out[k] = strings.ToValidUTF8(string(lb), "\uFFFD")
		} else {
			out[k] = string(lb)
		}
	}
	if len(j.labels) < maxInterned {
		j.labels[string(j.scratch)] = out
	}
	j.remember(out)
	return out
}

// remember keeps labels in a short most-recent list: TP=8 workers take
// turns, so eight entries catch almost every record without hashing.
func (j *joiner) remember(labels []string) {
	j.recent[j.nextRecent%len(j.recent)] = recentLabels{key: string(j.scratch), labels: labels}
	j.nextRecent++
}

type recentLabels struct {
	key    string
	labels []string
}
