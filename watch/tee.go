package watch

import (
	"bytes"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// maxCarry bounds a line held back while waiting for its newline: output
// without newlines (binary, a progress bar gone wild) is written out in
// pieces of this size instead of growing without bound.
const maxCarry = 1 << 20

// tee copies the boot's stdout and stderr to the terminal as they come and
// to the run's output.log in whole lines (so the two streams interleave
// line by line in the file, as on a terminal), and hands each line to the
// tracker. The file gets one write per chunk read, no user-space
// buffering: what the boot printed is in the kernel's hands before the
// next read, so it survives bringup being killed.
type tee struct {
	mu      sync.Mutex
	file    *os.File
	term    [2]io.Writer // stdout, stderr destinations (may be nil)
	onLines func([]byte) // called under mu with whole lines
	status  *statusLine
	carry   [2][]byte
	lines   int64
	bytes   int64
	fileErr error

	lastOutput atomic.Int64 // unix nanos of the last byte read
}

func newTee(file *os.File, stdout, stderr io.Writer, status *statusLine, onLines func([]byte)) *tee {
	t := &tee{file: file, term: [2]io.Writer{stdout, stderr}, onLines: onLines, status: status}
	t.lastOutput.Store(time.Now().UnixNano())
	return t
}

// coalesce is how long pump lets a fast writer's output collect in the
// pipe after a small read. A boot that logs line by line (Python's logging
// flushes every record) would otherwise cost one read, one file write and
// one parse call per line; a millisecond of latency on the terminal is
// invisible and makes the watcher's cost per line small. The pipe (1 MiB)
// holds a millisecond of even 100 MB/s.
const coalesce = 10 * time.Millisecond

// pump reads one stream until EOF or error.
func (t *tee) pump(stream int, r io.Reader) {
	buf := make([]byte, pipeSize)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			t.consume(stream, buf[:n])
		}
		if err != nil {
			t.finish(stream)
			return
		}
		if n < len(buf)/4 {
			time.Sleep(coalesce)
		}
	}
}

func (t *tee) consume(stream int, chunk []byte) {
	t.lastOutput.Store(time.Now().UnixNano())
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bytes += int64(len(chunk))
	if w := t.term[stream]; w != nil {
		// The terminal gets bytes at once (progress bars end in '\r', not
		// '\n'); the status line is cleared first and redrawn later.
		t.status.clearLocked()
		w.Write(chunk)
		t.status.trackLocked(chunk)
	}
	data := chunk
	if len(t.carry[stream]) > 0 {
		data = append(t.carry[stream], chunk...)
		t.carry[stream] = t.carry[stream][:0]
	}
	k := bytes.LastIndexByte(data, '\n')
	if k < 0 {
		if len(data) < maxCarry {
			t.carry[stream] = append(t.carry[stream], data...)
			return
		}
		k = len(data) - 1 // flush a newline-less piece whole
	}
	t.writeLines(data[:k+1])
	if rest := data[k+1:]; len(rest) > 0 {
		t.carry[stream] = append(t.carry[stream], rest...)
	}
}

// writeLines writes whole lines (data ends in '\n') to the file and to
// the tracker. Caller holds mu.
func (t *tee) writeLines(data []byte) {
	if _, err := t.file.Write(data); err != nil && t.fileErr == nil {
		t.fileErr = err
	}
	t.lines += int64(bytes.Count(data, []byte{'\n'}))
	if t.onLines != nil {
		t.onLines(data)
	}
}

// finish writes a last line that had no newline.
func (t *tee) finish(stream int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rest := t.carry[stream]; len(rest) > 0 {
		t.carry[stream] = nil
		t.writeLines(append(rest, '\n'))
	}
}

// since is how long ago the boot last printed anything.
func (t *tee) since(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, t.lastOutput.Load()))
}

func (t *tee) counts() (lines, bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lines, t.bytes
}

// locked runs f with the output lock held, so f's terminal writes do not
// cut into the boot's lines.
func (t *tee) locked(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f()
}
