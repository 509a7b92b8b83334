// Package patchset manages hash-pinned patch series for files inside pinned
// images: it reads patch files (a "#" header carrying target paths, base and
// patched sha256 and env knobs, then a unified diff), tells which state each
// target is in, and applies, reverts, generates, rebases and overlays them.
// Every write is gated on the target's sha256 and goes through a journal so
// an interrupted series is completed or undone on the next call.
package patchset

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bringup-tool/bringup/patchset/udiff"
	"github.com/bringup-tool/bringup/record"
)

// Target is one file a patch changes, relative to the root (site-packages).
type Target struct {
	Path          string          `json:"path"`
	BaseSHA256    string          `json:"base_sha256"`
	PatchedSHA256 string          `json:"patched_sha256"`
	Line          int             `json:"line"` // header line naming the target (0: named only by the diff)
	raw           string          // the whole Target value: a path may contain spaces
	baseLine      int             // header lines holding the hashes, for rewriting
	patchedLine   int             //
	Diff          *udiff.FileDiff `json:"-"`
}

// Pinned reports whether both hashes are known, so the state can be told
// from the file's sha256 alone.
func (t *Target) Pinned() bool { return t.BaseSHA256 != "" && t.PatchedSHA256 != "" }

// EnvKnob is an environment variable a patch introduces or its header
// mentions with a value.
type EnvKnob struct {
	Name   string `json:"name"`
	Value  string `json:"value,omitempty"` // the value named, or the default the code uses
	Note   string `json:"note,omitempty"`
	Source string `json:"source"` // "header" (Env: field or a NAME=VALUE in the text) or "diff" (read by added code)
	Line   int    `json:"line"`
}

// ParseEnvKnob reads the value of an Env: field, "NAME=DEFAULT  (what it
// means)" (New writes it so): the first word is NAME or NAME=DEFAULT, the
// rest the note, its parentheses dropped. ok is false for a blank value.
func ParseEnvKnob(s string) (k EnvKnob, ok bool) {
	w := strings.Fields(s)
	if len(w) == 0 {
		return EnvKnob{}, false
	}
	k.Name, k.Value, _ = strings.Cut(w[0], "=")
	note := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), w[0]))
	k.Note = strings.TrimSuffix(strings.TrimPrefix(note, "("), ")")
	return k, true
}

// Warning is something wrong with a patch or series file that does not
// stop it from being read: a record.Skip whose Path is left empty (the
// patch names its file), so its String is "line 3: reason". Status
// reports carry that text.
type Warning = record.Skip

// Field is one "Key: value" header field, continuation lines joined.
type Field struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	Line  int    `json:"line"`
}

// Patch is one parsed patch file.
type Patch struct {
	Path        string    `json:"path"`
	Name        string    `json:"name"`
	Status      string    `json:"status"`      // first word of the Status field, lower case ("active", "wip", …)
	StatusText  string    `json:"status_text"` // the whole field
	Description string    `json:"description"`
	Package     string    `json:"package,omitempty"`
	Fields      []Field   `json:"fields,omitempty"`
	Targets     []*Target `json:"targets"`
	Env         []EnvKnob `json:"env,omitempty"`
	Warnings    []Warning `json:"warnings,omitempty"`
	HeaderLines int       `json:"-"` // lines before the diff
	Raw         []byte    `json:"-"`

	byPath  map[string]*Target
	envSeen map[string]bool // source+":"+name
}

// Active reports whether the patch is meant to be applied: every status but
// disabled, dropped and upstreamed (a free-form "WIP" is active).
func (p *Patch) Active() bool {
	switch p.Status {
	case "disabled", "dropped", "upstreamed":
		return false
	}
	return true
}

// Target returns the target with the given path, or nil.
func (p *Patch) Target(rel string) *Target {
	if p.byPath != nil {
		return p.byPath[rel]
	}
	for _, t := range p.Targets {
		if t.Path == rel {
			return t
		}
	}
	return nil
}

func (p *Patch) addTarget(t *Target) {
	if p.byPath == nil {
		p.byPath = map[string]*Target{}
	}
	p.Targets = append(p.Targets, t)
	p.byPath[t.Path] = t
}

func (p *Patch) addEnv(k EnvKnob) {
	if p.envSeen == nil {
		p.envSeen = map[string]bool{}
	}
	p.envSeen[k.Source+":"+k.Name] = true
	p.Env = append(p.Env, k)
}

// Error is a patch file that cannot be used, with its location.
type Error struct {
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// ParseFile reads and parses one patch file.
func ParseFile(file string) (*Patch, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, &Error{Path: file, Msg: fmt.Sprintf("cannot read patch: %v", err)}
	}
	return Parse(file, data)
}

