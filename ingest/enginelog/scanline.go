package enginelog

import (
	"encoding/binary"
	"math/bits"
)

// scanLine cuts the first line off data and says whether it holds no byte
// under 0x20 (no '\r', NUL or ESC: nothing for peelBlock to clean) and no
// byte from 0x80 (ASCII: valid UTF-8). Either answer may be a
// conservative false (scanLineGo's ascii is, for a byte from 0x80 after
// the '\n' in the word that holds it); the vector scan's are exact. It
// runs on nearly every byte of the input, so with AVX2 it takes 32 bytes
// a step; inputs shorter than one step, and machines without AVX2, take
// the 8-bytes-a-step Go loop.
func scanLine(data []byte) (line, rest []byte, noCtl, ascii bool) {
	if haveAVX2 && len(data) >= 32 {
		return scanLineAVX2(data)
	}
	return scanLineGo(data)
}

// scanLineGo is scanLine 8 bytes at a time, in Go: the fallback, and the
// reference the vector scan is tested against.
func scanLineGo(data []byte) (line, rest []byte, noCtl, ascii bool) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	var hi uint64
	ctl := false
	i := 0
	for i+8 <= len(data) {
		w := binary.LittleEndian.Uint64(data[i:])
		hi |= w
		// The lowest flagged byte is the first one under 0x20 (a borrow
		// can only flag bytes above a true one).
		if t := (w - 0x20*ones) &^ w & highs; t != 0 {
			k := i + bits.TrailingZeros64(t)/8
			if data[k] == '\n' {
				return data[:k], data[k+1:], !ctl, hi&highs == 0
			}
			ctl = true
			i = k + 1
			continue
		}
		i += 8
	}
	for ; i < len(data); i++ {
		c := data[i]
		if c == '\n' {
			return data[:i], data[i+1:], !ctl, hi&highs == 0
		}
		if c < 0x20 {
			ctl = true
		}
		hi |= uint64(c)
	}
	return data, nil, !ctl, hi&highs == 0
}
