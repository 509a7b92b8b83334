// Package versions picks the versions a boot log prints about itself:
// vLLM, SGLang, ATOM, torch, Python, CUDA, ROCm and Triton, from engine
// banners ("Initializing a V1 LLM engine (v0.11.2) …"), collect_env and pip
// output ("PyTorch version: 2.7.1+cu126", "triton==3.3.1") and, as a last
// resort, paths ("lib/python3.12/site-packages").
package versions

import (
	"strings"

	"github.com/bringup-tool/bringup/litscan"
	"github.com/bringup-tool/bringup/record"
)

// Keys, the same as rules.Versions.
const (
	VLLM   = "vllm"
	SGLang = "sglang"
	ATOM   = "atom"
	Torch  = "torch"
	Python = "python"
	CUDA   = "cuda"
	ROCm   = "rocm"
	Triton = "triton"
)

// How sure a source of a version is; a surer one replaces a weaker one.
const (
	fromPath   = 1 // a path or a build tag: lib/python3.12, +cu126
	fromPin    = 2 // pip: "torch==2.7.1"
	fromBanner = 3 // the program says so: "vLLM API server version 0.11.2"
)

type found struct {
	v    string
	prio int
	line int
	src  string
}

// Detector collects versions from records fed in order.
type Detector struct {
	found map[string]found
	// best known priority of the two versions most logs repeat on many
	// lines (a path in every traceback frame), so their checks stop early
	pythonPrio, vllmPrio int
	// scanned: texts already scanned, up to maxScanned of up to
	// maxScannedText bytes. Scanning a text again changes nothing (set
	// keeps a version unless a surer source names one, and a text names
	// the same ones each time), and a crash loop repeats its records.
	scanned map[string]struct{}
}

const (
	maxScanned     = 1024
	maxScannedText = 2048
)

// GateLiterals returns literals such that a record holding none of them
// cannot tell a version: the caller may leave it out. The caller must not
// modify the slice.
func GateLiterals() []string { return gateWords }

var gateWords = append(markerWords(), "==")

// Add feeds one record.
func (d *Detector) Add(rec record.Record) { d.Feed(&rec) }

// Feed is Add without copying the record; the Detector keeps no pointer to
// rec (it may keep rec.Text).
func (d *Detector) Feed(rec *record.Record) {
	if !mayHold(rec.Text) {
		return // the common case: a line no check in scan can act on
	}
	if len(rec.Text) <= maxScannedText {
		if _, ok := d.scanned[rec.Text]; ok {
			return
		}
		if d.scanned == nil {
			d.scanned = map[string]struct{}{}
		}
		if len(d.scanned) < maxScanned {
			d.scanned[rec.Text] = struct{}{}
		}
	}
	t := rec.Text
	n := rec.Line
	for {
		line, rest, more := strings.Cut(t, "\n")
		d.scan(line, rec.Source, n)
		if !more {
			break
		}
		t = rest
		n++
	}
}

// Versions returns what was found, by key; missing keys were not printed.
func (d *Detector) Versions() map[string]string {
	out := map[string]string{}
	for k, f := range d.found {
		out[k] = f.v
	}
	return out
}

// Where returns the source and line a version was read from.
func (d *Detector) Where(key string) (source string, line int, ok bool) {
	f, ok := d.found[key]
	return f.src, f.line, ok
}

func (d *Detector) set(key, v string, prio int, src string, line int) {
	if d.found == nil {
		d.found = map[string]found{}
	}
	v = strings.TrimRight(v, ".,;)")
	if v == "" || !(v[0] >= '0' && v[0] <= '9') {
		return
	}
	if f, ok := d.found[key]; ok && f.prio >= prio {
		return
	}
	d.found[key] = found{v: v, prio: prio, line: line, src: src}
	switch key {
	case Python:
		d.pythonPrio = prio
	case VLLM:
		d.vllmPrio = prio
	}
}

// versionAt reads a version token ("0.11.2", "2.7.1+cu126", "v0.9.1rc1")
// at s[i:], skipping a leading "v".
func versionAt(s string, i int) string {
	for i < len(s) && (s[i] == ' ' || s[i] == ':' || s[i] == '=' || s[i] == '(') {
		i++
	}
	if i < len(s) && s[i] == 'v' {
		i++
	}
	j := i
	for j < len(s) {
		c := s[j]
		if c >= '0' && c <= '9' || c == '.' || c == '+' || c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			j++
			continue
		}
		break
	}
	v := s[i:j]
	if v == "" || !(v[0] >= '0' && v[0] <= '9') || !strings.Contains(v, ".") {
		return ""
	}
	return v
}

// after returns the version following the first occurrence of marker.
func after(s, marker string) string {
	k := strings.Index(s, marker)
	if k < 0 {
		return ""
	}
	return versionAt(s, k+len(marker))
}

