package diagnose

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/bringup-tool/bringup/analyze/pytrace"
	"github.com/bringup-tool/bringup/rules"
)

// What PyTorch and the engines print next to an error is knowledge the
// rules need not repeat: Dynamo's structured graph-break messages (the
// explanation, hints, the GB id whose registry entry ships with torch),
// and a workaround an engine prints under its error. printed puts them
// into the finding: the cause from the explanation, remedies marked as
// printed, so a reader can tell them from the knowledge base's.

// advice is one way a message offers a workaround; the sentence is the
// remedy.
var advice = []*regexp.Regexp{
	regexp.MustCompile(`To work around this error,? .+`),
	regexp.MustCompile(`(?i)you can suppress this exception and fall back to eager by setting:?.*`),
	regexp.MustCompile(`torch\._dynamo\.config\.suppress_errors = True`),
	regexp.MustCompile(`Reducing block sizes or .num_stages. may help`),
	regexp.MustCompile(`(?i)it is recommended to (?:[^.]|\.[\w(])+`),
	regexp.MustCompile(`[Yy]ou (?:need|have|may need|might need|should) to (?:decrease|increase|reduce|lower|raise|set|pass|use|install|upgrade|disable|enable) (?:[^.]|\.[\w(])+`),
	// "You can enable unused parameter detection by (1) passing the keyword
	// argument `find_unused_parameters=True` to …; (2) …" (DDP).
	regexp.MustCompile(`(?:^|[.!] )((?:You|you) (?:can|may|could) [^.;]{0,80}? by (?:\(1\) )?(?:passing|setting|using|adding|calling|installing|upgrading|disabling|enabling|lowering|raising) (?:[^.;]|\.[\w(])+)`),
	regexp.MustCompile(`(?:^|[.!;:] )((?:[Pp]lease )?(?:[Uu]se|[Tt]ry|[Cc]onsider|[Uu]pgrade|[Ii]nstall|[Ss]et|[Rr]educe|[Ii]ncrease|[Dd]isable|[Ee]nable|[Aa]dd|[Rr]emove|[Ee]nsure|[Mm]ake sure|[Aa]djust|[Ss]pecify|[Ll]ower) (?:[^.]|\.[\w(])+)`),
	// "To prevent overwriting, clone the tensor outside of torch.compile()
	// or call torch.compiler.cudagraph_mark_step_begin() before each model
	// invocation." (CUDA graph trees), "To avoid this, set …".
	regexp.MustCompile(`(?:^|[.!;] )(To (?:prevent|avoid|fix|resolve) [^,.]{1,60}, (?:[^.]|\.[\w(])+)`),
	// A check that names what it takes ("Only EAGLE and DSPARK speculative
	// algorithms are supported for DeepseekV4ForCausalLM"): the values to
	// choose from.
	regexp.MustCompile(`(?:^|[.!;:] )([Oo]nly [\w.,/ '"-]{1,80}? (?:is|are) supported\b[^.;]*)`),
	// A library naming the call that sets up what was missing ("Call
	// aiter.opus_gemm_workspace_init() inside `with torch.cuda.stream(s):`").
	regexp.MustCompile(`(?:^|[.!] )((?:Please )?[Cc]all [\w.]+\(\)?(?:[^.]|\.[\w(])*)`),
}

// adviceIn is the workaround a line offers, "" when none.
func adviceIn(line string) string {
	for _, re := range advice {
		if m := re.FindStringSubmatch(line); m != nil {
			return m[len(m)-1]
		}
	}
	return ""
}

// wrapped is the rest of a sentence that a message wrapped onto its next
// lines (" (and warm with the largest expected gemm) before HIP graph
// capture."): the line t did not end it, and the next lines, indented as
// a message's own wrapped lines are, go on in lower case or in brackets;
// up to two of them, "" when none. (A line at column 0 is no such line: a
// paste that lost its newlines cut words there.)
func wrapped(next []string, t string) string {
	out := ""
	for k := 0; k < 2 && k < len(next) && !strings.HasSuffix(t, ".") && !strings.HasSuffix(t, "!"); k++ {
		n := strings.TrimSpace(next[k])
		if n == "" || next[k][0] != ' ' && next[k][0] != '\t' || !(n[0] >= 'a' && n[0] <= 'z' || n[0] == '(') {
			break
		}
		out += " " + n
		t = n
	}
	return out
}

