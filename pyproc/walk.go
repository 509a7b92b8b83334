package pyproc

import (
	"fmt"
	"strings"
	"time"

	"github.com/bringup-tool/bringup/record"
)

// Bounds that stop a walk through torn or garbage memory.
const (
	maxInterpreters = 256
	maxThreads      = 4096
	maxFrames       = 8192
)

// target is one interpreter image seen through a Memory: the layout to read
// it with and the addresses of the objects that anchor and validate it.
type target struct {
	mem      reader
	lay      *Layout
	runtime  uint64 // &_PyRuntime
	codeType uint64 // &PyCode_Type: every code object must point at it
	strType  uint64 // &PyUnicode_Type, 0 when unknown
	dictType uint64 // &PyDict_Type, 0 when unknown
	// pid and start identify a live process for caches; 0 for recorded
	// or fake memory.
	pid   int
	start uint64
	codes map[uint64]*codeInfo

	// threadingGlobals is the f_globals of a frame running threading.py
	// code in the interpreter being walked: the threading module's dict,
	// a shortcut to threading._active that avoids scanning sys.modules.
	threadingGlobals uint64

	// Sizes of the fixed parts read in one go.
	frameSpan, codeSpan int64
	buf                 []byte
}

// scratch returns a reusable buffer of n bytes (one capture is
// single-threaded).
func (t *target) scratch(n int64) []byte {
	if int64(cap(t.buf)) < n {
		t.buf = make([]byte, n)
	}
	return t.buf[:n]
}

// span is the number of bytes that covers every listed member (each read
// as up to 8 bytes).
func span(offs ...int64) int64 {
	var m int64
	for _, o := range offs {
		m = max(m, o+8)
	}
	return m
}

// codeInfo is what a frame needs from its code object, decoded once per
// capture.
type codeInfo struct {
	file, name     string
	first          int
	firstTraceable int
	table          []byte
}

// rawThread is one thread state as read.
type rawThread struct {
	ident  uint64 // pthread id (threading.get_ident())
	native int    // Linux tid; 0 when the version does not record it
	name   string // threading name; "" when not found
	frames record.Stack
	// partial: the chain changed while being read and did not settle;
	// frames holds the outer ones two reads agreed on.
	partial bool
	// tries is how many times the chain was read (each try is a read and
	// its re-check).
	tries int
	err   error
}

func newTarget(mem Memory, lay *Layout, runtime, codeType, strType uint64) *target {
	return &target{mem: reader{mem}, lay: lay, runtime: runtime, codeType: codeType, strType: strType, codes: map[uint64]*codeInfo{},
		frameSpan: span(lay.FramePrevious, lay.FrameCode, lay.FrameLasti, lay.FrameState, lay.FrameInstr, lay.FrameOwner, lay.FrameGlobals),
		codeSpan:  span(lay.ObType, lay.CodeFilename, lay.CodeName, lay.CodeQualname, lay.CodeLinetable, lay.CodeFirstlineno, lay.CodeFirstTraceable),
	}
}

