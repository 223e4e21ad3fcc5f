//go:build amd64 && !purego

#include "textflag.h"

// The lookup tables of Keiser and Lemire's UTF-8 validation ("Validating UTF-8 in
// less than one instruction per byte", 2021): each byte pair (the previous byte's
// high and low nibble, the byte's high nibble) looks up three sets of error bits and
// ANDs them; a bit left set names an error, but for 0x80 (two continuation bytes in a
// row), which is an error only where no lead 2 or 3 bytes before asks for it. Each
// table is its 16 bytes twice, one copy per 128-bit lane.
DATA textB1High<>+0x00(SB)/8, $0x0202020202020202
DATA textB1High<>+0x08(SB)/8, $0x4915012180808080
DATA textB1High<>+0x10(SB)/8, $0x0202020202020202
DATA textB1High<>+0x18(SB)/8, $0x4915012180808080
GLOBL textB1High<>(SB), RODATA|NOPTR, $32

DATA textB1Low<>+0x00(SB)/8, $0xCBCBCB8B8383A3E7
DATA textB1Low<>+0x08(SB)/8, $0xCBCBDBCBCBCBCBCB
DATA textB1Low<>+0x10(SB)/8, $0xCBCBCB8B8383A3E7
DATA textB1Low<>+0x18(SB)/8, $0xCBCBDBCBCBCBCBCB
GLOBL textB1Low<>(SB), RODATA|NOPTR, $32

DATA textB2High<>+0x00(SB)/8, $0x0101010101010101
DATA textB2High<>+0x08(SB)/8, $0x01010101BABAAEE6
DATA textB2High<>+0x10(SB)/8, $0x0101010101010101
DATA textB2High<>+0x18(SB)/8, $0x01010101BABAAEE6
GLOBL textB2High<>(SB), RODATA|NOPTR, $32

