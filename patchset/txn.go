package patchset

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// journalName is the file, in the root, that makes a multi-file change
// recoverable. While it says "staging", targets are untouched and only
// staged copies exist: recovery deletes them (roll back). Once it says
// "committed", every staged copy is durable: recovery renames the rest
// (roll forward).
const journalName = ".bringup-patch-journal.json"

type journal struct {
	Schema  string         `json:"schema"`
	Op      string         `json:"op"` // apply | revert
	State   string         `json:"state"`
	Entries []journalEntry `json:"entries"`
}

type journalEntry struct {
	Path string `json:"path"` // relative to the root
	Temp string `json:"temp"` // staged copy, same directory
	From string `json:"from_sha256"`
	To   string `json:"to_sha256"`
}

// change is one file to replace.
type change struct {
	rel  string
	abs  string
	from string // sha256 the file has now
	data []byte // new content
	mode fs.FileMode
	uid  int
	gid  int
}

// crashHook, when set by a test, runs after the i-th rename of a commit;
// returning an error stops the commit there as a crash would.
var crashHook func(i int) error

func readJournal(root string) (*journal, error) {
	data, err := os.ReadFile(filepath.Join(root, journalName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", journalName, err)
	}
	var j journal
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("%s in the root is corrupt (%v): inspect it, then delete it", journalName, err)
	}
	return &j, nil
}

func writeJournal(root string, j *journal) error {
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(root, journalName), data, 0o644, -1, -1)
}

// writeFileAtomic writes data next to dst, fsyncs it, renames it over dst
// and fsyncs the directory.
func writeFileAtomic(dst string, data []byte, mode fs.FileMode, uid, gid int) error {
	tmp, err := stage(dst, data, mode, uid, gid)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(dst))
}

func tempName(dst string) string {
	var b [6]byte
	rand.Read(b[:])
	return filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".bringup-"+hex.EncodeToString(b[:])+".tmp")
}

// stage writes data to a new temporary file beside dst with dst's mode and
// owner, fsynced.
func stage(dst string, data []byte, mode fs.FileMode, uid, gid int) (string, error) {
	return stageAs(tempName(dst), data, mode, uid, gid)
}

