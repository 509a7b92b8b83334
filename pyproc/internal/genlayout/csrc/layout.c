/* layout.c prints, as Go struct fields, the offsets and sizes bringup's
 * pyproc reader needs for the CPython whose headers it is compiled against
 * (with -DPy_BUILD_CORE so the internal structs are visible). genlayout
 * compiles and runs it once per installed CPython; nothing here is typed by
 * hand, so a layout cannot silently drift from the headers it came from.
 *
 * On 3.13+ the fields the interpreter publishes in _Py_DebugOffsets are not
 * printed as values: instead the position of each inside _Py_DebugOffsets is
 * printed, and the reader takes the values from the target at run time. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <string.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#endif
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#if PY_VERSION_HEX < 0x030B0000
#include "frameobject.h"
#include "longintrepr.h"
#else
#include "internal/pycore_dict.h"
#include "internal/pycore_moduleobject.h"
#include "internal/pycore_object.h"
#endif

#if PY_VERSION_HEX >= 0x030E0000
#error "3.14+ frames hold tagged _PyStackRef executables: the reader does not support them yet"
#endif

#define F(name, value) printf("\t\t%s: %ld,\n", name, (long)(value))
#define OFF(name, type, member) F(name, offsetof(type, member))

/* bit position and width of a bitfield in PyASCIIObject.state, found by
 * setting it to all ones in a zeroed object. */
#define STATEBITS(name, member, ones)                                           \
    do {                                                                        \
        PyASCIIObject o;                                                        \
        unsigned int w;                                                         \
        memset(&o, 0, sizeof o);                                                \
        o.state.member = ones;                                                  \
        memcpy(&w, (char *)&o + offsetof(PyASCIIObject, state), sizeof w);      \
        int shift = 0;                                                          \
        while (shift < 32 && !((w >> shift) & 1)) shift++;                      \
        F(name "Shift", shift);                                                 \
        F(name "Mask", (long)(w >> shift));                                     \
    } while (0)

#if PY_VERSION_HEX >= 0x030B0000
/* Thread names come from threading._active: dicts, modules, ints and
 * managed instance dicts (3.10: see names310 below). Offsets that CPython only expresses
 * as inline helpers are measured by calling those helpers on a fake object
 * address (asserts are off: -DNDEBUG). */
