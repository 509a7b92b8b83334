package patchset

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/bringup-tool/bringup/patchset/beneath"
)

// The journal is data in a directory others may write to (--root): recovery
// trusts nothing in it. Each entry must name a clean path inside the root
// whose every component is a real directory (no symlink), a staged copy of
// exactly the form bringup gives it, beside its target, and hashes that
// the files on disk match. All of that is checked for every entry before
// recovery acts on any; a journal that fails is a *JournalError and is
// never acted on.

// journalName is the file, in the root, that makes a multi-file change
// recoverable. While it says "staging", targets are untouched and only
// staged copies exist: recovery deletes them (roll back). Once it says
// "committed", every staged copy is durable: recovery renames the rest
// (roll forward).
const journalName = ".bringup-patch-journal.json"

const journalSchema = "bringup.patch-journal/v1"

// maxJournal is far above any journal bringup writes (about 300 bytes an
// entry); a larger file is not read.
const maxJournal = 16 << 20

type journal struct {
	Schema  string         `json:"schema"`
	Op      string         `json:"op"` // apply | revert
	State   string         `json:"state"`
	Entries []journalEntry `json:"entries"`
}

type journalEntry struct {
	Path string `json:"path"` // relative to the root
	Temp string `json:"temp"` // staged copy: a file name in the target's directory
	From string `json:"from_sha256"`
	To   string `json:"to_sha256"`
}

// JournalError is a journal bringup will not act on: it names a path
// outside the root or through a symlink, a staged copy bringup would not
// have written, or files whose hashes are not the journal's.
type JournalError struct {
	Path     string   // the journal, under the root as given
	Problems []string // what is wrong, one statement each
}

// maxProblems listed in the message; the rest are counted.
const maxProblems = 5

func (e *JournalError) Error() string {
	ps := e.Problems
	more := ""
	if len(ps) > maxProblems {
		more = fmt.Sprintf("; and %d more", len(ps)-maxProblems)
		ps = ps[:maxProblems]
	}
	return fmt.Sprintf("%s: bringup will not act on this journal: %s%s; nothing was changed. A journal is data in the root, and bringup finishes or undoes only one it could have written for the files as they are now. Inspect it and the files it names, then remove it (rm %s) and run the command again",
		e.Path, strings.Join(ps, "; "), more, shellQuote(e.Path))
}

// cause is err without the *fs.PathError around it, whose path the
// message already names.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+,:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tempName is the staged copy of the file base: a hidden name in the same
// directory that no package ships.
func tempName(base string) string {
	var b [6]byte
	rand.Read(b[:])
	return "." + base + ".bringup-" + hex.EncodeToString(b[:]) + ".tmp"
}

// isTempFor reports whether temp is a name tempName gives base.
func isTempFor(temp, base string) bool {
	mid, ok := strings.CutPrefix(temp, "."+base+".bringup-")
	if !ok {
		return false
	}
	h, ok := strings.CutSuffix(mid, ".tmp")
	if !ok || len(h) != 12 {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// step is one entry of a journal, checked against the disk, with what
// finishing or undoing it takes.
type step struct {
	e      journalEntry
	dir    *beneath.Dir // the target's directory, opened below the root
	base   string       // the target's file name in dir
	rename bool         // committed: the staged copy goes over the target
	remove bool         // the staged copy exists and goes
}

// dirs opens each directory below the root once.
type dirs struct {
	root *beneath.Dir
	m    map[string]*beneath.Dir
}

func (ds *dirs) open(rel string) (*beneath.Dir, error) {
	if rel == "." {
		return ds.root, nil
	}
	if d, ok := ds.m[rel]; ok {
		return d, nil
	}
	d, err := ds.root.OpenDir(rel)
	if err != nil {
		return nil, err
	}
	if ds.m == nil {
		ds.m = map[string]*beneath.Dir{}
	}
	ds.m[rel] = d
	return d, nil
}

func (ds *dirs) close() {
	for _, d := range ds.m {
		d.Close()
	}
}

// pending is a journal found in the root, checked and ready to be
// finished or undone.
type pending struct {
	j     *journal
	steps []step
	dirs  dirs
}

func (p *pending) close() { p.dirs.close() }

func (p *pending) paths() string {
	var ps []string
	for _, e := range p.j.Entries {
		ps = append(ps, e.Path)
	}
	return strings.Join(ps, ", ")
}

// loadJournal reads the journal in root and checks it against the files it
// names; nil, nil when there is none. It changes nothing. rootPath is the
// root as the user gave it, for messages.
func loadJournal(root *beneath.Dir, rootPath string) (*pending, error) {
	jpath := filepath.Join(rootPath, journalName)
	bad := func(problems ...string) error { return &JournalError{Path: jpath, Problems: problems} }
	data, _, err := root.ReadFile(journalName, maxJournal)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, beneath.ErrSymlink):
		return nil, bad("it is a symlink, and bringup only writes a regular file there")
	case errors.Is(err, beneath.ErrNotRegular):
		return nil, bad("it is not a regular file")
	case errors.Is(err, beneath.ErrTooLarge):
		return nil, bad(fmt.Sprintf("it is larger than any journal bringup writes (%d bytes at most are read)", maxJournal))
	case err != nil:
		return nil, fmt.Errorf("cannot read %s: %w (nothing was changed)", jpath, err)
	}
	j, problems := parseJournal(data)
	if len(problems) > 0 {
		return nil, bad(problems...)
	}
	p := &pending{j: j, dirs: dirs{root: root}}
	for i, e := range j.Entries {
		st, problem := p.check(i+1, e, j.State)
		if problem != "" {
			problems = append(problems, problem)
			continue
		}
		p.steps = append(p.steps, st)
	}
	if len(problems) > 0 {
		p.close()
		return nil, bad(problems...)
	}
	return p, nil
}

