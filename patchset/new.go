package patchset

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bringup-tool/bringup/patchset/beneath"
	"github.com/bringup-tool/bringup/patchset/udiff"
)

// Header is what bringup writes in front of a new patch.
type Header struct {
	Status      string    // default "active"
	Description string    // first line is the summary
	Package     string    // e.g. "vllm==0.11.2"; found from RECORD when empty
	Env         []EnvKnob // Env: lines
	Origin      string
	Date        time.Time // Last-Update; zero: today
}

// FileChange is one target of a new patch: its path and both versions.
type FileChange struct {
	Path     string // relative to the root
	Original []byte
	Edited   []byte
}

// New writes a patch (structured header and unified diff) for the changes,
// and proves it before returning it: the text parses, applies exactly to
// each original and reproduces each edited file byte for byte.
func New(h Header, changes []FileChange) ([]byte, error) {
	if len(changes) == 0 {
		return nil, fmt.Errorf("no files to diff")
	}
	var body strings.Builder
	type pin struct{ path, base, patched string }
	var pins []pin
	for _, c := range changes {
		if err := checkRel(c.Path); err != nil {
			return nil, err
		}
		d := udiff.Diff(c.Path, c.Original, c.Edited)
		if d == nil {
			return nil, fmt.Errorf("%s: the edited file is identical to the original", c.Path)
		}
		body.WriteString(udiff.Format(d))
		pins = append(pins, pin{c.Path, sha(c.Original), sha(c.Edited)})
	}
	var hb strings.Builder
	status := h.Status
	if status == "" {
		status = "active"
	}
	fmt.Fprintf(&hb, "# fork-patch: v1\n# Status: %s\n", status)
	for _, p := range pins {
		fmt.Fprintf(&hb, "# Target: %s\n# Base-SHA256: %s\n# Patched-SHA256: %s\n", p.path, p.base, p.patched)
	}
	if h.Package != "" {
		fmt.Fprintf(&hb, "# Package: %s\n", h.Package)
	}
	for _, e := range h.Env {
		line := e.Name
		if e.Value != "" {
			line += "=" + e.Value
		}
		if e.Note != "" {
			line += "  (" + e.Note + ")"
		}
		fmt.Fprintf(&hb, "# Env: %s\n", line)
	}
	desc := strings.TrimSpace(h.Description)
	if desc == "" {
		desc = "patch " + pins[0].path
	}
	for i, l := range strings.Split(desc, "\n") {
		if i == 0 {
			fmt.Fprintf(&hb, "# Description: %s\n", l)
		} else {
			fmt.Fprintf(&hb, "#  %s\n", strings.TrimSpace(l))
		}
	}
	origin := h.Origin
	if origin == "" {
		origin = "vendor"
	}
	date := h.Date
	if date.IsZero() {
		date = time.Now().UTC()
	}
	fmt.Fprintf(&hb, "# Origin: %s\n# Forwarded: no\n# Last-Update: %s\n#\n", origin, date.Format("2006-01-02"))
	out := []byte(hb.String() + body.String())
	if err := verifyNew(out, changes); err != nil {
		return nil, fmt.Errorf("internal check of the generated patch failed (please report): %w", err)
	}
	return out, nil
}

func verifyNew(text []byte, changes []FileChange) error {
	p, err := Parse("new patch", text)
	if err != nil {
		return err
	}
	for _, c := range changes {
		t := p.Target(c.Path)
		if t == nil || t.BaseSHA256 != sha(c.Original) || t.PatchedSHA256 != sha(c.Edited) {
			return fmt.Errorf("%s: header does not pin both hashes", c.Path)
		}
		res, err := udiff.Apply(c.Original, t.Diff, udiff.Options{})
		if err != nil {
			return fmt.Errorf("%s: %w", c.Path, err)
		}
		if !bytes.Equal(res.Content, c.Edited) {
			return fmt.Errorf("%s: applying the diff does not reproduce the edited file", c.Path)
		}
		back, err := udiff.Apply(c.Edited, udiff.Reverse(t.Diff), udiff.Options{})
		if err != nil || !bytes.Equal(back.Content, c.Original) {
			return fmt.Errorf("%s: reversing the diff does not reproduce the original", c.Path)
		}
	}
	return nil
}

