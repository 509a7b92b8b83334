// Package udiff reads, applies, reverses and writes unified diffs, line by
// line and byte-exact. It never applies with fuzz: every context and
// deleted line must match the target exactly. Offsets (a hunk found some
// lines away from where its header says) are allowed only when the caller
// asks for them, which bringup does only when proposing a rebased patch.
package udiff

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Line is one line of a hunk. Text holds the line as it is in the file,
// including its "\n" (and "\r" before it for CRLF files); the last line of a
// file without a final newline has no "\n".
type Line struct {
	Op   byte // ' ' context, '-' deleted, '+' added
	Text string
}

// Hunk is one "@@ -a,b +c,d @@" block.
type Hunk struct {
	OldStart, OldLines int
	NewStart, NewLines int
	Section            string // text after the closing "@@", e.g. a function name
	Lines              []Line
	PatchLine          int // line of the "@@" header in the patch file (1-based)
}

// FileDiff is the diff of one file.
type FileDiff struct {
	OldName, NewName string // as written, with "a/" and "b/" prefixes removed
	Hunks            []Hunk
	PatchLine        int // line of the "---" header in the patch file
}

// Path is the file the diff changes (the new name unless it is /dev/null).
func (f *FileDiff) Path() string {
	if f.NewName == "" || f.NewName == "/dev/null" {
		return f.OldName
	}
	return f.NewName
}

// ParseError says where a diff could not be read.
type ParseError struct {
	Line int // 1-based line in the patch file
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// IsFileStart reports whether a patch line starts a diff (quilt's rule for
// where a patch header ends: "---", "***", "Index:" or "diff -").
func IsFileStart(line string) bool {
	return strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "diff -") ||
		strings.HasPrefix(line, "Index: ") || strings.HasPrefix(line, "*** ")
}

// SplitLines splits data into lines that keep their "\n". The last line
// lacks it when data does not end with a newline.
func SplitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	n := bytes.Count(data, []byte{'\n'})
	lines := make([]string, 0, n+1)
	s := string(data)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// Parse reads the unified diffs in data. firstLine is the patch-file line
// number of data's first line, so errors point into the whole file. Lines
// before the first "---" (git's "diff --git", "index …", mode lines) are
// skipped. A patch file that lacks its own final newline is read as if it
// had one: only "\ No newline at end of file" removes a line's newline.
func Parse(data []byte, firstLine int) ([]*FileDiff, error) {
	raw := SplitLines(data)
	var files []*FileDiff
	var cur *FileDiff
	for i := 0; i < len(raw); i++ {
		ln := firstLine + i
		line := strings.TrimRight(raw[i], "\r\n")
		switch {
		case strings.HasPrefix(line, "--- "):
			if i+1 >= len(raw) || !strings.HasPrefix(raw[i+1], "+++ ") {
				return nil, &ParseError{ln, `"---" file header is not followed by a "+++" line`}
			}
			cur = &FileDiff{
				OldName:   headerName(line[4:]),
				NewName:   headerName(strings.TrimRight(raw[i+1], "\r\n")[4:]),
				PatchLine: ln,
			}
			if cur.OldName == "" || cur.NewName == "" {
				return nil, &ParseError{ln, "file header names no file"}
			}
			files = append(files, cur)
			i++
		case strings.HasPrefix(line, "@@ "):
			if cur == nil {
				return nil, &ParseError{ln, `hunk "@@" before any "---"/"+++" file header`}
			}
			h, next, err := parseHunk(raw, i, firstLine)
			if err != nil {
				return nil, err
			}
			if n := len(cur.Hunks); n > 0 {
				prev := cur.Hunks[n-1]
				if h.OldStart < prev.OldStart+prev.OldLines {
					return nil, &ParseError{ln, fmt.Sprintf("hunk overlaps or precedes the previous hunk (old line %d < %d)", h.OldStart, prev.OldStart+prev.OldLines)}
				}
			}
			cur.Hunks = append(cur.Hunks, h)
			i = next - 1
		default:
			// git extended headers, blank lines and commentary between files.
			if strings.HasPrefix(line, "Binary files ") || strings.HasPrefix(line, "GIT binary patch") {
				return nil, &ParseError{ln, "binary diffs are not supported"}
			}
		}
	}
	if len(files) == 0 {
		return nil, &ParseError{firstLine, `no unified diff found (expected "--- a/FILE", "+++ b/FILE", "@@ … @@")`}
	}
	for _, f := range files {
		if len(f.Hunks) == 0 {
			return nil, &ParseError{f.PatchLine, fmt.Sprintf("diff of %s has no hunks", f.Path())}
		}
		if f.OldName == "/dev/null" || f.NewName == "/dev/null" {
			return nil, &ParseError{f.PatchLine, fmt.Sprintf("diff of %s creates or deletes the file; only changes to existing files are supported", f.Path())}
		}
	}
	return files, nil
}

