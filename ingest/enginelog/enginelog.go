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
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/bringup-tool/bringup/litscan"
	"github.com/bringup-tool/bringup/record"
)

// Stats says how much was read and what was left out.
type Stats struct {
	Bytes, Lines, Records int64
	Skipped               int64
	SkipSamples           []record.Skip // the first MaxSkipSamples skips (Path empty)
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

	// blockSize: a block and the record batches its peeler makes of it
	// (about twice its size) stay within a core's cache until they are
	// read: at 1 MiB, diagnose took about 8 % more CPU. It must exceed
	// MaxLine (a cut line's rest is read into the block's tail).
	blockSize = 512 << 10
	// firstBlock is the size a block starts at: the first block of an input
	// grows to blockSize only when the input fills it, so a directory of
	// thousands of small logs does not allocate and clear megabytes each.
	firstBlock = 64 << 10
)

// blockPool keeps read blocks between Parse calls: diagnose may parse
// thousands of small files.
var blockPool = sync.Pool{New: func() any { return &block{buf: make([]byte, firstBlock), ready: make(chan struct{}, 1)} }}

// grow gives b a full-size buffer, keeping its first n bytes.
func (b *block) grow(n int) {
	buf := make([]byte, blockSize)
	copy(buf, b.buf[:n])
	b.buf = buf
}

// block is a run of whole lines read from the input. A peeler peels its
// lines and joins them into records on its own (outs, and open: the record
// still open at the block's end, moved out of the batches), as if no
// record were open before the block's first line; the caller's goroutine
// then stitches each block to the one before, in order.
type block struct {
	buf    []byte // backing read buffer (blockSize, or firstBlock until the input fills it)
	data   []byte // whole lines; the input's last line may lack '\n'
	clean  []byte // scratch for ANSI-stripped copies of lines
	lines  []peeled
	cutLen int64 // >0: data is one line that was cut; its full length
	err    error // read error after data (not io.EOF)
	first  int64 // number of the block's first line
	ready  chan struct{}

	outs []*Batch
	open openRecord
	st   Stats // the block's lines (records are counted as they are handed on)
	// refs: the stitcher and each batch of outs hold the block; the last
	// to let go puts it in free.
	refs atomic.Int32
	free chan<- *block
	// poison: Options.PoisonReleased of the parse that took it
	poison bool
}

// unref lets go of b (see refs).
func (b *block) unref() {
	if b.refs.Add(-1) != 0 {
		return
	}
	if b.poison {
		for _, m := range [][]byte{b.buf, b.clean[:cap(b.clean)]} {
			for i := range m {
				m[i] = 0xA5
			}
		}
	}
	b.free <- b
}

// Batch is records in input order, each with its literal mask (see
// Options.Scan) and its text: built on the core that peeled their lines
// while those are in its cache, and read as a whole by the caller's
// readers. A one-line record's text lies in the block its line was read
// into (kept until every batch made of it is released); a text joined
// from several lines, or closed by the stitcher, in the batch's arena.
// Everything a Batch holds is valid until it is released.
type Batch struct {
	recs  []record.Record // complete records; while a joiner fills it, then the open one
	masks []uint64
	texts [][]byte
	arena []byte
	blk   *block // whose memory texts borrow; nil: none
	// skip: the first records are not the input's (stitching found them
	// joined otherwise), and are left out.
	skip int
	// invalid: records whose text held invalid UTF-8 (replaced), by index.
	invalid []int
	refs    atomic.Int32
	poison  bool // Options.PoisonReleased
}

// Records travel in batches of batchRecs, or fewer once their texts pass
// batchText bytes: big enough to make channel costs vanish, small enough
// to stay in cache.
const (
	batchRecs = 512
	batchText = 256 << 10
)

var batchPool = sync.Pool{New: func() any {
	return &Batch{recs: make([]record.Record, 0, batchRecs), masks: make([]uint64, 0, batchRecs), texts: make([][]byte, 0, batchRecs)}
}}

func newBatch() *Batch {
	b := batchPool.Get().(*Batch)
	b.refs.Store(1)
	return b
}

// Len is the number of records in b.
func (b *Batch) Len() int { return len(b.masks) - b.skip }

// At returns record i (its Text unset), its literal mask and its text,
// valid UTF-8. They are valid until b is released; what a reader keeps
// must be copied.
func (b *Batch) At(i int) (rec *record.Record, mask uint64, text []byte) {
	i += b.skip
	return &b.recs[i], b.masks[i], b.texts[i]
}