// FromGitDiff turns a git diff (a/ b/ paths, relative to root) into file
// changes: the originals are read under root and the diff applied exactly.
func FromGitDiff(root string, diff []byte) ([]FileChange, error) {
	files, err := udiff.Parse(diff, 1)
	if err != nil {
		return nil, err
	}
	var out []FileChange
	for _, f := range files {
		rel := f.Path()
		if err := checkRel(rel); err != nil {
			return nil, fmt.Errorf("line %d: %w", f.PatchLine, err)
		}
		orig, err := ReadTarget(root, rel)
		if err != nil {
			return nil, fmt.Errorf("%s (diff line %d): %w (is --root the directory the diff's paths are relative to?)", rel, f.PatchLine, err)
		}
		res, err := udiff.Apply(orig, f, udiff.Options{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		out = append(out, FileChange{Path: rel, Original: orig, Edited: res.Content})
	}
	return out, nil
}

// PackageOf names the distribution whose RECORD lists rel under root, as
// "name==version", or "" when none does. The warnings name a damaged
// RECORD the answer depends on (file and lines of its malformed rows).
func PackageOf(root, rel string) (string, []string) {
	ix := recordIndex{root: root}
	if e, ok := ix.lookup(rel); ok {
		return e.Dist + "==" + e.Version, ix.warnings
	}
	return "", ix.warnings
}

// Refresh re-pins a patch after its diff was edited, or after the target
// was edited in place: the file under root must be one side of the diff
// (the diff applies exactly, or its reverse does). The header is kept as
// written; only the hash values change (added as structured lines when the
// header had none). It returns the new patch text.
func Refresh(root string, p *Patch) ([]byte, []string, error) {
	pins := map[string][2]string{}
	var notes []string
	for _, t := range p.Targets {
		data, err := ReadTarget(root, t.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", t.Path, err)
		}
		if res, err := udiff.Apply(data, t.Diff, udiff.Options{}); err == nil {
			pins[t.Path] = [2]string{sha(data), sha(res.Content)}
			notes = append(notes, fmt.Sprintf("%s: the file is the base side", t.Path))
		} else if res, err2 := udiff.Apply(data, udiff.Reverse(t.Diff), udiff.Options{}); err2 == nil {
			pins[t.Path] = [2]string{sha(res.Content), sha(data)}
			notes = append(notes, fmt.Sprintf("%s: the file is the patched side", t.Path))
		} else {
			return nil, nil, fmt.Errorf("%s is neither side of the diff: forward %v; reverse %v", t.Path, err, err2)
		}
		old := [2]string{t.BaseSHA256, t.PatchedSHA256}
		if old == pins[t.Path] {
			notes[len(notes)-1] += "; hashes unchanged"
		}
	}
	return rewrite(p, pins, nil), notes, nil
}

// rewrite returns p's text with new hashes (path → {base, patched}) and,
// when body is not nil, a new diff in place of the old one.
func rewrite(p *Patch, pins map[string][2]string, body []byte) []byte {
	lines := udiff.SplitLines(p.Raw)
	header := append([]string(nil), lines[:p.HeaderLines]...)
	insertAfter := map[int][]string{}
	for _, t := range p.Targets {
		pin, ok := pins[t.Path]
		if !ok {
			continue
		}
		set := func(line int, old, nw, key string) {
			if line > 0 {
				header[line-1] = strings.Replace(header[line-1], old, nw, 1)
				return
			}
			at := t.Line
			if at == 0 {
				at = p.HeaderLines // diff-only target: pin it before the diff
				if at > 0 && strings.TrimSpace(strings.TrimPrefix(strings.TrimRight(header[at-1], "\r\n"), "#")) == "" {
					at--
				}
				if _, ok := insertAfter[at]; !ok && t.Line == 0 {
					insertAfter[at] = append(insertAfter[at], "# Target: "+t.Path+"\n")
				}
			}
			insertAfter[at] = append(insertAfter[at], fmt.Sprintf("# %s: %s\n", key, nw))
		}
		set(t.baseLine, t.BaseSHA256, pin[0], "Base-SHA256")
		set(t.patchedLine, t.PatchedSHA256, pin[1], "Patched-SHA256")
	}
	var b strings.Builder
	keys := make([]int, 0, len(insertAfter))
	for k := range insertAfter {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	if a, ok := insertAfter[0]; ok {
		b.WriteString(strings.Join(a, ""))
	}
	for i, l := range header {
		b.WriteString(l)
		if a, ok := insertAfter[i+1]; ok {
			if !strings.HasSuffix(l, "\n") {
				b.WriteString("\n")
			}
			b.WriteString(strings.Join(a, ""))
		}
	}
	if body != nil {
		b.Write(body)
	} else {
		b.WriteString(strings.Join(lines[p.HeaderLines:], ""))
	}
	return []byte(b.String())
}

// WritePatch writes a patch file atomically (temp, fsync, rename); a
// symlink at file is replaced, not followed.
func WritePatch(file string, data []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Lstat(file); err == nil && st.Mode().IsRegular() {
		mode = st.Mode()
	}
	d, err := beneath.Open(filepath.Dir(file))
	if err != nil {
		return err
	}
	defer d.Close()
	return writeAtomic(d, filepath.Base(file), data, mode, -1, -1)
}
