package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxDoc bounds one node's document: a node with hundreds of ranks and
// deep stacks stays far below it; anything larger is not a collector's.
const MaxDoc = 256 << 20

// Write writes the document as indented JSON.
func Write(w io.Writer, d *Doc) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(d)
}

// Decode reads one collector document. src names where it came from for
// the error message ("node bt1"). It checks the schema and the fields the
// merge relies on; a document from another bringup version that only adds
// fields is accepted.
func Decode(data []byte, src string) (*Doc, error) {
	if len(data) > MaxDoc {
		return nil, fmt.Errorf("%s: collector output is %d bytes, more than the %d a node document can be", src, len(data), MaxDoc)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, fmt.Errorf("%s: the collector printed nothing on stdout", src)
	}
	if data[0] != '{' {
		return nil, fmt.Errorf("%s: the collector's stdout is not JSON: %q", src, clip(string(data), 120))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var d Doc
	if err := dec.Decode(&d); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%s: collector JSON broken at byte %d: %v", src, se.Offset, err)
		}
		return nil, fmt.Errorf("%s: collector JSON: %v", src, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: collector output continues after its JSON document", src)
	}
	if d.Schema != Schema {
		return nil, fmt.Errorf("%s: schema %q, want %q (is the bringup on that node another version?)", src, d.Schema, Schema)
	}
	for i, p := range d.Processes {
		if p.PID <= 0 {
			return nil, fmt.Errorf("%s: process %d has pid %d", src, i+1, p.PID)
		}
		if p.Snapshot < 0 {
			return nil, fmt.Errorf("%s: pid %d has snapshot %d", src, p.PID, p.Snapshot)
		}
	}
	if d.Processes == nil {
		d.Processes = []Process{}
	}
	if d.Failures == nil {
		d.Failures = []Failure{}
	}
	return &d, nil
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