// Mask is At's mask alone: a reader that passes over most records by
// their mask reads nothing else of them.
func (b *Batch) Mask(i int) uint64 { return b.masks[i+b.skip] }

// Hold keeps b for one more reader, which must call Release when done.
func (b *Batch) Hold() { b.refs.Add(1) }

// Release ends one reader's use of b (see Hold).
func (b *Batch) Release() {
	if b.refs.Add(-1) != 0 {
		return
	}
	if b.poison {
		b.poison = false
		for i := range b.arena[:cap(b.arena)] {
			b.arena[:cap(b.arena)][i] = 0xA5
		}
		// Every field of a slot is set when a record is built in it.
		for i := range b.recs[:cap(b.recs)] {
			b.recs[:cap(b.recs)][i] = junkRecord
		}
	}
	b.reset()
	if b.blk != nil {
		b.blk.unref()
		b.blk = nil
	}
	batchPool.Put(b)
}

// reset empties b for reuse. The records' strings stay until overwritten:
// interned names and the path, nothing a batch should release.
func (b *Batch) reset() {
	clear(b.texts) // they point into blocks
	b.recs, b.masks, b.texts, b.arena, b.invalid, b.skip = b.recs[:0], b.masks[:0], b.texts[:0], b.arena[:0], b.invalid[:0], 0
	if cap(b.arena) > 2*batchText {
		b.arena = nil // one huge record: do not keep its memory
	}
}

// slot gives the Record the next record is built in.
func (b *Batch) slot() *record.Record {
	n := len(b.recs)
	if n < cap(b.recs) {
		b.recs = b.recs[:n+1] // the joiner sets every field
	} else {
		b.recs = append(b.recs, record.Record{})
	}
	return &b.recs[n]
}

// full says whether the joiner should start another batch.
func (b *Batch) full() bool { return len(b.masks) >= batchRecs || len(b.arena) >= batchText }

// invalidFrom counts the records from skip on whose text was made valid.
func (b *Batch) invalidFrom() int64 {
	n := int64(0)
	for _, i := range b.invalid {
		if i >= b.skip {
			n++
		}
	}
	return n
}

var junkRecord = record.Record{Source: "junk", Line: -9, EndLine: -9, Kind: 99, Rank: record.Rank{Role: "junk", DP: 99, PP: 99, TP: 99, EP: 99, Global: 99, PID: 99},
	Time: time.Unix(99, 99), Level: "junk", Emitter: "junk", Labels: []string{"junk"}, Text: "junk", Repeat: 99}

// Parse streams r and calls emit for each Record in input order.
//
// Work is spread over the CPUs: one goroutine reads blocks of whole lines
// (numbering them), several peel the lines of different blocks at once
// and join them into records, and the calling goroutine stitches the
// blocks together in order and calls emit. emit is only ever called from
// the caller's goroutine.
func Parse(r io.Reader, source string, emit func(record.Record)) (Stats, error) {
	return ParseWith(r, source, Options{}, func(rec *record.Record, _ uint64, text []byte) {
		rec.Text = string(text)
		emit(*rec)
	})
}

// Options tune ParseWith and ParseBatches.
type Options struct {
	// Scan, when set, runs over the body of every line in the parallel
	// peel stage; a record's mask is the union of its lines' masks (every
	// bit set when its text held invalid UTF-8, which was replaced). A
	// literal holding '\n' or only blanks can span or lose a line join:
	// the caller must not put such literals in Scan.
	Scan *litscan.Grouped
	// Lead, when set with Scan, is asked about the start of every line's
	// body in the same stage; the bits it returns join the line's mask.
	// It should read only the first bytes (an exception line's type).
	Lead func(body []byte) uint64
	// Critical, when set with Scan, joins the mask of every line logged
	// at critical level (a caller's reader of such records, whatever
	// their words).
	Critical uint64
	// PoisonReleased is a check for readers of batches (tests): a batch's
	// texts are overwritten as its last reader releases it, and its
	// record slots filled with junk, and every block's bytes once its
	// batches are done with it, so a text still pointing into them, or a
	// field a new record does not set, shows up.
	PoisonReleased bool
}

