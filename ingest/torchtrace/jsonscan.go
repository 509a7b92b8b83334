package torchtrace

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// A small validating JSON scanner for the hot path. encoding/json costs a
// full validation pass plus a decode per envelope and per chromium event,
// which dominated the scan; envelopes only need their top-level keys, and
// the value of the event key kept raw. The scanner accepts exactly what
// json.Valid accepts (FuzzJSONScan checks this).

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// plainByte marks string bytes needing no attention (not '"', '\\' or a
// control character).
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return
}()

// SWAR constants: a byte lane of x is flagged in (x-lo20)&^x&high when it
// is below 0x20, and in hasZero(x^c) when it equals c's lane. Flags can be
// false positives only above a true one, which the byte loop sorts out.
const (
	ones        = 0x0101010101010101
	high        = 0x8080808080808080
	lo20        = 0x2020202020202020
	quotes      = 0x2222222222222222
	backslashes = 0x5c5c5c5c5c5c5c5c
)

func hasZero(x uint64) uint64 { return (x - ones) &^ x }

// skipString expects b[i] == '"' and returns the index after the closing
// quote, and whether the string had escapes.
func skipString(b []byte, i int) (int, bool, bool) {
	i++
	esc := false
	for {
		// Eight bytes at a time while none is '"', '\\' or a control
		// character: string bodies (stacks, metrics, chromium args) are most
		// of an envelope, and the per-byte table walk was the scan's top cost.
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			if ((x-lo20)&^x|hasZero(x^quotes)|hasZero(x^backslashes))&high != 0 {
				break
			}
			i += 8
		}
		for i < len(b) && plainByte[b[i]] {
			i++
		}
		if i >= len(b) {
			return 0, false, false
		}
		switch b[i] {
		case '"':
			return i + 1, esc, true
		case '\\':
			esc = true
			if i+1 >= len(b) {
				return 0, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, false, false
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return 0, false, false
					}
				}
				i += 6
			default:
				return 0, false, false
			}
		default: // a control character
			return 0, false, false
		}
	}
}

func skipNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return 0, false
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == s {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == s {
			return 0, false
		}
	}
	return i, true
}

func skipLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// maxDepth bounds nesting (encoding/json allows 10000).
const maxDepth = 10000

// skipValue returns the index just after the value starting at b[i]
// (leading whitespace allowed).
func skipValue(b []byte, i int, depth int) (int, bool) {
	i = skipWS(b, i)
	if i >= len(b) || depth > maxDepth {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		j, _, ok := skipString(b, i)
		return j, ok
	case c == '{':
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			i = skipWS(b, i)
			if i >= len(b) || b[i] != '"' {
				return 0, false
			}
			j, _, ok := skipString(b, i)
			if !ok {
				return 0, false
			}
			i = skipWS(b, j)
			if i >= len(b) || b[i] != ':' {
				return 0, false
			}
			if i, ok = skipValue(b, i+1, depth+1); !ok {
				return 0, false
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, false
			}
			if b[i] == '}' {
				return i + 1, true
			}
			if b[i] != ',' {
				return 0, false
			}
			i++
		}
	case c == '[':
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = skipValue(b, i, depth+1); !ok {
				return 0, false
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, false
			}
			if b[i] == ']' {
				return i + 1, true
			}
			if b[i] != ',' {
				return 0, false
			}
			i++
		}
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	default:
		return skipNumber(b, i)
	}
}

// EachField calls fn for each top-level key of the JSON object b, with its
// raw value; false when b is not one valid JSON object.
func EachField(b []byte, fn func(key string, val []byte)) bool { return eachField(b, fn) }

// EachFieldBytes is EachField with the key as bytes (valid during the
// call): a switch on string(key) then allocates nothing.
func EachFieldBytes(b []byte, fn func(key, val []byte)) bool { return eachFieldBytes(b, fn) }