static void names(void) {
    char buf[256];
    PyObject *obj = (PyObject *)(buf + 128);
    F("NamesSupported", 1);
    OFF("ModuleDict", PyModuleObject, md_dict);
    OFF("KeysLog2IndexBytes", PyDictKeysObject, dk_log2_index_bytes);
    OFF("KeysKind", PyDictKeysObject, dk_kind);
    OFF("KeysNentries", PyDictKeysObject, dk_nentries);
    OFF("KeysIndices", PyDictKeysObject, dk_indices);
    F("KindGeneral", DICT_KEYS_GENERAL);
    F("EntrySize", sizeof(PyDictKeyEntry));
    OFF("EntryKey", PyDictKeyEntry, me_key);
    OFF("EntryValue", PyDictKeyEntry, me_value);
    F("UEntrySize", sizeof(PyDictUnicodeEntry));
    OFF("UEntryKey", PyDictUnicodeEntry, me_key);
    OFF("UEntryValue", PyDictUnicodeEntry, me_value);
    OFF("ValuesArray", PyDictValues, values);
    OFF("HeapCachedKeys", PyHeapTypeObject, ht_cached_keys);
    F("FlagManagedDict", Py_TPFLAGS_MANAGED_DICT);
    F("LongShift", PyLong_SHIFT);
    F("DigitSize", sizeof(digit));
#if PY_VERSION_HEX >= 0x030C0000
    OFF("LongDigits", PyLongObject, long_value.ob_digit);
    OFF("LongTag", PyLongObject, long_value.lv_tag);
    F("LongNonSizeBits", _PyLong_NON_SIZE_BITS);
#else
    OFF("LongDigits", PyLongObject, ob_digit);
    F("LongTag", -1);
#endif
#if PY_VERSION_HEX >= 0x030D0000
    F("ManagedDict", (char *)_PyObject_ManagedDictPointer(obj) - (char *)obj);
    F("ValuesMode", 3); /* inline after the object header */
    F("ManagedValues", (char *)_PyObject_InlineValues(obj) - (char *)obj);
    OFF("ValuesValid", PyDictValues, valid);
    F("FlagInlineValues", Py_TPFLAGS_INLINE_VALUES);
#elif PY_VERSION_HEX >= 0x030C0000
    /* one slot holds the dict or, tagged, the values pointer */
    PyDictOrValues *dv = _PyObject_DictOrValuesPointer(obj);
    F("ManagedDict", (char *)dv - (char *)obj);
    F("ValuesMode", 2);
    F("ManagedValues", (char *)dv - (char *)obj);
    {
        PyDictOrValues t;
        long mask = 0;
        for (int bit = 0; bit < 4; bit++) {
            t.values = (char *)(uintptr_t)(0x1000 | (1u << bit));
            if (_PyDictOrValues_IsValues(t)) mask |= 1L << bit;
        }
        F("ValuesTagMask", mask);
        t.values = (char *)(uintptr_t)0x1001;
        F("ValuesTagAdjust", (char *)_PyDictOrValues_GetValues(t) - t.values);
    }
#else
    F("ManagedDict", (char *)_PyObject_ManagedDictPointer(obj) - (char *)obj);
    F("ValuesMode", 1); /* a separate slot points at the values */
    F("ManagedValues", (char *)_PyObject_ValuesPointer(obj) - (char *)obj);
#endif
    OFF("TypeFlags", PyTypeObject, tp_flags);
    OFF("FrameGlobals", _PyInterpreterFrame, f_globals);
    /* interpreter frames live in per-thread data-stack chunks */
    OFF("ChunkSize", _PyStackChunk, size);
#if PY_VERSION_HEX < 0x030D0000
    OFF("TstateDatastackChunk", PyThreadState, datastack_chunk);
#endif
#if PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030D0000
    OFF("InterpModules", PyInterpreterState, imports.modules);
#elif PY_VERSION_HEX < 0x030C0000
    OFF("InterpModules", PyInterpreterState, modules);
#endif
#if PY_VERSION_HEX < 0x030D0000
    OFF("DictKeys", PyDictObject, ma_keys);
    OFF("DictValues", PyDictObject, ma_values);
#endif
}
#endif

#if PY_VERSION_HEX < 0x030B0000
/* 3.10 keeps PyDictKeysObject and PyModuleObject out of the installed
 * headers (Objects/dict-common.h, Objects/moduleobject.c), so their offsets
 * are measured instead: genlayout links this program against the version's
 * libpython, real objects are built, and each offset is where a known value
 * (a key object, its hash, a value object, an entry count) sits in them.
 * Two dicts of different sizes must give the same answers, else the program
 * fails and genlayout stops: a wrong layout is never written. */
static long find_word(const char *base, long from, long span, Py_uintptr_t v) {
    for (long off = from; off + 8 <= span; off += 8) {
        Py_uintptr_t w;
        memcpy(&w, base + off, sizeof w);
        if (w == v) return off;
    }
    return -1;
}

static int pow2(Py_uintptr_t v) { return v != 0 && (v & (v - 1)) == 0; }

/* bytes per index slot of a 3.10 dict table of the given size (DK_IXSIZE) */
static long ixsize(long size) {
    if (size <= 0xff) return 1;
    if (size <= 0xffff) return 2;
    if (size <= 0xffffffffL) return 4;
    return 8;
}

static void fail(const char *what) {
    fprintf(stderr, "layout.c: cannot measure %s on this CPython 3.10\n", what);
    exit(1);
}