// buildTag splits a torch local version: "2.7.1+cu126" → cuda "12.6";
// "2.11.0+rocm10.0" → rocm "10.0".
func (d *Detector) buildTag(v, src string, line int) {
	_, tag, ok := strings.Cut(v, "+")
	if !ok {
		return
	}
	switch {
	case strings.HasPrefix(tag, "cu") && len(tag) >= 5:
		num := tag[2:]
		if isDigits(num) {
			d.set(CUDA, num[:len(num)-1]+"."+num[len(num)-1:], fromPath, src, line)
		}
	case strings.HasPrefix(tag, "rocm"):
		d.set(ROCm, tag[4:], fromPath, src, line)
	}
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

var pins = [...]struct{ pkg, key string }{
	{"vllm==", VLLM}, {"sglang==", SGLang}, {"atom==", ATOM}, {"torch==", Torch},
	{"triton==", Triton}, {"pytorch-triton==", Triton}, {"pytorch-triton-rocm==", Triton},
	{"rocm-atom==", ATOM}, {"amd-atom==", ATOM},
}

// markers holds, for every check in scan but the pip pins, a literal the
// line must contain for that check to act (each banner marker, the build
// lines, the python path); every pin contains "==". Add skips a record that
// holds none (one strided scan of 8-byte windows and one search for a rare
// byte) instead of the half-dozen byte searches scan makes, each stopping
// at every 'v', 'L', 'P' or 'y' of the line.
var markers = litscan.New(markerWords())

func markerWords() []string {
	w := []string{"LLM engine (v", "CUDA used to build PyTorch:", "ROCM used to build PyTorch:", "/python3.", " python3."}
	for _, b := range bannerMarks {
		w = append(w, b.marks...)
	}
	return w
}

// mayHold: text holds something scan can act on.
func mayHold(text string) bool {
	return strings.Contains(text, "==") || markers.Any(text)
}

// scan looks for versions in one line. It runs on every line of a log, so
// a few anchor searches decide which of the detailed checks can apply.
func (d *Detector) scan(s, src string, line int) {
	if len(s) < 6 {
		return
	}
	// Anchors start with bytes that are rare in log text ('v'/'V', 'L',
	// 'P', '=', 'y'), so each search is a fast byte scan.
	if hasVersionWord(s) {
		d.banners(s, src, line)
	}
	if d.vllmPrio >= fromBanner {
		// known from a banner already
	} else if k := strings.Index(s, "LLM engine (v"); k >= 0 {
		d.set(VLLM, versionAt(s, k+len("LLM engine (")), fromBanner, src, line)
	}
	if strings.Contains(s, "PyTorch:") {
		if v := after(s, "CUDA used to build PyTorch:"); v != "" {
			d.set(CUDA, v, fromBanner, src, line)
		}
		if v := after(s, "ROCM used to build PyTorch:"); v != "" {
			d.set(ROCm, v, fromBanner, src, line)
		}
	}
	// pip pins.
	if strings.Contains(s, "==") {
		for _, p := range pins {
			if k := strings.Index(s, p.pkg); k >= 0 && (k == 0 || !isPkgChar(s[k-1])) {
				v := versionAt(s, k+len(p.pkg))
				d.set(p.key, v, fromPin, src, line)
				if p.key == Torch {
					d.buildTag(v, src, line)
				}
			}
		}
	}
	// Paths: ".../lib/python3.12/site-packages/..." (also dist-packages).
	if d.pythonPrio >= fromPath {
		return
	}
	if k := strings.Index(s, "ython3."); k > 1 && s[k-1] == 'p' && (s[k-2] == '/' || s[k-2] == ' ') {
		j := k + len("ython3.")
		e := j
		for e < len(s) && s[e] >= '0' && s[e] <= '9' {
			e++
		}
		if e > j && e < len(s) && s[e] == '/' {
			d.set(Python, "3."+s[j:e], fromPath, src, line)
		}
	}
}

// hasVersionWord reports whether s says "version" (any case of the first
// letter, or "VERSION").
func hasVersionWord(s string) bool {
	for _, c := range []byte{'v', 'V'} {
		for t := s; ; {
			k := strings.IndexByte(t, c)
			if k < 0 {
				break
			}
			t = t[k+1:]
			if strings.HasPrefix(t, "ersion") || strings.HasPrefix(t, "ERSION") {
				return true
			}
		}
	}
	return false
}

// bannerMarks are the "… version …" statements banners reads, in the
// order it tries them (engine banners, collect_env).
var bannerMarks = []struct {
	key   string
	marks []string
}{
	{VLLM, []string{"vLLM API server version", "vLLM version", "vLLM Version:"}},
	{SGLang, []string{"SGLang version", "sglang version", "SGLang Version:"}},
	{ATOM, []string{"ATOM version", "atom version"}},
	{Torch, []string{"PyTorch version:", "Torch version:", "torch version:", "torch.__version__", "current using torch:"}},
	{Python, []string{"Python version:"}},
	{CUDA, []string{"CUDA runtime version:", "CUDA Version:", "CUDA version:"}},
	{ROCm, []string{"ROCm version:", "ROCm Version:", "HIP runtime version:"}},
	{Triton, []string{"Triton version:", "triton version:", "Triton version"}},
}

// banners reads "… version …" statements (engine banners, collect_env).
func (d *Detector) banners(s, src string, line int) {
	for _, b := range bannerMarks {
		for _, m := range b.marks {
			if v := after(s, m); v != "" {
				d.set(b.key, v, fromBanner, src, line)
				if b.key == Torch {
					d.buildTag(v, src, line)
				}
			}
		}
	}
}

func isPkgChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
