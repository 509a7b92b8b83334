package litscan

import (
	"testing"

	"github.com/bringup-tool/bringup/testsupport/guardpage"
)

// TestAlikePageEnd: texts that end at the end of a mapped page, the next
// page unreadable: a read past their end would fault.
func TestAlikePageEnd(t *testing.T) {
	const page = 100
	mem := guardpage.End(t, page)
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
