package enginelog

import (
	"bufio"
	"bytes"
	"io"
)

// Pasted excerpts (a log quoted in an issue thread) carry what no engine
// writes: Markdown quoting ("> "), the whole excerpt indented, an indent
// before the process prefix, and ANSI colour codes whose ESC byte the page
// dropped ("[0;36m(EngineCore pid=1)[0m"). Depaste undoes them, line by
// line, when the head of an input shows them; a log written by an engine
// is read untouched and costs nothing more.

// PasteFix says which repairs an input needs; the zero value needs none.
type PasteFix struct {
	Quote  bool // lines start with Markdown quoting "> "
	ANSI   bool // colour codes without their ESC byte
	Indent int  // every line indented by at least this many spaces or tabs
	Prefix bool // an indent before a process or logger prefix
	// Outer is a prefix that a tool (a CI runner) put before most lines
	// ("[test 1] "), stripped where it starts a line.
	Outer string
	// Wrap is the width a page or a terminal hard-wrapped lines at: a
	// line this long goes on in the next when that one cannot start a
	// record (pasteWrap).
	Wrap int
}

// Any reports whether some repair is needed.
func (f PasteFix) Any() bool {
	return f.Quote || f.ANSI || f.Indent > 0 || f.Prefix || f.Outer != "" || f.Wrap > 0
}

// DetectPaste looks at the head of an input (at most its first 400
// lines) for paste artifacts. Indentation is spaces or tabs.
func DetectPaste(head []byte) PasteFix {
	var f PasteFix
	lines, quoted, tabbed, minIndent := 0, 0, 0, -1
	outer := map[string]int{}
	var wrap wrapWidth
	rest := head
	for len(rest) > 0 && lines < 400 {
		line, more, _ := bytes.Cut(rest, []byte{'\n'})
		rest = more
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		lines++
		wrap.line(line)
		if bareANSI(line) >= 0 {
			// The other repairs are judged on the line as it reads
			// without its colour codes: the depaster drops them first.
			f.ANSI = true
			line = stripBareANSI(line)
		}
		if q := quoteAt(line); q >= 0 {
			quoted++
			line = unquote(line[q:])
		}
		n := indentOf(line)
		if n < len(line) {
			if minIndent < 0 || n < minIndent {
				minIndent = n
			}
			if n > 0 && line[0] == '\t' {
				tabbed++
			}
			if n > 0 && startsWithPrefix(line[n:]) {
				f.Prefix = true
			}
		}
		if p := outerPrefix(line[indentOf(line):]); p != "" {
			outer[p]++
		}
	}
	for p, n := range outer {
		if n >= 3 && n*2 >= lines && (f.Outer == "" || n > outer[f.Outer]) {
			f.Outer = p
		}
	}
	f.Wrap = wrap.width()
	if lines > 0 && quoted*2 >= lines {
		f.Quote = true
	}
	// Two spaces at least, or a tab before every line: one space alone
	// is too little to tell a paste's indent from text. A single line
	// indented so is an excerpt of one line.
	if lines >= 1 && (minIndent >= 2 || minIndent >= 1 && tabbed == lines) {
		f.Indent = minIndent
	}
	return f
}

// indentOf counts the spaces and tabs line starts with.
func indentOf(line []byte) int {
	n := 0
	for n < len(line) && (line[n] == ' ' || line[n] == '\t') {
		n++
	}
	return n
}

// Depaste returns r with the repairs of f applied to every line. When f
// needs none, r's bytes are passed on as read while its lines are watched
// for a paste that starts later (pasteWatch).
func Depaste(r io.Reader, f PasteFix) io.Reader {
	if !f.Any() {
		return &pasteWatch{r: r}
	}
	return newDepaster(r, f)
}

func newDepaster(r io.Reader, f PasteFix) *depaster {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return &depaster{r: br, f: f}
}

