package pyproc

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// mapping is one line of /proc/PID/maps.
type mapping struct {
	Start, End, Offset uint64
	Perms              string
	Path               string
}

// parseMaps reads /proc/PID/maps text; malformed lines are skipped (the
// kernel does not produce them, but a fuzzer does).
func parseMaps(data []byte) []mapping {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil || end < start {
			continue
		}
		m := mapping{Start: start, End: end, Offset: off, Perms: f[1]}
		if len(f) >= 6 {
			// Paths may contain spaces; keep everything after the inode.
			m.Path = strings.Join(f[5:], " ")
		}
		out = append(out, m)
	}
	return out
}
