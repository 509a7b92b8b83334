package enginelog

import (
	"bytes"

	"github.com/bringup-tool/bringup/record"
)

// Peeled is one log line with its wrappers taken off, for readers of other
// formats (stack dumps) that meet the same collector, process and logger
// prefixes around their own lines.
type Peeled struct {
	// Body is the line without its wrappers, as printed.
	Body string
	// Stream identifies the producer of the line: its collector prefixes
	// without their timestamps (kubectl pod, compose service, journald
	// unit) and its process prefixes, as printed. Lines of one process
	// share it, so line-interleaved output of several can be told apart.
	Stream string
	// Rank is what the prefixes and a header's rank tags say about the
	// producer (a glog header's pid is not counted).
	Rank record.Rank
	// Tagged is set when Rank says anything at all.
	Tagged bool
	// Logger names the logger header the line carried: "vllm", "glog",
	// "sglang", "atom", or "" for none.
	Logger string
	// Level is the header's level, when it has one.
	Level record.Level
}

// LinePeeler peels single lines with the same code the log parser uses.
// It keeps caches between lines, so one reader should keep one; it is not
// safe for concurrent use.
type LinePeeler struct {
	p   peeler
	l   peeled
	buf []byte
}

var loggerNames = [...]string{hdrNone: "", hdrVLLM: "vllm", hdrGlog: "glog", hdrSGLang: "sglang", hdrATOM: "atom", hdrTRT: "tensorrt-llm", hdrPython: "python", hdrHIP: "hip", hdrPytest: "pytest", hdrTracing: "tracing"}

// Peel takes one physical line (without its '\n') apart: trailing '\r' and
// ANSI escapes, collector prefixes, process prefixes, a logger header.
func (lp *LinePeeler) Peel(line string) Peeled {
	for len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	// Spans index the peeled bytes; while they equal line, strings are
	// cut from line without a copy.
	src := line
	if len(line) > MaxLine {
		line = line[:MaxLine]
	}
	lp.buf = append(lp.buf[:0], line...)
	if bytes.IndexByte(lp.buf, 0x1b) >= 0 {
		lp.buf = stripANSI(lp.buf[len(lp.buf):], lp.buf)
		src = ""
	}
	l := &lp.l
	l.line = lp.buf
	lp.p.peel(l)
	cut := func(s span) string {
		if src != "" {
			return src[s.a:s.b]
		}
		return string(s.of(l.line))
	}
	out := Peeled{Body: cut(l.body), Rank: l.rank, Logger: loggerNames[l.hdr], Level: l.level}
	if l.hdr == hdrGlog {
		// The glog header's pid may have filled Rank.PID: peel the
		// prefixes alone for what they say.
		var q peeled
		q.line = l.line[:l.procEnd]
		lp.p.peel(&q)
		out.Rank = q.rank
	}
	out.Tagged = out.Rank != record.NoRank
	out.Stream = cut(span{l.collEnd, l.procEnd})
	if l.collEnd > 0 {
		var sb []byte
		for k := 0; k < int(l.nlabels) && l.labels[k].b <= l.collEnd; k++ {
			sb = append(sb, collectorStream(l.labels[k].of(l.line))...)
			sb = append(sb, '|')
		}
		out.Stream = string(append(sb, out.Stream...))
	}
	return out
}

// collectorStream keeps the part of a collector prefix that names the
// producer: not a log shipper's or CI system's timestamp nor a viewer's
// line number, and a journald prefix
// without its time ("Aug 19 18:30:22 host unit[pid]:" → "host unit[pid]:").
func collectorStream(label []byte) []byte {
	switch {
	case len(label) == 0:
		return nil
	case isDigit(label[0]) && len(label) >= 10 && label[4] == '-' && label[7] == '-',
		label[0] == '[' && len(label) > 1 && isDigit(label[1]):
		// A stamp, bare or bracketed, or a viewer's line number.
		return nil
	case len(label) > 16 && label[3] == ' ' && label[15] == ' ' && label[0] >= 'A' && label[0] <= 'Z' && label[len(label)-1] == ':':
		return label[16:]
	}
	return label
}
