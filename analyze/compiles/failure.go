package compiles

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/bringup-tool/bringup/record"
)

// Phases a failed compile is attributed to (Compile.FailPhase): the
// component that raised, not the Dynamo frame that reported it.
const (
	FailDynamo      = "dynamo"       // tracing, guards, bytecode
	FailBackend     = "backend"      // a custom backend passed to torch.compile
	FailAOTAutograd = "aot-autograd" // AOTAutograd (aot_eager…, or inside Inductor's AOT step)
	FailInductor    = "inductor"     // Inductor lowering, scheduling, codegen, Triton/C++ compile
)

// excLineRE is a line of a failure reason that names an exception, as
// Python prints one ("RuntimeError: broken backend",
// "torch._inductor.exc.LoweringException: …"): a dotted name ending like
// an exception class, a colon, the message. Prose such as "Explanation:" or
// "Hint:" does not end like a class name.
var excLineRE = regexp.MustCompile(`^\s*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Failed|Unsupported|Exceeded|OutOfResources|Interrupt|Exit|Timeout)): ?(.*)$`)

// gotExcRE is the inner exception of a fake-tensor failure: "…: got
// RuntimeError('…')".
var gotExcRE = regexp.MustCompile(`\bgot ((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception))\((.*)\)\s*$`)

var backendRE = regexp.MustCompile(`^backend='([^']*)' raised:`)

// FailChain is the exception chain of a failed compile, innermost first:
// the exception that was raised ("RuntimeError: broken backend"), then each
// one that wrapped it, the reported fail_type last
// ("BackendCompilerFailed: backend='broken_backend' raised:"). A wrapper
// whose message is only the inner exception is named by its type alone
// ("NotImplementedError: aten.foo", "LoweringException", "InductorError").
// Every line of the reason stays in Compile.FailReason; the chain names the
// exceptions in it, one line each. Nil when the compile did not fail.
func FailChain(failType, reason string) []string {
	if failType == "" {
		return nil
	}
	type exc struct{ typ, msg string }
	lines := strings.Split(strings.TrimSpace(reason), "\n")
	first := strings.TrimSpace(lines[0])
	list := []exc{{failType, first}} // outermost first, as printed
	add := func(msg string) {        // "A: B: msg" names A, then B inside it
		for range 8 {
			m := excLineRE.FindStringSubmatch(msg)
			if m == nil {
				if g := gotExcRE.FindStringSubmatch(msg); g != nil {
					list = append(list, exc{g[1], strings.Trim(g[2], `'"`)})
				}
				return
			}
			list = append(list, exc{strings.TrimSpace(m[1]), strings.TrimSpace(m[2])})
			msg = m[2]
		}
	}
	add(first)
	for _, l := range lines[1:] {
		if excLineRE.MatchString(l) || gotExcRE.MatchString(l) {
			add(strings.TrimSpace(l))
		}
	}
	out := make([]string, 0, len(list))
	for i := len(list) - 1; i >= 0; i-- {
		e := list[i]
		msg := e.msg
		if i+1 < len(list) { // the wrapper's own words, the inner exception cut
			in := list[i+1]
			if cut, ok := strings.CutSuffix(msg, in.typ+": "+in.msg); ok && in.msg != "" {
				msg = strings.TrimSpace(cut)
			} else if cut, ok := strings.CutSuffix(msg, in.typ); ok && in.msg == "" {
				msg = strings.TrimSpace(cut)
			}
		}
		text := e.typ
		if msg != "" {
			text += ": " + msg
		}
		if len(out) == 0 || out[len(out)-1] != text {
			out = append(out, text)
		}
	}
	return out
}

// FailHeadline is a failure in one line, innermost exception first:
// "RuntimeError: broken backend ← BackendCompilerFailed: backend='broken_backend' raised: (backend)".
// Text, JSON findings and the HTML report share it, so each names the
// exception that was raised and the component that raised it.
func FailHeadline(c *Compile) string {
	chain := c.FailChain
	if chain == nil {
		chain = FailChain(c.FailType, c.FailReason)
	}
	h := strings.Join(chain, " ← ")
	if c.FailPhase != "" {
		h += " (" + c.FailPhase + ")"
	}
	return h
}

