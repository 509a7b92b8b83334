package patchset

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bringup-tool/bringup/patchset/beneath"
	"github.com/bringup-tool/bringup/patchset/udiff"
)

// State of one target file, from its sha256.
type State string

const (
	StateBase    State = "base"    // sha256 == Base-SHA256: not applied
	StatePatched State = "patched" // sha256 == Patched-SHA256: applied
	StateDrifted State = "drifted" // neither: the file is not what the patch was written for
	StateMissing State = "missing" // absent under the root
)

// Schema of the JSON report.
const Schema = "bringup.patches/v1"

// Upstream is what the wheel's RECORD says about a drifted or missing target.
type Upstream struct {
	RecordEntry
	MatchesActual bool `json:"matches_actual"` // the file is exactly as that version shipped it
	MatchesBase   bool `json:"matches_base"`   // the patch was written against that version's file
}

// TargetReport is the state of one target of one patch.
type TargetReport struct {
	Path          string    `json:"path"`
	State         State     `json:"state"`
	BaseSHA256    string    `json:"base_sha256"`
	PatchedSHA256 string    `json:"patched_sha256"`
	ActualSHA256  string    `json:"actual_sha256"`
	Verified      bool      `json:"verified"` // state from the pinned hashes; false: guessed by a dry run of the diff
	Detail        string    `json:"detail,omitempty"`
	Upstream      *Upstream `json:"upstream,omitempty"`
	Action        string    `json:"action,omitempty"` // what apply/revert did to it
	broken        bool      // the diff does not fit its own pinned side
	unread        bool      // "missing" because it could not be read (a symlink on the way, not a regular file)
}

// PatchReport is one patch of the series.
type PatchReport struct {
	Path        string         `json:"path"`
	Name        string         `json:"name"`
	Status      string         `json:"status"` // from the header: active, wip, disabled, …
	Active      bool           `json:"active"`
	State       string         `json:"state"` // applied | not-applied | partial | drifted | missing | invalid
	Description string         `json:"description,omitempty"`
	Env         []EnvKnob      `json:"env,omitempty"`
	Warnings    []string       `json:"warnings,omitempty"`
	Error       string         `json:"error,omitempty"`
	Action      string         `json:"action,omitempty"`
	Targets     []TargetReport `json:"targets"`
}

// Report is the state of a series against a root.
type Report struct {
	Schema   string        `json:"schema"`
	Root     string        `json:"root"`
	Dir      string        `json:"dir,omitempty"`
	OK       bool          `json:"ok"` // see Consistent
	Patches  []PatchReport `json:"patches"`
	Warnings []string      `json:"warnings,omitempty"`
	Journal  string        `json:"journal,omitempty"` // an interrupted apply/revert found, or what recovery did
	pending  bool
	// journalErr is why the journal will not be acted on (a *JournalError),
	// or why it could not be read.
	journalErr error
}

// Consistent reports whether every active patch is in an expected state:
// each target base or patched, no patch half applied, every patch readable,
// no interrupted apply pending. Watch uses it before a boot.
func (r *Report) Consistent() bool { return len(r.Problems()) == 0 }

// AllApplied reports whether every active patch is fully applied.
func (r *Report) AllApplied() bool {
	for _, p := range r.Patches {
		if p.Active && p.State != "applied" {
			return false
		}
	}
	return true
}

// Problems lists, one line each, what makes the report inconsistent.
func (r *Report) Problems() []string {
	var out []string
	if r.pending {
		out = append(out, r.Journal)
	}
	for _, p := range r.Patches {
		if p.State == "invalid" {
			out = append(out, fmt.Sprintf("%s: %s", p.Name, p.Error))
			continue
		}
		if !p.Active {
			continue
		}
		if p.State == "partial" {
			out = append(out, fmt.Sprintf("%s: half applied (some targets patched, some not)", p.Name))
		}
		for _, t := range p.Targets {
			if t.broken {
				out = append(out, fmt.Sprintf("%s: %s: %s", p.Name, t.Path, t.Detail))
			}
			if t.State == StateDrifted || t.State == StateMissing {
				msg := fmt.Sprintf("%s: %s is %s", p.Name, t.Path, t.State)
				if t.unread {
					msg = fmt.Sprintf("%s: %s cannot be read", p.Name, t.Path)
				}
				if t.Detail != "" {
					msg += " (" + t.Detail + ")"
				}
				out = append(out, msg)
			}
		}
	}
	return out
}