// maxPrinted bounds the printed remedies of one error.
const maxPrinted = 3

// printed adds to sub what PyTorch or the engine printed about the error:
// from the exception's message (and, for an exception without frames, the
// lines printed under it). A record that a text rule matched (a graph
// break Dynamo logged and recovered from) is read the same way, as the
// message of an exception of torch's (printedInRecord).
func printed(sub *rules.Subject, root pytrace.Exception, torchDir string) {
	msg := root.Message
	st := parseStructured(msg)
	by := "the engine"
	if strings.HasPrefix(root.Type, "torch.") || st.gb != "" || st.explanation != "" {
		by = "PyTorch"
	}
	if st.gb != "" || st.gbType != "" {
		if e, ok := registryEntry(registryDir(torchDir, root), st.gb, st.gbType); ok {
			if st.explanation == "" {
				st.explanation = e.Explanation
			}
			if len(st.hints) == 0 {
				st.hints = e.Hints
			}
			if st.gb == "" {
				st.gb = e.id
			}
		}
	}
	if st.explanation != "" {
		sub.Cause = "PyTorch explains: " + st.explanation
	}
	var rem []string
	add := func(s string) {
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "."))
		if s == "" || len(rem) >= maxPrinted {
			return
		}
		s = "Printed by " + by + ": " + clip(s)
		for _, r := range rem {
			if r == s {
				return
			}
		}
		rem = append(rem, s)
	}
	for _, h := range st.hints {
		add(h)
	}
	lines := strings.Split(msg, "\n")
	for i, line := range lines {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "Hint:") || strings.HasPrefix(t, "Explanation:") {
			continue
		}
		if a := adviceIn(t); a != "" {
			add(a + wrapped(lines[i+1:], t))
		}
	}
	if st.gb != "" {
		sub.Fields["gb_id"] = st.gb
	}
	if st.gbType != "" {
		sub.Fields["gb_type"] = st.gbType
	}
	sub.Remedy = append(sub.Remedy, rem...)
}

// structured is what a Dynamo message of recent torch says beside its
// first line.
type structured struct {
	gbType      string   // the first line of an Unsupported message ("Attempted to call function marked as skipped")
	explanation string   // "Explanation: …"
	hints       []string // "Hint: …"
	gb          string   // "GB0007", from the message or its docs link
}

var gbRe = regexp.MustCompile(`(?i)\b(gb\d{4})\b`)

func parseStructured(msg string) structured {
	var st structured
	lines := strings.Split(msg, "\n")
	if len(lines) > 0 {
		st.gbType = strings.TrimSpace(lines[0])
	}
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		switch {
		case strings.HasPrefix(t, "Explanation:"):
			st.explanation = strings.TrimSpace(t[len("Explanation:"):])
		case strings.HasPrefix(t, "Hint:"):
			st.hints = append(st.hints, strings.TrimSpace(t[len("Hint:"):]))
		}
		if m := gbRe.FindStringSubmatch(t); m != nil && st.gb == "" {
			st.gb = strings.ToUpper(m[1])
		}
	}
	if st.explanation == "" && len(st.hints) == 0 && st.gb == "" {
		st.gbType = "" // not a structured message
	}
	return st
}

// registryDir is the torch package the boot used: torchDir (--torch-dir),
// else the one the traceback's own torch frames lie in, when it exists on
// this machine.
func registryDir(torchDir string, root pytrace.Exception) string {
	if torchDir != "" {
		return torchDir
	}
	for _, f := range root.Frames {
		if k := strings.Index(f.File, "/torch/_dynamo/"); k >= 0 {
			return f.File[:k+len("/torch")]
		}
	}
	return ""
}

// gbEntry is one entry of torch/_dynamo/graph_break_registry.json.
type gbEntry struct {
	id          string
	GbType      string   `json:"Gb_type"`
	Explanation string   `json:"Explanation"`
	Hints       []string `json:"Hints"`
}

