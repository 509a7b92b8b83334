package watch

import (
	"bytes"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// maxCarry bounds a line held back while waiting for its newline: output
// without newlines (binary, a progress bar gone wild) is written out in
// pieces of this size instead of growing without bound.
const maxCarry = 1 << 20

// tee copies the boot's stdout and stderr to the run's output.log in whole
// lines (so the two streams interleave line by line in the file, as on a
// terminal), hands each line to the tracker, and then to the terminal
// copy, which never makes it wait. The file gets one write per chunk read,
// no user-space buffering: what the boot printed is in the kernel's hands
// before the next read, so it survives bringup being killed.
//
// The counts are what reached the file. After a failed write (a full
// disk) nothing more is written to it, so output.log stays a true prefix
// of the output; the lines go on to the tracker and the terminal.
type tee struct {
	mu      sync.Mutex
	file    *os.File
	term    *termCopy
	onLines func([]byte) // called under mu with whole lines
	carry   [2][]byte

	lines, bytes         int64 // saved in output.log
	seenLines, seenBytes int64 // printed by the boot
	fileErr              error // the write that failed
	errLine              int64 // the first line not (wholly) saved
	onFileErr            func(err error, line int64)

	lastOutput atomic.Int64 // unix nanos of the last byte read

	// marks say when lines arrived: marks[i] is the line count after a
	// chunk and the time it was read; chunks within markEvery of a mark
	// join it. Under mu.
	marks []lineMark
}

// lineMark: the lines up to End (counted from 1, as output.log numbers
// them) had arrived by At.
type lineMark struct {
	End int64
	At  time.Time
}

// markEvery is the resolution of the lines' arrival times; maxMarks
// bounds them (about an hour at that rate), after which the last mark
// takes the later lines.
const (
	markEvery = 50 * time.Millisecond
	maxMarks  = 1 << 16
)

func newTee(file *os.File, term *termCopy, onLines func([]byte)) *tee {
	t := &tee{file: file, term: term, onLines: onLines}
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
	t.seenBytes += int64(len(chunk))
	data := chunk
	if len(t.carry[stream]) > 0 {
		data = append(t.carry[stream], chunk...)
		t.carry[stream] = t.carry[stream][:0]
	}
	if k := bytes.LastIndexByte(data, '\n'); k >= 0 || len(data) >= maxCarry {
		if k < 0 {
			k = len(data) - 1 // flush a newline-less piece whole
		}
		t.writeLines(data[:k+1])
		if rest := data[k+1:]; len(rest) > 0 {
			t.carry[stream] = append(t.carry[stream], rest...)
		}
	} else {
		t.carry[stream] = append(t.carry[stream], data...)
	}
	// The log first, then the terminal (bytes as they came: progress bars
	// end in '\r', not '\n'); queuing for it never waits.
	if t.term != nil {
		t.term.boot(stream, chunk)
	}
}

// writeLines writes whole lines (data ends in '\n') to the file and to
// the tracker. Caller holds mu.
func (t *tee) writeLines(data []byte) {
	nl := int64(bytes.Count(data, []byte{'\n'}))
	t.seenLines += nl
	now := time.Now()
	if n := len(t.marks); n > 0 && (now.Sub(t.marks[n-1].At) < markEvery || n >= maxMarks) {
		t.marks[n-1].End = t.seenLines
	} else {
		t.marks = append(t.marks, lineMark{End: t.seenLines, At: now})
	}
	if t.fileErr == nil {
		n, err := t.file.Write(data)
		if n == len(data) {
			t.lines += nl
		} else {
			t.lines += int64(bytes.Count(data[:n], []byte{'\n'}))
		}
		t.bytes += int64(n)
		if err == nil && n < len(data) {
			err = io.ErrShortWrite
		}
		if err != nil {
			t.fileErr, t.errLine = err, t.lines+1
			if t.onFileErr != nil {
				t.onFileErr(err, t.errLine)
			}
		}
	}
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

// counts is what reached output.log.
func (t *tee) counts() (lines, bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lines, t.bytes
}

// locked runs f with the output lock held (the tracker is fed under it).
func (t *tee) locked(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f()
}

// arrived is when line n of the output (from 1) was read, to markEvery;
// zero when it has not arrived.
func (t *tee) arrived(n int) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.arrivedLocked(int64(n))
}

func (t *tee) arrivedLocked(n int64) time.Time {
	if n <= 0 {
		return time.Time{}
	}
	i := sort.Search(len(t.marks), func(i int) bool { return t.marks[i].End >= n })
	if i == len(t.marks) {
		return time.Time{}
	}
	return t.marks[i].At
}
