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
	prevLen    int
}

// wrapMin is the narrowest wrap believed: pages and terminals wrap at 80
// columns or more, and a short width would see lines of one length
// everywhere.
const wrapMin = 60

func (w *wrapWidth) line(line []byte) {
	n := len(line)
	if w.prevLen == w.max && w.max >= wrapMin && wrapRest(line) {
		w.goesOn++
	}
	w.prevLen = n
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

// wrapRest reports whether line (as read, quoting and colour included)
// can be the rest of a wrapped line: it has text, and does not start as
// a record, a frame or an indented line does.
func wrapRest(line []byte) bool {
	if q := quoteAt(line); q >= 0 {
		line = unquote(line[q:])
	}
	for bareANSI(line) == 0 {
		e := bytes.IndexByte(line, 'm')
		line = line[e+1:]
	}
	line = bytes.TrimRight(line, "\r\n")
	if len(line) == 0 || line[0] == ' ' || line[0] == '\t' || line[0] == 0x1b {
		return false
	}
	if startsWithPrefix(line) || exceptionName(line) {
		return false
	}
	for _, w := range []string{"Traceback (most recent call last)", "During handling of the above exception", "The above exception was the direct cause", `File "`} {
		if bytes.HasPrefix(line, []byte(w)) {
			return false
		}
	}
	return true
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
		if err == bufio.ErrBufferFull || !wrapRest(next) {
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
