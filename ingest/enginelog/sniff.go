package enginelog

import (
	"bytes"
	"path/filepath"
	"strings"
)

// Sniff scores how sure it is that head (the first bytes of path) is an
// engine log: 80 when engine/launcher headers are found, 50 for a bare
// Python traceback, 10 for other text (an engine log is the fallback for
// any text input), 0 for binary data. A TORCH_TRACE file (glog header
// followed by a JSON envelope) gets a low score so its own parser wins,
// and so does a stack dump (30).
func Sniff(path string, head []byte) int {
	if len(head) == 0 {
		return 0
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return 0
	}
	var p peeler
	var l peeled
	lines, engine, glog, jsonGlog, traceback := 0, 0, 0, 0, false
	for data := head; len(data) > 0 && lines < 200; {
		var raw []byte
		raw, data = cutLine(data)
		if len(raw) > MaxLine {
			raw = raw[:MaxLine]
		}
		lines++
		if bytes.IndexByte(raw, 0x1b) >= 0 {
			raw = stripANSI(nil, raw)
		}
		l.line = bytes.TrimRight(raw, "\r")
		p.peel(&l)
		body := l.body.of(l.line)
		switch l.hdr {
		case hdrVLLM, hdrSGLang, hdrATOM:
			engine++
		case hdrGlog:
			glog++
			if len(body) > 0 && body[0] == '{' {
				jsonGlog++
			}
		case hdrNone:
			if l.nlabels > 0 {
				engine++
			}
		}
		if bytes.HasPrefix(bytes.TrimSpace(body), []byte("Traceback (most recent call last):")) {
			traceback = true
		}
	}
	// Stack dumps (py-spy, faulthandler) often sit behind engine prefixes;
	// their own parser should win.
	for _, m := range []string{"(idle): \"", "(active): \"", "(active+gil): \"", "\nPython v3", "Current thread 0x", "\nThread 0x"} {
		if bytes.Contains(head, []byte(m)) {
			return 30
		}
	}
	switch {
	case glog > 0 && jsonGlog*2 >= glog && engine == 0:
		return 20
	case engine > 0:
		return 80
	case glog > 0:
		return 60
	case traceback:
		return 50
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".log", ".txt", ".out", ".err":
		return 15
	}
	return 10
}

// cutLine splits off the first line of data, without its '\n'.
func cutLine(data []byte) (line, rest []byte) {
	if k := bytes.IndexByte(data, '\n'); k >= 0 {
		return data[:k], data[k+1:]
	}
	return data, nil
}