// ActiveEnv lists the env knobs of active patches that are applied, so a
// boot can be checked for the variables the patched code reads.
func (r *Report) ActiveEnv() []EnvKnob {
	var out []EnvKnob
	for _, p := range r.Patches {
		if p.Active && p.State == "applied" {
			out = append(out, p.Env...)
		}
	}
	return out
}

// SeriesStatus reads the patch series in dir (a directory, or one patch
// file) and reports the state of each target under root. It never writes.
func SeriesStatus(root, dir string) (*Report, error) {
	s, err := Load([]string{dir})
	if err != nil {
		return nil, err
	}
	return Status(root, s)
}

// Status reports the state of every patch of s under root. It never writes;
// an interrupted apply is reported, not recovered (Recover does that).
func Status(root string, s *Series) (*Report, error) {
	ev, err := evaluate(root, s)
	if err != nil {
		return nil, err
	}
	return ev.report, nil
}

// file is the on-disk state of one target path, read once.
type file struct {
	rel     string
	exists  bool
	data    []byte
	sha     string
	mode    fs.FileMode
	uid     int
	gid     int
	err     error // unreadable: a symlink on the way (*beneath.LinkError), not a regular file, …
	pycache error // its __pycache__ cannot be cleaned without following a symlink
}

type link struct {
	patch  int // index into report.Patches / series.Patches
	target *Target
}

type evaluation struct {
	root    string
	series  *Series
	report  *Report
	files   map[string]*file
	order   []string          // file paths in first-touch order
	chains  map[string][]link // active patches per file, series order
	rec     recordIndex
	dirs    dirs             // the root and the targets' directories, open while evaluating
	pycache map[string]error // directory → why its __pycache__ cannot be cleaned
}

