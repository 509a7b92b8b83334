package patchset

import (
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bringup-tool/bringup/patchset/beneath"
)

// RecordEntry is what a wheel's RECORD says about one installed file.
type RecordEntry struct {
	Dist    string `json:"dist"`    // distribution name from the .dist-info folder
	Version string `json:"version"` // its version
	SHA256  string `json:"sha256"`  // hex; RECORD stores urlsafe base64 without padding
	Record  string `json:"record"`  // RECORD file, relative to the root
}

// ParseRecord reads a RECORD file (CSV "path,sha256=<b64url>,size"). Rows
// without a sha256 (bytecode, RECORD itself) are skipped; malformed rows
// (CSV that does not parse, a sha256 that is not 32 bytes of base64) are
// not fatal: their 1-based line numbers are returned.
func ParseRecord(data []byte) (map[string]string, []int) {
	rows, bad := parseRecord(data)
	lines := make([]int, len(bad))
	for i, b := range bad {
		lines[i] = b.line
	}
	return rows, lines
}

// badRow is a malformed RECORD row: where it starts and its raw text (all
// the lines a broken quote swallowed).
type badRow struct {
	line int
	text string
}

func parseRecord(data []byte) (map[string]string, []badRow) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	out := map[string]string{}
	var bad []badRow
	for {
		from := r.InputOffset()
		row, err := r.Read()
		if err == io.EOF {
			break
		}
		raw := func() string { return string(data[from:r.InputOffset()]) }
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				bad = append(bad, badRow{pe.StartLine, raw()})
				continue
			}
			bad = append(bad, badRow{lineAt(data, from), string(data[from:])})
			break
		}
		if len(row) < 2 || row[1] == "" {
			continue
		}
		alg, digest, ok := strings.Cut(row[1], "=")
		if !ok || alg != "sha256" {
			continue
		}
		line, _ := r.FieldPos(0)
		b64, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(digest, "="))
		if err != nil || len(b64) != 32 {
			bad = append(bad, badRow{line, raw()})
			continue
		}
		out[row[0]] = hex.EncodeToString(b64)
	}
	return out, bad
}

// lineAt is the 1-based line number of byte offset off.
func lineAt(data []byte, off int64) int {
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// recordIndex lazily maps installed paths to their RECORD entries for every
// *.dist-info under a root. A RECORD with malformed rows is used for the
// rows that parse; a lookup that depends on it (the path is listed in that
// RECORD, or is listed nowhere but appears in one of its malformed rows)
// adds a warning naming the RECORD and the lines.
type recordIndex struct {
	root     string
	loaded   bool
	byPath   map[string]RecordEntry
	damaged  map[string][]badRow // RECORD (relative to root) → malformed rows
	warned   map[string]bool
	warnings []string
}

// maxRecord is far above any wheel's RECORD (torch's is a few MB).
const maxRecord = 256 << 20

func (ix *recordIndex) lookup(rel string) (RecordEntry, bool) {
	if !ix.loaded {
		ix.loaded = true
		ix.byPath = map[string]RecordEntry{}
		dirs, _ := filepath.Glob(filepath.Join(ix.root, "*.dist-info"))
		rd, err := beneath.Open(ix.root)
		if err != nil {
			dirs = nil
		} else {
			defer rd.Close()
		}
		for _, d := range dirs {
			// Read below the root like a target: never through a symlink,
			// never blocking on a FIFO.
			data, _, err := rd.ReadFile(filepath.Base(d)+"/RECORD", maxRecord)
			if err != nil {
				continue
			}
			name, ver := distNameVersion(filepath.Base(d))
			recName := filepath.Base(d) + "/RECORD"
			rows, bad := parseRecord(data)
			for p, h := range rows {
				ix.byPath[p] = RecordEntry{Dist: name, Version: ver, SHA256: h, Record: recName}
			}
			if len(bad) > 0 {
				if ix.damaged == nil {
					ix.damaged = map[string][]badRow{}
				}
				ix.damaged[recName] = bad
			}
		}
	}
	e, ok := ix.byPath[rel]
	if ok {
		if bad := ix.damaged[e.Record]; len(bad) > 0 {
			ix.warn(e.Record, fmt.Sprintf("%s: %s skipped; the row of %s parsed and was used, but this RECORD is damaged", e.Record, badLines(bad), rel))
		}
		return e, true
	}
	names := make([]string, 0, len(ix.damaged))
	for n := range ix.damaged {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var hit []badRow
		for _, b := range ix.damaged[n] {
			if strings.Contains(b.text, rel) {
				hit = append(hit, b)
			}
		}
		if len(hit) > 0 {
			ix.warn(n+" "+rel, fmt.Sprintf("%s: %s skipped; it names %s, so what the wheel shipped for that file is unknown", n, badLines(hit), rel))
		}
	}
	return RecordEntry{}, false
}

func (ix *recordIndex) warn(key, msg string) {
	if ix.warned == nil {
		ix.warned = map[string]bool{}
	}
	if !ix.warned[key] {
		ix.warned[key] = true
		ix.warnings = append(ix.warnings, msg)
	}
}

// badLines says "malformed row at line 7" or "3 malformed rows at lines 7,
// 9, 12" (the first 10 lines, then how many more).
func badLines(bad []badRow) string {
	if len(bad) == 1 {
		return fmt.Sprintf("malformed row at line %d", bad[0].line)
	}
	var ls []string
	for i, b := range bad {
		if i == 10 {
			ls = append(ls, fmt.Sprintf("and %d more", len(bad)-10))
			break
		}
		ls = append(ls, fmt.Sprint(b.line))
	}
	return fmt.Sprintf("%d malformed rows at lines %s", len(bad), strings.Join(ls, ", "))
}

// distNameVersion splits "vllm-0.11.2.dist-info" (names are normalised with
// underscores, so the last "-" separates the version).
func distNameVersion(dir string) (string, string) {
	s := strings.TrimSuffix(dir, ".dist-info")
	if i := strings.LastIndex(s, "-"); i > 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}
