package pyproc

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"
)

// Caps on what a single object may claim, so garbage memory cannot make the
// reader allocate without bound.
const (
	maxStringLen    = 1 << 14
	maxLinetableLen = 1 << 20
)

// readBytes reads a PyBytesObject's contents.
func (t *target) readBytes(addr uint64) ([]byte, error) {
	l := t.lay
	if addr == 0 {
		return nil, badRead("NULL where a bytes object was expected")
	}
	const guess = 256
	hdr := make([]byte, l.BytesSval+guess)
	if err := t.mem.Read(addr, hdr); err != nil {
		hdr = hdr[:l.BytesSize+8]
		if err := t.mem.Read(addr, hdr); err != nil {
			return nil, err
		}
	}
	n, _ := at(hdr, l.BytesSize, 8)
	if int64(n) < 0 || n > maxLinetableLen {
		return nil, badRead("bytes object at %#x claims %d bytes", addr, int64(n))
	}
	if l.BytesSval+int64(n) <= int64(len(hdr)) {
		return hdr[l.BytesSval : l.BytesSval+int64(n)], nil
	}
	b := make([]byte, n)
	if err := t.mem.Read(addr+uint64(l.BytesSval), b); err != nil {
		return nil, err
	}
	return b, nil
}

// readString reads a compact str object (every str CPython creates for names
// and file names is compact). Data follows the header: PyASCIIObject for
// pure ASCII, PyCompactUnicodeObject otherwise, in 1, 2 or 4 bytes per code
// point.
func (t *target) readString(addr uint64) (string, error) {
	l := t.lay
	// One read usually covers header and text: names and file names are
	// short. Near the end of a mapping it may fail; then read exactly.
	const guess = 128
	hdrLen := max(l.UnicodeState, l.UnicodeLength, l.ObType) + 8
	hdr := make([]byte, l.CompactObjectSize+guess)
	if err := t.mem.Read(addr, hdr); err != nil {
		hdr = hdr[:hdrLen]
		if err := t.mem.Read(addr, hdr); err != nil {
			return "", err
		}
	}
	if t.strType != 0 {
		if typ, _ := at(hdr, l.ObType, 8); typ != t.strType {
			return "", badRead("object %#x is not a str (type %#x)", addr, typ)
		}
	}
	n, _ := at(hdr, l.UnicodeLength, 8)
	state, _ := at(hdr, l.UnicodeState, 4)
	kind := int(state >> l.StateKindShift & uint64(l.StateKindMask))
	compact := state>>l.StateCompactShift&uint64(l.StateCompactMask) != 0
	ascii := state>>l.StateASCIIShift&uint64(l.StateASCIIMask) != 0
	if !compact {
		return "", badRead("str at %#x is not compact", addr)
	}
	if kind != 1 && kind != 2 && kind != 4 {
		return "", badRead("str at %#x has kind %d", addr, kind)
	}
	if int64(n) < 0 || n > maxStringLen {
		return "", badRead("str at %#x claims length %d", addr, int64(n))
	}
	data := l.CompactObjectSize
	if ascii {
		data = l.ASCIIObjectSize
	}
	size := int64(n) * int64(kind)
	if data+size <= int64(len(hdr)) {
		return decodeUCS(hdr[data:data+size], kind, ascii), nil
	}
	raw := make([]byte, size)
	if err := t.mem.Read(addr+uint64(data), raw); err != nil {
		return "", err
	}
	return decodeUCS(raw, kind, ascii), nil
}

// decodeUCS turns CPython's fixed-width code points into UTF-8.
func decodeUCS(raw []byte, kind int, ascii bool) string {
	if kind == 1 && ascii {
		return strings.ToValidUTF8(string(raw), "\uFFFD")
	}
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i+kind <= len(raw); i += kind {
		var r rune
		switch kind {
		case 1:
			r = rune(raw[i])
		case 2:
			r = rune(binary.LittleEndian.Uint16(raw[i:]))
		case 4:
			r = rune(binary.LittleEndian.Uint32(raw[i:]))
		}
		if !utf8.ValidRune(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

// line310 maps a byte offset in the bytecode to a line number with the 3.10
// co_linetable (PEP 626): pairs of (unsigned byte delta, signed line delta),
// line delta -128 meaning "no line". It mirrors PyCode_Addr2Line: an offset
// before the code gives the first line, one past the table gives -1.
func line310(table []byte, addr, first int) int {
	if addr < 0 {
		return first
	}
	line, end := first, 0
	for i := 0; i+1 < len(table); i += 2 {
		start := end
		end += int(table[i])
		ld := int8(table[i+1])
		cur := -1
		if ld != -128 {
			line += int(ld)
			cur = line
		}
		if start <= addr && addr < end {
			return cur
		}
	}
	return -1
}

// line311 does the same with the 3.11+ location table
// (Objects/locations.md): each entry starts with a byte 1CCCCLLL, code C
// saying how the line changes, L+1 the number of code units it covers.
func line311(table []byte, addr, first int) int {
	if addr < 0 {
		return first
	}
	line, end := first, 0
	i := 0
	for i < len(table) {
		b := table[i]
		code := int(b>>3) & 15
		delta := 0
		switch code {
		case 13, 14: // no columns, long form: signed varint line delta
			delta = svarint(table, i+1)
		case 11:
			delta = 1
		case 12:
			delta = 2
		}
		line += delta
		cur := line
		if code == 15 {
			cur = -1
		}
		start := end
		end += (int(b&7) + 1) * 2
		for i++; i < len(table) && table[i]&128 == 0; i++ {
		}
		if start <= addr && addr < end {
			return cur
		}
	}
	return -1
}

// svarint reads the location table's zig-zag varint (6 bits per byte, bit 6
// = more) at table[i:]; a truncated varint reads as what was there.
func svarint(table []byte, i int) int {
	var v uint64
	shift := uint(0)
	for ; i < len(table) && shift < 64; i++ {
		b := table[i]
		v |= uint64(b&63) << shift
		shift += 6
		if b&64 == 0 {
			break
		}
	}
	if v&1 != 0 {
		return -int(v >> 1)
	}
	return int(v >> 1)
}
