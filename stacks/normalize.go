package stacks

import (
	"regexp"
	"slices"
	"strings"

	"github.com/bringup-tool/bringup/record"
)

// Key is a frame's identity for comparison (stack-dumps.md §6.3): the
// package-relative file and the function without its class qualifier,
// since py-spy and faulthandler print co_name ("__str__") while pystack and
// live captures print co_qualname ("ExternKernel.__str__"). Line numbers
// are kept apart: torch releases move them.
type Key struct {
	File string
	Func string
}

func (k Key) String() string { return k.Func + " (" + k.File + ")" }

var (
	// everything up to and including these is install location, not code.
	libPythonRE = regexp.MustCompile(`/lib/python\d+(?:\.\d+)?t?/`)
	// generated code: Inductor output, FX-generated forwards, Triton caches.
	procRootRE   = regexp.MustCompile(`^/proc/\d+/root/`)
	compiledFnRE = regexp.MustCompile(`^__compiled_fn_\d+`)
	resumeRE     = regexp.MustCompile(`^torch_dynamo_resume_in_(\w+?)_at_\d+$`)
	libVersionRE = regexp.MustCompile(`^(.*?\.so)(?:\.\d+)+$`)
	addressRE    = regexp.MustCompile(`^0x[0-9a-fA-F]+$`)
)

// NormFile turns a path into its package-relative form:
// "/usr/lib/python3.12/dist-packages/torch/_inductor/ir.py" →
// "torch/_inductor/ir.py"; generated files become "<inductor-generated>";
// native library versions are dropped ("libcuda.so.560.35.03" → "libcuda.so").
func NormFile(file string, native bool) string {
	if native {
		if m := libVersionRE.FindStringSubmatch(file); m != nil {
			return m[1]
		}
		return file
	}
	if isGenerated(file) {
		return "<inductor-generated>"
	}
	// Cut at the last install marker: everything before it is where the
	// code was installed, not which code it is.
	cut := -1
	for _, m := range [...]string{"/site-packages/", "/dist-packages/"} {
		if i := strings.LastIndex(file, m); i >= 0 && i+len(m) > cut {
			cut = i + len(m)
		}
	}
	if cut < 0 && strings.Contains(file, "/lib/python") {
		if locs := libPythonRE.FindAllStringIndex(file, -1); len(locs) > 0 {
			cut = locs[len(locs)-1][1]
		}
	}
	if cut < 0 && strings.HasPrefix(file, "/proc/") {
		if loc := procRootRE.FindStringIndex(file); loc != nil {
			cut = loc[1]
		}
	}
	if cut >= 0 {
		return file[cut:]
	}
	return file
}

// isGenerated: Inductor output, FX-generated forwards, Triton caches.
func isGenerated(file string) bool {
	if strings.HasPrefix(file, "<eval_with_key>.") {
		return true
	}
	return strings.Contains(file, "torchinductor_") && (strings.HasPrefix(file, "torchinductor_") || strings.Contains(file, "/torchinductor_")) ||
		strings.Contains(file, "/.triton/cache/") || strings.HasPrefix(file, ".triton/cache/") ||
		strings.Contains(file, "/triton/cache/") || strings.HasPrefix(file, "triton/cache/")
}

// NormFunc is a function name as compared: the class qualifier dropped,
// Dynamo's generated names folded, native addresses and C++ template and
// argument lists shortened.
func NormFunc(fn string, native bool, file string) string {
	if native {
		if addressRE.MatchString(fn) {
			return "<unknown in " + file + ">"
		}
		return shortenCxx(fn)
	}
	if compiledFnRE.MatchString(fn) {
		return "__compiled_fn"
	}
	if m := resumeRE.FindStringSubmatch(fn); m != nil {
		return m[1]
	}
	if strings.HasPrefix(fn, "<") {
		return fn // <module>, <lambda>, <listcomp>, <genexpr>
	}
	if i := strings.LastIndexByte(fn, '.'); i >= 0 && i+1 < len(fn) {
		rest := fn[i+1:]
		if strings.HasPrefix(rest, "<") {
			return rest
		}
		return rest
	}
	return fn
}

// shortenCxx drops template arguments and parameter lists of a demangled
// C++ name, which can be a kilobyte long and differ only in types.
func shortenCxx(s string) string {
	if !strings.ContainsAny(s, "<(") {
		return s
	}
	var b strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '<', '(':
			if depth == 0 {
				if c == '<' {
					b.WriteString("<…>")
				} else {
					b.WriteString("(…)")
				}
			}
			depth++
		case '>', ')':
			if depth > 0 {
				depth--
			}
		default:
			if depth == 0 {
				b.WriteByte(c)
			}
		}
	}
	return b.String()
}

// normalizer resolves short paths (py-spy's "ir.py" or "utils/common.py")
// to the one longer package-relative path of the same input that ends with
// them, when there is exactly one.
type normalizer struct {
	byBase map[string][]string // basename → distinct relative paths seen
	cache  map[string]string
	keys   map[record.Frame]Key
}

func newNormalizer(procs []*Process) *normalizer {
	n := &normalizer{byBase: map[string][]string{}, cache: map[string]string{}, keys: map[record.Frame]Key{}}
	files := map[string]bool{}
	for _, p := range procs {
		for _, t := range p.Threads {
			for _, f := range t.Frames {
				if f.Native {
					continue
				}
				if files[f.File] {
					continue
				}
				files[f.File] = true
				nf := NormFile(f.File, false)
				base := nf[strings.LastIndexByte(nf, '/')+1:]
				if !slices.Contains(n.byBase[base], nf) {
					n.byBase[base] = append(n.byBase[base], nf)
				}
			}
		}
	}
	return n
}

func (n *normalizer) resolve(file string) string {
	if r, ok := n.cache[file]; ok {
		return r
	}
	base := file[strings.LastIndexByte(file, '/')+1:]
	found := ""
	for _, c := range n.byBase[base] {
		if c != file && strings.HasSuffix(c, "/"+file) {
			if found != "" && found != c {
				found = file // ambiguous: keep as printed
				break
			}
			found = c
		}
	}
	if found == "" {
		found = file
	}
	n.cache[file] = found
	return found
}

// key is the comparison key of one frame.
func (n *normalizer) key(f record.Frame) Key {
	if n == nil {
		file := NormFile(f.File, f.Native)
		return Key{File: file, Func: NormFunc(f.Func, f.Native, file)}
	}
	f.Line = 0
	if k, ok := n.keys[f]; ok {
		return k
	}
	file := NormFile(f.File, f.Native)
	if !f.Native {
		file = n.resolve(file)
	}
	k := Key{File: file, Func: NormFunc(f.Func, f.Native, file)}
	n.keys[f] = k
	return k
}