// ParseWith is Parse for a caller that takes records by pointer: rec (its
// Text unset) and text (the record's text, valid UTF-8) are only valid
// during the call to emit, which must copy what it keeps. mask is the
// record's literal groups (see Options.Scan), 0 without a scan.
func ParseWith(r io.Reader, source string, opt Options, emit func(rec *record.Record, mask uint64, text []byte)) (Stats, error) {
	return ParseBatches(r, source, opt, func(b *Batch) {
		for i := 0; i < b.Len(); i++ {
			emit(b.At(i))
		}
	})
}

// ParseBatches is ParseWith a batch at a time, for a caller that reads
// the records on other goroutines: emit is called with each Batch in
// input order, from the caller's goroutine; the Batch is released when
// emit returns, unless emit called Hold for readers that will Release
// it. Readers that fall behind hold the parser back (emit blocks on
// them), so memory stays bounded.
func ParseBatches(r io.Reader, source string, opt Options, emit func(*Batch)) (Stats, error) {
	peelers := min(max(runtime.GOMAXPROCS(0), 1), 4)
	// Blocks being read, peeled and stitched, and a few whose batches
	// the readers still hold (their texts lie in them).
	nb := peelers + 5
	// Blocks are taken from the pool only as the reader needs them: a
	// small input uses one.
	free := make(chan *block, nb)
	made := 0
	done := make(chan struct{})
	defer close(done)
	next := func() *block { // nil: Parse is returning
		if made < nb && len(free) == 0 {
			made++
			b := blockPool.Get().(*block)
			b.free, b.poison = free, opt.PoisonReleased
			return b
		}
		select {
		case b := <-free:
			return b
		case <-done:
			return nil
		}
	}
	read := make(chan *block, nb)  // to the peelers, any of which may take it
	order := make(chan *block, nb) // to the stitcher, in input order

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
			p := peeler{scan: opt.Scan, lead: opt.Lead, critical: opt.Critical}
			j := &joiner{source: source, labels: map[string][]string{}}
			for b := range read {
				p.joinBlock(b, j)
				b.ready <- struct{}{}
			}
		}()
	}

	s := newStitcher(source, opt, emit)
	var err error
	for b := range order {
		<-b.ready
		s.stitch(b)
		if b.err != nil {
			err = fmt.Errorf("%s: read: %w", source, b.err)
		}
		b.unref()
	}
	s.finish()
	// The reader has exited (order is closed), and once every batch is
	// released every block it made is back in free: keep them for the
	// next Parse.
	for ; made > 0; made-- {
		b := <-free
		b.data, b.lines, b.outs, b.free, b.poison = nil, b.lines[:0], b.outs[:0], nil, false
		blockPool.Put(b)
	}
	s.st.Bytes = bytesRead
	return s.st, err
}

// stitcher joins the blocks' records into one sequence: the record open
// at a block's end may go on in the next block's first lines, which that
// block's peeler joined as if it began a record. The stitcher joins those
// lines again, in order, until it starts a record on a line where the
// block's own joining started one too: from there on the two agree (a
// joiner's state after starting a record depends on that line alone).
// Usually that is the block's first line.
type stitcher struct {
	j    joiner // quiet: the blocks counted their lines
	p    peeler
	tmp  block // clean scratch for lines joined again
	st   Stats
	emit func(*Batch)
	// poison: Options.PoisonReleased, for the batches handed on
	poison bool
}

func newStitcher(source string, opt Options, emit func(*Batch)) *stitcher {
	// Lines joined again are peeled again, with the same literal scan.
	return &stitcher{j: joiner{source: source, labels: map[string][]string{}, quiet: true}, p: peeler{scan: opt.Scan, lead: opt.Lead, critical: opt.Critical}, emit: emit,
		poison: opt.PoisonReleased}
}

func (s *stitcher) stitch(b *block) {
	s.st.add(&b.st)
	from := 0 // the first of b's records that stands
	if s.j.open {
		from = s.resync(b)
	}
	// What the stitcher closed comes first.
	s.hand(s.j.cur)
	s.j.cur = nil
	k := 0
	for _, o := range b.outs {
		n := len(o.masks) // o is gone once handed on
		switch {
		case from < 0 || k+n <= from:
			o.Release() // joined otherwise
		default:
			o.skip = max(from-k, 0)
			s.hand(o)
		}
		k += n
	}
	if from >= 0 && b.open.ok {
		s.j.adopt(&b.open)
	}
}