// walk reads every thread of every interpreter, newest thread first as
// CPython links them.
func (t *target) walk() ([]rawThread, error) {
	l := t.lay
	interp, err := t.mem.u64(t.runtime + uint64(l.RuntimeInterpretersHead))
	if err != nil {
		return nil, err
	}
	if interp == 0 {
		return nil, errNoInterpreter
	}
	var out []rawThread
	seenInterp := map[uint64]bool{}
	for ; interp != 0; interp, err = t.mem.u64(interp + uint64(l.InterpNext)) {
		if seenInterp[interp] || len(seenInterp) >= maxInterpreters {
			return nil, badRead("interpreter list loops at %#x", interp)
		}
		seenInterp[interp] = true
		t.threadingGlobals = 0
		ts, err := t.mem.u64(interp + uint64(l.InterpThreadsHead))
		if err != nil {
			return nil, err
		}
		seenTS := map[uint64]bool{}
		for ts != 0 {
			if seenTS[ts] || len(seenTS) >= maxThreads {
				return nil, badRead("thread list loops at %#x", ts)
			}
			seenTS[ts] = true
			back, err := t.mem.u64(ts + uint64(l.TstateInterp))
			if err != nil {
				return nil, err
			}
			if back != interp {
				return nil, badRead("thread state %#x points at interpreter %#x, not %#x it is listed in", ts, back, interp)
			}
			th, err := t.thread(ts)
			if err != nil {
				if !isBadRead(err) {
					return nil, err
				}
				// A running thread's chain kept changing under us: keep what
				// was read, say so, and let a layout problem show up as
				// every thread failing (checked below).
				th.partial = true
				th.err = err
			}
			out = append(out, th)
			if ts, err = t.mem.u64(ts + uint64(l.TstateNext)); err != nil {
				return nil, err
			}
		}
		if names := t.namesFor(interp); names != nil {
			for i := len(out) - len(seenTS); i < len(out); i++ {
				out[i].name = names[out[i].ident]
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		// A live interpreter has at least the thread that runs it; none at
		// all means the layout points somewhere else.
		return nil, badRead("no thread states in any interpreter")
	}
	failed := 0
	for _, th := range out {
		if th.err != nil {
			failed++
		}
	}
	if failed > 0 && failed == len(out) {
		return nil, out[0].err
	}
	return out, nil
}

// errNoInterpreter: the runtime exists but holds no interpreter, as while
// CPython starts up or after it has finalised.
var errNoInterpreter = fmt.Errorf("CPython has no interpreter yet (starting up) or any more (exiting): %w", ErrNotPython)

func isBadRead(err error) bool {
	_, ok := err.(*badReadError)
	return ok
}

// A thread's frame chain is read again while it changes under us (the
// thread is running): at least threadAttempts times, then on while the
// thread's reads have taken less than threadBudget, up to
// maxThreadAttempts, before settling for Partial. A thread that calls and
// returns in a loop is caught between two calls within a few tries; one
// that recurses to a different depth at every instant never is, and costs
// the budget.
const (
	threadAttempts    = 5
	maxThreadAttempts = 64
	threadBudget      = 2 * time.Millisecond
)

func (t *target) thread(ts uint64) (rawThread, error) {
	l := t.lay
	var th rawThread
	var err error
	if th.ident, err = t.mem.u64(ts + uint64(l.TstateThreadID)); err != nil {
		return th, err
	}
	if l.TstateNativeThreadID >= 0 {
		n, err := t.mem.u64(ts + uint64(l.TstateNativeThreadID))
		if err != nil {
			return th, err
		}
		th.native = int(n)
	}
	// The target keeps running: read the chain, then read its links again;
	// only a chain that read the same twice is taken whole. A running
	// thread reuses frame memory as it calls and returns, so one pass can
	// stitch frames from different moments into a stack that never was.
	var decoded []decodedRead // chains read with their frames
	var reads [][]link        // every chain read, for the root-path agreement below
	var lastErr error
	start := time.Now()
	for attempt := 0; attempt < maxThreadAttempts && (attempt < threadAttempts || time.Since(start) < threadBudget); attempt++ {
		th.tries++
		links, frames, err := t.chain(ts, true)
		if err != nil {
			lastErr = err
			continue
		}
		check, _, err := t.chain(ts, false)
		if err == nil && sameLinks(links, check) {
			th.frames = frames
			return th, nil
		}
		decoded = append(decoded, decodedRead{links, frames})
		reads = append(reads, links)
		if err == nil {
			reads = append(reads, check)
		}
	}
	if decoded == nil {
		return th, lastErr
	}
	// Never settled: the thread keeps calling and returning. Keep only the
	// outer frames that the reads agreed on (its root path) and say the
	// rest moved: an unconfirmed inner part can hold anything the thread's
	// frame memory held a moment ago (on 3.10, even a recycled frame object
	// of another thread), which is worse than no leaf. Two reads alone are
	// not enough: both can pass through the same recycled frame whose f_back
	// was cleared and so agree on a "root" that is not the thread's; such a
	// read ends at another root than the thread's, so the root most reads
	// end at is the thread's, and only the reads that end there are compared
	// (all of them when no root has a majority).
	group := rootMajority(reads)
	k := commonRoot(group)
	rep := decoded[len(decoded)-1]
	for _, d := range decoded {
		if len(d.links) > 0 && len(group) > 0 && d.links[len(d.links)-1].same(group[0][len(group[0])-1]) {
			rep = d
		}
	}
	first := len(rep.frames)
	for i := len(rep.links) - k; i < len(rep.links); i++ {
		if rep.links[i].frame >= 0 {
			first = min(first, rep.links[i].frame)
		}
	}
	th.frames = rep.frames[first:]
	th.partial = true
	return th, nil
}

// decodedRead is one read of a chain with its decoded frames.
type decodedRead struct {
	links  []link
	frames record.Stack
}

// rootMajority returns the reads that end at the root link more than half
// of them end at, or all reads when no root has a majority.
func rootMajority(reads [][]link) [][]link {
	count := map[link]int{}
	for _, r := range reads {
		if len(r) > 0 {
			root := r[len(r)-1]
			root.frame = 0
			count[root]++
		}
	}
	for root, n := range count {
		if n*2 > len(reads) {
			var out [][]link
			for _, r := range reads {
				if len(r) > 0 && r[len(r)-1].same(root) {
					out = append(out, r)
				}
			}
			return out
		}
	}
	return reads
}

// maxChunk bounds a data-stack chunk copy (CPython's first chunk is 16 KiB;
// later ones grow only as deep recursion needs).
const maxChunk = 1 << 20

// snapshotChunk copies the thread's current data-stack chunk; nil when the
// version has none or it cannot be read (frames are then read one by one).
func (t *target) snapshotChunk(ts uint64) (uint64, []byte) {
	l := t.lay
	if l.FrameModel == 0 || l.TstateDatastackChunk <= 0 || l.ChunkSize <= 0 {
		return 0, nil
	}
	chunk, err := t.mem.u64(ts + uint64(l.TstateDatastackChunk))
	if err != nil || chunk == 0 {
		return 0, nil
	}
	size, err := t.mem.u64(chunk + uint64(l.ChunkSize))
	if err != nil || size == 0 || size > maxChunk {
		return 0, nil
	}
	buf := make([]byte, size)
	if t.mem.Read(chunk, buf) != nil {
		return 0, nil
	}
	return chunk, buf
}

// link is one frame of a chain as read: what must not change between two
// reads for the chain to count as consistent.
type link struct {
	addr, code, prev uint64
	frame            int // index of its decoded frame, -1 when hidden
}

func (a link) same(b link) bool { return a.addr == b.addr && a.code == b.code && a.prev == b.prev }

// commonRoot is how many links, counted from the root end, every chain in
// reads shares.
func commonRoot(reads [][]link) int {
	if len(reads) == 0 {
		return 0
	}
	k := len(reads[0])
	for _, r := range reads[1:] {
		n := 0
		for n < k && n < len(r) && reads[0][len(reads[0])-1-n].same(r[len(r)-1-n]) {
			n++
		}
		k = n
	}
	return k
}

func sameLinks(a, b []link) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].same(b[i]) {
			return false
		}
	}
	return true
}

