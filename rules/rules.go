// Package rules is bringup's knowledge base: known failure signatures kept as
// data (YAML embedded from rules/*.yaml, plus user files given with --rules),
// and the engine that matches them against Subjects — log records, root
// exceptions, structured facts — and collects the hits into Findings.
//
// Matching is built for huge logs: every text regex contributes a required
// literal, and all literals are found in one pass (litscan, or an
// Aho-Corasick automaton when a literal is under 4 bytes), so a record that
// contains none of them costs a fraction of a nanosecond per byte and no
// regex at all.
package rules

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/bringup-tool/bringup/litscan"
	"github.com/bringup-tool/bringup/record"
	"go.yaml.in/yaml/v3"
)

//go:embed *.yaml
var builtinFS embed.FS

// Subject is one thing rules are matched against.
type Subject struct {
	Text     string            // message text: a log record body, an exception "Type: message", a graph-break reason
	Frames   record.Stack      // a stack, innermost first (nil when none)
	Fact     string            // structured fact kind, e.g. "trace.graph_break", "timeline.unfinished", "stacks.bucket"
	Fields   map[string]string // fields of that fact
	Evidence record.Evidence   // where it came from (path, line, rank, text)

	// What the evidence itself says, carried into the finding by the
	// first subject of a rule (see Collector.Add): the phase and why, the
	// concrete error and where it was raised, a cause and remedies that
	// the engine or PyTorch printed. All optional.
	Phase, PhaseWhy string
	Root, RaisedIn  string
	Cause           string
	Remedy          []string
	// Key splits one rule's finding by distinct error (the catch-all rules
	// report each unexplained error on its own); "" for one finding.
	Key string
}

// Versions are the versions known for a run: "torch" -> "2.10.0+rocm7.0",
// "vllm" -> "0.11.0", "python" -> "3.12.3". Engine keys ("vllm", "sglang",
// "atom") also say which engine ran.
type Versions map[string]string

// Phases in startup order; findings of an earlier phase come first because
// an early failure usually explains the later ones.
// The finer phases (import … triton-launcher-build, cache-load,
// cache-save, profile, unknown) are what frames and markers can tell; a
// rule may name them too.
var Phases = []string{"import", "distributed-init", "load", "cache-load", "dynamo", "aot-autograd",
	"post-grad-pass", "inductor", "inductor-codegen", "triton-compile", "triton-launcher-build",
	"cache", "cache-save", "profile", "cudagraph", "ready", "runtime", "unknown"}

// refines: the evidence phases that are a part of a rule's phase (or that
// a generic rule phase gives way to), so a finding can say the finer one.
var refines = map[string][]string{
	"":         nil, // any
	"runtime":  nil, // any
	"unknown":  nil, // any
	"inductor": {"post-grad-pass", "inductor-codegen", "triton-compile", "triton-launcher-build", "cache-load", "cache-save", "aot-autograd"},
	"cache":    {"cache-load", "cache-save"},
	// A rule of Dynamo's (a data-dependent guard, a graph break) whose error
	// the frames or Inductor's wrapper show raised later in the compile.
	"dynamo": {"aot-autograd", "post-grad-pass", "inductor", "inductor-codegen"},
	"ready":  {"profile", "cudagraph", "load"},
}

// RefinePhase returns the phase a finding of a rule with phase rule
// reports when the evidence says evidence: the evidence's when it is a
// part of the rule's phase, or the rule's phase is generic (runtime,
// unknown, none).
func RefinePhase(rule, evidence string) string {
	if evidence == "" || evidence == rule {
		return rule
	}
	parts, ok := refines[rule]
	if ok && parts == nil {
		return evidence
	}
	for _, p := range parts {
		if p == evidence {
			return evidence
		}
	}
	return rule
}

// Engines are the keys of Versions that name a serving engine.
var Engines = []string{"vllm", "sglang", "atom", "trtllm"}

// FrameRepeat asks for a frame pattern repeated at least Min times.
type FrameRepeat struct {
	Pattern string `yaml:"pattern"`
	Min     int    `yaml:"min"`
}

