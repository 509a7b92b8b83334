package pyproc

import (
	"errors"
	"fmt"
)

var (
	// ErrNotPython: the process runs no CPython interpreter pyproc can find.
	// Errors that wrap ErrUnsupported match it too, since for a caller both
	// mean "pyproc cannot read this one; try py-spy".
	ErrNotPython = errors.New("not a Python process")
	// ErrUnsupported: a CPython was found but its version or layout is one
	// pyproc cannot read (older than 3.10, newer than the generated layouts,
	// free-threaded, or memory that does not validate against the layout).
	ErrUnsupported = errors.New("unsupported CPython")
	// ErrPermission: the kernel refused to let us read the target's memory.
	ErrPermission = errors.New("permission denied reading the process's memory: run bringup as the target's user, or grant CAP_SYS_PTRACE (docker run --cap-add=SYS_PTRACE; k8s securityContext.capabilities.add: [SYS_PTRACE]), or set sysctl kernel.yama.ptrace_scope=0")
	// ErrNoProcess: no such pid, or it exited while being read.
	ErrNoProcess = errors.New("no such process")
)

// unsupportedError is ErrUnsupported with the reason; errors.Is matches both
// ErrUnsupported and ErrNotPython (the contract's fallback trigger).
type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string { return e.msg }
func (e *unsupportedError) Is(target error) bool {
	return target == ErrUnsupported || target == ErrNotPython
}

func unsupported(format string, args ...any) error {
	return &unsupportedError{fmt.Sprintf(format, args...)}
}

// errBadRead is a read of an address the target has not mapped, or a value
// that does not fit the layout: with a running target, usually a torn read.
type badReadError struct{ msg string }

func (e *badReadError) Error() string { return e.msg }

func badRead(format string, args ...any) error {
	return &badReadError{fmt.Sprintf(format, args...)}
}