static void names310(void) {
    enum { N = 20 };
    Py_Initialize();
    PyObject *key[N], *val[N];
    PyObject *small = PyDict_New(), *big = PyDict_New();
    for (int i = 0; i < N; i++) {
        key[i] = PyUnicode_FromFormat("layout_key_%d", i);
        val[i] = PyUnicode_FromFormat("layout_value_%d", i);
        if (i == 0) PyDict_SetItem(small, key[i], val[i]);
        PyDict_SetItem(big, key[i], val[i]);
    }
    const char *ks = (const char *)((PyDictObject *)small)->ma_keys;
    const char *kb = (const char *)((PyDictObject *)big)->ma_keys;
    /* header words: the entry count is 1 and N; the table size a power of
     * two that grew (refcount and usable do not both fit) */
    long nentries = -1, dksize = -1;
    for (long off = 0; off < 64; off += 8) {
        Py_uintptr_t a, b;
        memcpy(&a, ks + off, sizeof a);
        memcpy(&b, kb + off, sizeof b);
        if (a == 1 && b == N && nentries < 0) nentries = off;
        if (pow2(a) && pow2(b) && a >= 2 && b > a && b >= N && dksize < 0) dksize = off;
    }
    if (nentries < 0 || dksize < 0 || dksize >= nentries) fail("dk_size / dk_nentries");
    long sizes[2], kpos[2], entry_key = -1, entry_value = -1, indices[2];
    const char *tabs[2] = {ks, kb};
    for (int t = 0; t < 2; t++) {
        memcpy(&sizes[t], tabs[t] + dksize, sizeof sizes[t]);
        long span = nentries + 8 + sizes[t] * ixsize(sizes[t]) + 3 * 8 * 2;
        kpos[t] = find_word(tabs[t], nentries + 8, span, (Py_uintptr_t)key[0]);
        long hpos = find_word(tabs[t], nentries + 8, span, (Py_uintptr_t)PyObject_Hash(key[0]));
        long vpos = find_word(tabs[t], nentries + 8, span, (Py_uintptr_t)val[0]);
        if (kpos[t] < 0 || hpos < 0 || vpos < 0) fail("the first dict entry");
        long start = hpos < kpos[t] ? hpos : kpos[t];
        start = vpos < start ? vpos : start;
        if (t == 0) {
            entry_key = kpos[t] - start;
            entry_value = vpos - start;
        } else if (entry_key != kpos[t] - start || entry_value != vpos - start) {
            fail("the entry layout (two dicts disagree)");
        }
        indices[t] = start - sizes[t] * ixsize(sizes[t]);
    }
    if (indices[0] != indices[1] || indices[0] <= nentries) fail("dk_indices (two dicts disagree)");
    long k1 = find_word(kb, kpos[1], kpos[1] + 256, (Py_uintptr_t)key[1]);
    if (k1 <= kpos[1]) fail("the entry size");
    PyObject *mod = PyImport_ImportModule("threading");
    long mdict = mod ? find_word((const char *)mod, 8, 64, (Py_uintptr_t)PyModule_GetDict(mod)) : -1;
    if (mdict < 0) fail("PyModuleObject.md_dict");

    F("NamesSupported", 1);
    F("ModuleDict", mdict);
    F("KeysDkSize", dksize);
    F("KeysNentries", nentries);
    F("KeysIndices", indices[0]);
    F("EntrySize", k1 - kpos[1]);
    F("EntryKey", entry_key);
    F("EntryValue", entry_value);
    F("ValuesArray", 0); /* ma_values is the array itself */
    F("ValuesMode", 0);  /* instance dicts sit at type->tp_dictoffset */
    OFF("TypeDictOffset", PyTypeObject, tp_dictoffset);
    F("LongShift", PyLong_SHIFT);
    F("DigitSize", sizeof(digit));
    OFF("LongDigits", PyLongObject, ob_digit);
    F("LongTag", -1);
    OFF("FrameGlobals", PyFrameObject, f_globals);
    OFF("InterpModules", PyInterpreterState, modules);
    OFF("DictKeys", PyDictObject, ma_keys);
    OFF("DictValues", PyDictObject, ma_values);
}
#endif