// Match is what a rule needs to see. All present keys must hold; the
// entries of Text are alternatives. Any, when present, adds alternatives
// of which at least one must also hold (a signature with several wordings
// or several kinds of evidence).
type Match struct {
	Text        []string          `yaml:"text,omitempty"`
	Literal     []string          `yaml:"literal,omitempty"` // required literals (any-of) when they cannot be derived from Text
	Frames      []string          `yaml:"frames,omitempty"`
	FrameRepeat *FrameRepeat      `yaml:"frame_repeat,omitempty"`
	Fact        string            `yaml:"fact,omitempty"`
	Fields      map[string]string `yaml:"fields,omitempty"`
	Versions    map[string]string `yaml:"versions,omitempty"`
	Any         []Match           `yaml:"any,omitempty"`
	// Severity, in an any-block only: the finding's severity when the
	// subject matches no block of the rule's own severity (the non-fatal
	// wording of a signature, such as a graph break Dynamo recovered
	// from). Lower than the rule's; see Rule.SeverityFor.
	Severity string `yaml:"severity,omitempty"`

	text     []*pattern
	frames   []*pattern
	repeat   *pattern
	fields   map[string]*pattern
	versions map[string]constraint
	// notOnWarning: a text match on a line Python's warnings module printed
	// ("functions.py:2607: UserWarning: Dynamo does not know how to trace
	// …") does not count (set for error-level rules: a warning is not the
	// failure, though its words may be).
	notOnWarning bool
	// lazy: the patterns compile when first used, and their literals are
	// the generated table's (see pattern, builtinRequired).
	lazy bool
}

// Rule is one known signature.
type Rule struct {
	ID         string   `yaml:"id"`
	Title      string   `yaml:"title"`
	Severity   string   `yaml:"severity"`
	Phase      string   `yaml:"phase"`
	Engines    []string `yaml:"engines,omitempty"`
	Confidence string   `yaml:"confidence,omitempty"`
	Match      Match    `yaml:"match"`
	Cause      string   `yaml:"cause"`
	Remedy     []string `yaml:"remedy"`
	References []string `yaml:"references,omitempty"`
	// CatchAll: the rule speaks only when no specific rule explains the
	// same subject (diagnose's floor: unrecognised-exception, …).
	CatchAll bool `yaml:"catch_all,omitempty"`
	// Unless names rules that, when they match the same subject, explain
	// it better: this rule then stays quiet (a general out-of-memory rule
	// gives way to cudagraph-capture-oom).
	Unless []string `yaml:"unless,omitempty"`
	// SeenOn: where the PyTorch message the rule quotes was seen for real
	// (torch versions, testbed artifacts), or why the testbed cannot
	// produce it; see SeenOn.
	SeenOn *SeenOn `yaml:"seen_on,omitempty"`
	// examples are texts or subjects the rule must fire on and must not
	// (TestRuleExamples runs them all), as written; see Examples.
	examples *yaml.Node
	// generated: compiled from builtin_gen.go, whose rules carry no
	// examples node (Examples reads them from the YAML).
	generated bool

	// Source is where the rule was defined, "file:line".
	Source string `yaml:"-"`

	index     int
	literals  []string // any-of prefilter literals (for tests and docs)
	templated bool     // the cause or a remedy has a {placeholder}
	// severities: an any-block names a severity of its own (SeverityFor).
	severities bool
}

// Recovered is the Subject field that says the text was logged as an
// error the program recovered from (Dynamo's suppressed compile error):
// an error rule's finding for it is a warning.
const Recovered = "recovered"

// SeverityFor is the severity of r's finding for sub, which r matched: the
// rule's, or the lower one of the any-blocks sub matches when none of them
// has the rule's own (a signature's non-fatal wording). A raised exception
// or a fatal line always gets the rule's severity.
func (r *Rule) SeverityFor(sub *Subject) string {
	if sub.Fields[Recovered] == "true" && r.Severity == "error" {
		return "warning"
	}
	if !r.severities || sub.Fact == "exception" || sub.Fact == "fatal" {
		return r.Severity
	}
	sev := ""
	for i := range r.Match.Any {
		a := &r.Match.Any[i]
		if !a.matchNoAny(sub, nil) {
			continue
		}
		s := a.Severity
		if s == "" {
			return r.Severity
		}
		if sev == "" || record.Severity(s).Weight() > record.Severity(sev).Weight() {
			sev = s
		}
	}
	if sev == "" {
		return r.Severity
	}
	return sev
}

