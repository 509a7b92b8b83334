//go:build unix

package patchset

import (
	"fmt"
	"os"
	"syscall"
)

// lockRoot takes an exclusive flock on the root directory itself, so two
// bringup processes never interleave their journals; no lock file is left
// in site-packages. The lock dies with the process, so a kill -9 never
// leaves it held.
func lockRoot(root string) (func(), error) {
	d, err := os.Open(root)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		d.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, fmt.Errorf("another bringup patch command is changing %s; wait for it to finish", root)
		}
		return nil, fmt.Errorf("lock %s: %w", root, err)
	}
	return func() { syscall.Flock(int(d.Fd()), syscall.LOCK_UN); d.Close() }, nil
}
