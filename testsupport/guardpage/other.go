//go:build !unix

package guardpage

import "testing"

// End skips t: there is no mmap to guard a page with here.
func End(t testing.TB, size int) []byte {
	t.Skip("no mmap here")
	return nil
}