var (
	// Structured DEP-3 style keys bringup knows; others are kept as Fields.
	keyRe = regexp.MustCompile(`^ ?([A-Za-z][A-Za-z0-9-]*):(?:\s+(.*))?$`)
	// Free-form hash lines of the seed: "#   base    sha256 <hex>".
	freeHashRe = regexp.MustCompile(`(?i)^\s*(base|patched)\s+sha-?256\s*[:=]?\s*([0-9a-f]+)\b`)
	hexRe      = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// NAME=VALUE mentioned in header text.
	envMentionRe = regexp.MustCompile(`\b([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])=([^\s,;)\x60'"]*)`)
	// Environment reads in added Python lines.
	envReadRe = regexp.MustCompile(`os\.(?:environ\.get|getenv)\(\s*["']([A-Za-z_][A-Za-z0-9_]*)["'](?:\s*,\s*["']([^"']*)["'])?|os\.environ\[\s*["']([A-Za-z_][A-Za-z0-9_]*)["']\s*\]`)
)

var knownKeys = map[string]string{
	"fork-patch": "fork-patch", "status": "Status", "target": "Target", "package": "Package",
	"base-sha256": "Base-SHA256", "patched-sha256": "Patched-SHA256", "env": "Env",
	"description": "Description", "subject": "Description", "origin": "Origin", "forwarded": "Forwarded",
	"bug": "Bug", "author": "Author", "from": "Author", "reviewed-by": "Reviewed-by",
	"acked-by": "Reviewed-by", "last-update": "Last-Update", "applied-upstream": "Applied-Upstream",
}

// Parse parses a patch file's bytes; name is used in messages.
func Parse(name string, data []byte) (*Patch, error) {
	p := &Patch{Path: name, Name: filepath.Base(name), Raw: data, byPath: map[string]*Target{}, envSeen: map[string]bool{}}
	lines := udiff.SplitLines(data)
	n := 0
	for n < len(lines) && !udiff.IsFileStart(strings.TrimRight(lines[n], "\r\n")) {
		n++
	}
	if n == len(lines) {
		return nil, &Error{Path: name, Line: len(lines), Msg: `no unified diff in the patch (expected a "--- a/FILE" line after the header)`}
	}
	p.HeaderLines = n
	var firstText string
	last := -1 // index in p.Fields of the field a continuation line extends
	for i := 0; i < n; i++ {
		ln := i + 1
		line := strings.TrimRight(lines[i], "\r\n")
		body, hashed := strings.CutPrefix(line, "#")
		if !hashed {
			body = line // a quilt/git header may be plain text
		}
		if strings.TrimSpace(body) == "" {
			last = -1
			continue
		}
		if !strings.Contains(body, ":") {
			// neither a field nor a hash line of either style
		} else if m := keyRe.FindStringSubmatch(body); m != nil {
			if canon, ok := knownKeys[strings.ToLower(m[1])]; ok || strings.HasPrefix(strings.ToLower(m[1]), "bug-") {
				if !ok {
					canon = m[1]
				}
				p.Fields = append(p.Fields, Field{Key: canon, Value: strings.TrimSpace(m[2]), Line: ln})
				last = len(p.Fields) - 1
				p.field(&p.Fields[last])
				continue
			}
		}
		if !strings.Contains(strings.ToLower(body), "sha") {
			// not a hash line
		} else if m := freeHashRe.FindStringSubmatch(body); m != nil {
			p.hash(strings.ToLower(m[1]), strings.ToLower(m[2]), ln)
			last = -1
			continue
		}
		// DEP-3 continuation: an indented line right after a field.
		if last >= 0 && (strings.HasPrefix(body, "  ") || strings.HasPrefix(body, "\t")) && p.Fields[last].Key == "Description" {
			p.Fields[last].Value += "\n" + strings.TrimSpace(body)
			p.Description = p.Fields[last].Value
			continue
		}
		last = -1
		if firstText == "" {
			firstText = strings.TrimSpace(body)
		}
	}
	if p.Description == "" {
		p.Description = firstText
	}
	if p.Status == "" {
		p.Status = "active"
	}
	// Env knobs mentioned as NAME=VALUE in the header text.
	for i := 0; i < n; i++ {
		if !strings.Contains(lines[i], "=") {
			continue
		}
		for _, m := range envMentionRe.FindAllStringSubmatch(lines[i], -1) {
			if !p.envSeen["header:"+m[1]] {
				p.addEnv(EnvKnob{Name: m[1], Value: m[2], Source: "header", Line: i + 1})
			}
		}
	}

	files, err := udiff.Parse([]byte(strings.Join(lines[n:], "")), n+1)
	if err != nil {
		if pe, ok := err.(*udiff.ParseError); ok {
			return nil, &Error{Path: name, Line: pe.Line, Msg: pe.Msg}
		}
		return nil, &Error{Path: name, Msg: err.Error()}
	}
	diffSeen := map[string]bool{}
	for _, f := range files {
		rel := f.Path()
		if err := checkRel(rel); err != nil {
			return nil, &Error{Path: name, Line: f.PatchLine, Msg: err.Error()}
		}
		if diffSeen[rel] {
			return nil, &Error{Path: name, Line: f.PatchLine, Msg: fmt.Sprintf("%s is diffed twice in one patch", rel)}
		}
		diffSeen[rel] = true
		t := p.Target(rel)
		if t == nil {
			// "Target: dir/my file.py" names a path with a space; the
			// first word alone is the usual case ("path  (note)").
			for _, c := range p.Targets {
				if c.Diff == nil && c.raw != c.Path && (c.raw == rel || strings.HasPrefix(c.raw, rel+" ") || strings.HasPrefix(c.raw, "a/"+rel+" ") || c.raw == "a/"+rel) {
					delete(p.byPath, c.Path)
					c.Path, t = rel, c
					p.byPath[rel] = c
					break
				}
			}
		}
		if t == nil {
			if len(p.Targets) > 0 {
				p.warn(f.PatchLine, fmt.Sprintf("diff changes %s, which the header does not name as a Target", rel))
			}
			t = &Target{Path: rel}
			p.addTarget(t)
		}
		t.Diff = f
		// Knobs the added code reads.
		for _, h := range f.Hunks {
			for _, l := range h.Lines {
				if l.Op != '+' {
					continue
				}
				for _, m := range envReadRe.FindAllStringSubmatch(l.Text, -1) {
					nm, def := m[1], m[2]
					if nm == "" {
						nm = m[3]
					}
					if !p.envSeen["diff:"+nm] {
						p.addEnv(EnvKnob{Name: nm, Value: def, Source: "diff", Line: h.PatchLine})
					}
				}
			}
		}
	}
	for _, t := range p.Targets {
		if t.Diff == nil {
			return nil, &Error{Path: name, Line: t.Line, Msg: fmt.Sprintf("header names Target %s but the diff does not change it", t.Path)}
		}
		if !t.Pinned() {
			p.warn(t.Line, fmt.Sprintf("no Base-SHA256/Patched-SHA256 for %s: its state can only be guessed from the diff, and apply needs --no-verify (run 'bringup patch refresh' to pin it)", t.Path))
		}
	}
	return p, nil
}