func stageAs(tmp string, data []byte, mode fs.FileMode, uid, gid int) (string, error) {
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("cannot write beside %s: %w (read-only filesystem? apply in an image build step, or use 'bringup patch overlay')", strings.TrimSuffix(filepath.Base(tmp), ".tmp"), err)
	}
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(tmp)
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if uid >= 0 && os.Geteuid() == 0 {
		if err := f.Chown(uid, gid); err != nil {
			return fail(err)
		}
	}
	// Chmod after chown: chown clears setuid bits.
	if err := f.Chmod(mode.Perm() | mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// commit replaces every file in cs or none: stage all, commit the journal,
// rename one by one, clear stale bytecode, drop the journal.
func commit(root, op string, cs []change) error {
	if len(cs) == 0 {
		return nil
	}
	j := &journal{Schema: "bringup.patch-journal/v1", Op: op, State: "staging"}
	for _, c := range cs {
		j.Entries = append(j.Entries, journalEntry{Path: c.rel, Temp: filepath.Base(tempName(c.abs)), From: c.from, To: sha(c.data)})
	}
	// The journal names the temp files before they exist, so a crash while
	// staging leaves nothing that recovery cannot find.
	if err := writeJournal(root, j); err != nil {
		return fmt.Errorf("cannot write the journal in %s: %w (is the root writable?)", root, err)
	}
	for i, c := range cs {
		tmp := filepath.Join(filepath.Dir(c.abs), j.Entries[i].Temp)
		if _, err := stageAs(tmp, c.data, c.mode, c.uid, c.gid); err != nil {
			rollback(root, j)
			return fmt.Errorf("%s: %w; nothing was changed", c.rel, err)
		}
	}
	for _, c := range cs {
		if err := syncDir(filepath.Dir(c.abs)); err != nil {
			rollback(root, j)
			return fmt.Errorf("%s: %w; nothing was changed", c.rel, err)
		}
	}
	j.State = "committed"
	if err := writeJournal(root, j); err != nil {
		rollback(root, j)
		return fmt.Errorf("cannot commit the journal: %w; nothing was changed", err)
	}
	return finish(root, j)
}

// finish renames the staged copies of a committed journal into place.
// Each entry is checked first, so finishing twice is harmless.
func finish(root string, j *journal) error {
	for i, e := range j.Entries {
		abs := filepath.Join(root, filepath.FromSlash(e.Path))
		tmp := filepath.Join(filepath.Dir(abs), e.Temp)
		if cur, err := os.ReadFile(abs); err == nil && sha(cur) == e.To {
			os.Remove(tmp) // already in place
		} else if staged, err := os.ReadFile(tmp); err == nil && sha(staged) == e.To {
			if err := os.Rename(tmp, abs); err != nil {
				return fmt.Errorf("%s: cannot move the staged copy into place: %w (the journal is kept; run the command again)", e.Path, err)
			}
			if err := syncDir(filepath.Dir(abs)); err != nil {
				return err
			}
		} else {
			return fmt.Errorf("%s: the journal says it becomes sha256 %s, but neither the file nor its staged copy %s has that content (the journal is kept; inspect both, then delete %s)", e.Path, e.To, e.Temp, journalName)
		}
		removeStaleBytecode(abs)
		if crashHook != nil {
			if err := crashHook(i); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(filepath.Join(root, journalName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return syncDir(root)
}

func rollback(root string, j *journal) {
	for _, e := range j.Entries {
		abs := filepath.Join(root, filepath.FromSlash(e.Path))
		os.Remove(filepath.Join(filepath.Dir(abs), e.Temp))
	}
	os.Remove(filepath.Join(root, journalName))
	syncDir(root)
}

// Recover completes or undoes an apply/revert that was interrupted (a crash,
// kill -9, power loss) and returns what it did, "" when nothing was pending.
func Recover(root string) (string, error) {
	j, err := readJournal(root)
	if err != nil || j == nil {
		return "", err
	}
	unlock, err := lockRoot(root)
	if err != nil {
		return "", err
	}
	defer unlock()
	return recoverLocked(root)
}

func recoverLocked(root string) (string, error) {
	j, err := readJournal(root)
	if err != nil || j == nil {
		return "", err
	}
	var paths []string
	for _, e := range j.Entries {
		paths = append(paths, e.Path)
	}
	switch j.State {
	case "staging":
		rollback(root, j)
		return fmt.Sprintf("rolled back an interrupted %s: %s left unchanged", j.Op, strings.Join(paths, ", ")), nil
	case "committed":
		if err := finish(root, j); err != nil {
			return "", fmt.Errorf("finishing an interrupted %s: %w", j.Op, err)
		}
		return fmt.Sprintf("completed an interrupted %s: %s", j.Op, strings.Join(paths, ", ")), nil
	}
	return "", fmt.Errorf("%s has unknown state %q: inspect it, then delete it", journalName, j.State)
}

// removeStaleBytecode deletes __pycache__/<stem>.*.pyc for a .py file: a
// precompiled (especially unchecked-hash) .pyc can keep serving the old code.
func removeStaleBytecode(py string) []string {
	if !strings.HasSuffix(py, ".py") {
		return nil
	}
	stem := strings.TrimSuffix(filepath.Base(py), ".py")
	pat := filepath.Join(filepath.Dir(py), "__pycache__", globEscape(stem)+".*.pyc")
	ms, _ := filepath.Glob(pat)
	var removed []string
	for _, m := range ms {
		// "<stem>.<tag>.pyc" or "<stem>.<tag>.opt-1.pyc": the part after
		// the stem must not itself contain the stem of another module
		// (x.py must not take x.y.cpython-312.pyc — impossible for
		// importable names, which have no dots).
		if err := os.Remove(m); err == nil {
			removed = append(removed, m)
		}
	}
	return removed
}

func globEscape(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}
