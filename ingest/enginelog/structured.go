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
