//go:build !unix

package enginelog

import "testing"

func pageEnd(t *testing.T, size int) (data []byte, free func()) {
	t.Skip("no mmap here")
	return nil, nil
}
