package pyproc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Layout is where the reader finds things in one CPython minor version: byte
// offsets of struct members and a few constants. Values come from
// layouts_gen.go (generated from that version's headers), and on 3.13+ the
// members listed in Debug are replaced by the target's own _Py_DebugOffsets.
type Layout struct {
	Source string // the CPython release whose headers produced it, e.g. "3.12.1"
	Hex    int64  // its PY_VERSION_HEX

	// FrameModel: 0 = 3.10 PyFrameObject chain from tstate->frame;
	// 1 = 3.11/3.12 _PyInterpreterFrame via tstate->cframe->current_frame;
	// 2 = 3.13+ _PyInterpreterFrame via tstate->current_frame.
	FrameModel int64

	ObType, VarSize, TypeName, BytesSval, BytesSize int64

	UnicodeState, UnicodeLength, ASCIIObjectSize, CompactObjectSize int64
	StateKindShift, StateKindMask                                   int64
	StateCompactShift, StateCompactMask                             int64
	StateASCIIShift, StateASCIIMask                                 int64

	RuntimeInterpretersHead int64
	InterpNext              int64
	InterpThreadsHead       int64

	TstateNext, TstateInterp             int64
	TstateThreadID, TstateNativeThreadID int64 // native is -1 before 3.11
	TstateFrame                          int64 // 3.10 frame; 3.13 current_frame
	TstateCFrame, CFrameCurrentFrame     int64 // 3.11/3.12

	FramePrevious, FrameCode   int64
	FrameLasti, FrameLastiSize int64 // 3.10
	// 3.10: f_state, and the value of a frame that is running (on a
	// thread's chain every frame is); anything else is a freed or zombie
	// frame object reached through a stale link.
	FrameState, FrameStateSize, FrameExecuting int64
	FrameCreated                               int64 // 3.10: f_state of a frame linked but not yet run
	// 3.10: f_state values a thread's innermost frame holds while the
	// thread is between two frames: a generator resumed or yielding
	// (suspended), a frame returned or raised but not yet unlinked, and
	// one searching its handlers (unwinding, still running).
	FrameSuspended, FrameReturned, FrameUnwinding, FrameRaised int64
	FrameInstr                                                 int64 // prev_instr (3.11/3.12), instr_ptr (3.13)
	FrameOwner, FrameOwnerSize                                 int64
	OwnerGenerator, OwnerCStack                                int64 // OwnerCStack -1 when the version has no shim frames
	CodeFilename, CodeName                                     int64
	CodeQualname                                               int64 // 3.11+
	CodeLinetable, CodeFirstlineno                             int64
	CodeCodeAdaptive                                           int64 // 3.11+: instructions inline in the code object
	CodeFirstTraceable                                         int64 // 3.11+

	// Thread names (threading._active); NamesSupported is 0 where the
	// generator found no dict layout. 3.10's dict keys are the older
	// table (KeysDkSize > 0: dk_size slots, entries all {hash, key,
	// value}) and instance dicts sit at the type's tp_dictoffset
	// (TypeDictOffset, ValuesMode 0).
	NamesSupported                                  int64
	KeysDkSize, TypeDictOffset                      int64
	InterpModules, ModuleDict, DictKeys, DictValues int64
	KeysLog2IndexBytes, KeysKind, KeysNentries      int64
	KeysIndices, KindGeneral                        int64
	EntrySize, EntryKey, EntryValue                 int64
	UEntrySize, UEntryKey, UEntryValue              int64
	ValuesArray, ValuesValid                        int64
	HeapCachedKeys, TypeFlags                       int64
	FrameGlobals                                    int64 // _PyInterpreterFrame.f_globals (3.11+)
	// 3.11+: the thread state\'s current data-stack chunk (where its
	// interpreter frames live) and the chunk\'s size field.
	TstateDatastackChunk, ChunkSize   int64
	FlagManagedDict, FlagInlineValues int64
	// ValuesMode says where a managed-dict object keeps its attribute
	// values when it has no dict: 1 = pointer at ManagedValues (3.11),
	// 2 = tagged pointer sharing the dict slot (3.12), 3 = inline at
	// ManagedValues (3.13).
	ManagedDict, ManagedValues, ValuesMode int64
	ValuesTagMask, ValuesTagAdjust         int64
	LongShift, DigitSize, LongDigits       int64
	LongTag, LongNonSizeBits               int64 // 3.12+; LongTag -1 before

	// Debug, on 3.13+, is where each value lives inside _Py_DebugOffsets.
	Debug *DebugOffsetsLayout
}