// headerName takes the file name from "--- a/x.py\t2026-01-01 …".
func headerName(s string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	}
	if s == "/dev/null" {
		return s
	}
	if strings.HasPrefix(s, "a/") || strings.HasPrefix(s, "b/") {
		s = s[2:]
	}
	return s
}

func parseRange(s string) (start, n int, ok bool) {
	a, b, has := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	n = 1
	if has {
		n, err = strconv.Atoi(b)
		if err != nil || n < 0 {
			return 0, 0, false
		}
	}
	return start, n, true
}

const maxRange = 1 << 26 // no real hunk is this long; bounds work on hostile input

func parseHunk(raw []string, i, firstLine int) (Hunk, int, error) {
	ln := firstLine + i
	hdr := strings.TrimRight(raw[i], "\r\n")
	rest := hdr[3:]
	end := strings.Index(rest, " @@")
	if end < 0 {
		return Hunk{}, 0, &ParseError{ln, fmt.Sprintf("malformed hunk header %q (want \"@@ -a,b +c,d @@\")", hdr)}
	}
	fields := strings.Fields(rest[:end])
	if len(fields) != 2 || !strings.HasPrefix(fields[0], "-") || !strings.HasPrefix(fields[1], "+") {
		return Hunk{}, 0, &ParseError{ln, fmt.Sprintf("malformed hunk header %q (want \"@@ -a,b +c,d @@\")", hdr)}
	}
	h := Hunk{PatchLine: ln, Section: strings.TrimSpace(rest[end+3:])}
	var ok1, ok2 bool
	h.OldStart, h.OldLines, ok1 = parseRange(fields[0][1:])
	h.NewStart, h.NewLines, ok2 = parseRange(fields[1][1:])
	if !ok1 || !ok2 || h.OldLines > maxRange || h.NewLines > maxRange {
		return Hunk{}, 0, &ParseError{ln, fmt.Sprintf("malformed hunk range in %q", hdr)}
	}
	if (h.OldStart == 0 && h.OldLines > 0) || (h.NewStart == 0 && h.NewLines > 0) {
		return Hunk{}, 0, &ParseError{ln, fmt.Sprintf("hunk range starts at line 0 in %q", hdr)}
	}
	oldLeft, newLeft := h.OldLines, h.NewLines
	j := i + 1
	for ; j < len(raw) && (oldLeft > 0 || newLeft > 0); j++ {
		r := raw[j]
		text := r
		if len(text) > 0 {
			text = text[1:]
		}
		if !strings.HasSuffix(text, "\n") {
			text += "\n" // the patch file itself lacks a final newline
		}
		var op byte
		switch {
		case r == "\n" || r == "\r\n" || r == "":
			// editors strip the lone space of an empty context line; GNU
			// patch reads such a line as context, and so do we.
			op, text = ' ', r
			if text == "" {
				text = "\n"
			}
		case r[0] == ' ' || r[0] == '-' || r[0] == '+':
			op = r[0]
		case r[0] == '\\':
			if len(h.Lines) == 0 {
				return Hunk{}, 0, &ParseError{firstLine + j, `"\ No newline at end of file" before any hunk line`}
			}
			noEOL(&h.Lines[len(h.Lines)-1])
			continue
		default:
			return Hunk{}, 0, &ParseError{firstLine + j, fmt.Sprintf("hunk %s ends early: %d old and %d new lines still expected, found %q", hdr, oldLeft, newLeft, strings.TrimRight(r, "\r\n"))}
		}
		switch op {
		case ' ':
			oldLeft--
			newLeft--
		case '-':
			oldLeft--
		case '+':
			newLeft--
		}
		if oldLeft < 0 || newLeft < 0 {
			return Hunk{}, 0, &ParseError{firstLine + j, fmt.Sprintf("hunk %s has more lines than its header counts", hdr)}
		}
		h.Lines = append(h.Lines, Line{Op: op, Text: text})
	}
	if oldLeft > 0 || newLeft > 0 {
		return Hunk{}, 0, &ParseError{firstLine + j - 1, fmt.Sprintf("hunk %s is cut short: %d old and %d new lines missing at end of patch", hdr, oldLeft, newLeft)}
	}
	// A marker may follow the hunk's last line.
	if j < len(raw) && strings.HasPrefix(raw[j], `\`) && len(h.Lines) > 0 {
		noEOL(&h.Lines[len(h.Lines)-1])
		j++
	}
	return h, j, nil
}

func noEOL(l *Line) {
	l.Text = strings.TrimSuffix(l.Text, "\n")
}
