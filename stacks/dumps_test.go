package stacks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bringup-tool/bringup/record"
	"github.com/bringup-tool/bringup/rules"
)

// TestReadDumps: a directory is its dump files in name order (notes,
// hidden files and FIFOs passed over), a named file that cannot be read
// is noted and the rest still read, stdin is "-", and Empty says why
// nothing could be analyzed.
func TestReadDumps(t *testing.T) {
	src := filepath.Join("testdata", "seed004-snap1")
	dir := t.TempDir()
	names, err := filepath.Glob(filepath.Join(src, "worker_TP*.txt"))
	if err != nil || len(names) != 8 {
		t.Fatalf("%d fixtures: %v", len(names), err)
	}
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(n)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := os.ReadFile(names[0])
	for _, n := range []string{"README.md", ".hidden.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), first, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := ExpandInputs([]string{dir, "-"}, func(s string) { t.Errorf("note %q", s) })
	if len(files) != 9 || files[8] != "-" {
		t.Fatalf("expanded to %q: want the 8 dumps in order, then -", files)
	}
	for i, f := range files[:8] {
		if want := filepath.Join(dir, filepath.Base(names[i])); f != want {
			t.Errorf("file %d %s, want %s", i, f, want)
		}
	}

	var notes []string
	note := func(s string) { notes = append(notes, s) }
	missing := filepath.Join(dir, "no-such-dump.txt")
	d := ReadDumps([]string{missing, dir}, strings.NewReader(""), note)
	if d.Read != 8 || len(d.Processes) != 8 {
		t.Fatalf("read %d inputs, %d processes: want 8 and 8", d.Read, len(d.Processes))
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "no-such-dump.txt") {
		t.Errorf("notes %q: want one naming the missing file", notes)
	}
	if err := d.Empty([]string{missing, dir}, note); err != nil {
		t.Errorf("Empty with 8 processes: %v", err)
	}
	lv, err := ParseLevel("funcs")
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	a := d.Analyze(lv, set, "")
	if len(a.Buckets) == 0 || len(a.Findings) == 0 {
		t.Errorf("analysis: %d buckets, %d findings", len(a.Buckets), len(a.Findings))
	}
	// The hang is fixed in later torch: --torch gates the rule off.
	if !record.HasError(a.Findings) || record.HasError(AnalyzeWith(d.Processes, lv, set, "2.13.1").Findings) {
		t.Errorf("torch gate: an error-level finding without --torch: %v, with 2.13.1: %v", record.HasError(a.Findings), record.HasError(AnalyzeWith(d.Processes, lv, set, "2.13.1").Findings))
	}

	notes = nil
	d = ReadDumps([]string{missing}, nil, note)
	err = d.Empty([]string{missing}, note)
	if err == nil || !strings.Contains(err.Error(), "no input could be read from "+missing) {
		t.Errorf("nothing readable: %v", err)
	}
	d = ReadDumps([]string{"-"}, strings.NewReader("no stack here\n"), note)
	if err := d.Empty([]string{"-"}, note); !errors.Is(err, ErrNoStack) || d.Read != 1 {
		t.Errorf("stdin without a stack: read %d, %v", d.Read, err)
	}
	d = ReadDumps([]string{"-"}, strings.NewReader(string(first)), note)
	if len(d.Processes) != 1 || d.Processes[0].Path != "-" {
		t.Errorf("stdin: %d processes", len(d.Processes))
	}
}