type depaster struct {
	r    *bufio.Reader
	f    PasteFix
	out  []byte
	long bool // inside a line longer than the buffer: passed on as read
	err  error
	// held is a line read after a wrapped one that did not go on in it,
	// with its read's error: the next line.
	held    []byte
	heldErr error
	isHeld  bool
	rec     *recordStart // tells a wrap's rest from a record
}

// readLine returns the held line, or reads the next.
func (d *depaster) readLine() ([]byte, error) {
	if d.isHeld {
		d.isHeld = false
		return d.held, d.heldErr
	}
	return d.r.ReadSlice('\n')
}

func (d *depaster) Read(p []byte) (int, error) {
	for len(d.out) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		line, err := d.readLine()
		switch {
		case err == bufio.ErrBufferFull:
			if !d.long {
				line = d.fix(line)
			}
			d.long = true
			d.out = append(d.out[:0], line...)
			continue
		case err != nil:
			d.err = err
		}
		if d.long {
			d.long = false
			d.out = append(d.out[:0], line...)
			continue
		}
		d.out = d.fix(line)
		if d.f.Wrap > 0 && err == nil && lineLen(line) == d.f.Wrap {
			d.join()
		}
	}
	n := copy(p, d.out)
	d.out = d.out[n:]
	return n, nil
}

// fix repairs one line (with its '\n', if any) into a fresh slice.
func (d *depaster) fix(line []byte) []byte {
	var out []byte
	if d.f.ANSI {
		out = stripBareANSI(line)
	} else {
		out = append(make([]byte, 0, len(line)), line...)
	}
	if d.f.Quote {
		if q := quoteAt(out); q >= 0 {
			out = unquote(out[q:])
		}
	}
	if d.f.Indent > 0 {
		n := 0
		for n < d.f.Indent && n < len(out) && (out[n] == ' ' || out[n] == '\t') {
			n++
		}
		out = out[n:]
	}
	if d.f.Outer != "" && bytes.HasPrefix(out, []byte(d.f.Outer)) {
		out = out[len(d.f.Outer):]
	}
	if d.f.Prefix {
		n := indentOf(out)
		if n > 0 && startsWithPrefix(out[n:]) {
			out = out[n:]
		}
	}
	return out
}

// stripBareANSI returns line without its colour codes that lack their
// ESC or have it rendered as text (bareANSI), in a fresh slice.
func stripBareANSI(line []byte) []byte {
	out := make([]byte, 0, len(line))
	for {
		k := bareANSI(line)
		if k < 0 {
			break
		}
		out = append(out, line[:k]...)
		e := bytes.IndexByte(line[k:], 'm')
		line = line[k+e+1:]
	}
	return append(out, line...)
}

// quoteAt returns the offset of the Markdown quote that line starts with,
// at its start or after an indent or colour codes without their ESC (a
// quote inside an indented list item, a coloured copy quoted), or -1.
func quoteAt(line []byte) int {
	n := 0
	for {
		n += indentOf(line[n:])
		if n < len(line) && line[n] == '>' {
			return n
		}
		if n < len(line) && line[n] == 0x1b || bareANSI(line[n:]) == 0 {
			e := bytes.IndexByte(line[n:], 'm')
			if e < 0 || e > 16 {
				return -1
			}
			n += e + 1
			continue
		}
		return -1
	}
}

// outerPrefix returns a tool's prefix that line starts with — "[name] "
// — that is not an engine's own (no time, no rank), or "".
func outerPrefix(line []byte) string {
	var p []byte
	switch {
	case len(line) > 2 && line[0] == '[':
		e := bytes.IndexByte(line, ']')
		if e < 2 || e > 40 || e+1 >= len(line) || line[e+1] != ' ' {
			return ""
		}
		p = line[:e+2]
	default:
		return "" // docker compose's "name  | " is a collector prefix the peeler reads itself
	}
	if bytes.ContainsAny(p, ":/") || bytes.HasPrefix(p, []byte("[20")) || bytes.HasPrefix(p, []byte("[19")) {
		return "" // a time (the engine's own header) or kubectl's "[pod/…]", which the peeler reads
	}
	for _, w := range [][]byte{[]byte("TP"), []byte("DP"), []byte("PP"), []byte("EP"), []byte("rank"), []byte("Rank"), []byte("RANK"), []byte("pid")} {
		if bytes.Contains(p, w) {
			return "" // ranks: the engine's own header
		}
	}
	return string(p)
}

