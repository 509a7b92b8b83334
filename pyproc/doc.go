// Package pyproc reads the Python stacks of a live CPython process (3.10 to
// 3.13) from outside it, in pure Go: the target is never stopped, signalled
// or written to. It finds the interpreter through ELF symbols (_PyRuntime in
// the executable or a loaded libpython), reads memory with process_vm_readv,
// and walks interpreters, thread states and frames.
//
// Struct layouts for 3.10–3.12 are generated from each CPython's own headers
// (go generate; see internal/genlayout); 3.13 publishes its layout in
// _Py_DebugOffsets, which is read from the target. Every capture validates
// what it reads (code objects must be PyCode_Type, thread states must point
// back at their interpreter) and says so when it does not fit, so a caller can
// fall back to an external dumper.
//
// Memory access sits behind the Memory interface, as in delve's pkg/proc, so
// the walker runs the same on a live process, a fake, or recorded memory.
package pyproc

//go:generate go run ./internal/genlayout -o layouts_gen.go -c internal/genlayout/csrc/layout.c
