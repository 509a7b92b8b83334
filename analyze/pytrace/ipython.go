package pytrace

import (
	"strconv"
	"strings"

	"github.com/bringup-tool/bringup/record"
)

// IPython (Jupyter, Colab) prints a traceback its own way:
//
//	InternalTorchDynamoError                  Traceback (most recent call last)
//	[<ipython-input-19-61da>](https://…) in <cell line: 15>()     (Colab: a link)
//	     14 compiled_m = torch.compile(m)
//	---> 15 compiled_m(torch.randn(3, 4))
//	/usr/lib/python3.10/site-packages/torch/nn/modules/module.py in _call_impl(self, *args)
//	-> 1518             return self._call_impl(*args, **kwargs)
//	InternalTorchDynamoError: message
//
// or, from IPython 8 on, frames as "Cell In[19], line 15" and "File
// PATH:LINE, in FUNC(ARGS)". The exception type comes first, in the
// header: it is what was raised even when the excerpt ends before the
// final "Type: message" line.

// ipythonHeader reads the header of an IPython traceback (the line
// trimmed): the exception type before the spaces and "Traceback (most
// recent call last)", without Python's colon.
func ipythonHeader(t string) (typ string, ok bool) {
	const tb = "Traceback (most recent call last)"
	if !strings.HasSuffix(t, tb) {
		return "", false
	}
	head := t[:len(t)-len(tb)]
	typ = strings.TrimRight(head, " ")
	if len(head)-len(typ) < 2 || typ == "" || strings.IndexByte(typ, ' ') >= 0 {
		return "", false
	}
	if got, msg, ok := exceptionLine(typ); !ok || got != typ || msg != "" {
		return "", false
	}
	return typ, true
}

// feedIPython reads the lines of an IPython traceback that Python's own
// form has not (frames, the numbered source lines under them, Colab's
// "N frames" of frames it folded); it reports whether it took l.
func (x *Extractor) feedIPython(s *stream, l *fedLine) bool {
	if f, ok := parseIPythonFrame(l.t); ok && l.line[0] != ' ' && l.line[0] != '\t' {
		x.addFrame(s, f, l)
		s.codeFor = -1 // the source is the arrow line, not the next one
		return true
	}
	if n, code, ok := ipythonArrow(l.t); ok {
		// "---> 15 code" or "-> 1518 code": the frame's current line.
		if k := len(s.cur.Frames) - 1; k >= 0 {
			if s.cur.Frames[k].Line == 0 {
				s.cur.Frames[k].Line = n
			}
			s.cur.Code[k] = code
		}
		s.tb.EndLine = l.n
		return true
	}
	if ipythonContext(l.t) || strings.HasPrefix(l.t, "[... skipping") {
		return true
	}
	return false
}

// parseIPythonFrame parses a frame line of IPython's: "PATH in FUNC(ARGS)"
// (Colab: "[PATH](LINK) in FUNC(ARGS)"), where PATH is a .py file or a
// "<ipython-input-…>" cell, and IPython 8's "File PATH:LINE, in
// FUNC(ARGS)" and "Cell In[N], line L".
func parseIPythonFrame(t string) (record.Frame, bool) {
	if rest, ok := strings.CutPrefix(t, "Cell In["); ok {
		cell, line, ok := strings.Cut(rest, "], line ")
		n, err := strconv.Atoi(line)
		if !ok || err != nil || n <= 0 {
			return record.Frame{}, false
		}
		return record.Frame{File: "Cell In[" + cell + "]", Line: n}, true
	}
	if rest, ok := strings.CutPrefix(t, "File "); ok && !strings.HasPrefix(rest, `"`) {
		loc, fn, _ := strings.Cut(rest, ", in ")
		k := strings.LastIndexByte(loc, ':')
		if k <= 0 {
			return record.Frame{}, false
		}
		n, err := strconv.Atoi(loc[k+1:])
		if err != nil || n <= 0 {
			return record.Frame{}, false
		}
		return record.Frame{File: loc[:k], Line: n, Func: funcOfCall(fn)}, true
	}
	path, fn, ok := strings.Cut(t, " in ")
	if !ok || !strings.HasSuffix(fn, ")") {
		return record.Frame{}, false
	}
	if strings.HasPrefix(path, "[") {
		// Colab renders the path as a Markdown link.
		end := strings.Index(path, "](")
		if end < 0 || !strings.HasSuffix(path, ")") {
			return record.Frame{}, false
		}
		path = path[1:end]
	}
	if !(strings.HasSuffix(path, ".py") || strings.HasPrefix(path, "<") && strings.HasSuffix(path, ">")) || strings.IndexByte(path, ' ') >= 0 {
		return record.Frame{}, false
	}
	if fn = funcOfCall(fn); fn == "" {
		return record.Frame{}, false
	}
	return record.Frame{File: path, Func: fn}, true
}

// funcOfCall is the function of "FUNC(ARGS)": the text before its first
// '(' ("<cell line: 15>" of "<cell line: 15>()").
func funcOfCall(s string) string {
	k := strings.IndexByte(s, '(')
	if k < 0 {
		return strings.TrimSpace(s)
	}
	return strings.TrimSpace(s[:k])
}

// ipythonArrow reads the line IPython marks under a frame as the one
// running: dashes, '>', its number, its source.
func ipythonArrow(t string) (n int, code string, ok bool) {
	i := 0
	for i < len(t) && t[i] == '-' {
		i++
	}
	if i == 0 || i >= len(t) || t[i] != '>' {
		return 0, "", false
	}
	rest := strings.TrimLeft(t[i+1:], " ")
	num, code, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 {
		return 0, "", false
	}
	return n, strings.TrimSpace(code), true
}

// ipythonContext: a numbered source line around the running one
// ("   1516             return …", "     13 "), or Colab's "21 frames"
// (the frames it folded away).
func ipythonContext(t string) bool {
	num, _, _ := strings.Cut(t, " ")
	_, err := strconv.Atoi(num)
	return err == nil
}