// symlinkFix is what to do about a symlink below the root.
const symlinkFix = "bringup never follows a symlink below --root, so nothing outside the root can be read or changed through one: point --root at the real tree, or replace the link with what it points to"

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func evaluate(root string, s *Series) (*evaluation, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("root %s: %w (pass --root the site-packages directory the targets are relative to)", root, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("root %s is not a directory (pass --root the site-packages directory)", root)
	}
	ev := &evaluation{root: root, series: s, files: map[string]*file{}, chains: map[string][]link{}, rec: recordIndex{root: root}}
	r := &Report{Schema: Schema, Root: root, Dir: s.Dir}
	ev.report = r
	for _, w := range s.Warnings {
		r.Warnings = append(r.Warnings, w.String())
	}
	rd, err := beneath.Open(root)
	if err != nil {
		return nil, fmt.Errorf("root %s: %w", root, err)
	}
	ev.dirs = dirs{root: rd}
	ev.pycache = map[string]error{}
	defer func() { ev.dirs.close(); rd.Close(); ev.dirs = dirs{} }()
	if p, err := loadJournal(rd, root); err != nil {
		r.pending = true
		r.Journal = err.Error()
		r.journalErr = err
	} else if p != nil {
		p.close()
		r.pending = true
		r.Journal = fmt.Sprintf("an interrupted %s (%s) left %s in the root: run 'bringup patch %s' again to finish or undo it", p.j.Op, p.j.State, journalName, p.j.Op)
	}
	for i, p := range s.Patches {
		pr := PatchReport{Path: p.Path, Name: p.Name, Status: p.Status, Active: p.Active(), Description: firstLine(p.Description), Env: p.Env}
		for _, w := range p.Warnings {
			pr.Warnings = append(pr.Warnings, w.String())
		}
		r.Patches = append(r.Patches, pr)
		for _, t := range p.Targets {
			if _, ok := ev.files[t.Path]; !ok {
				ev.files[t.Path] = ev.read(t.Path)
				ev.order = append(ev.order, t.Path)
			}
			if p.Active() {
				ch := ev.chains[t.Path]
				if n := len(ch); n > 0 && t.BaseSHA256 != "" && ch[n-1].target.PatchedSHA256 != "" && t.BaseSHA256 != ch[n-1].target.PatchedSHA256 {
					r.Warnings = append(r.Warnings, fmt.Sprintf("series order: %s's Base-SHA256 for %s is not the Patched-SHA256 of %s, which comes before it", p.Name, t.Path, s.Patches[ch[n-1].patch].Name))
				}
				ev.chains[t.Path] = append(ch, link{i, t})
			}
		}
	}
	for _, e := range s.Invalid {
		r.Patches = append(r.Patches, PatchReport{Path: e.Path, Name: filepath.Base(e.Path), State: "invalid", Error: e.Error(), Targets: []TargetReport{}})
	}
	for i, p := range s.Patches {
		pr := &r.Patches[i]
		for _, t := range p.Targets {
			pr.Targets = append(pr.Targets, ev.targetState(i, p, t))
		}
		pr.State = patchState(pr.Targets)
	}
	r.Warnings = append(r.Warnings, ev.rec.warnings...)
	r.OK = r.Consistent()
	return ev, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func (ev *evaluation) read(rel string) *file {
	f := &file{rel: rel}
	dir := path.Dir(rel)
	d, err := ev.dirs.open(dir)
	if err == nil {
		var data []byte
		var st fs.FileInfo
		if data, st, err = d.ReadFile(path.Base(rel), -1); err == nil {
			f.exists, f.data, f.sha, f.mode = true, data, sha(data), st.Mode()
			f.uid, f.gid = owner(st)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return f
	}
	if err != nil {
		f.err = err
		return f
	}
	if strings.HasSuffix(rel, ".py") {
		// Apply removes the stale bytecode in __pycache__: it must be a
		// real directory (or absent). Checked once per directory.
		if _, seen := ev.pycache[dir]; !seen {
			pc, err := d.OpenDir("__pycache__")
			if err == nil {
				pc.Close()
			}
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
			ev.pycache[dir] = err
		}
		f.pycache = ev.pycache[dir]
	}
	return f
}

// position finds how far along its chain of active patches a file is: the
// number of patches applied, or -1 when the file matches no hash of it.
func position(ch []link, actual string) int {
	for k := len(ch) - 1; k >= 0; k-- {
		if ch[k].target.PatchedSHA256 == actual {
			return k + 1
		}
	}
	for k := range ch {
		if ch[k].target.BaseSHA256 == actual {
			return k
		}
	}
	return -1
}

func (ev *evaluation) targetState(pi int, p *Patch, t *Target) TargetReport {
	f := ev.files[t.Path]
	tr := TargetReport{Path: t.Path, BaseSHA256: t.BaseSHA256, PatchedSHA256: t.PatchedSHA256, ActualSHA256: f.sha}
	if f.err != nil {
		tr.State, tr.unread = StateMissing, true
		tr.Detail = fmt.Sprintf("cannot read: %v", f.err)
		if errors.Is(f.err, beneath.ErrSymlink) {
			tr.Detail = fmt.Sprintf("not read: %s; %s", linkReason(f.err), symlinkFix)
		}
		return tr
	}
	if !f.exists {
		tr.State = StateMissing
		tr.Detail = "absent under the root (is --root the site-packages directory of the image?)"
		ev.upstream(&tr)
		return tr
	}
	if t.Pinned() {
		tr.Verified = true
		switch {
		case f.sha == t.PatchedSHA256:
			tr.State = StatePatched
			if _, err := udiff.Apply(f.data, udiff.Reverse(t.Diff), udiff.Options{}); err != nil {
				tr.broken = true
				tr.Detail = "broken patch: the diff does not reverse out of its own Patched-SHA256 file: " + err.Error()
			}
		case f.sha == t.BaseSHA256:
			tr.State = StateBase
			if res, err := udiff.Apply(f.data, t.Diff, udiff.Options{}); err != nil {
				tr.broken = true
				tr.Detail = "broken patch: the diff does not apply to its own Base-SHA256 file: " + err.Error()
			} else if t.PatchedSHA256 != "" && sha(res.Content) != t.PatchedSHA256 {
				tr.broken = true
				tr.Detail = fmt.Sprintf("broken patch: the diff gives sha256 %s, not the pinned Patched-SHA256 (run 'bringup patch refresh')", short(sha(res.Content)))
			}
		default:
			tr.State = StateDrifted
			if p.Active() {
				// Later in a chain of patches on one file, a hash of another
				// patch of the chain places this one before or after it.
				ch := ev.chains[t.Path]
				if pos := position(ch, f.sha); pos >= 0 {
					idx := 0
					for k, l := range ch {
						if l.patch == pi {
							idx = k
						}
					}
					tr.State = StateBase
					if idx < pos {
						tr.State = StatePatched
					}
					tr.Detail = "placed by the hashes of the other patches on this file"
				}
			}
		}
	} else {
		fwd := errOf(udiff.Apply(f.data, t.Diff, udiff.Options{}))
		rev := errOf(udiff.Apply(f.data, udiff.Reverse(t.Diff), udiff.Options{}))
		switch {
		case fwd == nil:
			tr.State, tr.Detail = StateBase, "not pinned: the diff applies exactly"
		case rev == nil:
			tr.State, tr.Detail = StatePatched, "not pinned: the diff is already in the file"
		default:
			tr.State = StateDrifted
		}
	}
	if tr.State == StateDrifted {
		tr.Detail = ev.explainDrift(t, f, &tr)
		if u := tr.Upstream; u != nil && p.Package != "" {
			if name, ver, ok := strings.Cut(p.Package, "=="); ok && normDist(name) == normDist(u.Dist) && ver != u.Version {
				tr.Detail = fmt.Sprintf("the patch was written for %s, the root has %s %s; ", p.Package, u.Dist, u.Version) + tr.Detail
			}
		}
	}
	return tr
}

// normDist compares distribution names the way pip does (PEP 503).
func normDist(s string) string {
	return strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToLower(strings.TrimSpace(s)))
}

func errOf(_ *udiff.Result, err error) error { return err }

// upstream fills what the wheel's RECORD says about the target.
func (ev *evaluation) upstream(tr *TargetReport) {
	e, ok := ev.rec.lookup(tr.Path)
	if !ok {
		return
	}
	tr.Upstream = &Upstream{RecordEntry: e, MatchesActual: e.SHA256 == tr.ActualSHA256, MatchesBase: e.SHA256 == tr.BaseSHA256}
}

// explainDrift says what a drifted file looks like: which shipped version
// (RECORD), and whether the diff would still apply with offsets or is
// already in the file.
func (ev *evaluation) explainDrift(t *Target, f *file, tr *TargetReport) string {
	ev.upstream(tr)
	var parts []string
	if u := tr.Upstream; u != nil {
		switch {
		case u.MatchesActual && !u.MatchesBase:
			parts = append(parts, fmt.Sprintf("the file is as %s %s ships it (RECORD), not the base this patch was written against: the image changed; try 'bringup patch rebase'", u.Dist, u.Version))
		case u.MatchesBase && !u.MatchesActual:
			parts = append(parts, fmt.Sprintf("modified locally: %s %s shipped the base (RECORD), but the file was changed since", u.Dist, u.Version))
		case !u.MatchesActual:
			parts = append(parts, fmt.Sprintf("matches neither the patch nor %s %s as shipped (RECORD)", u.Dist, u.Version))
		}
	}
	if _, err := udiff.Apply(f.data, udiff.Reverse(t.Diff), udiff.Options{MaxOffset: len(f.data)}); err == nil {
		parts = append(parts, "the patched lines are already in the file (upstreamed?)")
	} else if res, err := udiff.Apply(f.data, t.Diff, udiff.Options{MaxOffset: len(f.data)}); err == nil {
		parts = append(parts, fmt.Sprintf("rebasable: every hunk matches exactly at offsets %v", res.Offsets))
	} else if _, err := udiff.Apply(f.data, t.Diff, udiff.Options{}); err != nil {
		parts = append(parts, "conflict: "+err.Error())
	}
	if tr.Detail != "" && !strings.HasPrefix(tr.Detail, "not pinned") {
		parts = append(parts, tr.Detail)
	}
	return strings.Join(parts, "; ")
}

func patchState(ts []TargetReport) string {
	var base, patched, drifted, missing int
	for _, t := range ts {
		switch t.State {
		case StateBase:
			base++
		case StatePatched:
			patched++
		case StateDrifted:
			drifted++
		case StateMissing:
			missing++
		}
	}
	switch {
	case missing > 0:
		return "missing"
	case drifted > 0:
		return "drifted"
	case base > 0 && patched > 0:
		return "partial"
	case patched > 0:
		return "applied"
	}
	return "not-applied"
}
