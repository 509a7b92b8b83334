package patchset

import (
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
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
// are counted, not fatal.
func ParseRecord(data []byte) (map[string]string, int) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	out := map[string]string{}
	bad := 0
	for {
		row, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				bad++
				continue
			}
			bad++
			break
		}
		if len(row) < 2 || row[1] == "" {
			continue
		}
		alg, digest, ok := strings.Cut(row[1], "=")
		if !ok || alg != "sha256" {
			continue
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(digest, "="))
		if err != nil || len(raw) != 32 {
			bad++
			continue
		}
		out[row[0]] = hex.EncodeToString(raw)
	}
	return out, bad
}

// recordIndex lazily maps installed paths to their RECORD entries for every
// *.dist-info under a root.
type recordIndex struct {
	root   string
	loaded bool
	byPath map[string]RecordEntry
}

func (ix *recordIndex) lookup(rel string) (RecordEntry, bool) {
	if !ix.loaded {
		ix.loaded = true
		ix.byPath = map[string]RecordEntry{}
		dirs, _ := filepath.Glob(filepath.Join(ix.root, "*.dist-info"))
		for _, d := range dirs {
			data, err := os.ReadFile(filepath.Join(d, "RECORD"))
			if err != nil {
				continue
			}
			name, ver := distNameVersion(filepath.Base(d))
			rows, _ := ParseRecord(data)
			for p, h := range rows {
				ix.byPath[p] = RecordEntry{Dist: name, Version: ver, SHA256: h, Record: filepath.Base(d) + "/RECORD"}
			}
		}
	}
	e, ok := ix.byPath[rel]
	return e, ok
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
