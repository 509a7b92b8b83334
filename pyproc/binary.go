package pyproc

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// binaryInfo is what pyproc needs from the ELF file that holds the
// interpreter: symbol values (before load bias) and what the file name or
// read-only data say about the version.
type binaryInfo struct {
	path       string
	firstVaddr uint64 // page-aligned vaddr of the first PT_LOAD
	syms       map[string]uint64
	minor      string // "3.10" from the file name or rodata
	rodataVer  string // "3.10.13" found in .rodata, when found
	// versionBuf is Py_GetVersion's static buffer ("version.0" to gcc),
	// filled at start-up with sys.version; 3.10 has no Py_Version symbol,
	// so this is where its patch release is read from.
	versionBuf uint64
}

var wantedSyms = []string{"_PyRuntime", "PyCode_Type", "PyUnicode_Type", "PyDict_Type", "Py_Version"}

var (
	binCacheMu sync.Mutex
	binCache   = map[string]*binaryInfo{} // by path|size|mtime
)

var (
	nameMinorRe  = regexp.MustCompile(`python(3\.\d+)`)
	versionBufRe = regexp.MustCompile(`^version(\.\d+)?$`)
	rodataVerRe  = regexp.MustCompile(`\x00(3\.\d{1,2}\.\d{1,3})(?:[abrc]{1,2}\d{1,2})?\+?\x00`)
)

// loadBinary parses an ELF file once (cached by path, size and mtime: the
// same libpython serves every rank).
func loadBinary(path string) (*binaryInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s|%d|%d", path, st.Size(), st.ModTime().UnixNano())
	binCacheMu.Lock()
	bi := binCache[key]
	binCacheMu.Unlock()
	if bi != nil {
		return bi, nil
	}
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	bi = &binaryInfo{path: path, syms: map[string]uint64{}}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			align := p.Align
			if align == 0 {
				align = 4096
			}
			bi.firstVaddr = p.Vaddr &^ (align - 1)
			break
		}
	}
	want := map[string]bool{}
	for _, s := range wantedSyms {
		want[s] = true
	}
	add := func(syms []elf.Symbol) {
		for _, s := range syms {
			if s.Value == 0 || s.Section == elf.SHN_UNDEF {
				continue
			}
			if want[s.Name] {
				bi.syms[s.Name] = s.Value
			}
			if elf.ST_TYPE(s.Info) == elf.STT_OBJECT && versionBufRe.MatchString(s.Name) {
				bi.versionBuf = s.Value
			}
		}
	}
	if ds, err := f.DynamicSymbols(); err == nil {
		add(ds)
	}
	_, hasVersion := bi.syms["Py_Version"]
	if !hasVersion || bi.syms["_PyRuntime"] == 0 {
		// The full symbol table and .rodata are slow to scan; only binaries
		// without Py_Version (3.10) or a dynamic _PyRuntime need them.
		if ss, err := f.Symbols(); err == nil {
			add(ss)
		}
	}
	if m := nameMinorRe.FindStringSubmatch(filepath.Base(path)); m != nil {
		bi.minor = m[1]
	}
	// 3.10 has no Py_Version symbol: the PY_VERSION string in .rodata, when
	// the compiler kept it whole, is the patch release.
	if _, ok := bi.syms["Py_Version"]; !ok {
		if sec := f.Section(".rodata"); sec != nil && sec.Size < 1<<28 {
			if data, err := sec.Data(); err == nil {
				for _, m := range rodataVerRe.FindAllSubmatch(data, -1) {
					v := string(m[1])
					if bi.minor == "" || strings.HasPrefix(v, bi.minor+".") {
						bi.rodataVer = v
						break
					}
				}
			}
		}
	}
	if bi.minor == "" && bi.rodataVer != "" {
		bi.minor = bi.rodataVer[:strings.LastIndex(bi.rodataVer, ".")]
	}
	binCacheMu.Lock()
	binCache[key] = bi
	binCacheMu.Unlock()
	return bi, nil
}

// bias is the load bias of a mapped ELF file: where its first page went
// minus where the file asked for it.
func bias(maps []mapping, path string, firstVaddr uint64) (uint64, bool) {
	for _, m := range maps {
		if m.Path == path && m.Offset == 0 {
			return m.Start - firstVaddr, true
		}
	}
	return 0, false
}