// Examples decodes the rule's examples (the YAML key examples:).
func (r *Rule) Examples() (Examples, error) {
	var ex Examples
	n := r.examples
	if n == nil && r.generated {
		m, err := builtinExamples()
		if err != nil {
			return ex, err
		}
		n = m[r.Source]
	}
	if n == nil {
		return ex, nil
	}
	if err := n.Decode(&ex); err != nil {
		return ex, fmt.Errorf("%s: rule %q: examples: %v", r.Source, r.ID, err)
	}
	return ex, nil
}

// Examples of a rule: Fire must match it, Quiet must not.
type Examples struct {
	Fire  []Example `yaml:"fire"`
	Quiet []Example `yaml:"quiet"`
}

// Example is one subject: a plain string is a log record's text; a
// mapping gives the subject's text, fact, fields, frames ("func (file)",
// innermost first) and the run's versions.
type Example struct {
	Text     string            `yaml:"text,omitempty"`
	Fact     string            `yaml:"fact,omitempty"`
	Fields   map[string]string `yaml:"fields,omitempty"`
	Frames   []string          `yaml:"frames,omitempty"`
	Versions map[string]string `yaml:"versions,omitempty"`
}

// UnmarshalYAML accepts a plain string as an example's text.
func (e *Example) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		e.Text = n.Value
		return nil
	}
	type plain Example
	var p plain
	dec := func(v any) error { return n.Decode(v) }
	if err := dec(&p); err != nil {
		return err
	}
	*e = Example(p)
	return nil
}

// Subject is the example as the rules see it.
func (e Example) Subject() (Subject, Versions) {
	sub := Subject{Text: e.Text, Fact: e.Fact, Fields: e.Fields}
	for _, f := range e.Frames {
		fn, file, _ := strings.Cut(f, " (")
		file = strings.TrimSuffix(file, ")")
		sub.Frames = append(sub.Frames, record.Frame{Func: fn, File: file})
	}
	return sub, Versions(e.Versions)
}

// Set is a compiled collection of rules.
type Set struct {
	rules  []*Rule
	byID   map[string]*Rule
	win    *litscan.Set     // literal scan; nil (a literal under 4 bytes): the automaton scans
	ac     *automaton       // built only when win is nil; both nil: no literal (or too many), s.always has the rules
	lits   []string         // the prefilter literals, by index
	litOf  [][]int          // literal index -> rules needing it
	always []int            // rules with a text regex but no derivable literal: always run
	byFact map[string][]int // rules triggered by a fact ("" = any subject with frames or a fact)
}

// LoadFile adds user rules from a YAML file. A rule with the id of an
// existing one replaces it. Errors name file:line.
func (s *Set) LoadFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := s.add(path, data); err != nil {
		return err
	}
	s.build()
	return nil
}

// Rules lists the rules in definition order.
func (s *Set) Rules() []*Rule { return s.rules }

// Rule returns the rule with an id, or nil.
func (s *Set) Rule(id string) *Rule { return s.byID[id] }

var (
	yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	nodeLine = regexp.MustCompile(`line \d+: `)
)