// eachFieldBytes calls fn for each key of the JSON object b (whole input must
// be one object, surrounded by whitespace only), validating as it goes in
// one pass; it reports false when b is not valid JSON or not an object (fn
// may then have seen some fields: callers drop what they collected).
func eachFieldBytes(b []byte, fn func(key []byte, val []byte)) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipWS(b, i+1) == len(b)
	}
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] != '"' {
			return false
		}
		j, esc, ok := skipString(b, i)
		if !ok {
			return false
		}
		key := b[i+1 : j-1]
		if esc || !utf8.Valid(key) {
			// encoding/json's spelling: escapes decoded, bad UTF-8 as U+FFFD.
			var k string
			_ = json.Unmarshal(b[i:j], &k)
			key = []byte(k)
		}
		i = skipWS(b, j)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		vs := skipWS(b, i+1)
		ve, ok := skipValue(b, vs, 1)
		if !ok {
			return false
		}
		fn(key, b[vs:ve])
		i = skipWS(b, ve)
		if i >= len(b) {
			return false
		}
		if b[i] == '}' {
			return skipWS(b, i+1) == len(b)
		}
		if b[i] != ',' {
			return false
		}
		i++
	}
}

// eachField is eachFieldBytes with string keys.
func eachField(b []byte, fn func(key string, val []byte)) bool {
	return eachFieldBytes(b, func(k, v []byte) { fn(string(k), v) })
}

// EachElement calls fn for each element of the JSON array b, raw; false
// when b is not one valid JSON array.
func EachElement(b []byte, fn func(val []byte)) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return skipWS(b, i+1) == len(b)
	}
	for {
		vs := skipWS(b, i)
		ve, ok := skipValue(b, vs, 1)
		if !ok {
			return false
		}
		fn(b[vs:ve])
		i = skipWS(b, ve)
		if i >= len(b) {
			return false
		}
		if b[i] == ']' {
			return skipWS(b, i+1) == len(b)
		}
		if b[i] != ',' {
			return false
		}
		i++
	}
}

// Field returns the raw value of key in the JSON object obj, if present
// (and obj is valid). A small, allocation-free lookup for metadata.
func Field(obj []byte, key string) ([]byte, bool) {
	var out []byte
	found := false
	ok := eachField(obj, func(k string, v []byte) {
		if !found && k == key {
			out, found = v, true
		}
	})
	return out, ok && found
}

// StringValue decodes a raw JSON string ("" and false for anything else).
func StringValue(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	j, esc, ok := skipString(raw, 0)
	if !ok || j != len(raw) {
		return "", false
	}
	if !esc && utf8.Valid(raw[1:len(raw)-1]) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// IntValue decodes a raw JSON integer; null and other values give false.
func IntValue(raw []byte) (int, bool) {
	// Small non-negative ints (compile ids, ranks) without strconv.
	if len(raw) > 0 && len(raw) <= 6 {
		n := 0
		for _, c := range raw {
			if c < '0' || c > '9' {
				goto slow
			}
			n = n*10 + int(c-'0')
		}
		if raw[0] != '0' || len(raw) == 1 {
			return n, true
		}
	}
slow:
	// null, strings, objects: not an int, and no error value to allocate.
	if len(raw) == 0 || !(raw[0] == '-' || raw[0] == '+' || raw[0] >= '0' && raw[0] <= '9') {
		return 0, false
	}
	n, err := strconv.Atoi(string(raw))
	return n, err == nil
}

// FloatValue decodes a raw JSON number.
func FloatValue(raw []byte) (float64, bool) {
	if len(raw) == 0 || raw[0] == 'n' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil
}

// RawString returns the bytes inside a JSON string that has no escapes (so
// they are its value), without allocating; false otherwise.
func RawString(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	in := raw[1 : len(raw)-1]
	for _, c := range in {
		if c == '\\' || c == '"' || c < 0x20 || c >= 0x80 {
			return nil, false
		}
	}
	return in, true
}

// InternEntry decodes the metadata of a "str" event, ["text", index], as
// json.Unmarshal into a two-element []json.RawMessage then a string and an
// int would (null text is ""), without its reflection and allocations.
func InternEntry(meta []byte) (text string, idx int, ok bool) {
	var elems [2][]byte
	n := 0
	if !EachElement(meta, func(v []byte) {
		if n < 2 {
			elems[n] = v
		}
		n++
	}) || n != 2 {
		return "", 0, false
	}
	if string(elems[0]) != "null" {
		if text, ok = StringValue(elems[0]); !ok {
			return "", 0, false
		}
	}
	idx, ok = IntValue(elems[1])
	return text, idx, ok
}
