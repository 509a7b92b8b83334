//go:build !amd64

package litscan

const haveAVX2 = false

func alikeAVX2(a, b string) int { panic("no AVX2 compare on this architecture") }
