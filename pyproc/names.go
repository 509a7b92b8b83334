package pyproc

import (
	"encoding/binary"
	"sync"
)

// activeCache remembers where threading._active lives per process and
// interpreter, so repeated captures (several snapshots, many ranks) skip
// scanning sys.modules. Entries are re-validated on use (the object must
// still be a dict); the key includes the process start time against pid reuse.
var activeCache sync.Map // activeKey -> uint64

type activeKey struct {
	pid           int
	start, interp uint64
}

// Thread names are not in the thread state; like py-spy, pyproc reads them
// from the threading module's _active dict (ident -> Thread) and each
// Thread's _name. This needs dict, int and instance-attribute layouts,
// which are generated for 3.10–3.13 (3.10's measured on live objects by the
// generator); when anything here does not validate, names come from the OS
// instead. A failure here never fails a capture.

const (
	maxDictEntries = 1 << 17
	maxIdentDigits = 3 // 64-bit idents in 30-bit digits
)

// namesFor maps thread idents to threading names in one interpreter.
func (t *target) namesFor(interp uint64) map[uint64]string {
	l := t.lay
	if l.NamesSupported == 0 {
		return nil
	}
	key := activeKey{t.pid, t.start, interp}
	active := uint64(0)
	if v, ok := activeCache.Load(key); ok && t.pid != 0 && t.isDict(v.(uint64)) {
		active = v.(uint64)
	} else {
		if active = t.findActive(interp); active == 0 {
			return nil
		}
		if t.pid != 0 {
			activeCache.Store(key, active)
		}
	}
	names := map[uint64]string{}
	t.dictItems(active, func(key, value uint64) bool {
		ident, ok := t.readIdent(key)
		if !ok {
			return true
		}
		if name := t.attrStr(value, "_name"); name != "" {
			names[ident] = name
		}
		return len(names) < maxThreads
	})
	return names
}

// findActive locates threading._active: through the globals of a frame
// running threading.py code when the walk saw one (a few reads), else
// through sys.modules (one read per imported module).
func (t *target) findActive(interp uint64) uint64 {
	l := t.lay
	if g := t.threadingGlobals; t.isDict(g) {
		if active := t.dictGetStr(g, "_active"); t.isDict(active) {
			return active
		}
	}
	modules, err := t.mem.u64(interp + uint64(l.InterpModules))
	if err != nil || modules == 0 {
		return 0
	}
	threading := t.dictGetStr(modules, "threading")
	if threading == 0 {
		return 0
	}
	mdict, err := t.mem.u64(threading + uint64(l.ModuleDict))
	if err != nil || mdict == 0 {
		return 0
	}
	active := t.dictGetStr(mdict, "_active")
	if !t.isDict(active) {
		return 0
	}
	return active
}

// isDict checks an object's type against PyDict_Type (when known).
func (t *target) isDict(obj uint64) bool {
	if obj == 0 {
		return false
	}
	if t.dictType == 0 {
		return true
	}
	typ, err := t.mem.u64(obj + uint64(t.lay.ObType))
	return err == nil && typ == t.dictType
}

// dictGetStr finds a str key in a dict by comparing keys (we cannot hash:
// the target's string hashes are salted).
func (t *target) dictGetStr(dict uint64, key string) uint64 {
	var found uint64
	t.dictItems(dict, func(k, v uint64) bool {
		if s, err := t.readString(k); err == nil && s == key {
			found = v
			return false
		}
		return true
	})
	return found
}

// dictItems calls fn for each live (key, value) of a dict object.
func (t *target) dictItems(dict uint64, fn func(key, value uint64) bool) {
	l := t.lay
	keys, err := t.mem.u64(dict + uint64(l.DictKeys))
	if err != nil || keys == 0 {
		return
	}
	values, err := t.mem.u64(dict + uint64(l.DictValues))
	if err != nil {
		return
	}
	if values != 0 {
		values += uint64(l.ValuesArray)
	}
	t.keysItems(keys, values, fn)
}

