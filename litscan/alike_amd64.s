#include "textflag.h"

// Added to every byte, 0x50 takes the digits '0'..'9' to 0x80..0x89, the
// ten smallest signed bytes, and nothing else there: a byte is a digit
// when, so moved, it is below -118 (0x8a), signed.
DATA alikeShift<>+0(SB)/1, $0x50
GLOBL alikeShift<>(SB), RODATA|NOPTR, $1
DATA alikeTop<>+0(SB)/1, $0x8a
GLOBL alikeTop<>(SB), RODATA|NOPTR, $1

// func alikeAVX2(a, b string) int
//
// A step takes 32 bytes of each: a place is alike when its bytes are
// equal or the larger of the two, moved, is a digit; one test a step.
TEXT ·alikeAVX2(SB), NOSPLIT, $0-40
	MOVQ         a_base+0(FP), SI
	MOVQ         a_len+8(FP), DX
	MOVQ         b_base+16(FP), DI
	VPBROADCASTB alikeShift<>(SB), Y5
	VPBROADCASTB alikeTop<>(SB), Y6
	XORQ         CX, CX           // the step's offset
	LEAQ         -32(DX), R8      // the last full step's offset

loop:
	CMPQ CX, R8
	JHI  tail

step:
	VMOVDQU   (SI)(CX*1), Y0
	VMOVDQU   (DI)(CX*1), Y1
	VPADDB    Y5, Y0, Y0
	VPADDB    Y5, Y1, Y1
	VPCMPEQB  Y0, Y1, Y2
	VPMAXSB   Y0, Y1, Y3
	VPCMPGTB  Y3, Y6, Y3 // -118 > the larger: both digits
	VPOR      Y2, Y3, Y3
	VPMOVMSKB Y3, AX
	NOTL      AX
	TESTL     AX, AX
	JNZ       found
	ADDQ      $32, CX
	JMP       loop

found:
	BSFL AX, AX
	ADDQ AX, CX
	MOVQ CX, ret+32(FP)
	VZEROUPPER
	RET

tail:
	// Fewer than 32 bytes left: one last step on the 32 bytes that end
	// the texts. The bytes it compares again are alike.
	CMPQ CX, DX
	JEQ  all
	MOVQ R8, CX
	JMP  step

all:
	MOVQ DX, ret+32(FP)
	VZEROUPPER
	RET
