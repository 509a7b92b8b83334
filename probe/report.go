package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/bringup-tool/bringup/record"
)

// Schema is the schema of every file the probe writes.
const Schema = "bringup.probe/v1"

// Doc is one file the probe wrote: a "loaded" marker (written when the
// process loaded the probe) or a "report" (written at each record and at
// exit). Fields are documented in docs/probe.md.
type Doc struct {
	Schema         string            `json:"schema"`
	Kind           string            `json:"kind"`
	PID            int               `json:"pid"`
	PPID           int               `json:"ppid"`
	Stamp          string            `json:"stamp"`
	Python         string            `json:"python"`
	Implementation string            `json:"implementation,omitempty"`
	Executable     string            `json:"executable,omitempty"`
	Argv           []string          `json:"argv"`
	Flags          map[string]int    `json:"flags,omitempty"`
	Spec           string            `json:"spec"`
	Hooks          []string          `json:"hooks"`
	NotHooked      []string          `json:"not_hooked"`
	Chained        *string           `json:"chained"`
	ForkedFrom     int               `json:"forked_from,omitempty"`
	WrittenAt      string            `json:"written_at,omitempty"`
	Torch          string            `json:"torch,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	Counts         Counts            `json:"counts"`
	SpentMS        float64           `json:"spent_ms,omitempty"`
	Disabled       string            `json:"disabled,omitempty"`
	Errors         []string          `json:"errors,omitempty"`
	Records        []Record          `json:"records,omitempty"`
}

// Counts says how many matching events a process saw and what became of
// them.
type Counts struct {
	Matched            int `json:"matched"`
	Recorded           int `json:"recorded"`
	RecordedAtRaise    int `json:"recorded_at_raise"`
	RecordedAtReport   int `json:"recorded_at_report"`
	SkippedStdlib      int `json:"skipped_stdlib"`
	DroppedCap         int `json:"dropped_cap"`
	DroppedTime        int `json:"dropped_time"`
	DroppedFilterError int `json:"dropped_filter_error"`
}

// Record is one exception object, recorded once: where it was first seen
// (SeenAt: raise, sys.excepthook, threading.excepthook, logging, traceback)
// and where else (AlsoSeenAt).
type Record struct {
	Seq                 int         `json:"seq"`
	SeenAt              string      `json:"seen_at"`
	AlsoSeenAt          []string    `json:"also_seen_at,omitempty"`
	Time                float64     `json:"time"`
	Thread              string      `json:"thread"`
	Type                string      `json:"type"`
	Module              string      `json:"module"`
	Message             string      `json:"message"`
	Repr                string      `json:"repr"`
	Phase               string      `json:"phase"`
	DynamoLoaded        bool        `json:"dynamo_loaded"` // torch._dynamo was imported when it was recorded
	Stack               []Frame     `json:"stack"`         // outermost first, as a traceback prints
	NFrames             int         `json:"n_frames"`
	StackTruncated      bool        `json:"stack_truncated,omitempty"`
	TimeCap             bool        `json:"time_cap,omitempty"`
	DynamoUserStack     []UserFrame `json:"dynamo_user_stack,omitempty"`
	DynamoUserStackFrom string      `json:"dynamo_user_stack_from,omitempty"`
	Chain               []ExcRef    `json:"chain,omitempty"`
	ReportedAs          *ExcRef     `json:"reported_as,omitempty"`
	Notes               []string    `json:"notes,omitempty"`
	Logged              *Logged     `json:"logged,omitempty"`
	ElapsedUS           int         `json:"elapsed_us"`
	// Followed: the probe followed this raise (one made while Dynamo
	// traced, in torch, numpy or the standard library; 3.12+) until it
	// reached a frame outside those libraries (Reached) or was caught;
	// HandledIn is the last frame that caught it.
	Followed  bool   `json:"followed,omitempty"`
	Reached   *Place `json:"reached,omitempty"`
	HandledIn *Place `json:"handled_in,omitempty"`
}

// Place is a frame an exception reached or was caught in.
type Place struct {
	File     string `json:"file"`
	Function string `json:"function"`
	Line     *int   `json:"line"`
}

// Frame is one frame of a recorded stack.
type Frame struct {
	File         string         `json:"file"`
	Function     string         `json:"function"`
	Name         string         `json:"name"`
	FirstLineNo  int            `json:"firstlineno"`
	Line         *int           `json:"line"` // nil: the instruction has no line
	Offset       int            `json:"offset"`
	Instruction  string         `json:"instruction,omitempty"`
	Position     string         `json:"position,omitempty"` // full, no-columns, none, lines-only (3.10)
	DefLine      bool           `json:"def_line"`
	Generated    bool           `json:"generated"`
	GeneratedWhy []string       `json:"generated_why,omitempty"`
	CacheEntries *int           `json:"cache_entries,omitempty"`
	Window       []Instr        `json:"window,omitempty"`
	Expression   string         `json:"expression,omitempty"`
	Resolved     []Step         `json:"resolved,omitempty"`
	Self         *ModuleSummary `json:"self,omitempty"`
}

// Instr is one decoded instruction around the failing one.
type Instr struct {
	Offset   int    `json:"offset"`
	Opname   string `json:"opname"`
	Argrepr  string `json:"argrepr"`
	Position string `json:"position"`
	Current  bool   `json:"current"`
}

// Step is one step of the innermost expression followed on the live
// objects: its type, where it stopped and why, or the key that was missing
// and the keys that were there.
type Step struct {
	Expr    string         `json:"expr"`
	Type    string         `json:"type,omitempty"`
	Stop    string         `json:"stop,omitempty"`
	Missing bool           `json:"missing,omitempty"`
	Key     string         `json:"key,omitempty"`
	Keys    []string       `json:"keys,omitempty"`
	NKeys   int            `json:"n_keys,omitempty"`
	On      *ModuleSummary `json:"on,omitempty"`
}

// ModuleSummary is a short summary of an nn.Module (or an object shaped
// like one: _modules and _parameters dicts, Kind "module-like").
type ModuleSummary struct {
	Type        string            `json:"type"`
	Kind        string            `json:"kind"`
	Name        string            `json:"name,omitempty"`  // the argument's name when not "self"
	Attrs       map[string]string `json:"attrs,omitempty"` // prefix, layer_idx, ... when set
	Children    []Child           `json:"children,omitempty"`
	NChildren   int               `json:"n_children,omitempty"`
	Parameters  []string          `json:"parameters,omitempty"`
	NParameters int               `json:"n_parameters,omitempty"`
	Buffers     []string          `json:"buffers,omitempty"`
}

// Child is one child module: its name and type.
type Child struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// UserFrame is one user frame Dynamo was tracing (inlined frames included).
type UserFrame struct {
	File        string `json:"file"`
	Line        *int   `json:"line"`
	Function    string `json:"function"`
	Instruction string `json:"instruction,omitempty"`
}

// ExcRef names another exception of the chain.
type ExcRef struct {
	Type     string `json:"type"`
	Module   string `json:"module"`
	Message  string `json:"message"`
	Relation string `json:"relation,omitempty"` // cause, context
}

// Logged is the logging call that reported the exception.
type Logged struct {
	Logger   string `json:"logger"`
	Level    string `json:"level"`
	File     string `json:"file"`
	Line     *int   `json:"line"`
	Function string `json:"function"`
	Message  string `json:"message"`
}

// Report is one Python process of the boot: its marker and its report.
type Report struct {
	Doc               // the report when there is one, else the marker
	Loaded     bool   // a loaded marker was found
	MarkerPath string // "" when none
	ReportPath string // "" when the process recorded nothing
}

// MaxFileBytes bounds one file read back (the probe caps its own at
// Caps.Bytes; anything bigger was not written by it).
const MaxFileBytes = 8 << 20

var fileName = regexp.MustCompile(`^(loaded|probe)-([0-9]+)-([0-9a-f]+)\.json$`)

// ReadDir reads every file the probe wrote under runDir/probe, one Report
// per process (by pid and stamp), sorted by pid. A file that cannot be
// used is a record.Skip with its path (and line, where the JSON breaks):
// one that does not parse, is not a regular file, holds another
// process's document than its name says, or is a temporary file left
// behind by a process killed while it wrote its report. Nothing is
// followed through a symbolic link. A run directory without a probe
// directory gives no reports and one Skip for the directory.
func ReadDir(runDir string) ([]Report, []record.Skip) {
	dir := filepath.Join(runDir, SubDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, []record.Skip{{Path: dir, Reason: err.Error()}}
	}
	var skips []record.Skip
	byKey := map[string]*Report{}
	var keys []string
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		if e.IsDir() {
			continue
		}
		if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") {
			skips = append(skips, record.Skip{Path: path, Reason: "a temporary file left behind: a process was killed while it wrote its report"})
			continue
		}
		m := fileName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		if e.Type()&os.ModeSymlink != 0 || !e.Type().IsRegular() {
			skips = append(skips, record.Skip{Path: path, Reason: "not a regular file; not read"})
			continue
		}
		doc, err := ReadFile(path)
		if err != nil {
			skips = append(skips, skipOf(path, err))
			continue
		}
		wantKind := map[string]string{"loaded": "loaded", "probe": "report"}[m[1]]
		if doc.Kind != wantKind || strconv.Itoa(doc.PID) != m[2] || doc.Stamp != m[3] {
			skips = append(skips, record.Skip{Path: path, Reason: fmt.Sprintf("holds kind %q pid %d stamp %q, not what its name says", doc.Kind, doc.PID, doc.Stamp)})
			continue
		}
		key := m[2] + "-" + m[3]
		r := byKey[key]
		if r == nil {
			r = &Report{}
			byKey[key] = r
			keys = append(keys, key)
		}
		if doc.Kind == "loaded" {
			r.Loaded, r.MarkerPath = true, path
			if r.ReportPath == "" {
				r.Doc = doc
			}
		} else {
			r.ReportPath = path
			r.Doc = doc
		}
	}
	reports := make([]Report, 0, len(keys))
	for _, k := range keys {
		reports = append(reports, *byKey[k])
	}
	sort.SliceStable(reports, func(i, j int) bool {
		if reports[i].PID != reports[j].PID {
			return reports[i].PID < reports[j].PID
		}
		return reports[i].Stamp < reports[j].Stamp
	})
	return reports, skips
}

// ReadFile reads and checks one probe file, without following a link.
func ReadFile(path string) (Doc, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return Doc{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return Doc{}, err
	}
	if len(data) > MaxFileBytes {
		return Doc{}, fmt.Errorf("larger than %d bytes: not a probe file", MaxFileBytes)
	}
	return Parse(data)
}

// Parse reads one probe document and checks what a reader relies on: the
// schema, the kind, a pid, and that every record has a type and a stack
// whose frames have a file.
func Parse(data []byte) (Doc, error) {
	var doc Doc
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return Doc{}, locate(data, err)
	}
	if dec.More() {
		return Doc{}, errors.New("more than one JSON value")
	}
	if doc.Schema != Schema {
		return Doc{}, fmt.Errorf("schema %q, want %q", cut(doc.Schema, 80), Schema)
	}
	if doc.Kind != "loaded" && doc.Kind != "report" {
		return Doc{}, fmt.Errorf("kind %q, want loaded or report", cut(doc.Kind, 80))
	}
	if doc.PID <= 0 {
		return Doc{}, fmt.Errorf("pid %d", doc.PID)
	}
	for i, r := range doc.Records {
		if r.Type == "" {
			return Doc{}, fmt.Errorf("record %d has no exception type", i+1)
		}
		for j, f := range r.Stack {
			if f.File == "" {
				return Doc{}, fmt.Errorf("record %d frame %d has no file", i+1, j+1)
			}
		}
	}
	return doc, nil
}

// lineError is a JSON error at a line of the file.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return e.err.Error() }

func locate(data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
		if te.Field != "" {
			err = fmt.Errorf("field %s: %s where %s belongs", te.Field, te.Value, te.Type)
		}
	}
	if off < 0 || off > int64(len(data)) {
		return err
	}
	return &lineError{line: 1 + bytes.Count(data[:off], []byte("\n")), err: err}
}

func skipOf(path string, err error) record.Skip {
	var le *lineError
	if errors.As(err, &le) {
		return record.Skip{Path: path, Line: le.line, Reason: le.err.Error()}
	}
	return record.Skip{Path: path, Reason: err.Error()}
}
