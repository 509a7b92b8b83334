package watch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sync"
	"syscall"
	"time"
)

// The terminal is the slowest reader of the boot's output, and nothing
// may wait for it: termCopy takes the boot's output after it is in
// output.log, and bringup's own messages and status line, and writes them
// on goroutines of their own. A terminal that does not keep up loses
// whole lines of the boot's output from its copy (never from the log, never
// bringup's messages), counted; one that is closed (EPIPE: `| head`) stops
// getting that stream and the boot goes on.

// Sinks of the terminal copy.
const (
	sinkStdout = iota
	sinkStderr
	sinkMessages
	nSinks
)

var sinkNames = [nSinks]string{"stdout", "stderr", "messages"}

// DefaultTerminalBuffer bounds the boot's output waiting for one terminal
// destination.
const DefaultTerminalBuffer = 4 << 20

// termItemMax is the largest queued piece of output: small enough that a
// slow terminal shows progress piece by piece (drain tells a slow one from
// a stuck one), large enough to cost few writes.
const termItemMax = 64 << 10

// termStall is how long the end of a run waits for a terminal that takes
// nothing before what it did not take is counted as dropped.
const termStall = 5 * time.Second

type sink struct {
	name     string
	w        io.Writer
	err      error // the write that failed: nothing more goes to w
	midLine  bool  // the last byte queued did not end a line
	skipping bool  // leaving out the rest of a line whose start was dropped
	dropped  int64 // lines of the boot's output left out
}

type termItem struct {
	sink int
	kind byte
	data []byte
}

const (
	itemBoot = iota
	itemMessage
	itemStatus
)

// termGroup is one destination screen or file: the sinks that write to the
// same place share a group, so their output keeps its order there and the
// status line is cleared before anything else is written on its line.
type termGroup struct {
	mu        sync.Mutex
	cond      *sync.Cond
	queue     []termItem
	queued    int // bytes of boot output queued
	max       int
	status    *statusLine // the status line drawn on this group's screen
	inflight  []termItem  // being written
	done      int         // items of inflight written
	progress  uint64      // items written so far
	closing   bool
	abandoned bool     // stuck at the end of the run: takes nothing more
	free      [][]byte // written boot items' buffers, for reuse
}

// maxFree bounds the buffers a group keeps for reuse.
const maxFree = 16

type termCopy struct {
	sinks  [nSinks]*sink
	of     [nSinks]*termGroup
	groups []*termGroup
	// tell reports a sink closed or lines first dropped (once per sink);
	// it runs without any group's lock held.
	tell   func(string)
	told   [nSinks]bool
	tellMu sync.Mutex
}

// newTermCopy copies to stdout, stderr and messages (nil or io.Discard:
// not copied), with status drawn on status (nil: none), each destination
// holding at most max bytes of the boot's output in waiting.
func newTermCopy(stdout, stderr, messages, status io.Writer, max int) *termCopy {
	if max <= 0 {
		max = DefaultTerminalBuffer
	}
	t := &termCopy{}
	var keys []io.Writer
	group := func(w io.Writer) *termGroup {
		for i, k := range keys {
			if sameSink(k, w) {
				return t.groups[i]
			}
		}
		g := &termGroup{max: max}
		g.cond = sync.NewCond(&g.mu)
		keys = append(keys, w)
		t.groups = append(t.groups, g)
		return g
	}
	for i, w := range [nSinks]io.Writer{stdout, stderr, messages} {
		if w == nil || w == io.Discard {
			continue
		}
		t.sinks[i] = &sink{name: sinkNames[i], w: w}
		t.of[i] = group(w)
	}
	if status != nil {
		group(status).status = &statusLine{w: status, atStart: true}
	}
	for _, g := range t.groups {
		go t.write(g)
	}
	return t
}

