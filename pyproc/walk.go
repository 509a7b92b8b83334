package pyproc

import (
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
	codes    map[uint64]*codeInfo
}

// codeInfo is what a frame needs from its code object, decoded once per
// capture.
type codeInfo struct {
	file, name string
	first      int
	table      []byte
}

// rawThread is one thread state as read.
type rawThread struct {
	ident  uint64 // pthread id (threading.get_ident())
	native int    // Linux tid; 0 when the version does not record it
	frames record.Stack
}

func newTarget(mem Memory, lay *Layout, runtime, codeType, strType uint64) *target {
	return &target{mem: reader{mem}, lay: lay, runtime: runtime, codeType: codeType, strType: strType, codes: map[uint64]*codeInfo{}}
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
		return nil, badRead("_PyRuntime has no interpreter (not initialised yet, or finalised)")
	}
	var out []rawThread
	seenInterp := map[uint64]bool{}
	for ; interp != 0; interp, err = t.mem.u64(interp + uint64(l.InterpNext)) {
		if seenInterp[interp] || len(seenInterp) >= maxInterpreters {
			return nil, badRead("interpreter list loops at %#x", interp)
		}
		seenInterp[interp] = true
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
				return nil, err
			}
			out = append(out, th)
			if ts, err = t.mem.u64(ts + uint64(l.TstateNext)); err != nil {
				return nil, err
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

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
	var frame uint64
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
		return th, err
	}
	seen := map[uint64]bool{}
	for frame != 0 {
		if seen[frame] || len(seen) >= maxFrames {
			return th, badRead("frame chain loops at %#x", frame)
		}
		seen[frame] = true
		f, ok, err := t.frame(frame)
		if err != nil {
			return th, err
		}
		if ok {
			th.frames = append(th.frames, f)
		}
		if frame, err = t.mem.u64(frame + uint64(l.FramePrevious)); err != nil {
			return th, err
		}
	}
	return th, nil
}

// frame decodes one frame; ok is false for frames Python itself hides
// (C-stack shims, frames not yet past their first traceable instruction).
func (t *target) frame(addr uint64) (record.Frame, bool, error) {
	l := t.lay
	code, err := t.mem.u64(addr + uint64(l.FrameCode))
	if err != nil {
		return record.Frame{}, false, err
	}
	if l.FrameModel == 0 {
		ci, err := t.code(code)
		if err != nil {
			return record.Frame{}, false, err
		}
		v, err := t.mem.u32(addr + uint64(l.FrameLasti))
		if err != nil {
			return record.Frame{}, false, err
		}
		return record.Frame{Func: ci.name, File: ci.file, Line: line310(ci.table, int(int32(v))*2, ci.first)}, true, nil
	}
	owner, err := t.mem.u8(addr + uint64(l.FrameOwner))
	if err != nil {
		return record.Frame{}, false, err
	}
	if l.OwnerCStack >= 0 && int64(owner) == l.OwnerCStack {
		return record.Frame{}, false, nil
	}
	if l.FrameModel == 2 {
		// 3.13: f_executable may be None (or another non-code object) for
		// frames that run no Python code.
		typ, err := t.mem.u64(code + uint64(l.ObType))
		if err != nil {
			return record.Frame{}, false, err
		}
		if typ != t.codeType {
			return record.Frame{}, false, nil
		}
	}
	ci, err := t.code(code)
	if err != nil {
		return record.Frame{}, false, err
	}
	instr, err := t.mem.u64(addr + uint64(l.FrameInstr))
	if err != nil {
		return record.Frame{}, false, err
	}
	lasti := (int64(instr) - int64(code+uint64(l.CodeCodeAdaptive))) / 2
	if lasti < -1 || lasti > maxLinetableLen {
		return record.Frame{}, false, badRead("frame %#x instruction pointer %#x is outside its code %#x", addr, instr, code)
	}
	if int64(owner) != l.OwnerGenerator && l.CodeFirstTraceable > 0 {
		ft, err := t.mem.u32(code + uint64(l.CodeFirstTraceable))
		if err != nil {
			return record.Frame{}, false, err
		}
		if lasti < int64(int32(ft)) {
			return record.Frame{}, false, nil // incomplete: Python skips it too
		}
	}
	return record.Frame{Func: ci.name, File: ci.file, Line: line311(ci.table, int(lasti)*2, ci.first)}, true, nil
}

// code reads a code object after checking that it is one.
func (t *target) code(addr uint64) (*codeInfo, error) {
	if ci, ok := t.codes[addr]; ok {
		return ci, nil
	}
	l := t.lay
	typ, err := t.mem.u64(addr + uint64(l.ObType))
	if err != nil {
		return nil, err
	}
	if typ != t.codeType {
		return nil, badRead("object %#x in a frame is not a code object (type %#x, PyCode_Type is %#x)", addr, typ, t.codeType)
	}
	var ci codeInfo
	nameOff := l.CodeName
	if l.FrameModel > 0 && l.CodeQualname > 0 {
		nameOff = l.CodeQualname
	}
	if ci.file, err = t.stringField(addr + uint64(l.CodeFilename)); err != nil {
		return nil, err
	}
	if ci.name, err = t.stringField(addr + uint64(nameOff)); err != nil {
		return nil, err
	}
	first, err := t.mem.u32(addr + uint64(l.CodeFirstlineno))
	if err != nil {
		return nil, err
	}
	ci.first = int(int32(first))
	tab, err := t.mem.u64(addr + uint64(l.CodeLinetable))
	if err != nil {
		return nil, err
	}
	if ci.table, err = t.readBytes(tab); err != nil {
		return nil, err
	}
	t.codes[addr] = &ci
	return &ci, nil
}

// stringField reads the str object a pointer field points at, checking its
// type when PyUnicode_Type is known.
func (t *target) stringField(field uint64) (string, error) {
	p, err := t.mem.u64(field)
	if err != nil {
		return "", err
	}
	if t.strType != 0 {
		typ, err := t.mem.u64(p + uint64(t.lay.ObType))
		if err != nil {
			return "", err
		}
		if typ != t.strType {
			return "", badRead("object %#x is not a str (type %#x)", p, typ)
		}
	}
	return t.readString(p)
}
