package udiff

import (
	"fmt"
	"strings"
)

// ApplyError says which hunk did not apply and why.
type ApplyError struct {
	Hunk      int // 1-based index of the hunk in its file diff
	PatchLine int // line of the hunk's "@@" header in the patch file
	FileLine  int // 1-based line in the target where the mismatch is
	Reason    string
}

func (e *ApplyError) Error() string {
	return fmt.Sprintf("hunk %d (patch line %d) does not apply at line %d: %s", e.Hunk, e.PatchLine, e.FileLine, e.Reason)
}

// Options control where a hunk may land.
type Options struct {
	// MaxOffset is how far (in lines) a hunk may be found from the line its
	// header names. 0 means exactly there. Context must match exactly
	// either way: there is no fuzz.
	MaxOffset int
}

// Result describes a successful application.
type Result struct {
	Content []byte
	Offsets []int // per hunk: actual line minus the header's line
}

// Apply applies the hunks of d to content.
func Apply(content []byte, d *FileDiff, opt Options) (*Result, error) {
	lines := SplitLines(content)
	out := make([]string, 0, len(lines)+8)
	pos := 0 // next unconsumed line of lines
	res := &Result{}
	for hi, h := range d.Hunks {
		old := h.side('+')
		want := h.OldStart - 1
		if h.OldLines == 0 {
			want = h.OldStart // inserting after line OldStart
		}
		at, err := find(lines, old, want, pos, opt.MaxOffset)
		if err != nil {
			err.Hunk, err.PatchLine = hi+1, h.PatchLine
			return nil, err
		}
		res.Offsets = append(res.Offsets, at-want)
		out = append(out, lines[pos:at]...)
		out = append(out, h.side('-')...)
		pos = at + len(old)
	}
	out = append(out, lines[pos:]...)
	// A line without "\n" may only end the file; anything else means the
	// patch removed a final newline in the middle of the text.
	for i := 0; i < len(out)-1; i++ {
		if !strings.HasSuffix(out[i], "\n") {
			return nil, &ApplyError{Hunk: len(d.Hunks), PatchLine: d.Hunks[len(d.Hunks)-1].PatchLine, FileLine: i + 1,
				Reason: `"\ No newline at end of file" marks a line that is not the last one`}
		}
	}
	res.Content = []byte(strings.Join(out, ""))
	return res, nil
}

// side returns the lines of one side of the hunk: skip '+' for the old side,
// '-' for the new side.
func (h *Hunk) side(skip byte) []string {
	s := make([]string, 0, len(h.Lines))
	for _, l := range h.Lines {
		if l.Op != skip {
			s = append(s, l.Text)
		}
	}
	return s
}

// find locates old in lines at want, or within maxOff lines of it (nearest
// first, earlier before later), never before floor.
func find(lines, old []string, want, floor, maxOff int) (int, *ApplyError) {
	if want < floor && maxOff == 0 {
		return 0, &ApplyError{FileLine: want + 1, Reason: "hunk overlaps the previous one"}
	}
	for d := 0; d <= maxOff; d++ {
		for _, at := range []int{want - d, want + d} {
			if at >= floor && matchAt(lines, old, at) {
				return at, nil
			}
			if d == 0 {
				break
			}
		}
		if want-d < floor && want+d+len(old) > len(lines) {
			break
		}
	}
	return 0, explain(lines, old, want)
}

func matchAt(lines, old []string, at int) bool {
	if at < 0 || at+len(old) > len(lines) {
		return false
	}
	for i, l := range old {
		if lines[at+i] != l {
			return false
		}
	}
	return true
}

// explain says why old does not match at want: the first differing line,
// with line endings called out because they are the usual invisible cause.
func explain(lines, old []string, want int) *ApplyError {
	if want < 0 {
		want = 0
	}
	for i, l := range old {
		at := want + i
		if at >= len(lines) {
			return &ApplyError{FileLine: at + 1, Reason: fmt.Sprintf("file ends at line %d, hunk expects %q", len(lines), trimEOL(l))}
		}
		got := lines[at]
		if got == l {
			continue
		}
		r := &ApplyError{FileLine: at + 1}
		switch {
		case trimEOL(got) == trimEOL(l) && strings.HasSuffix(got, "\r\n") != strings.HasSuffix(l, "\r\n"):
			r.Reason = fmt.Sprintf("line endings differ: the file has %s, the patch %s", eolName(got), eolName(l))
		case trimEOL(got) == trimEOL(l):
			r.Reason = fmt.Sprintf("newline at end of file differs: the file has %s, the patch %s", eolName(got), eolName(l))
		default:
			r.Reason = fmt.Sprintf("expected %q, found %q", trimEOL(l), trimEOL(got))
		}
		return r
	}
	return &ApplyError{FileLine: want + 1, Reason: "context does not match"}
}

func trimEOL(s string) string { return strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r") }

func eolName(s string) string {
	switch {
	case strings.HasSuffix(s, "\r\n"):
		return "CRLF"
	case strings.HasSuffix(s, "\n"):
		return "LF"
	}
	return "no final newline"
}

// Reverse returns the diff that undoes d.
func Reverse(d *FileDiff) *FileDiff {
	r := &FileDiff{OldName: d.NewName, NewName: d.OldName, PatchLine: d.PatchLine}
	for _, h := range d.Hunks {
		rh := Hunk{OldStart: h.NewStart, OldLines: h.NewLines, NewStart: h.OldStart, NewLines: h.OldLines,
			Section: h.Section, PatchLine: h.PatchLine, Lines: make([]Line, len(h.Lines))}
		for i, l := range h.Lines {
			switch l.Op {
			case '+':
				l.Op = '-'
			case '-':
				l.Op = '+'
			}
			rh.Lines[i] = l
		}
		r.Hunks = append(r.Hunks, rh)
	}
	return r
}
