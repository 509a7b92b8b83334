package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Clean makes text that came from an input safe to print on a terminal:
// escape sequences (CSI "ESC [ … final", OSC "ESC ] … BEL|ESC \", DCS,
// SOS, PM and APC strings up to ST, and two-byte escapes) are removed, as
// are the other C0 and C1 control characters and DEL; tab and newline
// stay. Bytes that are not UTF-8 become U+FFFD, so a terminal in 8-bit
// mode cannot read a lone 0x9b as CSI. Text with nothing to remove is
// returned as it is, without a copy.
//
// A trace, a dump or a log is written by the program being debugged, or
// by whoever could write the file: a title-setting OSC or a screen clear
// inside a failure message must not reach the user's terminal.
func Clean(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7f || c == '\t' || c == '\n' {
			i++
			continue
		}
		if c >= 0x80 {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError && !(r >= 0x80 && r < 0xa0) {
				i += size
				continue
			}
		}
		break
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		switch {
		case c >= 0x20 && c < 0x7f || c == '\t' || c == '\n':
			b.WriteByte(c)
			i++
		case c == 0x1b:
			i = skipEscape(s, i+1)
		case c < 0x80:
			i++ // another C0 control or DEL
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size <= 1:
				b.WriteRune(utf8.RuneError)
			case r == 0x9b: // C1 CSI: its parameters and final go with it
				i = skipCSI(s, i+size)
				continue
			case r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f: // C1 OSC, DCS, SOS, PM, APC
				i = skipString(s, i+size)
				continue
			case r >= 0x80 && r < 0xa0: // another C1 control
			default:
				b.WriteString(s[i : i+size])
			}
			i += size
		}
	}
	return b.String()
}

// skipEscape returns the index past the escape sequence whose ESC is just
// before i.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_':
		return skipString(s, i+1)
	}
	// Intermediate bytes, then one final byte (ESC ( B, ESC 7, ESC c …).
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) {
		i++
	}
	return i
}

// skipCSI returns the index past a control sequence's parameter and
// intermediate bytes and its final byte, starting at i (after "ESC [").
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipString returns the index past a control string starting at i: up to
// and with BEL, ESC \ or the C1 ST; an unterminated one runs to the end of
// the line (a newline ends it and is kept).
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case s[i] == 0xc2 && i+1 < len(s) && s[i+1] == 0x9c:
			return i + 2
		case s[i] == '\n':
			return i
		}
		i++
	}
	return i
}

// Styled is text that was cleaned and then coloured by a Safe style:
// Fprintf passes it on as it is.
type Styled string

// Safe is a Style for text that came from an input: each method cleans
// its text first, so the only escapes left are the colours it adds.
type Safe struct{ Style Style }

func (c Safe) Bold(t string) Styled      { return Styled(c.Style.Bold(Clean(t))) }
func (c Safe) Dim(t string) Styled       { return Styled(c.Style.Dim(Clean(t))) }
func (c Safe) Red(t string) Styled       { return Styled(c.Style.Red(Clean(t))) }
func (c Safe) Yellow(t string) Styled    { return Styled(c.Style.Yellow(Clean(t))) }
func (c Safe) Green(t string) Styled     { return Styled(c.Style.Green(Clean(t))) }
func (c Safe) Cyan(t string) Styled      { return Styled(c.Style.Cyan(Clean(t))) }
func (c Safe) RedBold(t string) Styled   { return Styled(c.Style.Red(c.Style.Bold(Clean(t)))) }
func (c Safe) GreenBold(t string) Styled { return Styled(c.Style.Green(c.Style.Bold(Clean(t)))) }
func (c Safe) Severity(t string) Styled  { return Styled(c.Style.Severity(Clean(t))) }

// Fprintf is fmt.Fprintf with every text argument (a string, a Stringer,
// an error) cleaned; Styled arguments were cleaned before their colour
// was added and pass as they are. The format itself is the caller's own.
func Fprintf(w io.Writer, format string, a ...any) (int, error) {
	for i, x := range a {
		switch v := x.(type) {
		case Styled:
		case string:
			a[i] = Clean(v)
		case fmt.Stringer:
			a[i] = Clean(v.String())
		case error:
			a[i] = Clean(v.Error())
		}
	}
	return fmt.Fprintf(w, format, a...)
}
