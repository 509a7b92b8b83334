package enginelog

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// A log collector or a program's structured logger may wrap every line of
// the output in its own record: docker's json-file driver
// ({"log":"…\n","stream":"stderr","time":"…"}), a JSON logger
// ({"timestamp":…,"level":"ERROR","fields":{"message":"…"}}, TGI's
// --json-output; {"msg":…}), logfmt (time="…" level=info msg="…", the
// logrus wrappers that run an engine). The line's text is then the message,
// unescaped: a traceback's `File \"…\"` lines read as Python printed them.

// structuredMessage is the message a structured line carries, appended to
// dst, and whether raw is such a line. A message of several lines (a JSON
// logger's whole traceback in one value) gives its last line that is not
// blank: where a traceback ends, its exception line.
func structuredMessage(dst, raw []byte) ([]byte, bool) {
	if len(raw) < 8 {
		return dst, false
	}
	var msg string
	switch {
	case raw[0] == '{' && raw[1] == '"' && raw[len(raw)-1] == '}':
		var v struct {
			Log     *string `json:"log"`
			Message *string `json:"message"`
			Msg     *string `json:"msg"`
			Fields  struct {
				Message *string `json:"message"`
			} `json:"fields"`
		}
		if json.Unmarshal(raw, &v) != nil {
			return dst, false
		}
		switch {
		case v.Log != nil:
			msg = *v.Log
		case v.Message != nil:
			msg = *v.Message
		case v.Msg != nil:
			msg = *v.Msg
		case v.Fields.Message != nil:
			msg = *v.Fields.Message
		default:
			return dst, false
		}
	case bytes.HasPrefix(raw, []byte(`time="`)) || bytes.HasPrefix(raw, []byte("level=")):
		k := bytes.Index(raw, []byte(` msg="`))
		if k < 0 {
			return dst, false
		}
		q := raw[k+len(` msg=`):]
		e := 1
		for e < len(q) && q[e] != '"' {
			if q[e] == '\\' {
				e++
			}
			e++
		}
		if e >= len(q) {
			return dst, false
		}
		s, err := strconv.Unquote(string(q[:e+1]))
		if err != nil {
			return dst, false
		}
		msg = s
	default:
		return dst, false
	}
	for len(msg) > 0 && (msg[len(msg)-1] == '\n' || msg[len(msg)-1] == '\r') {
		msg = msg[:len(msg)-1]
	}
	if k := lastLineStart(msg); k > 0 {
		msg = msg[k:]
	}
	return append(dst, msg...), true
}

// cutStructuredTail reads raw as the end of a JSON record whose start an
// excerpt cut off inside its message's value (`…does not exist\n"},"target":"…"}`):
// the value's rest, with JSON's escapes, up to its closing quote, then
// what closes the record. It appends the value's last line that is not
// blank, as structuredMessage does, and reports whether raw was one: the
// line's first quote closes the value, the value holds an escaped newline
// (a traceback's lines), and the rest is valid JSON once the record's cut
// start is put back. (A line that quotes anything before that is not one.)
func cutStructuredTail(dst, raw []byte) ([]byte, bool) {
	raw = bytes.TrimRight(raw, "\r")
	q := -1
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++
		case '"':
			q = i
		}
		if q >= 0 {
			break
		}
	}
	if q <= 0 || q+1 >= len(raw) || raw[q+1] != '}' && raw[q+1] != ',' || !bytes.Contains(raw[:q], []byte(`\n`)) {
		return dst, false
	}
	rest := raw[q+1:]
	depth := bytes.Count(rest, []byte("}")) - bytes.Count(rest, []byte("{"))
	if depth < 1 || depth > 8 {
		return dst, false
	}
	whole := make([]byte, 0, len(raw)+8*depth)
	for range depth {
		whole = append(whole, `{"k":`...)
	}
	whole = append(append(append(whole, '"'), raw[:q+1]...), rest...)
	if !json.Valid(whole) {
		return dst, false
	}
	var msg string
	if json.Unmarshal(append([]byte{'"'}, raw[:q+1]...), &msg) != nil {
		return dst, false
	}
	msg = strings.TrimRight(msg, "\r\n")
	return append(dst, msg[lastLineStart(msg):]...), true
}

// lastLineStart is where the last line of s that is not blank starts, 0
// when s is one line.
func lastLineStart(s string) int {
	end := len(s)
	for {
		k := strings.LastIndexByte(s[:end], '\n')
		if k < 0 {
			return 0
		}
		if strings.TrimSpace(s[k+1:end]) != "" {
			return k + 1
		}
		end = k
	}
}