func (s *Set) add(path string, data []byte) error {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // an empty file adds nothing
		}
		msg := err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			return fmt.Errorf("%s:%s: %s", path, m[1], m[2])
		}
		return fmt.Errorf("%s: %s", path, strings.TrimPrefix(msg, "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.SequenceNode {
		return fmt.Errorf("%s:%d: expected a list of rules (\"- id: …\")", path, root.Line)
	}
	for _, n := range root.Content {
		var r Rule
		// A rule's examples are for its tests: kept undecoded (a run does
		// not pay for parsing them; Rule.Examples decodes them).
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == "examples" {
					r.examples = n.Content[i+1]
					c := *n
					c.Content = append(append([]*yaml.Node{}, n.Content[:i]...), n.Content[i+2:]...)
					n = &c
					break
				}
			}
		}
		if err := decodeStrict(n, &r); err != nil {
			return fmt.Errorf("%s:%d: %v", path, n.Line, err)
		}
		r.Source = fmt.Sprintf("%s:%d", path, n.Line)
		if err := s.put(&r); err != nil {
			return err
		}
	}
	return nil
}

// put compiles a decoded rule and adds it; a rule with the id of one
// already in s replaces it in its place.
func (s *Set) put(r *Rule) error {
	if err := r.compile(); err != nil {
		return fmt.Errorf("%s: rule %q: %v", r.Source, r.ID, err)
	}
	if old, ok := s.byID[r.ID]; ok {
		r.index = old.index
		s.rules[old.index] = r
	} else {
		r.index = len(s.rules)
		s.rules = append(s.rules, r)
	}
	s.byID[r.ID] = r
	return nil
}

// decodeStrict decodes one rule node, rejecting unknown keys so a typo
// ("remedies:", "match: {txt: …}") is an error and not a silent no-op.
// The keys are checked against the struct's yaml tags on the node itself
// (a re-encode and a strict decode cost twice the parse).
func decodeStrict(n *yaml.Node, v any) error {
	if err := knownKeys(n, reflect.TypeOf(v).Elem()); err != nil {
		return err
	}
	if err := n.Decode(v); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		msg = nodeLine.ReplaceAllString(msg, "")
		return errors.New(strings.ReplaceAll(msg, "unmarshal errors:\n  ", ""))
	}
	return nil
}

// knownKeys reports the first key of mapping n (and of the mappings
// inside it that decode into structs) that t has no field for.
func knownKeys(n *yaml.Node, t reflect.Type) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	switch n.Kind {
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if err := knownKeys(c, t); err != nil {
				return err
			}
		}
		return nil
	case yaml.MappingNode:
	default:
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i].Value
		f, ok := fieldByTag(t, key)
		if !ok {
			return fmt.Errorf("field %s not found in type %s", key, t)
		}
		if err := knownKeys(n.Content[i+1], f.Type); err != nil {
			return err
		}
	}
	return nil
}

func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	byTag, ok := yamlFields.Load(t)
	if !ok {
		m := map[string]reflect.StructField{}
		for i := t.NumField() - 1; i >= 0; i-- { // the first field of a tag wins
			f := t.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "-" {
				m[name] = f
			}
		}
		byTag, _ = yamlFields.LoadOrStore(t, m)
	}
	f, ok := byTag.(map[string]reflect.StructField)[key]
	return f, ok
}

// yamlFields caches fieldByTag's table per struct type: a knowledge base
// of hundreds of rules asks for the same few types' keys thousands of
// times.
var yamlFields sync.Map // reflect.Type -> map[string]reflect.StructField

var idRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// titlePlaceholder is a cause's or remedy's "{name}" / "{name|default}".
var titlePlaceholder = regexp.MustCompile(`\{\w+(?:\|[^}]*)?\}`)

