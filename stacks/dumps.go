package stacks

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/ingest/stackdump"
	"github.com/bringup-tool/bringup/input"
	"github.com/bringup-tool/bringup/rules"
)

// Dumps is what a set of stack-dump inputs gave: their processes, the
// lines they could not use, and the interleaving they showed (a dump
// that is the output of several processes written over each other).
type Dumps struct {
	Processes   []*Process
	Warnings    []Warning
	Interleaved []Warning
	Read        int // inputs that could be read
}

// ReadDumps reads every input named in args (ingest/stackdump parses
// them): a directory is the files below it, sorted so that rank files
// come in order, "-" is stdin, read up to input.StdinCap. An input that
// cannot be read, a walk error and a cut stdin are told to note, one
// line each, and the rest is still read.
func ReadDumps(args []string, stdin io.Reader, note func(string)) *Dumps {
	var d Dumps
	for _, path := range ExpandInputs(args, note) {
		res, err := readDump(path, stdin, note)
		if err != nil {
			note(err.Error())
			continue
		}
		d.Add(res)
	}
	return &d
}

// Add takes in one dump's result.
func (d *Dumps) Add(res *stackdump.Result) {
	d.Read++
	d.Processes = append(d.Processes, res.Processes...)
	d.Warnings = append(d.Warnings, res.Warnings...)
	if res.Interleaved != nil {
		d.Interleaved = append(d.Interleaved, *res.Interleaved)
	}
}

// ErrNoStack is why a read gave no process at all; its message says what
// to give instead.
var ErrNoStack = errors.New("no Python stack found in the input (give py-spy, faulthandler or pystack dumps, or logs that contain them)")

// Empty is nil when the dumps (and the live processes a caller put
// before them in Processes) hold a process to analyze; else why not:
// every interleaving, told to note first, when a dump was interleaved;
// that none of named could be read (their reasons were told when they
// were read); or ErrNoStack.
func (d *Dumps) Empty(named []string, note func(string)) error {
	if len(d.Processes) > 0 {
		return nil
	}
	for _, iw := range d.Interleaved {
		note(iw.String())
	}
	switch {
	case len(d.Interleaved) > 0:
		return errors.New("no stack could be read: the dump is interleaved output of several processes (see above for the fix)")
	case d.Read == 0 && len(named) > 0:
		return fmt.Errorf("no input could be read from %s (reasons above)", strings.Join(named, " "))
	}
	return ErrNoStack
}

// AnalyzeWith analyzes procs at level lv with the rules of set, gated by the
// versions the processes show (Versions) and torch when it is given (the
// dumps do not say it): the analysis of `bringup stacks`, on files, live
// processes or a cluster's gather.
func AnalyzeWith(procs []*Process, lv Level, set *rules.Set, torch string) *Analysis {
	v := Versions(procs)
	if torch != "" {
		v["torch"] = torch
	}
	return Analyze(procs, Options{Level: lv, Conclude: Conclude(set, v)})
}

// ExpandInputs turns directories into the files under them (sorted, so
// rank files come in order); "-" stays stdin. FIFOs, devices and sockets
// inside a directory are passed over (a FIFO would block the read
// forever); one named on the command line is refused when it is opened.
// Notes beside the dumps (README.md, a MANIFEST.md quoting dump lines)
// and hidden files are passed over too; a file named is always read. A
// walk error is told to note.
func ExpandInputs(args []string, note func(string)) []string {
	var out []string
	for _, a := range args {
		if a == "-" {
			out = append(out, a)
			continue
		}
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			out = append(out, a)
			continue
		}
		var files []string
		_ = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				note(err.Error())
				return nil
			}
			if !d.IsDir() && input.Walkable(p, d) && !strings.HasPrefix(d.Name(), ".") && !strings.EqualFold(filepath.Ext(d.Name()), ".md") {
				files = append(files, p)
			}
			return nil
		})
		sort.Strings(files)
		out = append(out, files...)
	}
	return out
}

// readDump reads one input; stdin is read up to input.StdinCap, and a
// cut is told to note.
func readDump(path string, stdin io.Reader, note func(string)) (*stackdump.Result, error) {
	if path != "-" {
		return stackdump.ParseFile(path)
	}
	c := input.Cap(stdin, input.StdinCap)
	res, err := stackdump.Parse(c, "-")
	if c.Truncated() {
		note("note: " + c.TruncatedNote("standard input"))
	}
	return res, err
}

// Analyze is AnalyzeWith on the dumps' processes, with their warnings
// and interleavings.
func (d *Dumps) Analyze(lv Level, set *rules.Set, torch string) *Analysis {
	a := AnalyzeWith(d.Processes, lv, set, torch)
	a.Warnings, a.Interleaved = d.Warnings, d.Interleaved
	return a
}