// chain reads a thread's frame chain, innermost first; with decode it also
// decodes the frames (without, it only collects links, for the re-check).
func (t *target) chain(ts uint64, decode bool) ([]link, record.Stack, error) {
	l := t.lay
	var frame uint64
	var err error
	switch l.FrameModel {
	case 0, 2:
		frame, err = t.mem.u64(ts + uint64(l.TstateFrame))
	case 1:
		var cframe uint64
		if cframe, err = t.mem.u64(ts + uint64(l.TstateCFrame)); err == nil && cframe != 0 {
			frame, err = t.mem.u64(cframe + uint64(l.CFrameCurrentFrame))
		}
	}
	if err != nil {
		return nil, nil, err
	}
	// On 3.11+ the thread's interpreter frames live in its data-stack
	// chunk: copy the whole current chunk in one read, right after reading
	// where the chain starts, so the chain is walked in one near-instant
	// copy instead of one read per frame while the thread moves on.
	snapAt, snap := t.snapshotChunk(ts)
	var links []link
	var frames record.Stack
	seen := map[uint64]bool{}
	for frame != 0 {
		if seen[frame] || len(seen) >= maxFrames {
			return nil, nil, badRead("frame chain loops at %#x", frame)
		}
		seen[frame] = true
		var buf []byte
		if off := frame - snapAt; snap != nil && frame >= snapAt && off < uint64(len(snap)) && uint64(len(snap))-off >= uint64(t.frameSpan) {
			buf = snap[off : off+uint64(t.frameSpan)]
		} else {
			buf = t.scratch(t.frameSpan)
			if err := t.mem.Read(frame, buf); err != nil {
				return nil, nil, err
			}
		}
		code, _ := at(buf, l.FrameCode, 8)
		prev, _ := at(buf, l.FramePrevious, 8)
		if l.FrameModel == 0 && l.FrameStateSize == 1 {
			// A running thread can leave a link to a frame object that has
			// since returned (3.10 keeps it as the code's zombie frame, its
			// old f_back intact): the chain from there is stale history.
			st, ok := at(buf, l.FrameState, 1)
			state := int64(int8(st))
			if ok && len(links) == 0 && l.betweenFrames(state) {
				// The innermost frame is being entered or left (still
				// linked as the thread's frame, not executing): a thread
				// that calls and returns in a loop is there often, and
				// one descheduled there stays there for every try. It
				// runs no code now; like Python, leave it out and go on
				// with its caller, which is live. The re-read still
				// compares its link, so a stale one does not settle.
				links = append(links, link{addr: frame, code: code, prev: prev, frame: -1})
				frame = prev
				continue
			}
			running := state == l.FrameExecuting || (len(links) == 0 && state == l.FrameUnwinding && l.FrameUnwinding != l.FrameExecuting)
			if ok && !running {
				return nil, nil, badRead("frame %#x on the chain is not executing (state %d): stale link", frame, state)
			}
		}
		lk := link{addr: frame, code: code, prev: prev, frame: -1}
		if decode {
			f, ok, err := t.frame(frame, buf)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				lk.frame = len(frames)
				frames = append(frames, f)
				if t.threadingGlobals == 0 && l.FrameGlobals > 0 && strings.HasSuffix(f.File, "/threading.py") {
					t.threadingGlobals, _ = at(buf, l.FrameGlobals, 8)
				}
			}
		}
		links = append(links, lk)
		frame = prev
	}
	return links, frames, nil
}

