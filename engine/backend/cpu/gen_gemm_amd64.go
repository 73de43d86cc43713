//go:build ignore

package main

import "fmt"

// gemm writes the microkernel
//
//	func gemmISA(kc int, a *float32, lda int, b, c *float32, ldc int, accumulate bool)
//
// C[mr×(nv·lanes)] (+)= A·B: A is mr rows of kc floats with row stride lda
// (weights dequantized row by row), B is packed [kc][nv·lanes] (activations,
// transposed), C has row stride ldc.
func (g *gen) gemm(s isa, mr, nv int) {
	name := "gemm" + s.name
	z := s.r
	nr := nv * s.lanes
	acc := func(i, j int) string { return z(i*nv + j) }
	bReg := func(j int) string { return z(mr*nv + j) }
	bc := z(mr*nv + nv)
	bases := []string{"R8", "R10", "R12", "R13"}[:mr/3]
	g.p("// func %s(kc int, a *float32, lda int, b, c *float32, ldc int, accumulate bool)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-49", name)
	g.ins(`
MOVQ kc+0(FP), DX
MOVQ a+8(FP), R8
MOVQ lda+16(FP), R9
SHLQ $2, R9
MOVQ b+24(FP), BX
MOVQ c+32(FP), DI
MOVQ ldc+40(FP), R11
SHLQ $2, R11`)
	for i := 1; i < len(bases); i++ {
		g.ins(fmt.Sprintf("LEAQ (%s)(R9*2), %s\nADDQ R9, %s", bases[i-1], bases[i], bases[i]))
	}
	for i := 0; i < mr; i++ {
		for j := 0; j < nv; j++ {
			r := acc(i, j)
			g.ins(fmt.Sprintf("%s %s, %s, %s", s.zero, r, r, r))
		}
	}
	g.p("%s_k:", name)
	for j := 0; j < nv; j++ {
		g.ins(fmt.Sprintf("VMOVUPS %d(BX), %s", j*s.lanes*4, bReg(j)))
	}
	for i := 0; i < mr; i++ {
		addr := "(" + bases[i/3] + ")"
		if i%3 > 0 {
			addr += fmt.Sprintf("(R9*%d)", i%3)
		}
		g.ins(fmt.Sprintf("VBROADCASTSS %s, %s", addr, bc))
		for j := 0; j < nv; j++ {
			g.ins(fmt.Sprintf("VFMADD231PS %s, %s, %s", bReg(j), bc, acc(i, j)))
		}
	}
	for _, b := range bases {
		g.ins("ADDQ $4, " + b)
	}
	g.ins(fmt.Sprintf(`
ADDQ $%d, BX
DECQ DX
JNZ %s_k`, nr*4, name))
	g.ins(fmt.Sprintf("MOVBLZX accumulate+48(FP), AX\nTESTQ AX, AX\nJZ %s_store", name))
	g.ins("MOVQ DI, R8")
	for i := 0; i < mr; i++ {
		for j := 0; j < nv; j++ {
			g.ins(fmt.Sprintf("VADDPS %d(R8), %s, %s", j*s.lanes*4, acc(i, j), acc(i, j)))
		}
		g.ins("ADDQ R11, R8")
	}
	g.p("%s_store:", name)
	for i := 0; i < mr; i++ {
		for j := 0; j < nv; j++ {
			g.ins(fmt.Sprintf("VMOVUPS %s, %d(DI)", acc(i, j), j*s.lanes*4))
		}
		g.ins("ADDQ R11, DI")
	}
	g.ins("VZEROUPPER\nRET")
	g.p("")
}

