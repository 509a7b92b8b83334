package enginelog

import (
	"bytes"
	"io"
)

// A paste need not start at the head of an input: a user appends an
// excerpt quoted from a thread to a healthy engine's log, or a collector
// copies an indented block after 400 lines of start-up. pasteWatch passes
// an input whose head showed no paste on as it is read (no copy: the
// caller's buffer is filled from the input and only scanned), and looks
// at the first byte of each line. A line that starts as a paste's does
// (Markdown quoting, a tab, an indent before an engine prefix or a
// traceback, a colour code without its ESC) has the lines from it on
// judged by DetectPaste; when they show a paste, the repairs are applied
// from that line to the end, else watching goes on. A judgement reads
// one window ahead (64 KiB), and after one that found nothing the next
// waits until the window is passed, so an input whose lines keep looking
// like a paste's costs at most one DetectPaste per window.
type pasteWatch struct {
	r       io.Reader
	pending []byte    // read, not yet passed on
	more    bool      // pending ends in the start of a line that goes on in r
	mid     bool      // the next byte is not at a line start
	quiet   int       // bytes to pass before a line is judged again
	passed  int64     // bytes passed on so far
	fixed   io.Reader // the repairing reader, once a paste was found
	err     error
}

// pasteWindow is how much a judgement reads ahead; pasteLineStart is how
// much of a line pasteStart needs to tell. The first pasteFullScan bytes
// (any excerpt pasted into a thread, and a good deal more) have each line
// looked at; past them one line in pasteSample bytes is, so a large
// engine log costs almost nothing more.
const (
	pasteWindow    = 64 << 10
	pasteLineStart = 512
	pasteFullScan  = 4 << 20
	pasteSample    = 1 << 10
)

func (w *pasteWatch) Read(p []byte) (int, error) {
	for {
		if w.fixed != nil {
			return w.fixed.Read(p)
		}
		n := copy(p, w.pending)
		w.pending = w.pending[n:]
		if n < len(p) && len(w.pending) == 0 && w.err == nil && (n == 0 || w.more) {
			var m int
			m, w.err = w.r.Read(p[n:])
			n += m
		}
		w.more = false
		if n == 0 {
			if w.err != nil {
				return 0, w.err
			}
			continue
		}
		k, whole := w.scan(p[:n])
		switch {
		case k < 0:
			w.passed += int64(n)
			return n, nil
		case !whole && n-k < pasteLineStart && w.err == nil && (k > 0 || n < len(p)):
			// The line goes on past what was read: hold its start back
			// until the rest is read.
			w.pending = append(append([]byte(nil), p[k:n]...), w.pending...)
			w.more = true
			if k > 0 {
				w.passed += int64(k)
				return k, nil
			}
			continue
		}
		// Judge the lines from k on: a window of them is read ahead.
		win := make([]byte, 0, pasteWindow)
		win = append(append(win, p[k:n]...), w.pending...)
		for len(win) < cap(win) && w.err == nil {
			var m int
			m, w.err = w.r.Read(win[len(win):cap(win)])
			win = win[:len(win)+m]
		}
		w.pending, w.mid = win, true
		// The line is whole now, unless it is longer than the window.
		if pasteStart(win) {
			if f := DetectPaste(win); f.Any() {
				w.fixed = newDepaster(io.MultiReader(bytes.NewReader(win), w.r), f)
			} else {
				w.quiet = len(win)
			}
		}
		if k > 0 {
			w.passed += int64(k)
			return k, nil
		}
	}
}

// scan looks at the line starts in b and returns the offset of the first
// that starts as a paste's, or that may (the line goes on past b: whole
// is false), or -1. Past pasteFullScan bytes of input, it looks at one
// line in every pasteSample bytes, and at each line since the last
// sample only when one does.
func (w *pasteWatch) scan(b []byte) (k int, whole bool) {
	off := 0
	if w.mid {
		e := bytes.IndexByte(b, '\n')
		if e < 0 {
			w.quiet -= len(b)
			return -1, false
		}
		off = e + 1
	}
	if w.passed+int64(off) >= pasteFullScan {
		return w.sample(b, off)
	}
	return w.lines(b, off, pasteFullScan-w.passed)
}

