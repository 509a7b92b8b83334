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
 * managed instance dicts. 3.10 keeps its dict internals out of the installed
 * headers (Objects/dict-common.h), so it gets none of this and the reader
 * falls back to OS thread names there. Offsets that CPython only expresses
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
#endif
#endif
    return 0;
}