// sameSink reports whether a and b write to the same place: the same
// writer, or files on the same device and inode (one terminal opened
// twice, stdout and stderr both the tty).
func sameSink(a, b io.Writer) bool {
	if a == nil || b == nil {
		return false
	}
	if ta, tb := reflect.TypeOf(a), reflect.TypeOf(b); ta == tb && ta.Comparable() && a == b {
		return true
	}
	fa, ok1 := a.(*os.File)
	fb, ok2 := b.(*os.File)
	if !ok1 || !ok2 {
		return false
	}
	var sa, sb syscall.Stat_t
	if syscall.Fstat(int(fa.Fd()), &sa) != nil || syscall.Fstat(int(fb.Fd()), &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino && sa.Rdev == sb.Rdev
}

// push queues data (copied) for sink i; pieces for the same sink are
// joined up to termItemMax. Caller holds g.mu.
func (g *termGroup) push(i int, kind byte, data []byte) {
	for len(data) > 0 {
		if n := len(g.queue); n > 0 && kind == itemBoot {
			last := &g.queue[n-1]
			if last.sink == i && last.kind == itemBoot && len(last.data) < termItemMax {
				k := min(termItemMax-len(last.data), len(data))
				last.data = append(last.data, data[:k]...)
				g.queued += k
				data = data[k:]
				continue
			}
		}
		k := len(data)
		var buf []byte
		if kind == itemBoot {
			k = min(k, termItemMax)
			g.queued += k
			// A flooding boot would otherwise allocate (and zero) a new
			// buffer per piece.
			if n := len(g.free); n > 0 {
				buf, g.free = g.free[n-1][:0], g.free[:n-1]
			} else {
				buf = make([]byte, 0, termItemMax)
			}
		}
		g.queue = append(g.queue, termItem{sink: i, kind: kind, data: append(buf, data[:k]...)})
		data = data[k:]
	}
	g.cond.Signal()
}

// boot queues a chunk of the boot's output for stream (0 stdout, 1
// stderr). It never blocks on the terminal: past the bound, whole lines
// are left out and counted.
func (t *termCopy) boot(stream int, chunk []byte) {
	s, g := t.sinks[stream], t.of[stream]
	if s == nil || len(chunk) == 0 {
		return
	}
	firstDrop := false
	g.mu.Lock()
	if s.err != nil || g.abandoned {
		g.mu.Unlock()
		return
	}
	data := chunk
	if s.skipping {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			g.mu.Unlock()
			return
		}
		data, s.skipping = data[i+1:], false
	}
	if len(data) > 0 && g.queued+len(data) > g.max {
		// Finish the line the terminal is in the middle of when its end is
		// near, then leave out whole lines.
		keep := 0
		if s.midLine {
			if i := bytes.IndexByte(data, '\n'); i >= 0 && i < termItemMax {
				keep = i + 1
			}
		}
		drop := data[keep:]
		n := int64(bytes.Count(drop, []byte{'\n'}))
		if len(drop) > 0 && drop[len(drop)-1] != '\n' {
			n++
			s.skipping = true
		}
		firstDrop = s.dropped == 0 && n > 0
		s.dropped += n
		data = data[:keep]
		if s.midLine && keep == 0 && n > 0 {
			data = []byte{'\n'} // the cut line ends where it was cut
		}
	}
	if len(data) > 0 {
		g.push(stream, itemBoot, data)
		s.midLine = data[len(data)-1] != '\n'
	}
	g.mu.Unlock()
	if firstDrop {
		t.once(stream, fmt.Sprintf("the terminal is not keeping up with the boot's %s: lines are left out of the terminal copy (output.log gets every line; the count comes at the end)", s.name))
	}
}

// message queues one of bringup's own lines; it is never dropped.
func (t *termCopy) message(text string) {
	s, g := t.sinks[sinkMessages], t.of[sinkMessages]
	if s == nil {
		return
	}
	g.mu.Lock()
	if s.err == nil && !g.abandoned {
		g.push(sinkMessages, itemMessage, []byte(text))
	}
	g.mu.Unlock()
}

// status draws the status line (replacing one not drawn yet).
func (t *termCopy) status(text string) {
	for _, g := range t.groups {
		if g.status == nil {
			continue
		}
		g.mu.Lock()
		if n := len(g.queue); n > 0 && g.queue[n-1].kind == itemStatus {
			g.queue[n-1].data = []byte(text)
		} else if !g.abandoned {
			g.push(-1, itemStatus, []byte(text))
		}
		g.mu.Unlock()
	}
}

func (t *termCopy) once(i int, msg string) {
	t.tellMu.Lock()
	told := t.told[i]
	t.told[i] = true
	t.tellMu.Unlock()
	if !told && t.tell != nil {
		t.tell(msg)
	}
}