// DebugOffsetsLayout gives, for one minor version, the byte position of each
// needed field inside struct _Py_DebugOffsets (generated from the headers;
// the struct's own layout is fixed within a minor version).
type DebugOffsetsLayout struct {
	Size, Version, FreeThreaded                            int64
	RuntimeInterpretersHead, InterpNext, InterpThreadsHead int64
	TstateNext, TstateInterp, TstateCurrentFrame           int64
	TstateThreadID, TstateNativeThreadID                   int64
	FramePrevious, FrameCode, FrameInstr, FrameOwner       int64
	CodeFilename, CodeName, CodeQualname, CodeLinetable    int64
	CodeFirstlineno, CodeCodeAdaptive                      int64
	ObType, TypeName, BytesSize, BytesSval                 int64
	UnicodeState, UnicodeLength, ASCIIObjectSize           int64
	InterpModules, DictKeys, DictValues, TypeFlags         int64
	TstateDatastackChunk                                   int64
}

// layoutFor returns a copy of the generated layout for a minor version.
func layoutFor(minor string) (*Layout, error) {
	g, ok := generatedLayouts[minor]
	if !ok {
		var have []string
		for m := range generatedLayouts {
			have = append(have, m)
		}
		sort.Slice(have, func(i, j int) bool { return minorLess(have[i], have[j]) })
		if len(have) > 0 && minorLess(minor, have[0]) {
			return nil, unsupported("CPython %s is older than %s, the oldest pyproc reads", minor, have[0])
		}
		return nil, unsupported("CPython %s: no generated layout (have %s); run go generate in pyproc with that version's headers installed", minor, strings.Join(have, ", "))
	}
	l := *g
	if l.BytesSize == 0 {
		l.BytesSize = l.VarSize
	}
	return &l, nil
}

var debugCookie = []byte("xdebugpy")

// maxOffset bounds any member offset read from a target: real ones are a few
// KiB at most, and a bound keeps garbage from sizing buffers.
const maxOffset = 1 << 16

