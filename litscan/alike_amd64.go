package litscan

import "golang.org/x/sys/cpu"

// haveAVX2: the CPU has AVX2 and the OS saves the YMM registers.
var haveAVX2 = cpu.X86.HasAVX2

// alikeAVX2 returns the first place where the bytes of a and b differ
// and are not both ASCII digits (len(a) when there is none). It reads 32
// bytes a step and ends on the 32 bytes that end the texts (overlapping
// bytes already compared), so it never reads outside them; a and b must
// be of one length, at least 32.
//
//go:noescape
func alikeAVX2(a, b string) int
