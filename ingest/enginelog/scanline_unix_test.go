//go:build unix

package enginelog

import (
	"syscall"
	"testing"
)

// pageEnd maps two pages and makes the second unreadable: the returned size bytes
// end where the first page ends, so a read past them faults.
func pageEnd(t *testing.T, size int) (data []byte, free func()) {
	t.Helper()
	page := syscall.Getpagesize()
	if size > page {
		t.Fatalf("pageEnd: %d bytes, a page is %d", size, page)
	}
	m, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	if err := syscall.Mprotect(m[page:], syscall.PROT_NONE); err != nil {
		syscall.Munmap(m)
		t.Skipf("mprotect: %v", err)
	}
	return m[page-size : page : page], func() { syscall.Munmap(m) }
}