// parseJournal decodes a journal and checks what can be checked without
// the disk: schema, op, state, and that every entry names a clean path
// inside the root, its staged copy in bringup's form and two sha256.
func parseJournal(data []byte) (*journal, []string) {
	var j journal
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, []string{fmt.Sprintf("it is not the JSON bringup writes (%v)", err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, []string{"it is not the JSON bringup writes (data after the object)"}
	}
	var problems []string
	if j.Schema != journalSchema {
		problems = append(problems, fmt.Sprintf("schema %q is not %q", j.Schema, journalSchema))
	}
	if j.Op != "apply" && j.Op != "revert" {
		problems = append(problems, fmt.Sprintf("op %q is neither apply nor revert", j.Op))
	}
	if j.State != "staging" && j.State != "committed" {
		problems = append(problems, fmt.Sprintf("state %q is neither staging nor committed", j.State))
	}
	if len(j.Entries) == 0 {
		problems = append(problems, "it has no entries (bringup never writes an empty journal)")
	}
	seen := map[string]int{}
	for i, e := range j.Entries {
		n := i + 1
		if checkRel(e.Path) != nil || beneath.Check(e.Path) != nil || strings.ContainsFunc(e.Path, unicode.IsControl) {
			problems = append(problems, fmt.Sprintf("entry %d: path %q is not a clean relative path inside the root", n, e.Path))
			continue
		}
		if k, ok := seen[e.Path]; ok {
			problems = append(problems, fmt.Sprintf("entry %d: path %q is named twice (entries %d and %d)", n, e.Path, k, n))
		}
		seen[e.Path] = n
		if base := path.Base(e.Path); !isTempFor(e.Temp, base) {
			problems = append(problems, fmt.Sprintf("entry %d: temp %q is not the staged copy bringup writes for %s (%q, beside it)", n, e.Temp, e.Path, "."+base+".bringup-<12 hex digits>.tmp"))
		}
		for _, h := range [][2]string{{"from_sha256", e.From}, {"to_sha256", e.To}} {
			if !hexRe.MatchString(h[1]) {
				problems = append(problems, fmt.Sprintf("entry %d: %s %q is not 64 hex digits", n, h[0], h[1]))
			}
		}
	}
	return &j, problems
}

// check compares entry n with the disk: the target and its staged copy
// must be regular files reached without a symlink, with the hashes the
// state implies. It returns the step, or what is wrong.
func (p *pending) check(n int, e journalEntry, state string) (step, string) {
	st := step{e: e, base: path.Base(e.Path)}
	bad := func(format string, a ...any) (step, string) {
		return st, fmt.Sprintf("entry %d: ", n) + fmt.Sprintf(format, a...)
	}
	d, err := p.dirs.open(path.Dir(e.Path))
	if err != nil {
		if errors.Is(err, beneath.ErrSymlink) {
			return bad("%v, and bringup never follows a symlink below the root", err)
		}
		return bad("the directory of %s: %v", e.Path, cause(err))
	}
	st.dir = d
	cur, _, err := d.ReadFile(st.base, -1)
	switch {
	case errors.Is(err, beneath.ErrSymlink):
		return bad("%s is a symlink, and bringup never changes one", e.Path)
	case errors.Is(err, fs.ErrNotExist):
		return bad("%s does not exist, and bringup only changes existing files", e.Path)
	case err != nil:
		return bad("%s: %v", e.Path, cause(err))
	}
	staged, _, err := d.ReadFile(e.Temp, -1)
	hasTemp := err == nil
	switch {
	case errors.Is(err, beneath.ErrSymlink):
		return bad("the staged copy %s is a symlink, and bringup only stages regular files", e.Temp)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return bad("the staged copy %s: %v", e.Temp, cause(err))
	}
	tempSHA := "absent"
	if hasTemp {
		tempSHA = "sha256 " + sha(staged)
	}
	now := sha(cur)
	switch state {
	case "staging":
		// Targets are never touched while staging; a staged copy may have
		// been cut short by the crash, so its content is not known.
		if now != e.From {
			return bad("%s has sha256 %s, not the from_sha256 %s it had when the journal was written (targets do not change while staging)", e.Path, now, e.From)
		}
		st.remove = hasTemp
	case "committed":
		switch {
		case now == e.To && (!hasTemp || sha(staged) == e.To):
			st.remove = hasTemp // already in place
		case now == e.From && hasTemp && sha(staged) == e.To:
			st.rename = true
		default:
			return bad("neither %s (sha256 %s) nor its staged copy %s (%s) is the to_sha256 %s over the from_sha256 %s", e.Path, now, e.Temp, tempSHA, e.To, e.From)
		}
	}
	return st, ""
}

// run finishes or undoes a checked journal and says what it did.
func (p *pending) run() (string, error) {
	root := p.dirs.root
	switch p.j.State {
	case "staging":
		rollback(root, p.steps)
		return fmt.Sprintf("rolled back an interrupted %s: %s left unchanged", p.j.Op, p.paths()), nil
	default:
		if err := finish(root, p.steps); err != nil {
			return "", fmt.Errorf("finishing an interrupted %s: %w", p.j.Op, err)
		}
		return fmt.Sprintf("completed an interrupted %s: %s", p.j.Op, p.paths()), nil
	}
}

func writeJournal(root *beneath.Dir, j *journal) error {
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(root, journalName, data, 0o644, -1, -1)
}

// all lists the directories opened, the root included.
func (ds *dirs) all() []*beneath.Dir {
	out := []*beneath.Dir{ds.root}
	for _, d := range ds.m {
		out = append(out, d)
	}
	return out
}
