package enginelog

import "github.com/bringup-tool/bringup/record"

// Live parses a boot's output while it is being printed (bringup watch):
// whole lines in, records out, with the same peeling and continuation
// joining as Parse. Parse reads in large blocks, which is right for files
// but would hold a live boot's lines back until a block fills.
//
// A record stays open until a line that does not continue it arrives;
// Flush closes it (call it when the output pauses). Not safe for
// concurrent use.
type Live struct {
	p    peeler
	j    *joiner
	b    block
	out  Batch
	line int64
	emit func(record.Record)
}

// NewLive starts a live parse; emit is called for each complete record.
func NewLive(source string, emit func(record.Record)) *Live {
	l := &Live{j: &joiner{source: source, labels: map[string][]string{}}, emit: emit}
	l.j.cur = &l.out
	return l
}

// Write parses data, which must hold whole lines (a last line without
// '\n' is taken as complete). The caller may reuse data afterwards.
func (l *Live) Write(data []byte) {
	if len(data) == 0 {
		return
	}
	l.b.data, l.b.cutLen = data, 0
	l.line = l.p.peelBlock(&l.b, l.line)
	for k := range l.b.lines {
		l.j.add(&l.b.lines[k])
	}
	l.j.detach() // the caller may reuse data
	l.hand()
	l.b.data = nil
}

// hand emits the records closed so far.
func (l *Live) hand() {
	b := &l.out
	for i := 0; i < b.Len(); i++ {
		rec, _, text := b.At(i)
		rec.Text = string(text)
		l.emit(*rec)
	}
	l.j.st.Records += int64(b.Len())
	l.j.st.InvalidUTF8 += b.invalidFrom()
	clear(b.recs) // their Text strings, set just above
	b.reset()
}

// Flush emits the record held open waiting for continuation lines.
func (l *Live) Flush() {
	l.j.flush()
	l.hand()
}

// Stats says how much was read so far.
func (l *Live) Stats() Stats { return l.j.st }

// Skip accounts for n whole lines of the output that the caller chose not
// to parse (bringup watch passes over the lines of a flood that cannot
// matter to it), so later records keep their line numbers in the output.
// The record held open is not continued across skipped lines.
func (l *Live) Skip(n int) {
	if n > 0 {
		l.line += int64(n)
	}
}