// write is the goroutine that writes one group's queue. One stuck in a
// write that never returns (a terminal nobody reads) is left behind.
func (t *termCopy) write(g *termGroup) {
	for {
		g.mu.Lock()
		for len(g.queue) == 0 && !g.closing {
			g.cond.Wait()
		}
		if len(g.queue) == 0 || g.abandoned {
			g.mu.Unlock()
			return
		}
		batch := g.queue
		g.queue, g.queued, g.inflight, g.done = nil, 0, batch, 0
		g.mu.Unlock()
		for k, it := range batch {
			g.mu.Lock()
			stop := g.abandoned
			var s *sink
			if it.sink >= 0 {
				s = t.sinks[it.sink]
				stop = stop || s.err != nil
			}
			g.mu.Unlock()
			if !stop {
				if it.kind == itemStatus {
					g.status.drawLocked(string(it.data))
				} else {
					t.writeItem(g, s, it)
				}
			}
			g.mu.Lock()
			g.done, g.progress = k+1, g.progress+1
			g.mu.Unlock()
		}
		g.mu.Lock()
		for _, it := range batch {
			if it.kind == itemBoot && cap(it.data) == termItemMax && len(g.free) < maxFree {
				g.free = append(g.free, it.data)
			}
		}
		g.inflight, g.done = nil, 0
		g.cond.Broadcast()
		g.mu.Unlock()
	}
}

func (t *termCopy) writeItem(g *termGroup, s *sink, it termItem) {
	g.status.clearLocked()
	n, err := s.w.Write(it.data)
	if err == nil && n < len(it.data) {
		err = io.ErrShortWrite
	}
	g.status.trackLocked(it.data[:n])
	if err == nil {
		return
	}
	g.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	g.mu.Unlock()
	if it.sink != sinkMessages {
		what := err.Error()
		if errors.Is(err, syscall.EPIPE) {
			what = "broken pipe: its reader is gone"
		}
		t.once(it.sink, fmt.Sprintf("the terminal copy of the boot's %s stopped (%s); the boot goes on and output.log gets every line", s.name, what))
	}
}

// drain waits until the boot's output queued so far is written. A group
// that writes nothing for stall is abandoned: the lines it still held are
// counted as dropped, and it takes nothing more.
func (t *termCopy) drain(stall time.Duration) {
	var wg sync.WaitGroup
	for _, g := range t.groups {
		wg.Add(1)
		go func() { defer wg.Done(); t.drainGroup(g, stall) }()
	}
	wg.Wait()
}

func (t *termCopy) drainGroup(g *termGroup, stall time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	last, since := g.progress, time.Now()
	for len(g.queue) > 0 || g.inflight != nil {
		if g.abandoned {
			return
		}
		if g.progress != last {
			last, since = g.progress, time.Now()
		} else if time.Since(since) >= stall {
			left := append(g.inflight[g.done:], g.queue...)
			for _, it := range left {
				if it.kind == itemBoot {
					t.sinks[it.sink].dropped += int64(bytes.Count(it.data, []byte{'\n'}))
				}
			}
			g.queue, g.queued, g.abandoned = nil, 0, true
			return
		}
		g.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		g.mu.Lock()
	}
}

// close drains what is queued (as drain) and ends the writers that are
// not stuck.
func (t *termCopy) close(stall time.Duration) {
	t.drain(stall)
	for _, g := range t.groups {
		g.mu.Lock()
		g.closing = true
		g.cond.Broadcast()
		g.mu.Unlock()
	}
}

// dropped is the number of the boot's lines left out of the terminal copy.
func (t *termCopy) dropped() int64 {
	var n int64
	for i, s := range t.sinks[:sinkMessages] {
		if s != nil {
			g := t.of[i]
			g.mu.Lock()
			n += s.dropped
			g.mu.Unlock()
		}
	}
	return n
}

// closed names the boot's streams whose terminal copy stopped on an error.
func (t *termCopy) closed() []string {
	var out []string
	for i, s := range t.sinks[:sinkMessages] {
		if s == nil {
			continue
		}
		g := t.of[i]
		g.mu.Lock()
		if s.err != nil {
			out = append(out, s.name+": "+s.err.Error())
		}
		g.mu.Unlock()
	}
	return out
}
