#include "textflag.h"

// func scanLineAVX2(data []byte) (line, rest []byte, noCtl, ascii bool)
//
// Each step compares 32 bytes, signed, against 0x20: one mask flags both
// the bytes under 0x20 (the '\n' among them) and those from 0x80, so a
// step over plain text is one compare and one test. Only a flagged step
// looks at which bytes they are.
TEXT ·scanLineAVX2(SB), NOSPLIT, $0-74
	MOVQ data_base+0(FP), SI
	MOVQ data_len+8(FP), DX
	MOVL $0x20, AX
	MOVQ AX, X5
	VPBROADCASTB X5, Y5 // 0x20 in every byte
	MOVL $0x0a, AX
	MOVQ AX, X6
	VPBROADCASTB X6, Y6 // '\n' in every byte
	XORL R8, R8         // bytes under 0x20 seen (a bit per byte of a step)
	XORL R9, R9         // bytes from 0x80 seen
	XORQ CX, CX         // the step's offset
	LEAQ -32(DX), DI    // the last full step's offset
	LEAQ -64(DX), R13   // the last offset of two full steps

pair:
	// Two steps at a time while 64 bytes are left: most lines are
	// longer than that, and the first flagged byte ends most of them.
	CMPQ      CX, R13
	JGT       loop
	VMOVDQU   (SI)(CX*1), Y0
	VMOVDQU   32(SI)(CX*1), Y3
	VPCMPGTB  Y0, Y5, Y1
	VPCMPGTB  Y3, Y5, Y4
	VPOR      Y1, Y4, Y4
	VPTEST    Y4, Y4
	JNZ       loop
	ADDQ      $64, CX
	JMP       pair

loop:
	CMPQ CX, DI
	JHI  tail

step:
	VMOVDQU   (SI)(CX*1), Y0
	VPCMPGTB  Y0, Y5, Y1 // 0x20 > byte, signed: under 0x20 or from 0x80
	VPMOVMSKB Y1, AX
	TESTL     AX, AX
	JNZ       flagged
	ADDQ      $32, CX
	JMP       loop

flagged:
	VPCMPEQB  Y0, Y6, Y2
	VPMOVMSKB Y2, BX  // '\n'
	VPMOVMSKB Y0, R10 // from 0x80
	XORL      R10, AX // under 0x20 (the flagged bytes from 0x80 are all in R10)
	TESTL     BX, BX
	JNZ       found
	ORL       AX, R8
	ORL       R10, R9
	ADDQ      $32, CX
	JMP       loop

found:
	// Keep only the bytes before the first '\n'.
	LEAL -1(BX), R11
	MOVL BX, R12
	NOTL R12
	ANDL R12, R11
	ANDL R11, AX
	ORL  AX, R8
	ANDL R11, R10
	ORL  R10, R9
	BSFL BX, BX
	ADDQ BX, CX // the '\n'
	MOVQ SI, line_base+24(FP)
	MOVQ CX, line_len+32(FP)
	MOVQ data_cap+16(FP), R11
	MOVQ R11, line_cap+40(FP)
	LEAQ 1(SI)(CX*1), AX
	MOVQ AX, rest_base+48(FP)
	NOTQ CX
	ADDQ CX, DX // len - k - 1
	MOVQ DX, rest_len+56(FP)
	ADDQ CX, R11 // cap - k - 1
	MOVQ R11, rest_cap+64(FP)
	JMP  flags

tail:
	// Fewer than 32 bytes left: one last step on the 32 bytes that end
	// data. The bytes it reads again hold no '\n', and their flags are
	// already in R8 and R9.
	CMPQ CX, DX
	JEQ  none
	MOVQ DI, CX
	JMP  step

none:
	// No '\n': the line is data, the rest nil.
	MOVQ SI, line_base+24(FP)
	MOVQ DX, line_len+32(FP)
	MOVQ data_cap+16(FP), R11
	MOVQ R11, line_cap+40(FP)
	MOVQ $0, rest_base+48(FP)
	MOVQ $0, rest_len+56(FP)
	MOVQ $0, rest_cap+64(FP)

flags:
	TESTL R8, R8
	SETEQ noCtl+72(FP)
	TESTL R9, R9
	SETEQ ascii+73(FP)
	VZEROUPPER
	RET