int main(void) {
    printf("\t\tSource: \"%s\",\n", PY_VERSION);
    F("Hex", PY_VERSION_HEX);
    /* objects common to all versions */
    OFF("ObType", PyObject, ob_type);
    OFF("VarSize", PyVarObject, ob_size);
    OFF("TypeName", PyTypeObject, tp_name);
    OFF("BytesSval", PyBytesObject, ob_sval);
    OFF("UnicodeState", PyASCIIObject, state);
    F("ASCIIObjectSize", sizeof(PyASCIIObject));
    F("CompactObjectSize", sizeof(PyCompactUnicodeObject));
    STATEBITS("StateKind", kind, 7);
    STATEBITS("StateCompact", compact, 1);
    STATEBITS("StateASCII", ascii, 1);
#if PY_VERSION_HEX >= 0x030B0000
    names();
#else
    names310();
#endif

#if PY_VERSION_HEX >= 0x030D0000
    /* 3.13+: values come from the target's _Py_DebugOffsets; print where
     * each lives inside that struct. */
    F("FrameModel", 2);
    F("OwnerCStack", FRAME_OWNED_BY_CSTACK);
    F("OwnerGenerator", FRAME_OWNED_BY_GENERATOR);
    OFF("CodeFirstTraceable", PyCodeObject, _co_firsttraceable);
    F("FrameOwnerSize", sizeof(((_PyInterpreterFrame *)0)->owner));
    printf("\t\tDebug: &DebugOffsetsLayout{\n");
    F("\tSize", sizeof(_Py_DebugOffsets));
    OFF("\tVersion", _Py_DebugOffsets, version);
    OFF("\tFreeThreaded", _Py_DebugOffsets, free_threaded);
    OFF("\tRuntimeInterpretersHead", _Py_DebugOffsets, runtime_state.interpreters_head);
    OFF("\tInterpNext", _Py_DebugOffsets, interpreter_state.next);
    OFF("\tInterpThreadsHead", _Py_DebugOffsets, interpreter_state.threads_head);
    OFF("\tTstateNext", _Py_DebugOffsets, thread_state.next);
    OFF("\tTstateInterp", _Py_DebugOffsets, thread_state.interp);
    OFF("\tTstateCurrentFrame", _Py_DebugOffsets, thread_state.current_frame);
    OFF("\tTstateThreadID", _Py_DebugOffsets, thread_state.thread_id);
    OFF("\tTstateNativeThreadID", _Py_DebugOffsets, thread_state.native_thread_id);
    OFF("\tFramePrevious", _Py_DebugOffsets, interpreter_frame.previous);
    OFF("\tFrameCode", _Py_DebugOffsets, interpreter_frame.executable);
    OFF("\tFrameInstr", _Py_DebugOffsets, interpreter_frame.instr_ptr);
    OFF("\tFrameOwner", _Py_DebugOffsets, interpreter_frame.owner);
    OFF("\tCodeFilename", _Py_DebugOffsets, code_object.filename);
    OFF("\tCodeName", _Py_DebugOffsets, code_object.name);
    OFF("\tCodeQualname", _Py_DebugOffsets, code_object.qualname);
    OFF("\tCodeLinetable", _Py_DebugOffsets, code_object.linetable);
    OFF("\tCodeFirstlineno", _Py_DebugOffsets, code_object.firstlineno);
    OFF("\tCodeCodeAdaptive", _Py_DebugOffsets, code_object.co_code_adaptive);
    OFF("\tObType", _Py_DebugOffsets, pyobject.ob_type);
    OFF("\tTypeName", _Py_DebugOffsets, type_object.tp_name);
    OFF("\tBytesSize", _Py_DebugOffsets, bytes_object.ob_size);
    OFF("\tBytesSval", _Py_DebugOffsets, bytes_object.ob_sval);
    OFF("\tUnicodeState", _Py_DebugOffsets, unicode_object.state);
    OFF("\tUnicodeLength", _Py_DebugOffsets, unicode_object.length);
    OFF("\tASCIIObjectSize", _Py_DebugOffsets, unicode_object.asciiobject_size);
    OFF("\tInterpModules", _Py_DebugOffsets, interpreter_state.imports_modules);
    OFF("\tDictKeys", _Py_DebugOffsets, dict_object.ma_keys);
    OFF("\tDictValues", _Py_DebugOffsets, dict_object.ma_values);
    OFF("\tTypeFlags", _Py_DebugOffsets, type_object.tp_flags);
    OFF("\tTstateDatastackChunk", _Py_DebugOffsets, thread_state.datastack_chunk);
    printf("\t\t},\n");
#else
    OFF("RuntimeInterpretersHead", _PyRuntimeState, interpreters.head);
    OFF("InterpNext", PyInterpreterState, next);
#if PY_VERSION_HEX >= 0x030B0000
    OFF("InterpThreadsHead", PyInterpreterState, threads.head);
#else
    OFF("InterpThreadsHead", PyInterpreterState, tstate_head);
#endif
    OFF("TstateNext", PyThreadState, next);
    OFF("TstateInterp", PyThreadState, interp);
    OFF("TstateThreadID", PyThreadState, thread_id);
    OFF("CodeFilename", PyCodeObject, co_filename);
    OFF("CodeName", PyCodeObject, co_name);
    OFF("CodeLinetable", PyCodeObject, co_linetable);
    OFF("CodeFirstlineno", PyCodeObject, co_firstlineno);
    OFF("UnicodeLength", PyASCIIObject, length);
#if PY_VERSION_HEX >= 0x030B0000
    F("FrameModel", 1);
    OFF("TstateNativeThreadID", PyThreadState, native_thread_id);
    OFF("TstateCFrame", PyThreadState, cframe);
    OFF("CFrameCurrentFrame", _PyCFrame, current_frame);
    OFF("FramePrevious", _PyInterpreterFrame, previous);
    OFF("FrameCode", _PyInterpreterFrame, f_code);
    OFF("FrameInstr", _PyInterpreterFrame, prev_instr);
    OFF("FrameOwner", _PyInterpreterFrame, owner);
    F("FrameOwnerSize", sizeof(((_PyInterpreterFrame *)0)->owner));
    F("OwnerGenerator", FRAME_OWNED_BY_GENERATOR);
#if PY_VERSION_HEX >= 0x030C0000
    F("OwnerCStack", FRAME_OWNED_BY_CSTACK);
#else
    F("OwnerCStack", -1);
#endif
    OFF("CodeQualname", PyCodeObject, co_qualname);
    OFF("CodeCodeAdaptive", PyCodeObject, co_code_adaptive);
    OFF("CodeFirstTraceable", PyCodeObject, _co_firsttraceable);
#else
    F("FrameModel", 0);
    F("TstateNativeThreadID", -1);
    OFF("TstateFrame", PyThreadState, frame);
    OFF("FramePrevious", PyFrameObject, f_back);
    OFF("FrameCode", PyFrameObject, f_code);
    OFF("FrameLasti", PyFrameObject, f_lasti);
    F("FrameLastiSize", sizeof(((PyFrameObject *)0)->f_lasti));
    OFF("FrameState", PyFrameObject, f_state);
    F("FrameStateSize", sizeof(((PyFrameObject *)0)->f_state));
    F("FrameExecuting", FRAME_EXECUTING);
    F("FrameCreated", FRAME_CREATED);
    F("FrameSuspended", FRAME_SUSPENDED);
    F("FrameReturned", FRAME_RETURNED);
    F("FrameUnwinding", FRAME_UNWINDING);
    F("FrameRaised", FRAME_RAISED);
#endif
#endif
    return 0;
}