// lines looks at each line start of b from off, a line start, on; at
// limit it goes on sampling.
func (w *pasteWatch) lines(b []byte, off int, limit int64) (k int, whole bool) {
	for off < len(b) {
		if int64(off) >= limit {
			return w.sample(b, off)
		}
		e := bytes.IndexByte(b[off:], '\n')
		if w.quiet <= off && pasteStartByte[b[off]] {
			if e < 0 {
				w.quiet -= off
				w.mid = false
				return off, false
			}
			if pasteStart(b[off : off+e]) {
				w.quiet -= off
				w.mid = false
				return off, true
			}
		}
		if e < 0 {
			w.mid = true
			w.quiet -= len(b)
			return -1, false
		}
		off += e + 1
	}
	w.mid = false
	w.quiet -= len(b)
	return -1, false
}

// sample looks at one line start of b in every pasteSample bytes from
// off, a line start; when one starts as a paste's, the lines since the
// previous sample are looked at one by one, so the paste's first line is
// found. A paste shorter than two sample steps (2 KiB) deep in a large input can go
// unseen: the price of reading the rest at the speed of an input with
// no paste.
func (w *pasteWatch) sample(b []byte, off int) (k int, whole bool) {
	prev := off
	for s := off + pasteSample; s < len(b); s += pasteSample {
		e := bytes.IndexByte(b[s:], '\n')
		if e < 0 {
			break
		}
		ls := s + e + 1
		if ls >= len(b) {
			break
		}
		if w.quiet <= ls && pasteStartByte[b[ls]] {
			le := bytes.IndexByte(b[ls:], '\n')
			if le < 0 || pasteStart(b[ls:ls+le]) {
				return w.lines(b, prev, int64(len(b)))
			}
		}
		prev, s = ls, ls
	}
	w.mid = true // the next read starts in the line after the last sample, or later
	w.quiet -= len(b)
	return -1, false
}

// pasteStartByte are the first bytes of a line that may start a paste:
// quoting, an indent, a colour code without its ESC, or an ESC rendered
// as text (renderedESC's first bytes).
var pasteStartByte = func() (t [256]bool) {
	for _, c := range []byte{'>', ' ', '\t', '['} {
		t[c] = true
	}
	for _, esc := range renderedESC {
		t[esc[0]] = true
	}
	return t
}()

// pasteStart reports whether the line that b starts with starts as a
// paste's: quoted, tab-indented, a colour code without its ESC at its
// start, or indented before an engine prefix, a traceback or quoting. A
// traceback's own indented frames do not.
func pasteStart(b []byte) bool {
	line := b
	if e := bytes.IndexByte(b, '\n'); e >= 0 {
		line = b[:e]
	}
	switch line[0] {
	case '>', '\t':
		return true
	case ' ':
		t := line[indentOf(line):]
		return len(t) > 0 && (t[0] == '>' || startsWithPrefix(t) || bytes.HasPrefix(t, []byte("Traceback (most recent call last)")) ||
			bareANSI(t) == 0 || exceptionName(t) ||
			len(line)-len(t) != 2 && bytes.HasPrefix(t, []byte(`File "`))) // a traceback puts its frames two spaces in
	}
	return bareANSI(line) == 0
}

// exceptionName reports whether t starts with an exception's name and
// its colon or the line's end ("RuntimeError: …",
// "torch._dynamo.exc.Unsupported: …"): an exception line indented with
// the rest of a paste. A traceback's own source lines under a frame are
// code, which rarely reads so.
func exceptionName(t []byte) bool {
	n := 0
	for n < len(t) && (t[n] == '_' || t[n] == '.' || t[n] >= 'a' && t[n] <= 'z' || t[n] >= 'A' && t[n] <= 'Z' || n > 0 && t[n] >= '0' && t[n] <= '9') {
		n++
	}
	if n == 0 || n < len(t) && t[n] != ':' {
		return false
	}
	name := t[:n]
	if i := bytes.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	return len(name) > 0 && name[0] >= 'A' && name[0] <= 'Z' &&
		(bytes.HasSuffix(name, []byte("Error")) || bytes.HasSuffix(name, []byte("Exception")) || bytes.Equal(name, []byte("Unsupported")))
}
