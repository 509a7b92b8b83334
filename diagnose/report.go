package diagnose

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
)

// KindReport is the kind of a file bringup (or a trace viewer's tooling)
// writes rather than reads: its JSON documents (run.json, a diagnosis, a
// trace report, a Perfetto trace, a probe report), HTML pages and SQLite
// run stores. Such an input is recognised by its content, whatever its
// name, and never read as a log; its input entry says what it is.
// (bringup.stacks/v1 is a stack dump diagnose reads: ingest/stackdump
// claims it.)
const KindReport = "report"

// sniffReport claims bringup's own outputs for KindReport, above every
// log reader's score.
func sniffReport(_ string, head []byte) int {
	if reportOf(head) != "" {
		return 100
	}
	return 0
}

// notAnInput is the reading of a KindReport input: nothing is read; the
// entry says what the file is and what to give instead.
func notAnInput(path string, _ *bufio.Reader, head []byte, _ reading) fileResult {
	return fileResult{input: Input{Path: path, Kind: KindReport, Error: reportOf(head) + ": not a log, not read"}}
}

// reportOf says what bringup output head is the start of, "" when none:
// "a Perfetto trace (bringup trace --perfetto)".
func reportOf(head []byte) string {
	h := bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	h = bytes.TrimLeft(h, " \t\r\n")
	switch {
	case bytes.HasPrefix(h, []byte("SQLite format 3\x00")):
		return "a SQLite database (a bringup run store)"
	case len(h) >= 32 && (binary.BigEndian.Uint32(h) == 0x377f0682 || binary.BigEndian.Uint32(h) == 0x377f0683):
		return "a SQLite write-ahead log (a run store's -wal file)"
	case hasPrefixFold(h, "<!doctype html") || hasPrefixFold(h, "<html"):
		return "an HTML page (bringup trace --html writes them)"
	case len(h) > 0 && (h[0] == '{' || h[0] == '['):
		return jsonReport(h)
	}
	return ""
}

func hasPrefixFold(b []byte, p string) bool {
	return len(b) >= len(p) && strings.EqualFold(string(b[:len(p)]), p)
}

// reportNouns name bringup's JSON documents by schema (the prefix before
// "/v1").
var reportNouns = map[string]string{
	"bringup.run":         "a watch run record (its run directory is read with run.json as the run's facts)",
	"bringup.perfetto":    "a Perfetto trace (bringup trace --perfetto)",
	"bringup.diagnosis":   "a diagnosis (bringup diagnose --json)",
	"bringup.trace":       "a trace report (bringup trace --json)",
	"bringup.probe":       "an exception-probe report (read with its run directory)",
	"bringup.runs":        "a run list (bringup runs --json)",
	"bringup.patches":     "a patch series status (bringup patch --json)",
	"bringup.node-stacks": "a node's stack collection (bringup's cluster fan-out)",
}

// jsonReport reads the first keys of a JSON document: a "schema" of
// bringup's (other than bringup.stacks, a dump) names it; "traceEvents",
// or an array of events with "ph", is a Chrome/Perfetto trace.
func jsonReport(h []byte) string {
	dec := json.NewDecoder(bytes.NewReader(h))
	tok, err := dec.Token()
	if err != nil {
		return ""
	}
	array := tok == json.Delim('[')
	if array {
		if tok, err = dec.Token(); err != nil || tok != json.Delim('{') {
			return ""
		}
	} else if tok != json.Delim('{') {
		return ""
	}
	var ph, ts bool
	for i := 0; i < 16 && dec.More(); i++ {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return ""
		}
		var val json.RawMessage
		if key == "traceEvents" && !array {
			return "a Chrome/Perfetto trace (trace-event JSON)"
		}
		if err := dec.Decode(&val); err != nil {
			break // cut by the head's end
		}
		switch key {
		case "schema":
			var s string
			if array || json.Unmarshal(val, &s) != nil || !strings.HasPrefix(s, "bringup.") || strings.HasPrefix(s, "bringup.stacks/") {
				continue
			}
			name, _, _ := strings.Cut(s, "/")
			if n := reportNouns[name]; n != "" {
				return n
			}
			return "bringup's own JSON (schema " + s + ")"
		case "ph":
			ph = true
		case "ts":
			ts = true
		}
	}
	if array && ph && ts {
		return "a Chrome/Perfetto trace (trace-event JSON)"
	}
	return ""
}
