//go:build unix

// Package guardpage gives tests memory that ends where a page ends, with
// the next page unreadable: code that reads past the end of its input
// faults instead of passing by luck. Assembly scanners that load 32
// bytes at a time are tested with it.
package guardpage

import (
	"syscall"
	"testing"
)

// End returns size bytes (at most a page) that end where a mapped page
// ends; the page after it cannot be read. The mapping is released when t
// ends; t is skipped where the system refuses the mapping.
func End(t testing.TB, size int) []byte {
	t.Helper()
	page := syscall.Getpagesize()
	if size > page {
		t.Fatalf("guardpage.End: %d bytes, a page is %d", size, page)
	}
	m, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(m) })
	if err := syscall.Mprotect(m[page:], syscall.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	return m[page-size : page : page]
}
