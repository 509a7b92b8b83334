//go:build unix

package litscan

import (
	"syscall"
	"testing"
)

// TestAlikePageEnd: texts that end at the end of a mapped page, the next
// page unreadable: a read past their end would fault.
func TestAlikePageEnd(t *testing.T) {
	page := syscall.Getpagesize()
	m, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	if err := syscall.Mprotect(m[page:], syscall.PROT_NONE); err != nil {
		syscall.Munmap(m)
		t.Skipf("mprotect: %v", err)
	}
	defer syscall.Munmap(m)
	mem := m[:page:page]
	b := make([]byte, 100)
	for n := 0; n <= 100; n++ {
		a := mem[page-n:]
		for k := range a {
			a[k], b[k] = '4', '2'
		}
		checkAlikeGo(t, unsafeString(a), unsafeString(b[:n]))
		checkAlikeGo(t, unsafeString(b[:n]), unsafeString(a))
		if n > 0 {
			a[n-1] = 'z'
			checkAlikeGo(t, unsafeString(a), unsafeString(b[:n]))
		}
	}
}