// applyDebugOffsets fills the layout from the target's _Py_DebugOffsets
// (raw: the bytes at _PyRuntime). It checks the cookie, the version and
// rejects free-threaded builds, whose objects differ.
func (l *Layout) applyDebugOffsets(raw []byte, wantHex uint64) error {
	d := l.Debug
	if d == nil {
		return nil
	}
	if int64(len(raw)) < d.Size || !bytes.Equal(raw[:8], debugCookie) {
		return unsupported("CPython 3.13+ layout check failed: _PyRuntime does not start with the _Py_DebugOffsets cookie %q", debugCookie)
	}
	get := func(off int64) int64 { return int64(binary.LittleEndian.Uint64(raw[off:])) }
	ver := uint64(get(d.Version))
	if wantHex != 0 && ver != wantHex {
		return unsupported("CPython layout check failed: _Py_DebugOffsets version %#x differs from Py_Version %#x", ver, wantHex)
	}
	if ver>>16 != uint64(l.Hex)>>16 {
		return unsupported("CPython layout check failed: _Py_DebugOffsets is for %s, the generated layout for %s", hexVersion(ver), l.Source)
	}
	if get(d.FreeThreaded) != 0 {
		return unsupported("free-threaded CPython %s builds are not supported", hexVersion(ver))
	}
	l.RuntimeInterpretersHead = get(d.RuntimeInterpretersHead)
	l.InterpNext = get(d.InterpNext)
	l.InterpThreadsHead = get(d.InterpThreadsHead)
	l.TstateNext = get(d.TstateNext)
	l.TstateInterp = get(d.TstateInterp)
	l.TstateFrame = get(d.TstateCurrentFrame)
	l.TstateThreadID = get(d.TstateThreadID)
	l.TstateNativeThreadID = get(d.TstateNativeThreadID)
	l.FramePrevious = get(d.FramePrevious)
	l.FrameCode = get(d.FrameCode)
	l.FrameInstr = get(d.FrameInstr)
	l.FrameOwner = get(d.FrameOwner)
	l.CodeFilename = get(d.CodeFilename)
	l.CodeName = get(d.CodeName)
	l.CodeQualname = get(d.CodeQualname)
	l.CodeLinetable = get(d.CodeLinetable)
	l.CodeFirstlineno = get(d.CodeFirstlineno)
	l.CodeCodeAdaptive = get(d.CodeCodeAdaptive)
	l.ObType = get(d.ObType)
	l.TypeName = get(d.TypeName)
	l.BytesSize = get(d.BytesSize)
	l.BytesSval = get(d.BytesSval)
	l.UnicodeState = get(d.UnicodeState)
	l.UnicodeLength = get(d.UnicodeLength)
	l.ASCIIObjectSize = get(d.ASCIIObjectSize)
	l.InterpModules = get(d.InterpModules)
	l.DictKeys = get(d.DictKeys)
	l.DictValues = get(d.DictValues)
	l.TypeFlags = get(d.TypeFlags)
	l.TstateDatastackChunk = get(d.TstateDatastackChunk)
	// Offsets are small; anything huge means we are not looking at the struct.
	for _, v := range []int64{
		l.RuntimeInterpretersHead, l.InterpNext, l.InterpThreadsHead,
		l.TstateNext, l.TstateInterp, l.TstateFrame, l.TstateThreadID, l.TstateNativeThreadID,
		l.FramePrevious, l.FrameCode, l.FrameInstr, l.FrameOwner,
		l.CodeFilename, l.CodeName, l.CodeQualname, l.CodeLinetable, l.CodeFirstlineno, l.CodeCodeAdaptive,
		l.ObType, l.TypeName, l.BytesSize, l.BytesSval,
		l.UnicodeState, l.UnicodeLength, l.ASCIIObjectSize,
		l.InterpModules, l.DictKeys, l.DictValues, l.TypeFlags, l.TstateDatastackChunk,
	} {
		if v < 0 || v > maxOffset {
			return unsupported("CPython layout check failed: _Py_DebugOffsets holds an implausible offset %d", v)
		}
	}
	return nil
}

// hexVersion renders a PY_VERSION_HEX as "3.13.0" (with a pre-release
// suffix when there is one).
func hexVersion(h uint64) string {
	s := fmt.Sprintf("%d.%d.%d", h>>24&0xff, h>>16&0xff, h>>8&0xff)
	level, serial := h>>4&0xf, h&0xf
	switch level {
	case 0xa:
		s += fmt.Sprintf("a%d", serial)
	case 0xb:
		s += fmt.Sprintf("b%d", serial)
	case 0xc:
		s += fmt.Sprintf("rc%d", serial)
	}
	return s
}

// minorLess orders "3.9" before "3.10".
func minorLess(a, b string) bool {
	pa, pb := strings.SplitN(a, ".", 2), strings.SplitN(b, ".", 2)
	if len(pa) != 2 || len(pb) != 2 {
		return a < b
	}
	x0, _ := strconv.Atoi(pa[0])
	y0, _ := strconv.Atoi(pb[0])
	if x0 != y0 {
		return x0 < y0
	}
	x1, _ := strconv.Atoi(pa[1])
	y1, _ := strconv.Atoi(pb[1])
	return x1 < y1
}
