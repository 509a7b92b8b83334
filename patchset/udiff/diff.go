package udiff

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Context is the number of unchanged lines around each change, as diff -u.
const Context = 3

// Diff computes the line diff from old to new as a FileDiff named path,
// with Context lines of context. It returns nil when the contents are equal.
func Diff(path string, old, new []byte) *FileDiff {
	a, b := SplitLines(old), SplitLines(new)
	ops := editScript(a, b)
	d := &FileDiff{OldName: path, NewName: path}
	// Group edits into hunks: a hunk spans changes whose gap of equal
	// lines is at most 2*Context.
	type edit struct {
		op   byte
		i, j int // indexes into a and b before this op
	}
	var es []edit
	i, j := 0, 0
	for _, op := range ops {
		es = append(es, edit{op, i, j})
		switch op {
		case ' ':
			i++
			j++
		case '-':
			i++
		case '+':
			j++
		}
	}
	for k := 0; k < len(es); {
		if es[k].op == ' ' {
			k++
			continue
		}
		start := k - Context
		if start < 0 {
			start = 0
		}
		end := k // exclusive end of the hunk in es
		for end < len(es) {
			if es[end].op != ' ' {
				end++
				continue
			}
			run := end
			for run < len(es) && es[run].op == ' ' {
				run++
			}
			if run < len(es) && run-end <= 2*Context {
				end = run
				continue
			}
			end += min(Context, run-end)
			break
		}
		h := Hunk{}
		for _, e := range es[start:end] {
			switch e.op {
			case ' ':
				h.Lines = append(h.Lines, Line{' ', a[e.i]})
				h.OldLines++
				h.NewLines++
			case '-':
				h.Lines = append(h.Lines, Line{'-', a[e.i]})
				h.OldLines++
			case '+':
				h.Lines = append(h.Lines, Line{'+', b[e.j]})
				h.NewLines++
			}
		}
		h.OldStart, h.NewStart = es[start].i, es[start].j
		h.Section = section(a, es[start].i)
		if h.OldLines > 0 {
			h.OldStart++
		}
		if h.NewLines > 0 {
			h.NewStart++
		}
		d.Hunks = append(d.Hunks, h)
		k = end
	}
	if len(d.Hunks) == 0 {
		return nil
	}
	return d
}

// section names the enclosing Python def or class of a hunk starting at
// old line index i, as git's python diff driver does, for the reader of
// the "@@ … @@ section" line.
func section(a []string, i int) string {
	for k := i - 1; k >= 0; k-- {
		t := strings.TrimLeft(a[k], " \t")
		if strings.HasPrefix(t, "def ") || strings.HasPrefix(t, "class ") || strings.HasPrefix(t, "async def ") {
			s := strings.TrimRight(a[k], "\r\n")
			if len(s) > 80 {
				s = s[:80]
			}
			if !utf8.ValidString(s) || strings.ContainsAny(s, "\x00") {
				return ""
			}
			return s
		}
	}
	return ""
}

// editScript returns a shortest edit script (' ', '-', '+' per step) from a
// to b: Myers' O(ND) algorithm after trimming the common prefix and suffix.
// When the middle is so different that the trace would grow past a memory
// bound, it falls back to deleting and re-adding the middle, which is still
// a correct diff, just not a minimal one.
func editScript(a, b []string) []byte {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]byte, 0, len(a)+len(b))
	for range pre {
		ops = append(ops, ' ')
	}
	ops = append(ops, myers(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for range suf {
		ops = append(ops, ' ')
	}
	return ops
}

const maxTraceCells = 1 << 22 // 4M ints (32 MiB) bounds the Myers trace

func myers(a, b []string) []byte {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return replaceAll(n, m)
	}
	max := n + m
	off := max
	v := make([]int, 2*max+2)
	var trace [][]int
	cells := 0
	for d := 0; d <= max; d++ {
		cells += 2*d + 1
		if cells > maxTraceCells {
			return replaceAll(n, m)
		}
		snap := make([]int, 2*d+1)
		for k := -d; k <= d; k++ {
			snap[k+d] = v[off+k]
		}
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, d, n, m)
			}
		}
	}
	return replaceAll(n, m)
}

// backtrack walks the saved V arrays from (n, m) back to (0, 0).
func backtrack(trace [][]int, dEnd, n, m int) []byte {
	var rev []byte
	x, y := n, m
	for d := dEnd; d > 0; d-- {
		vs := trace[d] // V as it was before step d, indexed k+(d)
		get := func(k int) int {
			// trace[d] holds k in [-d, d]; entries for |k| > d-1 are stale
			// zeros, which the k == ±d rules below never read.
			return vs[k+d]
		}
		k := x - y
		var prevK int
		if k == -d || (k != d && get(k-1) < get(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := get(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			rev = append(rev, ' ')
			x--
			y--
		}
		if x == prevX {
			rev = append(rev, '+')
		} else {
			rev = append(rev, '-')
		}
		x, y = prevX, prevY
	}
	for x > 0 && y > 0 {
		rev = append(rev, ' ')
		x--
		y--
	}
	ops := make([]byte, len(rev))
	for i, op := range rev {
		ops[len(rev)-1-i] = op
	}
	return ops
}

func replaceAll(n, m int) []byte {
	ops := make([]byte, 0, n+m)
	for range n {
		ops = append(ops, '-')
	}
	for range m {
		ops = append(ops, '+')
	}
	return ops
}

// Format writes d as a unified diff with "a/" and "b/" prefixes, the form
// git and GNU patch -p1 read.
func Format(d *FileDiff) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- a/%s\n+++ b/%s\n", d.OldName, d.NewName)
	for _, h := range d.Hunks {
		fmt.Fprintf(&sb, "@@ -%s +%s @@", rng(h.OldStart, h.OldLines), rng(h.NewStart, h.NewLines))
		if h.Section != "" {
			sb.WriteString(" " + h.Section)
		}
		sb.WriteByte('\n')
		for _, l := range h.Lines {
			sb.WriteByte(l.Op)
			sb.WriteString(l.Text)
			if !strings.HasSuffix(l.Text, "\n") {
				sb.WriteString("\n\\ No newline at end of file\n")
			}
		}
	}
	return sb.String()
}

func rng(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