func (r *Rule) compile() error {
	if !idRe.MatchString(r.ID) {
		return fmt.Errorf("id must be lower-case words joined by '-'")
	}
	switch r.Severity {
	case "error", "warning", "info":
	default:
		return fmt.Errorf("severity must be error, warning or info, not %q", r.Severity)
	}
	if r.Phase != "" && phaseOrder(r.Phase) == len(Phases) {
		return fmt.Errorf("phase must be one of %s, not %q", strings.Join(Phases, ", "), r.Phase)
	}
	if r.Title == "" || strings.TrimSpace(r.Cause) == "" || len(r.Remedy) == 0 {
		return fmt.Errorf("title, cause and remedy are required")
	}
	if titlePlaceholder.MatchString(r.Title) {
		return fmt.Errorf("title %q holds a placeholder: a title is fixed text (placeholders fill cause and remedy)", r.Title)
	}
	if err := r.Match.compile(true, r.generated); err != nil {
		return err
	}
	for i := range r.Match.Any {
		sev := r.Match.Any[i].Severity
		if sev == "" {
			continue
		}
		if record.Severity(sev).Weight() == 0 || record.Severity(sev).Weight() >= record.Severity(r.Severity).Weight() {
			return fmt.Errorf("match.any[%d].severity %q: want warning or info, below the rule's %s", i, sev, r.Severity)
		}
		r.severities = true
	}
	if r.Severity == "error" {
		r.Match.notOnWarning = true
		for i := range r.Match.Any {
			r.Match.Any[i].notOnWarning = r.Match.Any[i].Severity == ""
		}
	}
	// A generated rule was checked when its YAML was (TestBuiltinGenerated);
	// the check would compile the patterns it quotes.
	if !r.generated {
		if err := r.SeenOn.check(r); err != nil {
			return err
		}
	}
	r.templated = placeholder.MatchString(r.Cause)
	for _, rem := range r.Remedy {
		r.templated = r.templated || placeholder.MatchString(rem)
	}
	return nil
}

// compile checks m and prepares its patterns: compiled now, or, lazy
// (a generated rule, whose patterns compiled when it was generated), the
// first time one is used.
func (m *Match) compile(top, lazy bool) error {
	empty := len(m.Text) == 0 && len(m.Frames) == 0 && m.FrameRepeat == nil && m.Fact == "" && len(m.Any) == 0
	if empty && (top || len(m.Fields) == 0) {
		return fmt.Errorf("match needs at least one of text, frames, frame_repeat, fact or any (a rule that matches everything is a bug)")
	}
	n := len(m.Text) + len(m.Frames) + len(m.Fields)
	if m.FrameRepeat != nil {
		n++
	}
	m.lazy = lazy
	pats := make([]pattern, n) // one allocation for all of m's
	pat := func(expr string) (*pattern, error) {
		p := &pats[0]
		pats = pats[1:]
		return p, p.init(expr, lazy)
	}
	if len(m.Text) > 0 {
		m.text = make([]*pattern, len(m.Text))
	}
	for i, t := range m.Text {
		p, err := pat(t)
		if err != nil {
			return fmt.Errorf("match.text %q: %v", t, err)
		}
		m.text[i] = p
	}
	if len(m.Frames) > 0 {
		m.frames = make([]*pattern, len(m.Frames))
	}
	for i, t := range m.Frames {
		p, err := pat(t)
		if err != nil {
			return fmt.Errorf("match.frames %q: %v", t, err)
		}
		m.frames[i] = p
	}
	if m.FrameRepeat != nil {
		p, err := pat(m.FrameRepeat.Pattern)
		if err != nil {
			return fmt.Errorf("match.frame_repeat %q: %v", m.FrameRepeat.Pattern, err)
		}
		if m.FrameRepeat.Min < 1 {
			return fmt.Errorf("match.frame_repeat.min must be at least 1")
		}
		m.repeat = p
	}
	if len(m.Fields) > 0 {
		m.fields = make(map[string]*pattern, len(m.Fields))
		for k, v := range m.Fields {
			p, err := pat(v)
			if err != nil {
				return fmt.Errorf("match.fields.%s %q: %v", k, v, err)
			}
			m.fields[k] = p
		}
	}
	if len(m.Versions) > 0 {
		m.versions = map[string]constraint{}
		for k, v := range m.Versions {
			c, err := parseConstraint(v)
			if err != nil {
				return fmt.Errorf("match.versions.%s: %v", k, err)
			}
			m.versions[k] = c
		}
	}
	if top && m.Severity != "" {
		return fmt.Errorf("match.severity belongs in an any-block (the severity of that wording)")
	}
	for i := range m.Any {
		if len(m.Any[i].Any) > 0 {
			return fmt.Errorf("match.any may not nest another any")
		}
		if len(m.Any[i].Versions) > 0 {
			// Version gates are checked per rule once a run's versions are
			// all known (Allows), so they live at the top of match only.
			return fmt.Errorf("match.any[%d]: versions belong at the top of match", i)
		}
		if err := m.Any[i].compile(false, lazy); err != nil {
			return fmt.Errorf("match.any[%d]: %v", i, err)
		}
	}
	return nil
}

