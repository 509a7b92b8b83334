//go:build unix

package patchset

import (
	"io/fs"
	"syscall"
)

func owner(st fs.FileInfo) (int, int) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid), int(s.Gid)
	}
	return -1, -1
}
