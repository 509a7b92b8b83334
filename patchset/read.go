package patchset

import (
	"errors"
	"fmt"

	"github.com/bringup-tool/bringup/patchset/beneath"
)

// ReadTarget reads the target rel below root without following a symlink
// in any component: a target reached through one is an error that says
// so, never read.
func ReadTarget(root, rel string) ([]byte, error) {
	if err := checkRel(rel); err != nil {
		return nil, err
	}
	d, err := beneath.Open(root)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return readBelow(d, rel)
}

func readBelow(d *beneath.Dir, rel string) ([]byte, error) {
	data, _, err := d.ReadFile(rel, -1)
	if errors.Is(err, beneath.ErrSymlink) {
		return nil, fmt.Errorf("%w; %s", err, symlinkFix)
	}
	return data, err
}

// linkReason is err's reason when it is a symlink below the root, without
// the path the message already names; else err as it is.
func linkReason(err error) string {
	var le *beneath.LinkError
	if errors.As(err, &le) {
		return le.Reason()
	}
	return err.Error()
}