var registries sync.Map // dir -> *registry

// registry is one torch's graph-break registry as read: its entries, or
// why it could not be used.
type registry struct {
	path    string
	entries map[string][]gbEntry
	// problem: it exists but could not be read or is not valid JSON
	// ("not valid JSON: … at byte N"); missing: there is none.
	problem string
	missing bool
}

// registryPath is the registry a torch package in dir ships.
func registryPath(dir string) string {
	return filepath.Join(dir, "_dynamo", "graph_break_registry.json")
}

// loadRegistry reads dir's registry once per process.
func loadRegistry(dir string) *registry {
	if v, ok := registries.Load(dir); ok {
		return v.(*registry)
	}
	r := &registry{path: registryPath(dir)}
	data, err := os.ReadFile(r.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.missing = true
	case err != nil:
		r.problem = reason(err)
	default:
		if err := json.Unmarshal(data, &r.entries); err != nil {
			r.entries = nil
			r.problem = "not valid JSON: " + err.Error()
			var se *json.SyntaxError
			if errors.As(err, &se) {
				r.problem += fmt.Sprintf(" at byte %d", se.Offset)
			}
		}
	}
	v, _ := registries.LoadOrStore(dir, r)
	return v.(*registry)
}

// registryInputs are the graph-break registries this diagnosis looked to
// (for an error with a structured graph-break message to explain) that it
// could not use, as inputs with their path and why (the rest of the
// diagnosis stands without them): the one --torch-dir names (also when it
// ships none), and those of the torch the errors' frames lie in that exist
// here but are unreadable or not valid JSON.
func registryInputs(torchDir string, errs []Error) []Input {
	var looked []Error
	for _, e := range errs {
		if st := parseStructured(e.Message); st.gb != "" || st.gbType != "" {
			looked = append(looked, e)
		}
	}
	if len(looked) == 0 {
		return nil
	}
	var out []Input
	seen := map[string]bool{}
	add := func(dir string, given bool) {
		if dir == "" || seen[dir] {
			return
		}
		seen[dir] = true
		r := loadRegistry(dir)
		switch {
		case r.problem != "":
			out = append(out, Input{Path: r.path, Kind: KindRegistry, Error: r.problem + "; graph-break ids are not explained from it"})
		case r.missing && given:
			out = append(out, Input{Path: r.path, Kind: KindRegistry, Error: "no such file (--torch-dir names a directory that is not a torch package, or a torch that ships no graph-break registry)"})
		}
	}
	add(torchDir, true)
	if torchDir == "" {
		for _, e := range looked {
			add(registryDir("", pytrace.Exception{Frames: e.Frames}), false)
		}
	}
	return out
}

// KindRegistry is the input kind of a graph-break registry that could not
// be used.
const KindRegistry = "graph-break-registry"

// registryEntry looks a graph break up by id, else by gb_type, in the
// registry that the torch in dir ships; read at run time, never copied.
func registryEntry(dir, id, gbType string) (gbEntry, bool) {
	if dir == "" {
		return gbEntry{}, false
	}
	reg := loadRegistry(dir).entries
	if es := reg[id]; len(es) > 0 {
		e := es[0]
		e.id = id
		return e, true
	}
	if gbType == "" {
		return gbEntry{}, false
	}
	for k, es := range reg {
		for _, e := range es {
			if e.GbType != "" && strings.HasPrefix(gbType, e.GbType) {
				e.id = k
				return e, true
			}
		}
	}
	return gbEntry{}, false
}

// printedInRecord adds to sub what a record a text rule matched prints
// in Dynamo's structured form ("Explanation: …", "Hint: …", a GB id): a
// graph break logged as a warning says its cause and workaround as the
// exception of a fullgraph compile would.
func printedInRecord(sub *rules.Subject, text string) {
	if !strings.Contains(text, "Explanation:") && !strings.Contains(text, "Hint:") {
		return
	}
	s := rules.Subject{Fields: map[string]string{}}
	printed(&s, pytrace.Exception{Type: "torch._dynamo", Message: text}, "")
	sub.Cause, sub.Remedy = s.Cause, s.Remedy
}
