package enginelog

import (
	"bufio"
	"bytes"
)

// A page or a terminal that hard-wraps a paste at N columns cuts every
// longer line into lines of exactly N and a rest: an exception message
// goes on in a line of its own, a frame's path in the next. The evidence
// that a paste was wrapped is in its lengths: the longest lines, several
// and not copies of one, are all as long, and each goes on in a line
// that cannot start a record. Only such a pair is joined back; a line
// that starts a record (an engine prefix, a traceback, a frame, an
// exception line, an indent) is never taken as a rest, so two real
// records are never joined.

// wrapWidth gathers the evidence of a wrap over the lines of a head.
type wrapWidth struct {
	max, atMax int  // the longest line's length, and how many are as long
	distinct   bool // the lines of max length are not all one text
	goesOn     int  // lines of max length followed by a rest
	first      []byte
	prev       []byte
	rec        recordStart
}

// wrapMin is the narrowest wrap believed: pages and terminals wrap at 80
// columns or more, and a short width would see lines of one length
// everywhere.
const wrapMin = 60

func (w *wrapWidth) line(line []byte) {
	n := len(line)
	if len(w.prev) == w.max && w.max >= wrapMin && wrapRest(w.prev, line, &w.rec) {
		w.goesOn++
	}
	w.prev = line
	switch {
	case n < wrapMin || n < w.max:
	case n > w.max:
		w.max, w.atMax, w.distinct, w.goesOn, w.first = n, 1, false, 0, line
	default:
		w.atMax++
		w.distinct = w.distinct || !bytes.Equal(line, w.first)
	}
}

// width is the wrap the lines show, or 0.
func (w *wrapWidth) width() int {
	if w.max >= wrapMin && w.atMax >= 2 && w.distinct && w.goesOn >= 2 {
		return w.max
	}
	return 0
}

// recordStart tells whether a line starts with a header or prefix that
// the peeler knows (an engine's, glog's, a launcher's, a collector's).
type recordStart struct {
	p peeler
	l peeled
}

func (r *recordStart) starts(line []byte) bool {
	r.l.line = line
	r.p.peel(&r.l)
	return r.l.hdr != hdrNone || r.l.nlabels > 0 || r.l.procEnd > 0
}

// wrapRest reports whether line (as read, quoting and colour included)
// can be the rest of a wrapped line: it has text, and does not start as
// a record (any header the peeler knows), a frame or an indented line
// does, nor with the first word of prev, the line it would go on (a
// tool's records of one kind, "ptxas …" after "ptxas …").
func wrapRest(prev, line []byte, rec *recordStart) bool {
	line = bytes.TrimRight(pasteText(line), "\r\n")
	if w := firstWord(line); len(w) >= 3 && bytes.Equal(w, firstWord(pasteText(prev))) {
		return false
	}
	if len(line) == 0 || line[0] == ' ' || line[0] == '\t' || line[0] == 0x1b {
		return false
	}
	if startsWithPrefix(line) || exceptionName(line) || rec.starts(line) {
		return false
	}
	for _, w := range []string{"Traceback (most recent call last)", "During handling of the above exception", "The above exception was the direct cause", `File "`} {
		if bytes.HasPrefix(line, []byte(w)) {
			return false
		}
	}
	return true
}

// pasteText is line without quoting and leading colour codes.
func pasteText(line []byte) []byte {
	if q := quoteAt(line); q >= 0 {
		line = unquote(line[q:])
	}
	for bareANSI(line) == 0 {
		e := bytes.IndexByte(line, 'm')
		line = line[e+1:]
	}
	return line
}

// firstWord is line's text up to its first space.
func firstWord(line []byte) []byte {
	if i := bytes.IndexByte(line, ' '); i >= 0 {
		return line[:i]
	}
	return line
}

// lineLen is the length of a line as read, without its line end.
func lineLen(line []byte) int {
	return len(bytes.TrimRight(line, "\r\n"))
}

// join appends to d.out the rests of the wrapped line it holds, each
// repaired as a line of its own, and then as many empty lines as it
// joined, so the lines after keep their numbers. A line that is no rest
// is held for the next read.
func (d *depaster) join() {
	joined, ended := 0, true
	for {
		next, err := d.r.ReadSlice('\n')
		if d.rec == nil {
			d.rec = new(recordStart)
		}
		if err == bufio.ErrBufferFull || !wrapRest(d.out, next, d.rec) {
			d.held, d.heldErr, d.isHeld = append(d.held[:0], next...), err, true
			break
		}
		if err != nil {
			d.err = err
		}
		d.out = append(bytes.TrimRight(d.out, "\r\n"), bytes.TrimRight(d.fix(next), "\r\n")...)
		joined++
		ended = endsLine(next)
		if err != nil || lineLen(next) != d.f.Wrap {
			break
		}
	}
	if joined == 0 {
		return
	}
	if !ended {
		joined-- // the last rest ended the input without a line end
	}
	for i := 0; i <= joined; i++ {
		d.out = append(d.out, '\n')
	}
}

func endsLine(b []byte) bool { return len(b) > 0 && b[len(b)-1] == '\n' }