func (p *Patch) warn(line int, msg string) {
	p.Warnings = append(p.Warnings, Warning{Line: line, Reason: msg})
}

func (p *Patch) field(f *Field) {
	switch f.Key {
	case "Status":
		p.StatusText = f.Value
		w := strings.Fields(f.Value)
		if len(w) > 0 {
			p.Status = strings.ToLower(strings.Trim(w[0], ".,;:—-"))
		}
	case "Description":
		p.Description = f.Value
	case "Package":
		p.Package = f.Value
	case "Target":
		w := strings.Fields(f.Value)
		if len(w) == 0 {
			p.warn(f.Line, "empty Target")
			return
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(w[0], "a/"), "b/")
		if p.Target(rel) != nil {
			p.warn(f.Line, fmt.Sprintf("Target %s named twice", rel))
			return
		}
		p.addTarget(&Target{Path: rel, Line: f.Line, raw: strings.TrimSpace(f.Value)})
	case "Base-SHA256":
		p.hash("base", strings.ToLower(firstWord(f.Value)), f.Line)
	case "Patched-SHA256":
		p.hash("patched", strings.ToLower(firstWord(f.Value)), f.Line)
	case "Env":
		if k, ok := ParseEnvKnob(f.Value); ok {
			k.Source, k.Line = "header", f.Line
			p.addEnv(k)
		}
	}
}

func firstWord(s string) string {
	if w := strings.Fields(s); len(w) > 0 {
		return w[0]
	}
	return ""
}

// hash attaches a base or patched hash to the last named target.
func (p *Patch) hash(kind, hex string, line int) {
	if len(p.Targets) == 0 {
		p.warn(line, fmt.Sprintf("%s sha256 before any Target: ignored", kind))
		return
	}
	if !hexRe.MatchString(hex) {
		p.warn(line, fmt.Sprintf("%s sha256 %q is not 64 hex digits: ignored", kind, hex))
		return
	}
	t := p.Targets[len(p.Targets)-1]
	dst, at := &t.BaseSHA256, &t.baseLine
	if kind == "patched" {
		dst, at = &t.PatchedSHA256, &t.patchedLine
	}
	if *dst != "" {
		p.warn(line, fmt.Sprintf("second %s sha256 for %s: ignored (one Target line per file)", kind, t.Path))
		return
	}
	*dst, *at = hex, line
}

// checkRel refuses target paths that could escape the root.
func checkRel(rel string) error {
	if rel == "" || path.IsAbs(rel) || filepath.IsAbs(rel) || strings.Contains(rel, "\\") {
		return fmt.Errorf("target path %q must be relative to the root", rel)
	}
	c := path.Clean(rel)
	if c != rel || c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Errorf("target path %q must be a clean relative path inside the root (no ./, .., //)", rel)
	}
	return nil
}
