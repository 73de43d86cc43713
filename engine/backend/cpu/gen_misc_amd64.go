//go:build ignore

package main

import (
	"fmt"
	"strings"
)

// dot writes func dotISA(a, b *float32, blocks int) float32 over whole
// vectors.
func (g *gen) dot(s isa) {
	name := "dot" + s.name
	z := s.r
	vb := s.lanes * 4
	g.p("// func %s(a, b *float32, blocks int) float32", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-28", name)
	g.ins(fmt.Sprintf(`
MOVQ a+0(FP), SI
MOVQ b+8(FP), BX
MOVQ blocks+16(FP), DX
%[1]s %[2]s, %[2]s, %[2]s
%[1]s %[3]s, %[3]s, %[3]s`, s.zero, z(0), z(1)))
	g.p("%s_loop:", name)
	g.ins(fmt.Sprintf(`
CMPQ DX, $2
JLT %[1]s_one
VMOVUPS (SI), %[2]s
VMOVUPS %[4]d(SI), %[3]s
VFMADD231PS (BX), %[2]s, %[5]s
VFMADD231PS %[4]d(BX), %[3]s, %[6]s
ADDQ $%[7]d, SI
ADDQ $%[7]d, BX
SUBQ $2, DX
JMP %[1]s_loop`, name, z(4), z(5), vb, z(0), z(1), 2*vb))
	g.p("%s_one:", name)
	g.ins(fmt.Sprintf(`
TESTQ DX, DX
JZ %[1]s_done
VMOVUPS (SI), %[2]s
VFMADD231PS (BX), %[2]s, %[3]s`, name, z(4), z(0)))
	g.p("%s_done:", name)
	g.ins(fmt.Sprintf("VADDPS %s, %s, %s", z(1), z(0), z(0)))
	g.reduce(s, 0, 2)
	g.ins("VMOVSS X0, ret+24(FP)\nVZEROUPPER\nRET")
	g.p("")
}

// axpy writes func axpyISA(alpha float32, x, y *float32, blocks int):
// y += alpha·x over whole vectors.
func (g *gen) axpy(s isa) {
	name := "axpy" + s.name
	z := s.r
	vb := s.lanes * 4
	g.p("// func %s(alpha float32, x, y *float32, blocks int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-32", name)
	g.ins(fmt.Sprintf(`
VBROADCASTSS alpha+0(FP), %s
MOVQ x+8(FP), SI
MOVQ y+16(FP), DI
MOVQ blocks+24(FP), DX
TESTQ DX, DX
JZ %s_done`, z(0), name))
	g.p("%s_loop:", name)
	g.ins(fmt.Sprintf(`
VMOVUPS (DI), %[1]s
VFMADD231PS (SI), %[2]s, %[1]s
VMOVUPS %[1]s, (DI)
ADDQ $%[3]d, SI
ADDQ $%[3]d, DI
DECQ DX
JNZ %[4]s_loop`, z(1), z(0), vb, name))
	g.p("%s_done:", name)
	g.ins("VZEROUPPER\nRET")
	g.p("")
}

// expSum writes func expSumISA(x *float32, blocks int, mx float32) float32:
// x[i] = exp(x[i] - mx) over whole vectors, by exp32's algorithm (Cephes'
// expf; results below the smallest normal float flush to zero), and
// returns the sum of the results.
func (g *gen) expSum(s isa) {
	name := "expSum" + s.name
	v := s.v
	round := "VROUNDPS $1, @10, @10"
	flush := "VCMPPS $1, expLo<>(SB), @8, @12\nVANDNPS @11, @12, @11"
	if s.name == "AVX512" {
		round = "VRNDSCALEPS $1, Z10, Z10"
		flush = "VCMPPS $1, expLo<>(SB), Z8, K1\nVPXORD Z13, Z13, Z13\nVMOVAPS Z13, K1, Z11"
	}
	body := fmt.Sprintf(`
MOVQ x+0(FP), SI
MOVQ blocks+8(FP), DX
VBROADCASTSS mx+16(FP), @1
%[1]s @0, @0, @0
TESTQ DX, DX
JZ %[2]s_done
%[2]s_loop:
VMOVUPS (SI), @8
VSUBPS @1, @8, @8
VMAXPS expLo<>(SB), @8, @9
VMOVUPS half<>(SB), @10
VFMADD231PS log2e<>(SB), @9, @10
%[3]s
VFNMADD231PS expC1<>(SB), @10, @9
VFNMADD231PS expC2<>(SB), @10, @9
VMOVUPS expP0<>(SB), @11
VFMADD213PS expP1<>(SB), @9, @11
VFMADD213PS expP2<>(SB), @9, @11
VFMADD213PS expP3<>(SB), @9, @11
VFMADD213PS expP4<>(SB), @9, @11
VFMADD213PS expP5<>(SB), @9, @11
VMULPS @9, @9, @12
VFMADD213PS @9, @12, @11
VADDPS one<>(SB), @11, @11
VCVTPS2DQ @10, @10
VPADDD bias127<>(SB), @10, @10
VPSLLD $23, @10, @10
VMULPS @10, @11, @11
%[4]s
VMOVUPS @11, (SI)
VADDPS @11, @0, @0
ADDQ $%[5]d, SI
DECQ DX
JNZ %[2]s_loop
%[2]s_done:`, s.zero, name, round, flush, s.lanes*4)
	g.p("// func %s(x *float32, blocks int, mx float32) float32", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-28", name)
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		l = strings.TrimSpace(strings.ReplaceAll(l, "@", v))
		if strings.HasSuffix(l, ":") {
			g.p("%s", l)
		} else {
			g.p("\t%s", l)
		}
	}
	g.reduce(s, 0, 2)
	g.ins("VMOVSS X0, ret+24(FP)\nVZEROUPPER\nRET")
	g.p("")
}

// quantizeI8 writes the int8 input quantizer of the int8-activation path
// (AVX-512):
//
//	func quantizeI8AVX512(x *float32, xq8, xq4 *int8, dv8, dv4 *float32, chunks, perChunk int)
//
// For each block of 32 inputs: d = max|x|/127, q = x·(127/max|x|) rounded
// half to even (VCVTPS2DQ), stored in order to xq8 and, split into even
// and odd elements, to xq4 in the 4-bit kernels' layout (chunks of
// 32·perChunk elements: the chunk's even elements, then its odd ones); d is
// stored 8 times at dv8[8b] and 4 times at dv4[4b].
func (g *gen) quantizeI8() {
	name := "quantizeI8AVX512"
	g.p("// func %s(x *float32, xq8, xq4 *int8, dv8, dv4 *float32, chunks, perChunk int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-56", name)
	g.ins(`
MOVQ x+0(FP), SI
MOVQ xq8+8(FP), DI
MOVQ xq4+16(FP), R8
MOVQ dv8+24(FP), R9
MOVQ dv4+32(FP), R10
MOVQ chunks+40(FP), R11
MOVQ perChunk+48(FP), R12
MOVQ R12, R13
SHLQ $4, R13
VPBROADCASTD absmask<>(SB), Z31
VMOVDQU32 evens<>(SB), Z29
VMOVDQU32 odds<>(SB), Z30
VMOVSS c127<>(SB), X28`)
	g.p("%s_chunk:", name)
	g.ins("MOVQ R12, DX\nMOVQ R8, BX")
	g.p("%s_block:", name)
	g.ins(fmt.Sprintf(`
VMOVUPS (SI), Z0
VMOVUPS 64(SI), Z1
VANDPS Z31, Z0, Z2
VANDPS Z31, Z1, Z3
VMAXPS Z3, Z2, Z2
VEXTRACTF64X4 $1, Z2, Y3
VMAXPS Y3, Y2, Y2
VEXTRACTF128 $1, Y2, X3
VMAXPS X3, X2, X2
VMOVHLPS X2, X2, X3
VMAXPS X3, X2, X2
VMOVSHDUP X2, X3
VMAXSS X3, X2, X2
VDIVSS X28, X2, X4
VBROADCASTSS X4, Y4
VMOVUPS Y4, (R9)
VMOVUPS X4, (R10)
VXORPS X5, X5, X5
VUCOMISS X5, X2
JEQ %[1]s_zero
VDIVSS X2, X28, X5
%[1]s_zero:
VBROADCASTSS X5, Z5
VMULPS Z5, Z0, Z0
VMULPS Z5, Z1, Z1
VCVTPS2DQ Z0, Z0
VCVTPS2DQ Z1, Z1
VPMOVSDB Z0, X6
VPMOVSDB Z1, X7
VMOVDQU X6, (DI)
VMOVDQU X7, 16(DI)
VMOVDQA32 Z29, Z8
VMOVDQA32 Z30, Z9
VPERMI2D Z1, Z0, Z8
VPERMI2D Z1, Z0, Z9
VPMOVSDB Z8, X6
VPMOVSDB Z9, X7
VMOVDQU X6, (BX)
VMOVDQU X7, (BX)(R13*1)
ADDQ $128, SI
ADDQ $32, DI
ADDQ $16, BX
ADDQ $32, R9
ADDQ $16, R10
DECQ DX
JNZ %[1]s_block`, name))
	g.ins(fmt.Sprintf(`
LEAQ (R8)(R13*2), R8
DECQ R11
JNZ %s_chunk
VZEROUPPER
RET`, name))
	g.p("")
}

// silu writes func siluISA(x, out *float32, blocks int): out = x/(1+e^-x)
// over whole vectors, e^-x by exp32's algorithm with -x clamped to 88
// (where x/(1+e^-x) is already -0 in float32).
func (g *gen) silu(s isa) {
	name := "silu" + s.name
	v := s.v
	round := "VROUNDPS $1, @10, @10"
	flush := "VCMPPS $1, expLo<>(SB), @8, @12\nVANDNPS @11, @12, @11"
	if s.name == "AVX512" {
		round = "VRNDSCALEPS $1, Z10, Z10"
		flush = "VCMPPS $1, expLo<>(SB), Z8, K1\nVPXORD Z13, Z13, Z13\nVMOVAPS Z13, K1, Z11"
	}
	body := fmt.Sprintf(`
MOVQ x+0(FP), SI
MOVQ out+8(FP), DI
MOVQ blocks+16(FP), DX
TESTQ DX, DX
JZ %[1]s_done
%[1]s_loop:
VMOVUPS (SI), @7
VXORPS signbit<>(SB), @7, @8
VMINPS expHi<>(SB), @8, @8
VMAXPS expLo<>(SB), @8, @9
VMOVUPS half<>(SB), @10
VFMADD231PS log2e<>(SB), @9, @10
%[2]s
VFNMADD231PS expC1<>(SB), @10, @9
VFNMADD231PS expC2<>(SB), @10, @9
VMOVUPS expP0<>(SB), @11
VFMADD213PS expP1<>(SB), @9, @11
VFMADD213PS expP2<>(SB), @9, @11
VFMADD213PS expP3<>(SB), @9, @11
VFMADD213PS expP4<>(SB), @9, @11
VFMADD213PS expP5<>(SB), @9, @11
VMULPS @9, @9, @12
VFMADD213PS @9, @12, @11
VADDPS one<>(SB), @11, @11
VCVTPS2DQ @10, @10
VPADDD bias127<>(SB), @10, @10
VPSLLD $23, @10, @10
VMULPS @10, @11, @11
%[3]s
VADDPS one<>(SB), @11, @11
VDIVPS @11, @7, @7
VMOVUPS @7, (DI)
ADDQ $%[4]d, SI
ADDQ $%[4]d, DI
DECQ DX
JNZ %[1]s_loop
%[1]s_done:
VZEROUPPER
RET`, name, round, flush, s.lanes*4)
	g.p("// func %s(x, out *float32, blocks int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-24", name)
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		l = strings.TrimSpace(strings.ReplaceAll(l, "@", v))
		if strings.HasSuffix(l, ":") {
			g.p("%s", l)
		} else {
			g.p("\t%s", l)
		}
	}
	g.p("")
}
