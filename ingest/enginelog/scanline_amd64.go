package enginelog

import "golang.org/x/sys/cpu"

// haveAVX2: the CPU has AVX2 and the OS saves the YMM registers.
var haveAVX2 = cpu.X86.HasAVX2

// scanLineAVX2 is scanLine with exact answers, 32 bytes a step; it ends
// on the 32 bytes that end data (overlapping bytes already read), so it
// never reads outside data. len(data) must be at least 32.
func scanLineAVX2(data []byte) (line, rest []byte, noCtl, ascii bool)
