package pyproc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Memory is read access to a target's address space. The live
// implementation uses process_vm_readv; tests use fakes. Read fills all of p
// or returns an error.
type Memory interface {
	Read(addr uint64, p []byte) error
}

// ProcessMemory reads a live process with process_vm_readv, which neither
// stops nor signals the target (unlike ptrace) and cannot write to it.
type ProcessMemory struct{ PID int }

// processReads counts process_vm_readv calls, for the benchmark.
var processReads atomic.Int64

func (m ProcessMemory) Read(addr uint64, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	processReads.Add(1)
	if addr == 0 {
		return badRead("read of NULL")
	}
	local := []unix.Iovec{{Base: (*byte)(unsafe.Pointer(&p[0])), Len: uint64(len(p))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	n, err := unix.ProcessVMReadv(m.PID, local, remote, 0)
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return ErrPermission
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("pid %d exited while being read: %w", m.PID, ErrNoProcess)
	case errors.Is(err, unix.EFAULT), errors.Is(err, unix.EINVAL), errors.Is(err, unix.EIO):
		return badRead("address %#x is not readable in pid %d", addr, m.PID)
	case err != nil:
		return fmt.Errorf("process_vm_readv pid %d: %w", m.PID, err)
	case n != len(p):
		return badRead("short read at %#x in pid %d (%d of %d bytes)", addr, m.PID, n, len(p))
	}
	return nil
}

// reader adds typed little-endian reads on top of a Memory.
type reader struct{ Memory }

func (r reader) u64(addr uint64) (uint64, error) {
	var b [8]byte
	if err := r.Read(addr, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

func (r reader) u32(addr uint64) (uint32, error) {
	var b [4]byte
	if err := r.Read(addr, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

func (r reader) u8(addr uint64) (uint8, error) {
	var b [1]byte
	if err := r.Read(addr, b[:]); err != nil {
		return 0, err
	}
	return b[0], nil
}

// at reads a little-endian unsigned value of size 1, 2, 4 or 8 from a buffer
// already read; out of range yields 0, ok false.
func at(b []byte, off int64, size int) (uint64, bool) {
	if off < 0 || off+int64(size) > int64(len(b)) {
		return 0, false
	}
	s := b[off : off+int64(size)]
	switch size {
	case 1:
		return uint64(s[0]), true
	case 2:
		return uint64(binary.LittleEndian.Uint16(s)), true
	case 4:
		return uint64(binary.LittleEndian.Uint32(s)), true
	case 8:
		return binary.LittleEndian.Uint64(s), true
	}
	return 0, false
}