// deq writes a row-segment dequantizer for the GEMM path:
//
//	func deqNScaleISA(w *byte, scales, biases *uint16, out *float32, groups, blocks int)
//
// out[i] = float32(q[i])*scale + bias for groups groups of blocks×32
// elements, rounding the product before the add (no fused multiply-add),
// which is exactly tensor.Weight.DecodeRow's arithmetic.
func (g *gen) deq(s isa, bits int, f16 bool) {
	sc := "BF16"
	if f16 {
		sc = "F16"
	}
	name := fmt.Sprintf("deq%d%s%s", bits, sc, s.name)
	z := s.r
	g.p("// func %s(w *byte, scales, biases *uint16, out *float32, groups, blocks int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	g.ins(`
MOVQ w+0(FP), SI
MOVQ scales+8(FP), R8
MOVQ biases+16(FP), R9
MOVQ out+24(FP), DI
MOVQ groups+32(FP), R12`)
	mask := s.r(15)
	if s.name == "AVX512" {
		mask = "Z31"
		g.ins("VMOVDQU32 zipLo<>(SB), Z29\nVMOVDQU32 zipHi<>(SB), Z30")
	}
	g.ins(fmt.Sprintf("VPBROADCASTD nibble<>(SB), %s", mask))
	g.p("%s_group:", name)
	g.ins(loadScalar("(R8)", "X6", f16))
	g.ins(fmt.Sprintf("VBROADCASTSS X6, %s", z(6)))
	g.ins(loadScalar("(R9)", "X7", f16))
	g.ins(fmt.Sprintf("VBROADCASTSS X7, %s\nMOVQ blocks+40(FP), DX", z(7)))
	g.p("%s_block:", name)
	conv := func(r string) string {
		return fmt.Sprintf("VCVTDQ2PS %[1]s, %[1]s\nVMULPS %[2]s, %[1]s, %[1]s\nVADDPS %[3]s, %[1]s, %[1]s", r, z(6), z(7))
	}
	switch {
	case bits == 4 && s.name == "AVX512":
		g.ins(fmt.Sprintf("VPMOVZXBD (SI), Z4\nVPSRLD $4, Z4, Z5\nVPANDD %s, Z4, Z4", mask))
		g.ins(conv("Z4"))
		g.ins(conv("Z5"))
		g.ins(`
VMOVDQA32 Z29, Z8
VMOVDQA32 Z30, Z9
VPERMI2PS Z5, Z4, Z8
VPERMI2PS Z5, Z4, Z9
VMOVUPS Z8, (DI)
VMOVUPS Z9, 64(DI)
ADDQ $16, SI`)
	case bits == 4: // two halves of 16 elements
		for h := 0; h < 2; h++ {
			g.ins(fmt.Sprintf("VPMOVZXBD %d(SI), Y4\nVPSRLD $4, Y4, Y5\nVPAND %s, Y4, Y4", 8*h, mask))
			g.ins(conv("Y4"))
			g.ins(conv("Y5"))
			g.ins(fmt.Sprintf(`
VUNPCKLPS Y5, Y4, Y8
VUNPCKHPS Y5, Y4, Y9
VPERM2F128 $0x20, Y9, Y8, Y10
VPERM2F128 $0x31, Y9, Y8, Y11
VMOVUPS Y10, %d(DI)
VMOVUPS Y11, %d(DI)`, 64*h, 64*h+32))
		}
		g.ins("ADDQ $16, SI")
	default: // 8-bit, in order
		per := s.lanes
		for i := 0; i < 32/per; i++ {
			r := z(8 + i) // 6 and 7 hold the scale and bias
			g.ins(fmt.Sprintf("VPMOVZXBD %d(SI), %s", i*per, r))
			g.ins(conv(r))
			g.ins(fmt.Sprintf("VMOVUPS %s, %d(DI)", r, i*per*4))
		}
		g.ins("ADDQ $32, SI")
	}
	g.ins(fmt.Sprintf(`
ADDQ $128, DI
DECQ DX
JNZ %[1]s_block
ADDQ $2, R8
ADDQ $2, R9
DECQ R12
JNZ %[1]s_group
VZEROUPPER
RET`, name))
	g.p("")
}

// widen writes func widenDTISA(src *byte, dst *float32, blocks int): dense
// BF16 or F16 to float32 (exact), whole vectors.
func (g *gen) widen(s isa, dt string) {
	name := "widen" + dt + s.name
	z := s.r
	g.p("// func %s(src *byte, dst *float32, blocks int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-24", name)
	g.ins(fmt.Sprintf(`
MOVQ src+0(FP), SI
MOVQ dst+8(FP), DI
MOVQ blocks+16(FP), DX
TESTQ DX, DX
JZ %s_done`, name))
	g.p("%s_loop:", name)
	if dt == "BF16" {
		g.ins(fmt.Sprintf("VPMOVZXWD (SI), %[1]s\nVPSLLD $16, %[1]s, %[1]s", z(0)))
	} else {
		g.ins(fmt.Sprintf("VCVTPH2PS (SI), %s", z(0)))
	}
	g.ins(fmt.Sprintf(`
VMOVUPS %s, (DI)
ADDQ $%d, SI
ADDQ $%d, DI
DECQ DX
JNZ %s_loop`, z(0), 2*s.lanes, 4*s.lanes, name))
	g.p("%s_done:", name)
	g.ins("VZEROUPPER\nRET")
	g.p("")
}

// gemmI8 writes the int8-activation GEMM microkernel (prefill with
// Options.Int8Activations):
//
//	func gemmI8ISA(blocks, steps int, w *byte, sc, bi *float32, x *int8, d, xs, c *float32, accumulate bool)
//
// C[mr×nr] (+)= Σ over blocks of activation blocks (steps·4 elements):
// cvt(Σ_k w·x)·(sc·d) + bi·xs, where, per 4-element step, w holds one dword
// per weight row (nr rows: 4 unsigned weight levels), x one dword per token
// (mr tokens: 4 signed int8 activations, broadcast to every lane); sc and bi
// are per block and weight row (the row's group scale and bias), d and xs
// per block and token (the activation block's scale and its exact float
// sum). Lanes are weight rows, so C's rows are tokens and need no
// transpose. On VNNI (avx512) each step is one VPDPBUSD per accumulator; on
// AVX2 it is VPMADDUBSW into 16-bit sums (4-bit levels only: 8 steps of
// 2·15·127 stay below 2¹⁵), widened by VPMADDWD once per block, so there a
// block is at most 8 steps.
func (g *gen) gemmI8(s isa, mr, nv int) {
	name := "gemmI8" + s.name
	if s.name == "AVX512" {
		name = "gemmI8VNNI"
	}
	z := s.r
	nr := nv * s.lanes
	vb := s.lanes * 4
	facc := func(i, j int) string { return z(i*nv + j) }
	iacc := func(i, j int) string { return z(mr*nv + i*nv + j) }
	g.p("// func %s(blocks, steps int, w *byte, sc, bi *float32, x *int8, d, xs, c *float32, accumulate bool)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-73", name)
	g.ins(`
MOVQ blocks+0(FP), R12
MOVQ steps+8(FP), R13
MOVQ w+16(FP), SI
MOVQ sc+24(FP), R8
MOVQ bi+32(FP), R9
MOVQ x+40(FP), BX
MOVQ d+48(FP), R10
MOVQ xs+56(FP), R11
MOVQ c+64(FP), DI`)
	for i := 0; i < mr; i++ {
		for j := 0; j < nv; j++ {
			g.ins(fmt.Sprintf("%s %s, %s, %s", s.zero, facc(i, j), facc(i, j), facc(i, j)))
		}
	}
	if s.name == "AVX512" {
		// Z0–Z11 float sums, Z12–Z23 int sums, Z24–Z25 weights, Z26–Z27
		// scales, Z28–Z29 biases, Z30 scale·d
		g.p("%s_block:", name)
		for i := 0; i < mr; i++ {
			for j := 0; j < nv; j++ {
				g.ins(fmt.Sprintf("VPXORD %s, %s, %s", iacc(i, j), iacc(i, j), iacc(i, j)))
			}
		}
		g.ins("MOVQ R13, DX")
		g.p("%s_step:", name)
		for j := 0; j < nv; j++ {
			g.ins(fmt.Sprintf("VMOVDQU32 %d(SI), %s", j*vb, z(24+j)))
		}
		for i := 0; i < mr; i++ {
			for j := 0; j < nv; j++ {
				g.ins(fmt.Sprintf("VPDPBUSD.BCST %d(BX), %s, %s", 4*i, z(24+j), iacc(i, j)))
			}
		}
		g.ins(fmt.Sprintf(`
ADDQ $%d, SI
ADDQ $%d, BX
DECQ DX
JNZ %s_step`, nr*4, mr*4, name))
		for j := 0; j < nv; j++ {
			g.ins(fmt.Sprintf("VMOVUPS %d(R8), %s\nVMOVUPS %d(R9), %s", j*vb, z(26+j), j*vb, z(28+j)))
		}
		for i := 0; i < mr; i++ {
			for j := 0; j < nv; j++ {
				g.ins(fmt.Sprintf(`
VMULPS.BCST %[1]d(R10), %[2]s, Z30
VCVTDQ2PS %[3]s, %[3]s
VFMADD231PS Z30, %[3]s, %[4]s
VFMADD231PS.BCST %[1]d(R11), %[5]s, %[4]s`, 4*i, z(26+j), iacc(i, j), facc(i, j), z(28+j)))
			}
		}
	} else {
		// Y0–Y3 float sums, Y4–Y7 16-bit sums, Y8–Y9 weights (then scales
		// and biases), Y10 activations, Y11 products, Y15 ones
		g.ins("VPBROADCASTD ones16<>(SB), Y15")
		g.p("%s_block:", name)
		for i := 0; i < mr; i++ {
			for j := 0; j < nv; j++ {
				g.ins(fmt.Sprintf("VPXOR %s, %s, %s", iacc(i, j), iacc(i, j), iacc(i, j)))
			}
		}
		g.ins("MOVQ R13, DX")
		g.p("%s_step:", name)
		for j := 0; j < nv; j++ {
			g.ins(fmt.Sprintf("VMOVDQU %d(SI), %s", j*vb, z(8+j)))
		}
		for i := 0; i < mr; i++ {
			g.ins(fmt.Sprintf("VPBROADCASTD %d(BX), Y10", 4*i))
			for j := 0; j < nv; j++ {
				g.ins(fmt.Sprintf("VPMADDUBSW Y10, %s, Y11\nVPADDW Y11, %s, %s", z(8+j), iacc(i, j), iacc(i, j)))
			}
		}
		g.ins(fmt.Sprintf(`
ADDQ $%d, SI
ADDQ $%d, BX
DECQ DX
JNZ %s_step`, nr*4, mr*4, name))
		for j := 0; j < nv; j++ {
			g.ins(fmt.Sprintf("VMOVUPS %d(R8), %s", j*vb, z(8+j)))
		}
		for i := 0; i < mr; i++ {
			g.ins(fmt.Sprintf("VBROADCASTSS %d(R10), Y10", 4*i))
			for j := 0; j < nv; j++ {
				g.ins(fmt.Sprintf(`
VPMADDWD Y15, %[1]s, %[1]s
VCVTDQ2PS %[1]s, %[1]s
VMULPS Y10, %[2]s, Y11
VFMADD231PS Y11, %[1]s, %[3]s`, iacc(i, j), z(8+j), facc(i, j)))
			}
		}
		for j := 0; j < nv; j++ {
			g.ins(fmt.Sprintf("VMOVUPS %d(R9), %s", j*vb, z(8+j)))
		}
		for i := 0; i < mr; i++ {
			g.ins(fmt.Sprintf("VBROADCASTSS %d(R11), Y10", 4*i))
			for j := 0; j < nv; j++ {
				g.ins(fmt.Sprintf("VFMADD231PS Y10, %s, %s", z(8+j), facc(i, j)))
			}
		}
	}
	g.ins(fmt.Sprintf(`
ADDQ $%[1]d, R8
ADDQ $%[1]d, R9
ADDQ $%[2]d, R10
ADDQ $%[2]d, R11
DECQ R12
JNZ %[3]s_block`, nr*4, mr*4, name))
	g.ins(fmt.Sprintf("MOVBLZX accumulate+72(FP), AX\nTESTQ AX, AX\nJZ %s_store", name))
	for i := 0; i < mr; i++ {
		for j := 0; j < nv; j++ {
			g.ins(fmt.Sprintf("VADDPS %d(DI), %s, %s", (i*nr+j*s.lanes)*4, facc(i, j), facc(i, j)))
		}
	}
	g.p("%s_store:", name)
	for i := 0; i < mr; i++ {
		for j := 0; j < nv; j++ {
			g.ins(fmt.Sprintf("VMOVUPS %s, %d(DI)", facc(i, j), (i*nr+j*s.lanes)*4))
		}
	}
	g.ins("VZEROUPPER\nRET")
	g.p("")
}
