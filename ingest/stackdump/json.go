package stackdump

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/bringup-tool/bringup/record"
)

// maxJSON bounds one JSON document so garbage cannot grow memory forever.
const maxJSON = 256 << 20

// jsonAccum collects the lines of one JSON document until its brackets
// balance.
type jsonAccum struct {
	start    int
	stream   *stream
	buf      strings.Builder
	depth    int
	inString bool
	escaped  bool
	tooBig   bool
}

// add appends a line; it reports whether the document is complete.
func (j *jsonAccum) add(line string) bool {
	if j.buf.Len()+len(line) > maxJSON {
		j.tooBig = true
		return true
	}
	j.buf.WriteString(line)
	j.buf.WriteByte('\n')
	for i := 0; i < len(line); i++ {
		c := line[i]
		if j.inString {
			switch {
			case j.escaped:
				j.escaped = false
			case c == '\\':
				j.escaped = true
			case c == '"':
				j.inString = false
			}
			continue
		}
		switch c {
		case '"':
			j.inString = true
		case '[', '{':
			j.depth++
		case ']', '}':
			j.depth--
			if j.depth <= 0 {
				return true
			}
		}
	}
	return false
}

// pyspyTrace is one element of `py-spy dump --json` (src/stack_trace.rs);
// unknown fields are ignored.
type pyspyTrace struct {
	PID        int     `json:"pid"`
	ThreadID   uint64  `json:"thread_id"`
	ThreadName *string `json:"thread_name"`
	OSThreadID *uint64 `json:"os_thread_id"`
	Active     bool    `json:"active"`
	OwnsGIL    bool    `json:"owns_gil"`
	Frames     []struct {
		Name          string  `json:"name"`
		Filename      string  `json:"filename"`
		ShortFilename *string `json:"short_filename"`
		Line          int     `json:"line"`
	} `json:"frames"`
	ProcessInfo *struct {
		PID         int    `json:"pid"`
		CommandLine string `json:"command_line"`
	} `json:"process_info"`
}

// stacksDoc is bringup's own bringup.stacks/v1 output read back.
type stacksDoc struct {
	Schema    string            `json:"schema"`
	Processes []*record.Process `json:"processes"`
}

func (p *parser) flushJSON() {
	j := p.json
	p.json = nil
	if j.tooBig {
		p.warn(j.start, "JSON document larger than %d bytes skipped", maxJSON)
		return
	}
	text := j.buf.String()
	if strings.HasPrefix(strings.TrimSpace(text), "[") {
		var traces []pyspyTrace
		if err := json.Unmarshal([]byte(text), &traces); err != nil {
			p.warn(j.start, "not a py-spy --json dump: %v", err)
			return
		}
		p.addPyspyJSON(traces, j.start, j.stream)
		return
	}
	var doc stacksDoc
	if err := json.Unmarshal([]byte(text), &doc); err != nil || !strings.HasPrefix(doc.Schema, "bringup.stacks/") {
		p.warn(j.start, "JSON object is neither py-spy --json nor bringup.stacks/v1; skipped")
		return
	}
	for _, proc := range doc.Processes {
		if proc == nil {
			continue
		}
		proc.RankInfo = record.NoRank
		record.ScanRankTokens(proc.Rank, &proc.RankInfo)
		if proc.Source == "" {
			proc.Source = record.SourceFile
		}
		proc.Path, proc.Line = p.path, j.start
		for i := range proc.Threads {
			fr := proc.Threads[i].Frames[:0]
			for _, f := range proc.Threads[i].Frames {
				if f.Func != "" || f.File != "" {
					fr = append(fr, f)
				}
			}
			proc.Threads[i].Frames = fr
		}
		p.res.Processes = append(p.res.Processes, proc)
	}
}

func (p *parser) addPyspyJSON(traces []pyspyTrace, line int, s *stream) {
	byPID := map[int]*record.Process{}
	for _, t := range traces {
		pid := t.PID
		if pid == 0 {
			pid = s.nextPID
		}
		proc := byPID[pid]
		if proc == nil {
			proc = &record.Process{PID: pid, Source: record.SourceFile, Path: p.path, Line: line, RankInfo: record.NoRank}
			if t.ProcessInfo != nil {
				proc.Name = t.ProcessInfo.CommandLine
			}
			if rankKnown(s.nextRank) {
				proc.RankInfo = s.nextRank
			}
			p.rankFromTitle(proc)
			byPID[pid] = proc
			p.res.Processes = append(p.res.Processes, proc)
		}
		th := record.Thread{TID: t.ThreadID, Ident: "0x" + strconv.FormatUint(t.ThreadID, 16), Line: line}
		if t.OSThreadID != nil {
			th.TID = *t.OSThreadID
		}
		if t.ThreadName != nil {
			th.Name = *t.ThreadName
		}
		switch {
		case t.Active && t.OwnsGIL:
			th.State = "active+gil"
		case t.Active:
			th.State = "active"
		default:
			th.State = "idle"
		}
		th.Main = th.Name == "MainThread" || (th.TID != 0 && int(th.TID) == pid)
		for _, f := range t.Frames {
			if f.Name == "" && f.Filename == "" {
				p.warn(line, "py-spy JSON frame without name or file skipped")
				continue
			}
			fr := record.Frame{Func: f.Name, File: f.Filename, Line: f.Line}
			if f.ShortFilename != nil && *f.ShortFilename != "" {
				fr.File = *f.ShortFilename
			}
			fr.Native = isNative(fr)
			th.Frames = append(th.Frames, fr)
		}
		proc.Threads = append(proc.Threads, th)
	}
	s.nextPID = 0
	s.nextRank = record.NoRank
}