// betweenFrames reports whether f_state (3.10) is that of a thread's
// innermost frame that runs no code at this instant: linked but not yet
// started, or a generator being resumed or just suspended, or a frame
// that has returned or raised and is about to be unlinked (CPython sets
// the state first, then points the thread at f_back).
func (l *Layout) betweenFrames(state int64) bool {
	for _, s := range []int64{l.FrameCreated, l.FrameSuspended, l.FrameReturned, l.FrameRaised} {
		if s != l.FrameExecuting && state == s {
			return true
		}
	}
	return false
}

// frame decodes one frame from its fixed part (buf, read at addr); ok is
// false for frames Python itself hides (C-stack shims, frames not yet past
// their first traceable instruction).
func (t *target) frame(addr uint64, buf []byte) (f record.Frame, ok bool, err error) {
	l := t.lay
	code, _ := at(buf, l.FrameCode, 8)
	if l.FrameModel == 0 {
		ci, err := t.code(code, true)
		if err != nil {
			return f, false, err
		}
		v, _ := at(buf, l.FrameLasti, 4)
		return record.Frame{Func: ci.name, File: ci.file, Line: line310(ci.table, int(int32(v))*2, ci.first)}, true, nil
	}
	owner, _ := at(buf, l.FrameOwner, 1)
	if l.OwnerCStack >= 0 && int64(owner) == l.OwnerCStack {
		return f, false, nil
	}
	// 3.13: f_executable may be None (or another non-code object) for
	// frames that run no Python code; earlier versions always hold code.
	ci, err := t.code(code, l.FrameModel != 2)
	if err != nil || ci == nil {
		return f, false, err
	}
	instr, _ := at(buf, l.FrameInstr, 8)
	lasti := (int64(instr) - int64(code+uint64(l.CodeCodeAdaptive))) / 2
	if lasti < -1 || lasti > maxLinetableLen {
		return f, false, badRead("frame %#x instruction pointer %#x is outside its code %#x", addr, instr, code)
	}
	if int64(owner) != l.OwnerGenerator && lasti < int64(ci.firstTraceable) {
		return f, false, nil // incomplete: Python skips it too
	}
	return record.Frame{Func: ci.name, File: ci.file, Line: line311(ci.table, int(lasti)*2, ci.first)}, true, nil
}

// code reads a code object (one read for its fixed part). With mustBe it
// is an error for the object not to be code; without, a non-code object
// yields nil.
func (t *target) code(addr uint64, mustBe bool) (*codeInfo, error) {
	if ci, ok := t.codes[addr]; ok {
		return ci, nil
	}
	l := t.lay
	buf := make([]byte, t.codeSpan)
	if err := t.mem.Read(addr, buf); err != nil {
		return nil, err
	}
	typ, _ := at(buf, l.ObType, 8)
	if typ != t.codeType {
		if !mustBe {
			return nil, nil
		}
		return nil, badRead("object %#x in a frame is not a code object (type %#x, PyCode_Type is %#x)", addr, typ, t.codeType)
	}
	var ci codeInfo
	nameOff := l.CodeName
	if l.FrameModel > 0 && l.CodeQualname > 0 {
		nameOff = l.CodeQualname
	}
	var err error
	fileP, _ := at(buf, l.CodeFilename, 8)
	if ci.file, err = t.stringAt(fileP); err != nil {
		return nil, err
	}
	nameP, _ := at(buf, nameOff, 8)
	if ci.name, err = t.stringAt(nameP); err != nil {
		return nil, err
	}
	first, _ := at(buf, l.CodeFirstlineno, 4)
	ci.first = int(int32(first))
	if l.CodeFirstTraceable > 0 {
		ft, _ := at(buf, l.CodeFirstTraceable, 4)
		ci.firstTraceable = int(int32(ft))
	}
	tab, _ := at(buf, l.CodeLinetable, 8)
	if ci.table, err = t.readBytes(tab); err != nil {
		return nil, err
	}
	t.codes[addr] = &ci
	return &ci, nil
}

// stringAt reads the str object at p, checking its type when
// PyUnicode_Type is known.
func (t *target) stringAt(p uint64) (string, error) {
	if p == 0 {
		return "", badRead("NULL where a str was expected")
	}
	return t.readString(p)
}