// resync joins b's first lines again after the record held open, and
// returns the index of b's first record that stands (-1: none; the
// stitcher's own joining holds for the whole block).
func (s *stitcher) resync(b *block) int {
	j := &s.j
	j.cur = newBatch()
	s.tmp.clean = s.tmp.clean[:0]
	data, n := b.data, b.first
	oi, ri, idx := 0, 0, 0 // the next of b's records to compare with: b.outs[oi].recs[ri], number idx
	for len(data) > 0 {
		data = s.p.nextLine(&s.tmp, data, b.cutLen, n, &s.p.line)
		j.add(&s.p.line)
		if j.open && j.rec != &j.held && j.rec.Line == int(n) {
			// The held record is closed and one starts here: does one of
			// b's start here too?
			for oi < len(b.outs) {
				o := b.outs[oi]
				if ri >= len(o.masks) {
					oi, ri = oi+1, 0
					continue
				}
				if o.recs[ri].Line >= int(n) {
					break
				}
				ri++
				idx++
			}
			line := -1
			if oi < len(b.outs) {
				line = b.outs[oi].recs[ri].Line
			} else if b.open.ok {
				line = b.open.rec.Line
			}
			if line == int(n) {
				j.drop()
				return idx
			}
		}
		n++
	}
	// b's joining never agreed: this one stands, and its open record
	// must not point into the block.
	j.detach()
	return -1
}

// hand passes a batch with records on to emit.
func (s *stitcher) hand(b *Batch) {
	if b == nil {
		return
	}
	b.poison = s.poison
	if b.Len() == 0 {
		b.Release()
		return
	}
	s.st.Records += int64(b.Len())
	s.st.InvalidUTF8 += b.invalidFrom()
	s.emit(b)
	b.Release()
}

// finish closes the record still open at the input's end.
func (s *stitcher) finish() {
	if s.j.open {
		s.j.cur = newBatch()
		s.j.flush()
		s.hand(s.j.cur)
		s.j.cur = nil
	}
}

// add counts o's lines in st.
func (st *Stats) add(o *Stats) {
	st.Lines += o.Lines
	st.Skipped += o.Skipped
	st.Recognized += o.Recognized
	st.Cut += o.Cut
	for _, sk := range o.SkipSamples {
		if len(st.SkipSamples) < MaxSkipSamples {
			st.SkipSamples = append(st.SkipSamples, sk)
		}
	}
}

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

// nextLine cuts the first line off data (a block's, whose cutLen it is),
// cleans it (ANSI escapes stripped into b.clean) and peels it into l as
// line n. It returns the rest of data.
func (p *peeler) nextLine(b *block, data []byte, cutLen, n int64, l *peeled) []byte {
	raw, rest, noCtl, ascii := scanLine(data)
	l.n, l.cutLen, l.skip, l.line = n, 0, "", nil
	if len(raw) > 0 && (raw[0] == '{' || raw[0] == 't' || raw[0] == 'l') {
		// A collector's or logger's structured record: its message is
		// the line (structured.go), cleaned as any other.
		start := len(b.clean)
		if c, ok := structuredMessage(b.clean, raw); ok {
			b.clean = c
			raw = b.clean[start:len(b.clean):len(b.clean)]
			noCtl, ascii = false, false
		}
	} else if len(raw) > 2 && (raw[len(raw)-1] == '}' || raw[len(raw)-1] == '\r' && raw[len(raw)-2] == '}') {
		// An excerpt that starts inside a structured record's message.
		start := len(b.clean)
		if c, ok := cutStructuredTail(b.clean, raw); ok {
			b.clean = c
			raw = b.clean[start:len(b.clean):len(b.clean)]
			noCtl, ascii = false, false
		}
	}
	l.noCtl, l.ascii = noCtl, ascii
	if noCtl {
		// No '\r', NUL or ESC to look for.
		if cutLen == 0 && len(raw) > MaxLine {
			l.cutLen = int64(len(raw))
			raw = raw[:MaxLine]
		} else if cutLen > 0 {
			l.cutLen = cutLen
		}
		l.line = raw
		p.peel(l)
		return rest
	}
	if cutLen > 0 {
		l.cutLen = cutLen
	} else if len(raw) > MaxLine {
		l.cutLen = int64(len(raw))
		raw = raw[:MaxLine]
	}
	for len(raw) > 0 && raw[len(raw)-1] == '\r' {
		raw = raw[:len(raw)-1]
	}
	if bytes.IndexByte(raw, 0) >= 0 {
		l.skip = "binary data (NUL bytes), not a log line"
		return rest
	}
	if bytes.IndexByte(raw, 0x1b) >= 0 {
		start := len(b.clean)
		b.clean = stripANSI(b.clean, raw)
		raw = b.clean[start:len(b.clean):len(b.clean)]
	}
	l.line = raw
	p.peel(l)
	return rest
}