// unquote drops Markdown quoting: ">", "> ", "> > ", and a quote
// nested after an indent ">        > ": a quoted tool output that marks
// its own lines so (Nix prints a failed build's last log lines under
// "       > ").
func unquote(line []byte) []byte {
	for len(line) > 0 && line[0] == '>' {
		line = line[1:]
		if len(line) > 0 && line[0] == ' ' {
			line = line[1:]
		}
		n := 0
		for n < len(line) && line[n] == ' ' {
			n++
		}
		if n > 0 && n < len(line) && line[n] == '>' && (n+1 == len(line) || line[n+1] == ' ') {
			line = line[n:]
		}
	}
	return line
}

// renderedESC are the ESC byte as a tool wrote it out in text: syslog's
// octal escape of control characters ("#033[0;36m", rsyslog), caret
// notation ("^[[0;36m", cat -v, less), a string's escapes, and the
// Unicode control picture U+241B ("\u241b[0;36m", how some pages and
// terminals draw the byte).
var renderedESC = []string{"#033", "^[", `\033`, `\x1b`, `\u001b`, `\e`, "\u241b"}

// bareANSI finds a colour code without its ESC, or with the ESC rendered
// as text (renderedESC): "[" digits and ';' "m",
// with at least one digit, not preceded by ESC. It returns its offset or -1.
func bareANSI(line []byte) int {
	for off := 0; ; {
		k := bytes.IndexByte(line[off:], '[')
		if k < 0 {
			return -1
		}
		k += off
		j := k + 1
		digits := 0
		for j < len(line) && j-k <= 12 && (line[j] >= '0' && line[j] <= '9' || line[j] == ';') {
			if line[j] != ';' {
				digits++
			}
			j++
		}
		if digits > 0 && j < len(line) && line[j] == 'm' && (k == 0 || line[k-1] != 0x1b) {
			for _, esc := range renderedESC {
				if k >= len(esc) && string(line[k-len(esc):k]) == esc {
					return k - len(esc) // the ESC as a page or a collector rendered it goes too
				}
			}
			return k
		}
		off = k + 1
	}
}

// startsWithPrefix: the text begins as an engine, launcher or logger line
// does: "(EngineCore_DP0 pid=…)", "[rank3]:", "[default0]:", "[1,0]<stderr>:",
// "INFO 11-29 …", "ERROR 2025-…", "[2025-…".
func startsWithPrefix(t []byte) bool {
	switch {
	case len(t) == 0:
		return false
	case t[0] == '(':
		e := bytes.IndexByte(t, ')')
		return e > 0 && e < 120 && bytes.Contains(t[:e], []byte(" pid="))
	case t[0] == '[':
		for _, p := range [][]byte{[]byte("[rank"), []byte("[default"), []byte("[20"), []byte("[1,"), []byte("[0,")} {
			if bytes.HasPrefix(t, p) {
				return true
			}
		}
		return false
	}
	for _, lv := range [][]byte{[]byte("INFO "), []byte("ERROR "), []byte("WARNING "), []byte("DEBUG "), []byte("CRITICAL ")} {
		if bytes.HasPrefix(t, lv) && len(t) > len(lv) && t[len(lv)] >= '0' && t[len(lv)] <= '9' {
			return true
		}
	}
	// docker compose's "name  | " (an indented excerpt of a compose log).
	_, e := composePrefix(t)
	return e > 0
}