// failPhase names the component that raised: Inductor for its own
// exceptions, the backend named in BackendCompilerFailed (AOTAutograd for
// the aot_* backends, Inductor for "inductor" unless the phases it logged
// stop in AOTAutograd), Dynamo otherwise.
func failPhase(failType string, chain []string, reason string, phases PhaseTimes) string {
	has := func(names ...string) bool {
		for _, e := range chain {
			typ, _, _ := strings.Cut(e, ":")
			typ = typ[strings.LastIndexByte(typ, '.')+1:]
			for _, n := range names {
				if typ == n {
					return true
				}
			}
		}
		return false
	}
	inductorExc := []string{"InductorError", "LoweringException", "CompilationError", "OutOfResources", "CppCompileError",
		"MissingOperatorWithoutDecomp", "MissingOperatorWithDecomp", "CUDACompileError", "InvalidCxxCompiler"}
	ft := failType[strings.LastIndexByte(failType, '.')+1:]
	switch {
	case has(inductorExc...) || strings.Contains(reason, "torch._inductor."):
		return FailInductor
	case ft == "BackendCompilerFailed":
		name := ""
		if m := backendRE.FindStringSubmatch(strings.TrimSpace(reason)); m != nil {
			name = m[1]
		}
		switch {
		case strings.HasPrefix(name, "aot_") || name == "aot_eager":
			return FailAOTAutograd
		case name == "inductor":
			inductor, aot := false, false
			for _, p := range phases {
				switch {
				case isInductorPhase(p.Name):
					inductor = true
				case strings.Contains(p.Name, "aot"):
					aot = true
				}
			}
			if aot && !inductor {
				return FailAOTAutograd
			}
			return FailInductor
		}
		return FailBackend
	case strings.Contains(ft, "AOT") || strings.Contains(reason, "torch._functorch."):
		return FailAOTAutograd
	}
	return FailDynamo
}

func isInductorPhase(name string) bool {
	return strings.Contains(name, "inductor") || strings.HasPrefix(name, "GraphLowering") ||
		strings.HasPrefix(name, "Scheduler") || strings.Contains(name, "code_gen") ||
		strings.Contains(name, "compile_fx") || strings.Contains(name, "async_compile") ||
		strings.Contains(name, "Codegen") || strings.Contains(name, "grad_passes")
}

// userCodeRE is a frame of the "from user code:" traceback Dynamo appends
// to a failure.
var userCodeRE = regexp.MustCompile(`File "([^"]+)", line (\d+), in ([^\s]+)`)

// bestUserFrame is the user frame the trace knows best for a compile: the
// failing line (fail_user_frame, else the last frame of the reason's
// "from user code:" traceback), else the function being compiled
// (co_name, co_filename, co_firstlineno), else the innermost frame of its
// dynamo_start stack.
func bestUserFrame(c *Compile) record.Frame {
	if c.FailType != "" {
		var tb record.Frame
		if i := strings.LastIndex(c.FailReason, "from user code:"); i >= 0 {
			if ms := userCodeRE.FindAllStringSubmatch(c.FailReason[i:], -1); len(ms) > 0 {
				m := ms[len(ms)-1]
				n, _ := strconv.Atoi(m[2])
				tb = record.Frame{Func: m[3], File: m[1], Line: n}
			}
		}
		if c.FailUserFrame != "" {
			file, line := c.FailUserFrame, 0
			if i := strings.LastIndexByte(file, ':'); i > 0 {
				if n, err := strconv.Atoi(file[i+1:]); err == nil {
					file, line = file[:i], n
				}
			}
			fn := tb.Func
			if fn == "" || tb.File != file {
				fn = c.Frame.Func
			}
			return record.Frame{Func: fn, File: file, Line: line}
		}
		if tb.File != "" {
			return tb
		}
	}
	if c.Frame.Func != "" || c.Frame.File != "" {
		return c.Frame
	}
	if len(c.Stack) > 0 {
		return c.Stack[0]
	}
	return record.Frame{}
}

// Ref names one compile unit of an input: its id, with "#N" for the Nth
// compile of that id in the input (N ≥ 2: torch._dynamo.reset(), or a log
// holding several runs), so repeated ids are told apart ("1/0#2").
func Ref(id string, occurrence int) string {
	if occurrence <= 0 {
		return id
	}
	return id + "#" + strconv.Itoa(occurrence+1)
}

// Label is Ref as reports print it: "[1/0]", "[1/0]#2"; "[-]" for no id.
func Label(id string, occurrence int) string {
	if id == "" {
		id = "-"
	}
	if occurrence <= 0 {
		return "[" + id + "]"
	}
	return "[" + id + "]#" + strconv.Itoa(occurrence+1)
}

// ParseRef splits a Ref into id and occurrence.
func ParseRef(ref string) (id string, occurrence int) {
	if i := strings.LastIndexByte(ref, '#'); i > 0 {
		if n, err := strconv.Atoi(ref[i+1:]); err == nil && n >= 2 {
			return ref[:i], n - 1
		}
	}
	return ref, 0
}

// RefLabel prints a Ref as Label does: "1/0#2" → "[1/0]#2".
func RefLabel(ref string) string { return Label(ParseRef(ref)) }