// peelBlock splits b.data into lines and peels each into b.lines. line is
// the number of the last line already seen; it returns the new one.
func (p *peeler) peelBlock(b *block, line int64) int64 {
	b.lines = b.lines[:0]
	b.clean = b.clean[:0]
	data := b.data
	for len(data) > 0 {
		line++
		// Grow without zeroing: peel sets every field it uses.
		if len(b.lines) < cap(b.lines) {
			b.lines = b.lines[:len(b.lines)+1]
		} else {
			b.lines = append(b.lines, peeled{})
		}
		data = p.nextLine(b, data, b.cutLen, line, &b.lines[len(b.lines)-1])
	}
	return line
}

// joinBlock peels b's lines and joins them into records, as if no record
// were open before b: into b.outs, the record open at the end into b.open.
// Each line is joined right after it is peeled, while it is in cache.
func (p *peeler) joinBlock(b *block, j *joiner) {
	b.clean = b.clean[:0]
	b.outs = b.outs[:0]
	j.st = Stats{}
	j.open = false
	j.cur = newBatch()
	j.outs = &b.outs
	j.borrow = true
	data, n := b.data, b.first
	for len(data) > 0 {
		data = p.nextLine(b, data, b.cutLen, n, &p.line)
		j.add(&p.line)
		n++
	}
	j.detach()
	b.open.set(j)
	b.outs = append(b.outs, j.cur)
	j.cur, j.outs = nil, nil
	b.st = j.st
	// The stitcher holds b, and so does every batch: their texts lie in it.
	b.refs.Store(int32(1 + len(b.outs)))
	for _, o := range b.outs {
		o.blk = b
	}
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

// joiner turns peeled lines into records, joining continuation lines, and
// closes them into the batch cur.
type joiner struct {
	source string
	st     Stats
	// quiet: the lines were counted already (the stitcher joins some
	// lines a second time).
	quiet bool
	cur   *Batch
	// outs, when set, takes cur once it is full, and cur starts afresh;
	// otherwise cur grows.
	outs *[]*Batch
	// borrow: a record's text may stay in the line's memory (the block
	// outlives the batch), unless it was joined or made valid UTF-8.
	borrow bool

	open bool
	// rec is the open record: cur's last slot, or held once it was moved
	// out of the batches (detach).
	rec  *record.Record
	held record.Record
	hdr  hdrKind
	key  []byte // prefix bytes continuation lines must repeat
	proc []byte // process/collector prefix bytes of the first line
	text []byte // the record's text: a line's body (borrowed) or buf
	// owned: text is in buf
	owned bool
	// buf, keyBuf, procBuf: the joiner's own copies (see detach).
	buf, keyBuf, procBuf []byte
	valid                bool   // every joined body was valid UTF-8
	mask                 uint64 // union of the open record's line masks
	lines                int

	labels  map[string][]string
	scratch []byte
}

func (j *joiner) skip(line int64, reason string) {
	j.st.Skipped++
	if len(j.st.SkipSamples) < MaxSkipSamples {
		j.st.SkipSamples = append(j.st.SkipSamples, record.Skip{Line: int(line), Reason: reason})
	}
}

func (j *joiner) add(l *peeled) {
	if !j.quiet {
		j.st.Lines++
		if l.cutLen > 0 {
			j.st.Cut++
			j.skip(l.n, fmt.Sprintf("line is %d bytes long; kept the first %d", l.cutLen, MaxLine))
		}
		if l.skip != "" {
			j.skip(l.n, l.skip)
		} else if l.nlabels > 0 || l.hdr != hdrNone {
			j.st.Recognized++
		}
	}
	if l.skip != "" {
		j.flush() // binary data breaks any record
		return
	}
	body := l.body.of(l.line)
	if j.open && j.continues(l) {
		if j.alignedUnder(l) {
			body = l.line[max(int(l.body.a), len(j.proc)):l.body.b] // the message's next line, not its indent
		}
		if l.hdr != hdrNone && !l.hdr.repeatsHeader() {
			// A tag inside a message (see carriesMessage) is its text:
			// the body from the process prefixes on. The line's mask
			// was of the body without it: any literal may hold now.
			body = l.line[l.procEnd:l.body.b]
			j.mask = ^uint64(0)
		}
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
	// Borrowed from the block until the record continues or the block
	// ends (detach): most records are one line, closed before.
	j.key = l.line[:l.keyEnd:l.keyEnd]
	j.proc = l.line[:l.procEnd:l.procEnd]
	j.text, j.owned = body, false
	j.lines = 1
	j.valid = l.validUTF8
	j.mask = l.mask
	// Field by field: a composite literal is built on the stack and
	// copied, and the slot's memory is what costs (every field is set:
	// the slot may hold an older record).
	r := j.cur.slot()
	j.rec = r
	r.Source = j.source
	r.Line, r.EndLine = int(l.n), int(l.n)
	r.Kind = record.KindLogLine
	r.Rank = l.rank
	r.Time = l.tm
	r.Level = l.level
	r.Emitter = l.emitStr
	r.Labels = l.labelStrs
	r.Text = ""
	r.Repeat = l.repeat
	if r.Labels == nil && l.nlabels > 0 {
		r.Labels = j.labelsOf(l)
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
		return j.carriesMessage(l)
	}
	// No header: SGLang and ATOM print theirs on the first line only;
	// unprefixed output (raw tracebacks) runs on until something else.
	if l.procEnd == 0 && c10Tail(l.body.of(l.line)) {
		return true
	}
	if j.hdr.repeatsHeader() {
		return false
	}
	if (j.hdr == hdrPython || j.hdr == hdrTracing) && belowError(j.rec.Level) {
		// Python's logging (and Rust's tracing, as TGI's launcher
		// prints it): a message logged below error runs on in its
		// indented lines ("  target: …" under an exception it quotes);
		// a line at column 0 after it is other output (a crash's
		// traceback, a compiler's lines), which the record's level does
		// not cover.
		if b := l.body.of(l.line); len(b) == 0 || b[0] != ' ' && b[0] != '\t' {
			return false
		}
	}
	return bytes.Equal(j.proc, l.line[:l.procEnd]) || j.alignedUnder(l)
}

// alignedUnder: l, without a prefix or header, is indented to the column
// where the open record's message starts after its process prefix: the
// next line of that message, printed (or pasted) aligned under it
// ("(EngineCore pid=630) [autoscaler] Error: No available node types …
// request" and then "                     {'GPU': 1.0, …}."). A short
// prefix's width is no sign of it.
func (j *joiner) alignedUnder(l *peeled) bool {
	n := len(j.proc)
	if n < minAlignedPrefix || l.procEnd != 0 || l.hdr != hdrNone || len(l.line) <= n || l.line[n] == ' ' {
		return false
	}
	for _, c := range l.line[:n] {
		if c != ' ' {
			return false
		}
	}
	return true
}

// minAlignedPrefix: the narrowest process prefix under which an aligned
// line is read as a continuation.
const minAlignedPrefix = 12

// belowError: a record logged at this level reports no failure itself.
func belowError(lv record.Level) bool {
	return lv == record.LevelInfo || lv == record.LevelDebug || lv == record.LevelWarning
}

// c10Tail reports whether body is a line of the native part of a c10::Error
// report ("Exception raised from OperationSetup at file.cpp:131 (most recent
// call first):", "frame #0: c10::Error::Error(…) + 0xb8 (0x… in libc10.so)"):
// torch's C++ logging prints its rank prefix and header on the message's
// first line only, so these lines continue the record before them.
func c10Tail(body []byte) bool {
	if len(body) < 9 {
		return false
	}
	switch body[0] {
	case 'E':
		return bytes.HasPrefix(body, []byte("Exception raised from "))
	case 'f':
		return bytes.HasPrefix(body, []byte("frame #")) && isDigit(body[7])
	}
	return false
}

// carriesMessage says whether l, a line with a time-less logger tag
// ("[sgl_kernel] CRITICAL: …", which the peeler reads as aiter's
// "[aiter] " tag), is rather the message of the open record's last line:
// an exception line whose message is empty ("ImportError: "), as Python
// prints an exception whose message starts with a newline. A logger tag
// is one only where a logger record starts; that line's message is on
// the next, whatever it starts with. A tag after any other line, or one
// with a time, starts a record.
func (j *joiner) carriesMessage(l *peeled) bool {
	if l.hdr != hdrATOM || !l.tm.IsZero() || j.hdr.repeatsHeader() || !bytes.Equal(j.proc, l.line[:l.procEnd]) {
		return false
	}
	last := j.text[bytes.LastIndexByte(j.text, '\n')+1:]
	return emptyMessageLine(last)
}

// emptyMessageLine reports whether line is an exception line with nothing
// after its type's colon: a dotted name at column 0 whose last part
// starts upper-case ("ImportError:", "torch._dynamo.exc.BackendCompilerFailed: "),
// with no space in it (prose that ends in ':' has one: "During handling
// of the above exception, another exception occurred:").
func emptyMessageLine(line []byte) bool {
	line = bytes.TrimRight(line, " \t")
	n := len(line) - 1
	if n < 1 || line[n] != ':' {
		return false
	}
	part := 0 // start of the name's last part
	for k, c := range line[:n] {
		switch {
		case c == '.':
			if k == part {
				return false // ".x", "a..b"
			}
			part = k + 1
		case !isWord(c), k == 0 && isDigit(c):
			return false
		}
	}
	return part < n && line[part] >= 'A' && line[part] <= 'Z'
}

// own moves the open record's text into the joiner's buffer.
func (j *joiner) own() {
	if !j.owned {
		j.buf = append(j.buf[:0], j.text...)
		j.text, j.owned = j.buf, true
	}
}

// detach moves the open record out of the batch and copies what it
// borrows from the lines just added: their memory is reused once the
// caller moves on.
func (j *joiner) detach() {
	if !j.open {
		return
	}
	if j.rec != &j.held {
		j.held = *j.rec
		j.drop()
		j.open, j.rec = true, &j.held
	}
	j.own()
	j.keyBuf = append(j.keyBuf[:0], j.key...)
	j.procBuf = append(j.procBuf[:0], j.proc...)
	j.key, j.proc = j.keyBuf, j.procBuf
}

// drop forgets the open record, which is cur's last slot.
func (j *joiner) drop() {
	j.cur.recs = j.cur.recs[:len(j.cur.recs)-1]
	j.open = false
}

// flush closes the open record into cur.
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
	b := j.cur
	if j.rec == &j.held {
		*b.slot() = j.held
	}
	mustCopy := j.owned || !j.borrow
	if !j.valid && !utf8.Valid(text) {
		b.invalid = append(b.invalid, len(b.masks))
		text = bytes.ToValidUTF8(text, []byte("\uFFFD")) // new memory
		j.mask = ^uint64(0)                              // the replacement may have made or broken a literal
		mustCopy = false
	}
	if mustCopy {
		start := len(b.arena)
		b.arena = append(b.arena, text...)
		text = b.arena[start:len(b.arena):len(b.arena)]
	}
	b.texts = append(b.texts, text[:len(text):len(text)])
	b.masks = append(b.masks, j.mask)
	if j.outs != nil && b.full() {
		*j.outs = append(*j.outs, b)
		j.cur = newBatch()
	}
}

// openRecord is a block's record still open at its end, with its own
// copies of what continuation lines are compared with.
type openRecord struct {
	ok              bool
	rec             record.Record
	hdr             hdrKind
	key, proc, text []byte
	valid           bool
	mask            uint64
	lines           int
}

// set takes j's open record (detached).
func (o *openRecord) set(j *joiner) {
	o.ok = j.open
	if !j.open {
		return
	}
	o.rec, o.hdr, o.valid, o.mask, o.lines = j.held, j.hdr, j.valid, j.mask, j.lines
	o.key = append(o.key[:0], j.key...)
	o.proc = append(o.proc[:0], j.proc...)
	o.text = append(o.text[:0], j.text...)
}

// adopt makes o j's open record.
func (j *joiner) adopt(o *openRecord) {
	j.open, j.held, j.rec = true, o.rec, &j.held
	j.hdr, j.valid, j.mask, j.lines = o.hdr, o.valid, o.mask, o.lines
	j.keyBuf = append(j.keyBuf[:0], o.key...)
	j.procBuf = append(j.procBuf[:0], o.proc...)
	j.buf = append(j.buf[:0], o.text...)
	j.key, j.proc, j.text, j.owned = j.keyBuf, j.procBuf, j.buf, true
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
	if s, ok := j.labels[string(j.scratch)]; ok {
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
	return out
}