// textIncomplete is subtracted (saturating) from a block: a byte is left in the last
// three positions only if it is a lead that the block does not hold to its end.
DATA textIncomplete<>+0x00(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA textIncomplete<>+0x08(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA textIncomplete<>+0x10(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA textIncomplete<>+0x18(SB)/8, $0xBFDFEFFFFFFFFFFF
GLOBL textIncomplete<>(SB), RODATA|NOPTR, $32

DATA text0F<>+0x00(SB)/8, $0x0F0F0F0F0F0F0F0F
DATA text0F<>+0x08(SB)/8, $0x0F0F0F0F0F0F0F0F
DATA text0F<>+0x10(SB)/8, $0x0F0F0F0F0F0F0F0F
DATA text0F<>+0x18(SB)/8, $0x0F0F0F0F0F0F0F0F
GLOBL text0F<>(SB), RODATA|NOPTR, $32

DATA textC0<>+0x00(SB)/8, $0xC0C0C0C0C0C0C0C0
DATA textC0<>+0x08(SB)/8, $0xC0C0C0C0C0C0C0C0
DATA textC0<>+0x10(SB)/8, $0xC0C0C0C0C0C0C0C0
DATA textC0<>+0x18(SB)/8, $0xC0C0C0C0C0C0C0C0
GLOBL textC0<>(SB), RODATA|NOPTR, $32

DATA textEF<>+0x00(SB)/8, $0xEFEFEFEFEFEFEFEF
DATA textEF<>+0x08(SB)/8, $0xEFEFEFEFEFEFEFEF
DATA textEF<>+0x10(SB)/8, $0xEFEFEFEFEFEFEFEF
DATA textEF<>+0x18(SB)/8, $0xEFEFEFEFEFEFEFEF
GLOBL textEF<>(SB), RODATA|NOPTR, $32

DATA text60<>+0x00(SB)/8, $0x6060606060606060
DATA text60<>+0x08(SB)/8, $0x6060606060606060
DATA text60<>+0x10(SB)/8, $0x6060606060606060
DATA text60<>+0x18(SB)/8, $0x6060606060606060
GLOBL text60<>(SB), RODATA|NOPTR, $32

DATA text70<>+0x00(SB)/8, $0x7070707070707070
DATA text70<>+0x08(SB)/8, $0x7070707070707070
DATA text70<>+0x10(SB)/8, $0x7070707070707070
DATA text70<>+0x18(SB)/8, $0x7070707070707070
GLOBL text70<>(SB), RODATA|NOPTR, $32

DATA text80<>+0x00(SB)/8, $0x8080808080808080
DATA text80<>+0x08(SB)/8, $0x8080808080808080
DATA text80<>+0x10(SB)/8, $0x8080808080808080
DATA text80<>+0x18(SB)/8, $0x8080808080808080
GLOBL text80<>(SB), RODATA|NOPTR, $32

// func textBlocksAVX2(p []byte) (units int64, n int)
//
// Y1 is the previous block (zero before the first: p starts at a unit boundary), Y9
// its incomplete tail (zero when it ends at a boundary), Y8 the error bits.
TEXT ·textBlocksAVX2(SB), NOSPLIT, $0-40
	MOVQ p_base+0(FP), SI
	MOVQ p_len+8(FP), CX
	ANDQ $-32, CX
	XORQ AX, AX
	XORQ DI, DI
	VMOVDQU textB1High<>(SB), Y10
	VMOVDQU textB1Low<>(SB), Y11
	VMOVDQU textB2High<>(SB), Y12
	VMOVDQU text0F<>(SB), Y13
	VMOVDQU textC0<>(SB), Y14
	VPXOR   Y1, Y1, Y1
	VPXOR   Y9, Y9, Y9
	CMPQ    DI, CX
	JEQ     done

loop:
	// Four blocks of ASCII at once: text that is not ASCII every 128 bytes takes the
	// other branch every time, so the branch is well predicted either way.
	LEAQ      128(DI), DX
	CMPQ      DX, CX
	JA        one
	VMOVDQU   (SI)(DI*1), Y0
	VPOR      32(SI)(DI*1), Y0, Y2
	VPOR      64(SI)(DI*1), Y2, Y2
	VPOR      96(SI)(DI*1), Y2, Y2
	VPMOVMSKB Y2, BX
	TESTL     BX, BX
	JNZ       multi

	// All ASCII: valid unless the block before ended inside a sequence.
	VPTEST  Y9, Y9
	JNZ     done
	ADDQ    $128, AX
	VMOVDQU 96(SI)(DI*1), Y1
	MOVQ    DX, DI
	CMPQ    DI, CX
	JNE     loop
	JMP     done

one:
	VMOVDQU (SI)(DI*1), Y0

multi:
	VPMOVMSKB  Y0, BX
	VPERM2I128 $0x21, Y0, Y1, Y2 // the previous block's high lane, this block's low one
	VPALIGNR   $15, Y2, Y0, Y3   // each byte's previous byte
	VPALIGNR   $14, Y2, Y0, Y4   // the byte 2 before
	VPALIGNR   $13, Y2, Y0, Y5   // the byte 3 before

	VPSRLW  $4, Y3, Y6
	VPAND   Y13, Y6, Y6
	VPSHUFB Y6, Y10, Y6
	VPAND   Y13, Y3, Y7
	VPSHUFB Y7, Y11, Y7
	VPAND   Y7, Y6, Y6
	VPSRLW  $4, Y0, Y7
	VPAND   Y13, Y7, Y7
	VPSHUFB Y7, Y12, Y7
	VPAND   Y7, Y6, Y6

	// 0x80 where a lead 2 or 3 bytes before asks for a continuation byte here.
	VPSUBUSB text60<>(SB), Y4, Y4
	VPSUBUSB text70<>(SB), Y5, Y5
	VPOR     Y5, Y4, Y4
	VPAND    text80<>(SB), Y4, Y4
	VPXOR    Y6, Y4, Y4
	VPTEST   Y4, Y4
	JNZ      done

	// units: 32, less the continuation bytes, plus one per 4-byte lead (F0-FF).
	VPCMPGTB  Y0, Y14, Y7
	VPMOVMSKB Y7, DX
	POPCNTL   DX, DX
	SUBQ      DX, AX
	VPCMPGTB  textEF<>(SB), Y0, Y7
	VPMOVMSKB Y7, DX
	ANDL      BX, DX
	POPCNTL   DX, DX
	ADDQ      DX, AX
	ADDQ      $32, AX

	VPSUBUSB textIncomplete<>(SB), Y0, Y9
	VMOVDQA  Y0, Y1
	ADDQ     $32, DI
	CMPQ     DI, CX
	JNE      loop

done:
	VZEROUPPER
	MOVQ AX, units+24(FP)
	MOVQ DI, n+32(FP)
	RET
