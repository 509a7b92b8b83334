//go:build unix && !linux

package beneath

// openBeneath walks: openat2 is Linux's.
func openBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	return walk(dirfd, rel, flags, mode)
}