// keysItems walks a PyDictKeysObject's entries; values, when not 0, is the
// array a split dict (or an object's attribute values) keeps its values in,
// indexed like the entries.
func (t *target) keysItems(keys, values uint64, fn func(key, value uint64) bool) {
	l := t.lay
	hdr := make([]byte, l.KeysIndices)
	if err := t.mem.Read(keys, hdr); err != nil {
		return
	}
	n, _ := at(hdr, l.KeysNentries, 8)
	if int64(n) <= 0 || n > maxDictEntries {
		return
	}
	esize, ekey, evalue := l.EntrySize, l.EntryKey, l.EntryValue
	var indexBytes uint64
	if l.KeysDkSize > 0 {
		// 3.10: dk_size index slots of 1, 2, 4 or 8 bytes (by the table
		// size), then entries that all hold a hash, a key and a value.
		size, _ := at(hdr, l.KeysDkSize, 8)
		if size < n || size > 2*maxDictEntries || size&(size-1) != 0 {
			return
		}
		ix := uint64(8)
		switch {
		case size <= 0xff:
			ix = 1
		case size <= 0xffff:
			ix = 2
		case size <= 0xffffffff:
			ix = 4
		}
		indexBytes = size * ix
	} else {
		log2ib, _ := at(hdr, l.KeysLog2IndexBytes, 1)
		kind, _ := at(hdr, l.KeysKind, 1)
		if log2ib > 40 {
			return
		}
		indexBytes = 1 << log2ib
		if int64(kind) != l.KindGeneral {
			esize, ekey, evalue = l.UEntrySize, l.UEntryKey, l.UEntryValue
		}
	}
	entries := make([]byte, int64(n)*esize)
	if err := t.mem.Read(keys+uint64(l.KeysIndices)+indexBytes, entries); err != nil {
		return
	}
	var vals []byte
	if values != 0 {
		vals = make([]byte, n*8)
		if err := t.mem.Read(values, vals); err != nil {
			return
		}
	}
	for i := int64(0); i < int64(n); i++ {
		k, _ := at(entries, i*esize+ekey, 8)
		var v uint64
		if vals != nil {
			v = binary.LittleEndian.Uint64(vals[i*8:])
		} else {
			v, _ = at(entries, i*esize+evalue, 8)
		}
		if k == 0 || v == 0 {
			continue
		}
		if !fn(k, v) {
			return
		}
	}
}

// attrStr reads a str attribute from an object's managed instance dict
// (every plain class instance on 3.11+), or "" when it cannot.
func (t *target) attrStr(obj uint64, name string) string {
	l := t.lay
	typ, err := t.mem.u64(obj + uint64(l.ObType))
	if err != nil || typ == 0 {
		return ""
	}
	var dict, values uint64
	if l.ValuesMode == 0 {
		// 3.10: the instance dict lives at the type's tp_dictoffset.
		off, err := t.mem.u64(typ + uint64(l.TypeDictOffset))
		if err != nil || int64(off) <= 0 || off > maxOffset {
			return ""
		}
		if dict, err = t.mem.u64(obj + off); err != nil || !t.isDict(dict) {
			return ""
		}
		return t.strIn(dict, 0, name)
	}
	flags, err := t.mem.u64(typ + uint64(l.TypeFlags))
	if err != nil || flags&uint64(l.FlagManagedDict) == 0 {
		return ""
	}
	slot, err := t.mem.u64(obj + uint64(l.ManagedDict))
	if err != nil {
		return ""
	}
	switch l.ValuesMode {
	case 1:
		dict = slot
		if dict == 0 {
			if values, err = t.mem.u64(obj + uint64(l.ManagedValues)); err != nil {
				return ""
			}
		}
	case 2:
		if slot&uint64(l.ValuesTagMask) != 0 {
			values = slot + uint64(l.ValuesTagAdjust)
		} else {
			dict = slot
		}
	case 3:
		dict = slot
		if dict == 0 && flags&uint64(l.FlagInlineValues) != 0 {
			v := obj + uint64(l.ManagedValues)
			if valid, err := t.mem.u8(v + uint64(l.ValuesValid)); err == nil && valid != 0 {
				values = v
			}
		}
	}
	if dict == 0 && values != 0 {
		keys, err := t.mem.u64(typ + uint64(l.HeapCachedKeys))
		if err != nil || keys == 0 {
			return ""
		}
		return t.strIn(keys, values+uint64(l.ValuesArray), name)
	}
	if dict == 0 {
		return ""
	}
	return t.strIn(dict, 0, name)
}

// strIn reads the str value of key name in a dict (values 0), or in a
// keys object with a separate values array.
func (t *target) strIn(obj, values uint64, name string) string {
	var found uint64
	match := func(k, v uint64) bool {
		if s, err := t.readString(k); err == nil && s == name {
			found = v
			return false
		}
		return true
	}
	if values == 0 {
		t.dictItems(obj, match)
	} else {
		t.keysItems(obj, values, match)
	}
	if found == 0 {
		return ""
	}
	s, err := t.readString(found)
	if err != nil {
		return ""
	}
	return s
}

// readIdent decodes a small non-negative int object (a thread ident).
func (t *target) readIdent(addr uint64) (uint64, bool) {
	l := t.lay
	var ndig uint64
	if l.LongTag >= 0 {
		tag, err := t.mem.u64(addr + uint64(l.LongTag))
		if err != nil || tag&3 == 2 { // negative
			return 0, false
		}
		ndig = tag >> l.LongNonSizeBits
	} else {
		size, err := t.mem.u64(addr + uint64(l.VarSize))
		if err != nil || int64(size) < 0 {
			return 0, false
		}
		ndig = size
	}
	if ndig > maxIdentDigits || l.DigitSize != 4 {
		return 0, false
	}
	buf := make([]byte, ndig*4)
	if err := t.mem.Read(addr+uint64(l.LongDigits), buf); err != nil {
		return 0, false
	}
	var v uint64
	for i := uint64(0); i < ndig; i++ {
		v |= uint64(binary.LittleEndian.Uint32(buf[i*4:])) << (uint64(l.LongShift) * i)
	}
	return v, true
}
