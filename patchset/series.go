package patchset

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Series is an ordered list of patches: a directory with an optional quilt
// "series" file, or patch files named one by one.
type Series struct {
	Dir      string    `json:"dir,omitempty"`
	Patches  []*Patch  `json:"-"`
	Invalid  []*Error  `json:"-"` // patches that could not be read; the rest still work
	Warnings []Warning `json:"-"`
}

// LoadSeries reads a patch directory. With a "series" file, its order is
// used (quilt: one name per line, "#" comments, options after the name);
// without one, every *.patch and *.diff file in name order.
func LoadSeries(dir string) (*Series, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("patch directory %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	s := &Series{Dir: dir}
	names, warns, err := seriesNames(dir)
	if err != nil {
		return nil, err
	}
	s.Warnings = append(s.Warnings, warns...)
	for _, nm := range names {
		s.add(filepath.Join(dir, nm))
	}
	return s, nil
}

// Load reads each argument: a directory is a series, a file one patch, in
// the order given.
func Load(args []string) (*Series, error) {
	s := &Series{}
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			// The *PathError repeats the path ("patch x: stat x: …"): keep
			// its cause only.
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("patch or series %s: %w", a, err)
		}
		if st.IsDir() {
			sub, err := LoadSeries(a)
			if err != nil {
				return nil, err
			}
			if len(args) == 1 {
				return sub, nil
			}
			s.Patches = append(s.Patches, sub.Patches...)
			s.Invalid = append(s.Invalid, sub.Invalid...)
			s.Warnings = append(s.Warnings, sub.Warnings...)
			continue
		}
		s.add(a)
	}
	return s, nil
}

func (s *Series) add(file string) {
	p, err := ParseFile(file)
	if err != nil {
		e, ok := err.(*Error)
		if !ok {
			e = &Error{Path: file, Msg: err.Error()}
		}
		s.Invalid = append(s.Invalid, e)
		return
	}
	s.Patches = append(s.Patches, p)
}

// ParseSeriesFile reads quilt's series format: names in order, "#"
// comments, per-patch options after the name (only -p1 is meaningful to
// us; others are reported).
func ParseSeriesFile(data []byte) (names []string, warns []Warning) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	ln := 0
	for sc.Scan() {
		ln++
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if err := checkRel(f[0]); err != nil || strings.Contains(f[0], "/") && strings.HasPrefix(f[0], "..") {
			warns = append(warns, Warning{Line: ln, Reason: fmt.Sprintf("series entry %q is not a file name inside the directory: ignored", f[0])})
			continue
		}
		for _, o := range f[1:] {
			if o != "-p1" {
				warns = append(warns, Warning{Line: ln, Reason: fmt.Sprintf("series option %q for %s is ignored (paths are read as -p1)", o, f[0])})
			}
		}
		names = append(names, f[0])
	}
	if err := sc.Err(); err != nil {
		warns = append(warns, Warning{Line: ln + 1, Reason: fmt.Sprintf("series file: %v", err)})
	}
	return names, warns
}

func seriesNames(dir string) ([]string, []Warning, error) {
	data, err := os.ReadFile(filepath.Join(dir, "series"))
	if err == nil {
		names, warns := ParseSeriesFile(data)
		for i := range warns {
			warns[i].Reason = "series: " + warns[i].Reason
		}
		listed := map[string]bool{}
		for _, n := range names {
			listed[n] = true
		}
		others, _ := patchFiles(dir)
		for _, o := range others {
			if !listed[o] {
				warns = append(warns, Warning{Line: 0, Reason: fmt.Sprintf("%s is in the directory but not in its series file: ignored", o)})
			}
		}
		return names, warns, nil
	}
	if !os.IsNotExist(err) {
		return nil, nil, fmt.Errorf("series file: %w", err)
	}
	names, err := patchFiles(dir)
	return names, nil, err
}

func patchFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		n := e.Name()
		if e.Type().IsRegular() && (strings.HasSuffix(n, ".patch") || strings.HasSuffix(n, ".diff")) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}