func (m *Match) textLiterals() []string {
	if len(m.Literal) > 0 {
		return m.Literal
	}
	if len(m.text) == 0 {
		return nil
	}
	var all []string
	for _, p := range m.text {
		l, ok := []string(nil), false
		if m.lazy {
			l, ok = generatedRequired(p.String())
		}
		if !ok {
			l = requiredOf(p.String())
		}
		if l == nil {
			return nil
		}
		all = append(all, l...)
	}
	return all
}

// matchNoAny checks every key of m except Any.
func (m *Match) matchNoAny(sub *Subject, v Versions) bool {
	if m.Fact != "" && sub.Fact != m.Fact {
		return false
	}
	if len(m.text) > 0 {
		ok := false
		for _, p := range m.text {
			re := p.get()
			if re.MatchString(sub.Text) && (!m.notOnWarning || !strings.Contains(sub.Text, "Warning: ") || matchesOffWarning(re, sub.Text)) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for k, p := range m.fields {
		val, ok := sub.Fields[k]
		if !ok || !p.get().MatchString(val) {
			return false
		}
	}
	if len(m.frames) > 0 && !matchFrames(m.frames, sub.Frames) {
		return false
	}
	if m.repeat != nil {
		n := 0
		re := m.repeat.get()
		for _, f := range sub.Frames {
			if re.MatchString(frameString(f)) {
				n++
			}
		}
		if n < m.FrameRepeat.Min {
			return false
		}
	}
	for k, c := range m.versions {
		if have, ok := v[k]; ok && have != "" && !c.allows(have) {
			return false
		}
	}
	return true
}

func (m *Match) matches(sub *Subject, v Versions) bool {
	if !m.matchNoAny(sub, v) {
		return false
	}
	if len(m.Any) == 0 {
		return true
	}
	for i := range m.Any {
		if m.Any[i].matchNoAny(sub, v) {
			return true
		}
	}
	return false
}

// frameString is how a frame pattern sees a frame: "func (file)".
func frameString(f record.Frame) string { return f.Func + " (" + f.File + ")" }

// matchFrames: each pattern must match a frame, in order, innermost first
// (an ordered subsequence, so unrelated frames may sit between them).
func matchFrames(pats []*pattern, st record.Stack) bool {
	i := 0
	for _, f := range st {
		if i == len(pats) {
			break
		}
		if pats[i].get().MatchString(frameString(f)) {
			i++
		}
	}
	return i == len(pats)
}

// Allows reports whether the rule applies under the known versions: its
// engines and version gates. Match already checks this; a caller that
// matched with partial versions (streaming a log whose torch version is
// printed late) filters again with the final ones.
func (r *Rule) Allows(v Versions) bool {
	if !r.enginesAllow(v) {
		return false
	}
	for k, c := range r.Match.versions {
		if have, ok := v[k]; ok && have != "" && !c.allows(have) {
			return false
		}
	}
	return true
}

// Locate returns the byte offset in text of the first match of one of the
// rule's text regexes, or -1 (a rule matched on a fact or frames).
func (r *Rule) Locate(text string) int { return r.LocateFrom(text, 0) }

// LocateFrom is Locate for matches that start at or after byte offset from.
func (r *Rule) LocateFrom(text string, from int) int {
	if from < 0 || from > len(text) {
		return -1
	}
	// The first alternative that matches is the evidence (alternatives
	// are listed most telling first: a compiler's "fatal error: Python.h"
	// before the CalledProcessError that reports it).
	best := -1
	try := func(ps []*pattern) {
		for _, p := range ps {
			if best >= 0 {
				return
			}
			if loc := p.get().FindStringIndex(text[from:]); loc != nil {
				best = from + loc[0]
			}
		}
	}
	try(r.Match.text)
	for i := range r.Match.Any {
		try(r.Match.Any[i].text)
	}
	return best
}

func (r *Rule) enginesAllow(v Versions) bool {
	if len(r.Engines) == 0 {
		return true
	}
	known := false
	for _, e := range Engines {
		if v[e] != "" {
			known = true
			break
		}
	}
	if !known {
		return true // an unknown engine does not block
	}
	for _, e := range r.Engines {
		if v[e] != "" {
			return true
		}
	}
	return false
}

// triggers says when a rule must be evaluated: when one of lits occurs in
// the text, when the subject's fact is one of facts ("" = any subject with
// frames or a fact), or always (a text regex without a literal).
func (m *Match) triggers() (lits, facts []string, always bool) {
	if m.Fact != "" && m.textLiterals() == nil {
		// Only subjects with this fact can match: cheaper than running the
		// text regex on every subject.
		return nil, []string{m.Fact}, false
	}
	if len(m.text) > 0 {
		l := m.textLiterals()
		return l, nil, l == nil
	}
	if m.Fact != "" || len(m.Any) == 0 {
		return nil, []string{m.Fact}, false
	}
	for i := range m.Any {
		l, f, a := m.Any[i].triggers()
		lits, facts, always = append(lits, l...), append(facts, f...), always || a
	}
	return lits, facts, always
}

// build indexes the rules for Match: literal automaton, per-fact lists.
func (s *Set) build() {
	s.always, s.byFact, s.litOf = nil, map[string][]int{}, nil
	litIdx := map[string]int{}
	var lits []string
	for _, r := range s.rules {
		ls, facts, always := r.Match.triggers()
		r.literals = ls
		if always {
			s.always = append(s.always, r.index)
			continue
		}
		for _, l := range ls {
			l = prefilterKey(l)
			i, ok := litIdx[l]
			if !ok {
				i = len(lits)
				litIdx[l] = i
				lits = append(lits, l)
				s.litOf = append(s.litOf, nil)
			}
			s.litOf[i] = append(s.litOf[i], r.index)
		}
		for _, f := range facts {
			s.byFact[f] = append(s.byFact[f], r.index)
		}
	}
	s.lits = lits
	// The window scan takes every literal of 4 bytes or more; the
	// automaton, whose table costs more to build than all the rest of the
	// index, only a set that has a shorter one.
	s.ac = nil
	s.win = litscan.New(lits)
	if s.win == nil {
		s.ac = newAutomaton(lits)
	}
	if s.win == nil && s.ac == nil && len(lits) > 0 {
		// No automaton (too many literals): run those rules on every subject.
		seen := map[int]bool{}
		for _, rs := range s.litOf {
			for _, i := range rs {
				if !seen[i] {
					seen[i] = true
					s.always = append(s.always, i)
				}
			}
		}
		s.litOf = nil
	}
}

// TextLiterals returns the literals of the text prefilter: a text subject
// (no fact, no frames) holding none of them matches no rule, unless always
// is true (a rule has a text regex without a required literal, or the
// prefilter is off), when every text subject must be matched. The caller
// must not modify the slice.
func (s *Set) TextLiterals() (lits []string, always bool) {
	if len(s.always) > 0 {
		return nil, true
	}
	if s.win == nil && s.ac == nil {
		return nil, false // no literal at all: no text rule
	}
	return s.lits, false
}

// prefilterKey shortens a literal to keep the automaton small; any
// substring of a required literal is itself required.
func prefilterKey(l string) string {
	const max = 24
	if len(l) <= max {
		return l
	}
	return l[:max]
}

// Match returns the rules that match sub under the known versions, in
// definition order. It allocates nothing when no rule can match.
func (s *Set) Match(sub Subject, v Versions) []*Rule {
	var cand []int
	switch {
	case sub.Text == "":
	case s.win != nil:
		s.win.Each(sub.Text, func(li int) { cand = append(cand, s.litOf[li]...) })
	case s.ac != nil:
		cand = s.ac.scan(sub.Text, s.litOf, cand)
	}
	cand = append(cand, s.always...)
	if sub.Fact != "" {
		cand = append(cand, s.byFact[sub.Fact]...)
	}
	if sub.Fact != "" || sub.Frames != nil {
		cand = append(cand, s.byFact[""]...)
	}
	if len(cand) == 0 {
		return nil
	}
	sort.Ints(cand)
	var out []*Rule
	last := -1
	for _, i := range cand {
		if i == last {
			continue
		}
		last = i
		r := s.rules[i]
		if r.enginesAllow(v) && r.Match.matches(&sub, v) {
			out = append(out, r)
		}
	}
	return yield(out)
}

// placeholder is "{name}", "{name,other}" (the first one known) or
// "{name|default}" in a remedy.
var placeholder = regexp.MustCompile(`\{([a-z_]+(?:,[a-z_]+)*)(?:\|([^{}]*))?\}`)

// causeAndRemedyFor are the rule's cause and remedy with their
// placeholders filled: from the named groups of the text regex that
// matched sub ("(?P<lib>…)"), else from sub's fields ("package", "engine",
// …), else the default after '|'.
func (r *Rule) causeAndRemedyFor(sub *Subject) (string, []string) {
	if !r.templated {
		return r.Cause, r.Remedy
	}
	vals := map[string]string{}
	grab := func(ps []*pattern) {
		for _, p := range ps {
			re := p.get()
			m := re.FindStringSubmatch(sub.Text)
			if m == nil {
				continue
			}
			for i, name := range re.SubexpNames() {
				if name != "" && m[i] != "" && vals[name] == "" {
					vals[name] = m[i]
				}
			}
		}
	}
	grab(r.Match.text)
	for i := range r.Match.Any {
		grab(r.Match.Any[i].text)
	}
	fill := func(s string) string {
		return placeholder.ReplaceAllStringFunc(s, func(ph string) string {
			m := placeholder.FindStringSubmatch(ph)
			for _, name := range strings.Split(m[1], ",") {
				if v := vals[name]; v != "" {
					return v
				}
				if v := sub.Fields[name]; v != "" {
					return v
				}
			}
			return m[2]
		})
	}
	out := make([]string, len(r.Remedy))
	for i, rem := range r.Remedy {
		out[i] = fill(rem)
	}
	return fill(r.Cause), out
}

// yield drops the rules that give way to another one matched (Unless).
func yield(rs []*Rule) []*Rule {
	drop := false
	for _, r := range rs {
		for _, u := range r.Unless {
			for _, o := range rs {
				drop = drop || o.ID == u
			}
		}
	}
	if !drop {
		return rs
	}
	out := rs[:0:0]
	for _, r := range rs {
		keep := true
		for _, u := range r.Unless {
			for _, o := range rs {
				if o.ID == u {
					keep = false
				}
			}
		}
		if keep {
			out = append(out, r)
		}
	}
	return out
}

func phaseOrder(p string) int {
	for i, q := range Phases {
		if q == p {
			return i
		}
	}
	return len(Phases)
}

// pyWarning is the head of a line printed by Python's warnings module:
// "path/to/file.py:123: SomeWarning: ".
var pyWarning = regexp.MustCompile(`\.py:\d+: \w*Warning: `)

// matchesOffWarning reports whether re matches text somewhere other than
// on a line Python's warnings module printed (what precedes the match on
// its line is "file.py:N: XWarning: …"). The common case, no warning word
// before the match, costs one search of the line's head.
func matchesOffWarning(re *regexp.Regexp, text string) bool {
	from := 0
	for from <= len(text) {
		loc := re.FindStringIndex(text[from:])
		if loc == nil {
			return false
		}
		at := from + loc[0]
		ls := strings.LastIndexByte(text[:at], '\n') + 1
		if !strings.Contains(text[ls:at], "Warning: ") || !pyWarning.MatchString(text[ls:at]) {
			return true
		}
		nl := strings.IndexByte(text[at:], '\n')
		if nl < 0 {
			return false
		}
		from = at + nl + 1
	}
	return false
}
