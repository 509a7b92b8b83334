package enginelog

import (
	"bytes"
	"path/filepath"
	"strings"
)

// Sniff scores, named once; the other readers' sniffs rank against them
// (ingest.Detect takes the highest).
const (
	ScoreEngine     = 80 // engine or launcher headers
	ScoreGlog       = 60 // glog headers and no engine's
	ScoreTraceback  = 50 // a bare Python traceback
	ScoreHoldsDump  = 30 // a stack dump's header (often behind engine prefixes): its own parser wins
	ScoreTorchTrace = 20 // glog headers followed by JSON envelopes (TORCH_TRACE): its own parser wins
	ScoreLogName    = 15 // other text named like a log
	ScoreText       = 10 // any other text: an engine log is the fallback
)

// Sniff scores how sure it is that head (the first bytes of path) is an
// engine log (the scores above); 0 for binary data.
func Sniff(path string, head []byte) int {
	score, _ := sniff(path, head)
	return score
}

// HoldsLogLines reports whether head has engine, launcher or glog lines
// (a stack dump inside a log, rather than a dump alone).
func HoldsLogLines(head []byte) bool {
	_, logLines := sniff("", head)
	return logLines
}

func sniff(path string, head []byte) (score int, logLines bool) {
	if len(head) == 0 {
		return 0, false
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return 0, false
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
		case hdrVLLM, hdrSGLang, hdrATOM, hdrTRT, hdrPython, hdrTracing:
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
	logLines = engine > 0 || glog > 0
	// Stack dumps (py-spy, faulthandler) often sit behind engine prefixes;
	// their own parser should win.
	for _, m := range []string{"(idle): \"", "(active): \"", "(active+gil): \"", "\nPython v3", "Current thread 0x", "\nThread 0x"} {
		if bytes.Contains(head, []byte(m)) {
			return ScoreHoldsDump, logLines
		}
	}
	switch {
	case glog > 0 && jsonGlog*2 >= glog && engine == 0:
		return ScoreTorchTrace, logLines
	case engine > 0:
		return ScoreEngine, logLines
	case glog > 0:
		return ScoreGlog, logLines
	case traceback:
		return ScoreTraceback, logLines
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".log", ".txt", ".out", ".err":
		return ScoreLogName, logLines
	}
	return ScoreText, logLines
}

// cutLine splits off the first line of data, without its '\n'.
func cutLine(data []byte) (line, rest []byte) {
	if k := bytes.IndexByte(data, '\n'); k >= 0 {
		return data[:k], data[k+1:]
	}
	return data, nil
}
