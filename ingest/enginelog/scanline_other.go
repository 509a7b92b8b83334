//go:build !amd64

package enginelog

const haveAVX2 = false

func scanLineAVX2(data []byte) (line, rest []byte, noCtl, ascii bool) {
	panic("no AVX2 scan on this architecture")
}
