package patchset

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/bringup-tool/bringup/patchset/beneath"
)

// change is one file to replace.
type change struct {
	rel  string
	from string // sha256 the file has now
	data []byte // new content
	mode fs.FileMode
	uid  int
	gid  int
}

// crashHook, when set by a test, runs after the i-th rename of a commit;
// returning an error stops the commit there as a crash would.
var crashHook func(i int) error

// writeAtomic writes data to a new file beside name in d, fsyncs it,
// renames it over name and fsyncs d. A symlink at name is replaced, never
// followed.
func writeAtomic(d *beneath.Dir, name string, data []byte, mode fs.FileMode, uid, gid int) error {
	tmp := tempName(name)
	if err := stage(d, tmp, data, mode, uid, gid); err != nil {
		return err
	}
	if err := d.Rename(tmp, name); err != nil {
		d.Remove(tmp)
		return err
	}
	return d.Sync()
}

// stage writes data to the new file tmp in d with the given mode and
// owner, fsynced.
func stage(d *beneath.Dir, tmp string, data []byte, mode fs.FileMode, uid, gid int) error {
	f, err := d.Create(tmp, 0o600)
	if err != nil {
		return fmt.Errorf("cannot write beside %s: %w (read-only filesystem? apply in an image build step, or use 'bringup patch overlay')", strings.TrimSuffix(tmp, ".tmp"), err)
	}
	fail := func(err error) error {
		f.Close()
		d.Remove(tmp)
		return err
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
		d.Remove(tmp)
		return err
	}
	return nil
}

// commit replaces every file in cs or none: stage all, commit the journal,
// rename one by one, clear stale bytecode, drop the journal. Every file is
// reached from the root without following a symlink, and every create,
// rename and removal is relative to its directory's descriptor.
func commit(root, op string, cs []change) error {
	if len(cs) == 0 {
		return nil
	}
	rd, err := beneath.Open(root)
	if err != nil {
		return err
	}
	defer rd.Close()
	ds := dirs{root: rd}
	defer ds.close()
	j := &journal{Schema: journalSchema, Op: op, State: "staging"}
	steps := make([]step, len(cs))
	for i, c := range cs {
		d, err := ds.open(path.Dir(c.rel))
		if err != nil {
			return fmt.Errorf("%s: %w; nothing was changed", c.rel, err)
		}
		e := journalEntry{Path: c.rel, Temp: tempName(path.Base(c.rel)), From: c.from, To: sha(c.data)}
		j.Entries = append(j.Entries, e)
		steps[i] = step{e: e, dir: d, base: path.Base(c.rel), rename: true, remove: true}
	}
	// The journal names the temp files before they exist, so a crash while
	// staging leaves nothing that recovery cannot find.
	if err := writeJournal(rd, j); err != nil {
		return fmt.Errorf("cannot write the journal in %s: %w (is the root writable?)", root, err)
	}
	for i, c := range cs {
		if err := stage(steps[i].dir, steps[i].e.Temp, c.data, c.mode, c.uid, c.gid); err != nil {
			rollback(rd, steps)
			return fmt.Errorf("%s: %w; nothing was changed", c.rel, err)
		}
	}
	for _, d := range ds.all() {
		if err := d.Sync(); err != nil {
			rollback(rd, steps)
			return fmt.Errorf("%w; nothing was changed", err)
		}
	}
	j.State = "committed"
	if err := writeJournal(rd, j); err != nil {
		rollback(rd, steps)
		return fmt.Errorf("cannot commit the journal: %w; nothing was changed", err)
	}
	return finish(rd, steps)
}

// finish renames the staged copies of a committed journal into place and
// drops the journal. Steps come checked (loadJournal) or freshly staged
// (commit).
func finish(root *beneath.Dir, steps []step) error {
	for i, st := range steps {
		if st.rename {
			if err := st.dir.Rename(st.e.Temp, st.base); err != nil {
				return fmt.Errorf("%s: cannot move the staged copy into place: %w (the journal is kept; run the command again)", st.e.Path, err)
			}
			if err := st.dir.Sync(); err != nil {
				return err
			}
		} else if st.remove {
			if err := st.dir.Remove(st.e.Temp); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s: %w (the journal is kept; run the command again)", st.e.Path, err)
			}
		}
		if _, err := removeStaleBytecode(st.dir, st.base); err != nil {
			return fmt.Errorf("%s is in place, but its stale bytecode is not removed: %w (the journal is kept; run the command again)", st.e.Path, err)
		}
		if crashHook != nil {
			if err := crashHook(i); err != nil {
				return err
			}
		}
	}
	if err := root.Remove(journalName); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return root.Sync()
}

// rollback removes the staged copies and the journal.
func rollback(root *beneath.Dir, steps []step) {
	for _, st := range steps {
		if st.remove {
			st.dir.Remove(st.e.Temp)
		}
	}
	for _, st := range steps {
		st.dir.Sync()
	}
	root.Remove(journalName)
	root.Sync()
}

// Recover completes or undoes an apply/revert that was interrupted (a crash,
// kill -9, power loss) and returns what it did, "" when nothing was pending.
// A journal that does not check out is a *JournalError, and nothing is done.
func Recover(root string) (string, error) {
	rd, err := beneath.Open(root)
	if err != nil {
		return "", err
	}
	defer rd.Close()
	p, err := loadJournal(rd, root)
	if err != nil || p == nil {
		return "", err
	}
	p.close()
	unlock, err := lockRoot(root)
	if err != nil {
		return "", err
	}
	defer unlock()
	return recoverLocked(root)
}

// recoverLocked is Recover under the root's lock: the journal is read and
// checked again, since another command may have finished it.
func recoverLocked(root string) (string, error) {
	rd, err := beneath.Open(root)
	if err != nil {
		return "", err
	}
	defer rd.Close()
	p, err := loadJournal(rd, root)
	if err != nil || p == nil {
		return "", err
	}
	defer p.close()
	return p.run()
}

// removeStaleBytecode deletes __pycache__/<stem>.*.pyc of the .py file base
// in d: a precompiled (especially unchecked-hash) .pyc can keep serving the
// old code. A __pycache__ that is a symlink is an error, not followed.
func removeStaleBytecode(d *beneath.Dir, base string) ([]string, error) {
	pc, names, err := pycacheOf(d, base)
	if err != nil || pc == nil {
		return nil, err
	}
	defer pc.Close()
	var removed []string
	for _, n := range names {
		if err := pc.Remove(n); err == nil {
			removed = append(removed, n)
		}
	}
	return removed, pc.Sync()
}

// pycacheOf opens d's __pycache__ and lists the bytecode of the .py file
// base in it ("<stem>.<tag>.pyc", "<stem>.<tag>.opt-1.pyc"); nil, nil, nil
// when base is not a .py file or there is no __pycache__.
func pycacheOf(d *beneath.Dir, base string) (*beneath.Dir, []string, error) {
	stem, ok := strings.CutSuffix(base, ".py")
	if !ok {
		return nil, nil, nil
	}
	pc, err := d.OpenDir("__pycache__")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	all, err := pc.Names()
	if err != nil {
		pc.Close()
		return nil, nil, err
	}
	var names []string
	for _, n := range all {
		// The tag between the stem and ".pyc" is not empty, and x.py must
		// not take x.y.cpython-312.pyc — impossible for importable names,
		// which have no dots.
		if strings.HasPrefix(n, stem+".") && strings.HasSuffix(n, ".pyc") && len(n) > len(stem)+len("..pyc") {
			names = append(names, n)
		}
	}
	return pc, names, nil
}
