package beneath

import (
	"errors"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 turned out to be missing (ENOSYS: before
// Linux 5.6), filtered (EPERM: some container seccomp profiles) or unable
// to take the flags (EINVAL, E2BIG); the walk does the same after that.
// Tests set it to run the walk.
var noOpenat2 atomic.Bool

const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

func openBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Resolve: resolve}
		if flags&unix.O_CREAT != 0 {
			how.Mode = uint64(mode)
		}
		for {
			fd, err := unix.Openat2(dirfd, rel, &how)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.E2BIG) {
				noOpenat2.Store(true)
				break
			}
			return fd, err
		}
	}
	return walk(dirfd, rel, flags, mode)
}
