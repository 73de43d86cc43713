//go:build ignore

package main

import "fmt"

// quant writes a quantized matrix–vector kernel:
//
//	func qNScaleISA(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks int)
//
// For each of rows rows (packed bits contiguous), for each of groups groups
// of blocks×32 elements: acc = Σ q·x over the group; total += acc·scale;
// bsum += bias·xsum[g]; out[r] = Σ lanes(total) + bsum. x is permuted for
// 4-bit weights (see kernels.perm).
func (g *gen) quant(s isa, bits int, f16 bool) {
	sc := "BF16"
	if f16 {
		sc = "F16"
	}
	name := fmt.Sprintf("q%d%s%s", bits, sc, s.name)
	g.p("// func %s(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-72", name)
	g.ins(`
MOVQ w+0(FP), SI
MOVQ scales+8(FP), R8
MOVQ biases+16(FP), R9
MOVQ x+24(FP), R10
MOVQ xsum+32(FP), R11
MOVQ out+40(FP), DI
MOVQ rows+48(FP), R13
MOVQ groups+56(FP), R12`)
	mask := s.r(15)
	if s.name == "AVX512" {
		mask = "Z31"
	}
	g.ins(fmt.Sprintf("VPBROADCASTD nibble<>(SB), %s", mask))
	z := s.r
	g.p("%s_row:", name)
	g.ins(fmt.Sprintf(`
%[1]s %[2]s, %[2]s, %[2]s
VXORPS X1, X1, X1
MOVQ R10, BX
XORQ AX, AX`, s.zero, z(0)))
	g.p("%s_group:", name)
	g.ins(fmt.Sprintf(`
%[4]s
%[1]s %[2]s, %[2]s, %[2]s
%[1]s %[3]s, %[3]s, %[3]s
MOVQ blocks+64(FP), DX`, s.zero, z(2), z(3), prefetch("SI")))
	g.p("%s_block:", name)
	vb := s.lanes * 4 // bytes of one float vector
	switch {
	case bits == 4 && s.name == "AVX512":
		g.ins(fmt.Sprintf(`
VPMOVZXBD (SI), Z4
VPSRLD $4, Z4, Z5
VPANDD %s, Z4, Z4
VCVTDQ2PS Z4, Z4
VCVTDQ2PS Z5, Z5
VFMADD231PS (BX), Z4, Z2
VFMADD231PS 64(BX), Z5, Z3
ADDQ $16, SI`, mask))
	case bits == 4:
		g.ins(fmt.Sprintf(`
VPMOVZXBD (SI), Y4
VPMOVZXBD 8(SI), Y6
VPSRLD $4, Y4, Y5
VPSRLD $4, Y6, Y7
VPAND %[1]s, Y4, Y4
VPAND %[1]s, Y6, Y6
VCVTDQ2PS Y4, Y4
VCVTDQ2PS Y5, Y5
VCVTDQ2PS Y6, Y6
VCVTDQ2PS Y7, Y7
VFMADD231PS (BX), Y4, Y2
VFMADD231PS 32(BX), Y5, Y3
VFMADD231PS 64(BX), Y6, Y2
VFMADD231PS 96(BX), Y7, Y3
ADDQ $16, SI`, mask))
	default: // 8-bit: 32 bytes, 32 elements, in order
		per := s.lanes // bytes per widening
		for i := 0; i < 32/per; i++ {
			r := z(4 + i)
			g.ins(fmt.Sprintf("VPMOVZXBD %d(SI), %s\nVCVTDQ2PS %s, %s", i*per, r, r, r))
		}
		for i := 0; i < 32/per; i++ {
			g.ins(fmt.Sprintf("VFMADD231PS %d(BX), %s, %s", i*vb, z(4+i), z(2+i%2)))
		}
		g.ins("ADDQ $32, SI")
	}
	g.ins(fmt.Sprintf(`
ADDQ $128, BX
DECQ DX
JNZ %s_block`, name))
	// end of group: total += (acc0+acc1)·scale; bsum += bias·xsum[g]
	g.ins(fmt.Sprintf("VADDPS %s, %s, %s", z(3), z(2), z(2)))
	g.ins(loadScalar("(R8)", "X6", f16))
	g.ins(fmt.Sprintf("VBROADCASTSS X6, %s\nVFMADD231PS %s, %s, %s", z(6), z(6), z(2), z(0)))
	g.ins(loadScalar("(R9)", "X7", f16))
	g.ins(fmt.Sprintf(`
VFMADD231SS (R11)(AX*4), X7, X1
ADDQ $2, R8
ADDQ $2, R9
INCQ AX
CMPQ AX, R12
JLT %s_group`, name))
	g.reduce(s, 0, 2)
	g.ins(fmt.Sprintf(`
VADDSS X1, X0, X0
VMOVSS X0, (DI)
ADDQ $4, DI
DECQ R13
JNZ %s_row
VZEROUPPER
RET`, name))
	g.p("")
}

// quantWide writes the AVX-512 4-bit matrix–vector kernel for rows of a
// multiple of 128 elements and groups of gs (32, 64 or 128):
//
//	func q4WgsScaleAVX512(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters int)
//
// It computes what quant does (Σ_g scale·Σ q·x + bias·xsum[g], x permuted
// per 32) with fewer instructions per weight: each iteration takes 64
// bytes (128 weights) unrolled, starts each group's sums with a multiply
// instead of zeroing them, broadcasts a scale with one load, and leaves the
// bias term to a 16-groups-at-a-time loop after the row's weights. Its
// sums are regrouped (group products alternate between two accumulators;
// biases summed 16 lanes wide), not otherwise changed.
func (g *gen) quantWide(gs int, f16 bool) {
	sc := "BF16"
	if f16 {
		sc = "F16"
	}
	name := fmt.Sprintf("q4W%d%sAVX512", gs, sc)
	ng := 128 / gs // groups per iteration
	bpg := gs / 32 // 16-byte blocks per group
	g.p("// func %s(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-72", name)
	g.ins(`
MOVQ w+0(FP), SI
MOVQ scales+8(FP), R8
MOVQ biases+16(FP), R9
MOVQ x+24(FP), R10
MOVQ out+40(FP), DI
MOVQ rows+48(FP), R13
VPBROADCASTD nibble<>(SB), Z31`)
	g.p("%s_row:", name)
	g.ins(`
VPXORD Z0, Z0, Z0
VPXORD Z24, Z24, Z24
VPXORD Z1, Z1, Z1
MOVQ R10, BX
MOVQ iters+64(FP), DX`)
	g.p("%s_loop:", name)
	g.ins(prefetch("SI"))
	for b := 0; b < 4; b++ {
		gi := b / bpg
		lo, hi := fmt.Sprintf("Z%d", 2+2*gi), fmt.Sprintf("Z%d", 3+2*gi)
		op := "VFMADD231PS"
		if b%bpg == 0 {
			op = "VMULPS" // the group's first block starts its sums
		}
		g.ins(fmt.Sprintf(`
VPMOVZXBD %[1]d(SI), Z12
VPSRLD $4, Z12, Z13
VPANDD Z31, Z12, Z12
VCVTDQ2PS Z12, Z12
VCVTDQ2PS Z13, Z13
%[2]s %[3]d(BX), Z12, %[4]s
%[2]s %[5]d(BX), Z13, %[6]s`, 16*b, op, 128*b, lo, 128*b+64, hi))
	}
	for gi := 0; gi < ng; gi++ {
		lo, hi := fmt.Sprintf("Z%d", 2+2*gi), fmt.Sprintf("Z%d", 3+2*gi)
		acc := "Z0"
		if gi%2 == 1 {
			acc = "Z24"
		}
		g.ins(fmt.Sprintf("VADDPS %s, %s, %s", hi, lo, lo))
		if f16 {
			g.ins(fmt.Sprintf("VPBROADCASTW %d(R8), Y20\nVCVTPH2PS Y20, Z20", 2*gi))
		} else {
			// each dword holds the bf16 twice: shifted, it is the float
			g.ins(fmt.Sprintf("VPBROADCASTW %d(R8), Z20\nVPSLLD $16, Z20, Z20", 2*gi))
		}
		g.ins(fmt.Sprintf("VFMADD231PS Z20, %s, %s", lo, acc))
	}
	g.ins(fmt.Sprintf(`
ADDQ $64, SI
ADDQ $512, BX
ADDQ $%d, R8
DECQ DX
JNZ %s_loop`, 2*ng, name))
	// bias term: 16 groups per step, then one at a time
	g.ins(`
MOVQ xsum+32(FP), R11
MOVQ groups+56(FP), AX`)
	g.p("%s_bias:", name)
	g.ins(fmt.Sprintf("CMPQ AX, $16\nJLT %s_tail", name))
	if f16 {
		g.ins("VCVTPH2PS (R9), Z21")
	} else {
		g.ins("VPMOVZXWD (R9), Z21\nVPSLLD $16, Z21, Z21")
	}
	g.ins(fmt.Sprintf(`
VFMADD231PS (R11), Z21, Z1
ADDQ $32, R9
ADDQ $64, R11
SUBQ $16, AX
JMP %s_bias`, name))
	g.p("%s_tail:", name)
	g.ins("VADDPS Z24, Z0, Z0\nVADDPS Z1, Z0, Z0")
	g.reduce(avx512, 0, 2)
	g.p("%s_one:", name)
	g.ins(fmt.Sprintf("TESTQ AX, AX\nJZ %s_done", name))
	g.ins(loadScalar("(R9)", "X7", f16))
	g.ins(fmt.Sprintf(`
VFMADD231SS (R11), X7, X0
ADDQ $2, R9
ADDQ $4, R11
DECQ AX
JMP %s_one`, name))
	g.p("%s_done:", name)
	g.ins(fmt.Sprintf(`
VMOVSS X0, (DI)
ADDQ $4, DI
DECQ R13
JNZ %s_row
VZEROUPPER
RET`, name))
	g.p("")
}

// quantI8 writes an int8-activation kernel (AVX-512 VNNI):
//
//	func qNI8GgsScale(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)
//
// The input is quantized per block of 32 to int8 (xq, with block scales
// expanded per dword lane in dv); each chunk of weights (128 elements for
// 4-bit, 64 for 8-bit) is multiplied by VPDPBUSD (unsigned weight levels
// times signed activations, 4 products per dword lane), converted to float,
// and scaled by dv·scale lane by lane; the bias term uses the exact float
// sums of x per group (xsum, padded to a multiple of 4 groups).
func (g *gen) quantI8(bits, gs int, f16, half bool) {
	sc := "BF16"
	if f16 {
		sc = "F16"
	}
	name := fmt.Sprintf("q%dI8G%d%s", bits, gs, sc)
	chunk, v, lanes := 128, "Z", 16
	switch {
	case bits == 8:
		chunk = 64
	case half: // 4-bit rows whose length is an odd multiple of 64: ymm
		name = fmt.Sprintf("q%dI8H%d%s", bits, gs, sc)
		chunk, v, lanes = 64, "Y", 8
	}
	per := lanes * gs / chunk // dword lanes per group
	groups := chunk / gs      // groups per chunk
	g.p("// func %s(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-72", name)
	g.ins(fmt.Sprintf(`
MOVQ w+0(FP), SI
MOVQ scales+8(FP), R8
MOVQ biases+16(FP), R9
MOVQ out+48(FP), DI
MOVQ rows+56(FP), R13
VPBROADCASTD nibbles<>(SB), Z31
VMOVDQU32 lanes%d<>(SB), Z30`, per))
	g.p("%s_row:", name)
	g.ins(`
VPXORD Z0, Z0, Z0
VXORPS X1, X1, X1
MOVQ xq+24(FP), BX
MOVQ dv+32(FP), R10
MOVQ xsum+40(FP), R11
MOVQ chunks+64(FP), DX`)
	// 4-bit rows in 128-element chunks run two chunks per iteration: one
	// load each of the pair's scales and biases, half the pointer updates,
	// and two accumulators, so the loop spends its instructions on the
	// dot products (the single-chunk loop below takes an odd last chunk).
	pair := bits == 4 && !half
	if pair {
		g.quantI8Pair(name, gs, f16, per)
	}
	g.p("%s_chunk:", name)
	g.ins(prefetch("SI"))
	r := func(i int) string { return fmt.Sprintf("%s%d", v, i) }
	if v == "Z" {
		g.ins("VPXORD Z2, Z2, Z2\nVMOVDQU64 (SI), Z4")
	} else {
		g.ins("VPXORD Y2, Y2, Y2\nVMOVDQU (SI), Y4")
	}
	if bits == 4 {
		g.ins(fmt.Sprintf(`
VPSRLW $4, %[1]s, %[2]s
VPANDD %[3]s, %[1]s, %[1]s
VPANDD %[3]s, %[2]s, %[2]s
VPDPBUSD (BX), %[1]s, %[4]s
VPDPBUSD %[5]d(BX), %[2]s, %[4]s`, r(4), r(5), r(31), r(2), chunk/2))
	} else {
		g.ins("VPDPBUSD (BX), Z4, Z2")
	}
	g.ins(fmt.Sprintf("VCVTDQ2PS %s, %s", r(2), r(2)))
	// scales and biases of this chunk's groups, as floats in X6 and X7
	load := func(src, x string) string {
		var mov string
		switch groups {
		case 1:
			mov = fmt.Sprintf("MOVWLZX %s, CX\nVMOVD CX, %s", src, x)
		case 2:
			mov = fmt.Sprintf("MOVL %s, CX\nVMOVD CX, %s", src, x)
		default:
			mov = fmt.Sprintf("MOVQ %s, CX\nVMOVQ CX, %s", src, x)
		}
		if f16 {
			return mov + fmt.Sprintf("\nVCVTPH2PS %s, %s", x, x)
		}
		return mov + fmt.Sprintf("\nVPMOVZXWD %s, %s\nVPSLLD $16, %s, %s", x, x, x, x)
	}
	g.ins(load("(R8)", "X6"))
	g.ins(fmt.Sprintf(`
VPERMPS %[1]s, %[2]s, %[1]s
VMULPS (R10), %[1]s, %[1]s
VFMADD231PS %[1]s, %[3]s, %[4]s`, r(6), r(30), r(2), r(0)))
	g.ins(load("(R9)", "X7"))
	g.ins(fmt.Sprintf(`
VFMADD231PS (R11), X7, X1
ADDQ $%d, SI
ADDQ $%d, BX
ADDQ $%d, R10
ADDQ $%d, R8
ADDQ $%d, R9
ADDQ $%d, R11
DECQ DX
JNZ %s_chunk`, chunk*bits/8, chunk, 4*lanes, 2*groups, 2*groups, 4*groups, name))
	g.p("%s_done:", name)
	if pair {
		g.ins("VADDPS Z8, Z0, Z0")
	}
	g.reduce(avx512, 0, 2)
	g.ins(`
VMOVHLPS X1, X1, X3
VADDPS X3, X1, X1
VMOVSHDUP X1, X3
VADDSS X3, X1, X1`)
	g.ins(fmt.Sprintf(`
VADDSS X1, X0, X0
VMOVSS X0, (DI)
ADDQ $4, DI
DECQ R13
JNZ %s_row
VZEROUPPER
RET`, name))
	g.p("")
}

// quantI8Pair writes the two-chunk loop of a 4-bit int8-activation kernel
// with 128-element chunks (quantI8): chunk pairs while DX ≥ 2, then, for
// an odd count, one pass of the single-chunk loop that follows it (which
// quantI8 writes after this), else the row's reduction. The second chunk
// accumulates into Z8, added to Z0 at the end.
func (g *gen) quantI8Pair(name string, gs int, f16 bool, per int) {
	groups := 2 * 128 / gs // groups per pair: 8, 4 or 2
	g.ins(fmt.Sprintf("VPXORD Z8, Z8, Z8\nVMOVDQU32 lanesHi%d<>(SB), Z29", per))
	g.p("%s_pair:", name)
	g.ins(fmt.Sprintf("CMPQ DX, $2\nJLT %s_odd", name))
	g.ins(prefetch("SI"))
	g.ins(fmt.Sprintf("PREFETCHT0 %d(SI)", prefetchAhead+64))
	g.ins(`
VPXORD Z2, Z2, Z2
VPXORD Z3, Z3, Z3
VMOVDQU64 (SI), Z4
VMOVDQU64 64(SI), Z9
VPSRLW $4, Z4, Z5
VPSRLW $4, Z9, Z10
VPANDD Z31, Z4, Z4
VPANDD Z31, Z5, Z5
VPANDD Z31, Z9, Z9
VPANDD Z31, Z10, Z10
VPDPBUSD (BX), Z4, Z2
VPDPBUSD 64(BX), Z5, Z2
VPDPBUSD 128(BX), Z9, Z3
VPDPBUSD 192(BX), Z10, Z3
VCVTDQ2PS Z2, Z2
VCVTDQ2PS Z3, Z3`)
	// the pair's scales (biases) as floats in X6 or Y6 (X7 or Y7): 16, 8
	// or 4 bytes, loaded without reading past them
	load := func(src string, reg int) string {
		x := fmt.Sprintf("X%d", reg)
		if groups == 8 {
			x = fmt.Sprintf("Y%d", reg)
		}
		switch {
		case groups == 2 && f16:
			return fmt.Sprintf("MOVL %s, CX\nVMOVD CX, %s\nVCVTPH2PS %s, %s", src, x, x, x)
		case groups == 2:
			return fmt.Sprintf("MOVL %s, CX\nVMOVD CX, %s\nVPMOVZXWD %s, %s\nVPSLLD $16, %s, %s", src, x, x, x, x, x)
		case f16:
			return fmt.Sprintf("VCVTPH2PS %s, %s", src, x)
		}
		return fmt.Sprintf("VPMOVZXWD %s, %s\nVPSLLD $16, %s, %s", src, x, x, x)
	}
	g.ins(load("(R8)", 6))
	g.ins(`
VPERMPS Z6, Z30, Z11
VPERMPS Z6, Z29, Z12
VMULPS (R10), Z11, Z11
VMULPS 64(R10), Z12, Z12
VFMADD231PS Z11, Z2, Z0
VFMADD231PS Z12, Z3, Z8`)
	g.ins(load("(R9)", 7))
	if groups == 8 {
		g.ins("VFMADD231PS (R11), Y7, Y1")
	} else {
		g.ins("VFMADD231PS (R11), X7, X1")
	}
	g.ins(fmt.Sprintf(`
ADDQ $128, SI
ADDQ $256, BX
ADDQ $128, R10
ADDQ $%d, R8
ADDQ $%d, R9
ADDQ $%d, R11
SUBQ $2, DX
JMP %s_pair`, 2*groups, 2*groups, 4*groups, name))
	g.p("%s_odd:", name)
	if groups == 8 {
		// the single-chunk loop's 128-bit bias FMA would clear Y1's top half
		g.ins("VEXTRACTF128 $1, Y1, X3\nVADDPS X3, X1, X1")
	}
	g.ins(fmt.Sprintf("TESTQ DX, DX\nJZ %s_done", name))
}

// quantI8AVX2 writes the AVX2 int8-activation kernel for 4-bit weights
// (no VNNI): the same arithmetic and layout as the 64-element-chunk VNNI
// kernel, with VPMADDUBSW (unsigned levels times signed activations, pairs
// summed to 16 bits: at most 2·15·127, no saturation) and VPMADDWD by ones
// in place of VPDPBUSD.
//
//	func q4I8HgsScaleAVX2(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)
func (g *gen) quantI8AVX2(gs int, f16 bool) {
	sc := "BF16"
	if f16 {
		sc = "F16"
	}
	name := fmt.Sprintf("q4I8H%d%sAVX2", gs, sc)
	groups := 64 / gs
	per := 8 * gs / 64
	g.p("// func %s(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-72", name)
	g.ins(fmt.Sprintf(`
MOVQ w+0(FP), SI
MOVQ scales+8(FP), R8
MOVQ biases+16(FP), R9
MOVQ out+48(FP), DI
MOVQ rows+56(FP), R13
VPBROADCASTD nibbles<>(SB), Y15
VPBROADCASTD ones16<>(SB), Y14
VMOVDQU lanes%d<>(SB), Y13`, per))
	g.p("%s_row:", name)
	g.ins(`
VPXOR Y0, Y0, Y0
VXORPS X1, X1, X1
MOVQ xq+24(FP), BX
MOVQ dv+32(FP), R10
MOVQ xsum+40(FP), R11
MOVQ chunks+64(FP), DX`)
	g.p("%s_chunk:", name)
	g.ins(prefetch("SI"))
	g.ins(`
VMOVDQU (SI), Y4
VPSRLW $4, Y4, Y5
VPAND Y15, Y4, Y4
VPAND Y15, Y5, Y5
VPMADDUBSW (BX), Y4, Y4
VPMADDUBSW 32(BX), Y5, Y5
VPADDW Y5, Y4, Y4
VPMADDWD Y14, Y4, Y2
VCVTDQ2PS Y2, Y2`)
	load := func(src, x string) string {
		mov := fmt.Sprintf("MOVWLZX %s, CX\nVMOVD CX, %s", src, x)
		if groups == 2 {
			mov = fmt.Sprintf("MOVL %s, CX\nVMOVD CX, %s", src, x)
		}
		if f16 {
			return mov + fmt.Sprintf("\nVCVTPH2PS %s, %s", x, x)
		}
		return mov + fmt.Sprintf("\nVPMOVZXWD %s, %s\nVPSLLD $16, %s, %s", x, x, x, x)
	}
	g.ins(load("(R8)", "X6"))
	g.ins(`
VPERMPS Y6, Y13, Y6
VMULPS (R10), Y6, Y6
VFMADD231PS Y6, Y2, Y0`)
	g.ins(load("(R9)", "X7"))
	g.ins(fmt.Sprintf(`
VFMADD231PS (R11), X7, X1
ADDQ $32, SI
ADDQ $64, BX
ADDQ $32, R10
ADDQ $%d, R8
ADDQ $%d, R9
ADDQ $%d, R11
DECQ DX
JNZ %s_chunk`, 2*groups, 2*groups, 4*groups, name))
	g.reduce(avx2, 0, 2)
	g.ins(`
VMOVHLPS X1, X1, X3
VADDPS X3, X1, X1
VMOVSHDUP X1, X3
VADDSS X3, X1, X1`)
	g.ins(fmt.Sprintf(`
VADDSS X1, X0, X0
VMOVSS X0, (DI)
ADDQ $4, DI
DECQ R13
JNZ %s_row
VZEROUPPER
RET`, name))
	g.p("")
}

// dense writes a dense matrix–vector kernel over whole vectors:
//
//	func denseDTISA(w *byte, x, out *float32, rows, blocks, rowBytes int)
//
// out[r] = Σ_{i < blocks·lanes} w[r,i]·x[i]; the caller adds the tail.
func (g *gen) dense(s isa, dt string) {
	name := fmt.Sprintf("dense%s%s", dt, s.name)
	z := s.r
	esz := 4
	if dt != "F32" {
		esz = 2
	}
	g.p("// func %s(w *byte, x, out *float32, rows, blocks, rowBytes int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	g.ins(`
MOVQ w+0(FP), SI
MOVQ x+8(FP), R10
MOVQ out+16(FP), DI
MOVQ rows+24(FP), R13
MOVQ blocks+32(FP), R12
MOVQ rowBytes+40(FP), R11`)
	g.p("%s_row:", name)
	g.ins(fmt.Sprintf(`
%[1]s %[2]s, %[2]s, %[2]s
%[1]s %[3]s, %[3]s, %[3]s
MOVQ SI, R8
MOVQ R10, BX
MOVQ R12, DX`, s.zero, z(0), z(1)))
	g.p("%s_loop:", name)
	// one vector per iteration, alternating accumulators via a 2-step unroll
	load := func(off int, r string) string {
		switch dt {
		case "BF16":
			return fmt.Sprintf("VPMOVZXWD %d(R8), %s\nVPSLLD $16, %s, %s", off, r, r, r)
		case "F16":
			return fmt.Sprintf("VCVTPH2PS %d(R8), %s", off, r)
		}
		return fmt.Sprintf("VMOVUPS %d(R8), %s", off, r)
	}
	vb := s.lanes * esz
	g.ins(fmt.Sprintf("CMPQ DX, $2\nJLT %s_one", name))
	g.ins(load(0, z(4)))
	g.ins(load(vb, z(5)))
	g.ins(fmt.Sprintf(`
VFMADD231PS (BX), %[1]s, %[3]s
VFMADD231PS %[5]d(BX), %[2]s, %[4]s
ADDQ $%[6]d, R8
ADDQ $%[7]d, BX
SUBQ $2, DX
JMP %[8]s_loop`, z(4), z(5), z(0), z(1), s.lanes*4, 2*vb, 2*s.lanes*4, name))
	g.p("%s_one:", name)
	g.ins(fmt.Sprintf("TESTQ DX, DX\nJZ %s_done", name))
	g.ins(load(0, z(4)))
	g.ins(fmt.Sprintf("VFMADD231PS (BX), %s, %s", z(4), z(0)))
	g.p("%s_done:", name)
	g.ins(fmt.Sprintf("VADDPS %s, %s, %s", z(1), z(0), z(0)))
	g.reduce(s, 0, 2)
	g.ins(fmt.Sprintf(`
VMOVSS X0, (DI)
ADDQ $4, DI
ADDQ R11, SI
DECQ R13
JNZ %s_row
VZEROUPPER
RET`, name))
	g.p("")
}

// quantWideRows writes quantWide for n input rows at once:
//
//	func q4W{gs}{Scale}AVX512x{n}(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters, xstride, sumstride, outstride int)
//
// Each block of weights is unpacked once and multiplied into every input
// row (x, xsum and out rows are xstride, sumstride and outstride bytes
// apart), which is what a batched decode step wants: one pass of
// unpacking for several sequences. Per input row it does quantWide's
// operations in quantWide's order, so each output is bit for bit the
// one-row kernel's; only the registers differ. A group's sums are folded
// into the row's totals as soon as its last block is in rather than at
// the end of the iteration, which keeps two registers per row live
// instead of two per group.
//
// Registers: totals Z0+j (even groups) and Z4+j (odd groups), group sums
// Z8+j and Z12+j, bias sums Z16+j; weights Z24/Z25, scale Z26, biases
// Z27, reduction Z28, nibble mask Z31. x rows: BX, BX+R14, CX, CX+R14.
func (g *gen) quantWideRows(gs int, f16 bool, n int) {
	sc := "BF16"
	if f16 {
		sc = "F16"
	}
	name := fmt.Sprintf("q4W%d%sAVX512x%d", gs, sc, n)
	ng := 128 / gs
	bpg := gs / 32
	g.p("// func %s(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters, xstride, sumstride, outstride int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-96", name)
	g.ins(`
MOVQ w+0(FP), SI
MOVQ scales+8(FP), R8
MOVQ biases+16(FP), R9
MOVQ x+24(FP), R10
MOVQ out+40(FP), DI
MOVQ rows+48(FP), R13
MOVQ xstride+72(FP), R14
MOVQ sumstride+80(FP), R12
VPBROADCASTD nibble<>(SB), Z31`)
	g.p("%s_row:", name)
	for j := 0; j < n; j++ {
		g.ins(fmt.Sprintf("VPXORD Z%[1]d, Z%[1]d, Z%[1]d\nVPXORD Z%[2]d, Z%[2]d, Z%[2]d\nVPXORD Z%[3]d, Z%[3]d, Z%[3]d", j, 4+j, 16+j))
	}
	g.ins(`
MOVQ R10, BX
LEAQ (R10)(R14*2), CX
MOVQ iters+64(FP), DX`)
	g.p("%s_loop:", name)
	g.ins(prefetch("SI"))
	for b := 0; b < 4; b++ {
		gi := b / bpg
		op := "VFMADD231PS"
		if b%bpg == 0 {
			op = "VMULPS"
		}
		g.ins(fmt.Sprintf(`
VPMOVZXBD %d(SI), Z24
VPSRLD $4, Z24, Z25
VPANDD Z31, Z24, Z24
VCVTDQ2PS Z24, Z24
VCVTDQ2PS Z25, Z25`, 16*b))
		for j := 0; j < n; j++ {
			g.ins(fmt.Sprintf("%s %s, Z24, Z%d\n%s %s, Z25, Z%d",
				op, rowAt(j, 128*b, "BX", "CX", "R14"), 8+j, op, rowAt(j, 128*b+64, "BX", "CX", "R14"), 12+j))
		}
		if (b+1)%bpg != 0 {
			continue
		}
		// the group is in: fold it into the totals, as quantWide does
		if f16 {
			g.ins(fmt.Sprintf("VPBROADCASTW %d(R8), Y26\nVCVTPH2PS Y26, Z26", 2*gi))
		} else {
			g.ins(fmt.Sprintf("VPBROADCASTW %d(R8), Z26\nVPSLLD $16, Z26, Z26", 2*gi))
		}
		for j := 0; j < n; j++ {
			acc := j
			if gi%2 == 1 {
				acc = 4 + j
			}
			g.ins(fmt.Sprintf("VADDPS Z%[2]d, Z%[1]d, Z%[1]d\nVFMADD231PS Z26, Z%[1]d, Z%[3]d", 8+j, 12+j, acc))
		}
	}
	g.ins(fmt.Sprintf(`
ADDQ $64, SI
ADDQ $512, BX
ADDQ $512, CX
ADDQ $%d, R8
DECQ DX
JNZ %s_loop`, 2*ng, name))
	// bias term: 16 groups per step, then one at a time; xsum rows R11,
	// R11+R12, BX, BX+R12
	g.ins(`
MOVQ xsum+32(FP), R11
LEAQ (R11)(R12*2), BX
MOVQ groups+56(FP), AX`)
	g.p("%s_bias:", name)
	g.ins(fmt.Sprintf("CMPQ AX, $16\nJLT %s_tail", name))
	if f16 {
		g.ins("VCVTPH2PS (R9), Z27")
	} else {
		g.ins("VPMOVZXWD (R9), Z27\nVPSLLD $16, Z27, Z27")
	}
	for j := 0; j < n; j++ {
		g.ins(fmt.Sprintf("VFMADD231PS %s, Z27, Z%d", rowAt(j, 0, "R11", "BX", "R12"), 16+j))
	}
	g.ins(fmt.Sprintf(`
ADDQ $32, R9
ADDQ $64, R11
ADDQ $64, BX
SUBQ $16, AX
JMP %s_bias`, name))
	g.p("%s_tail:", name)
	for j := 0; j < n; j++ {
		g.ins(fmt.Sprintf("VADDPS Z%[2]d, Z%[1]d, Z%[1]d\nVADDPS Z%[3]d, Z%[1]d, Z%[1]d", j, 4+j, 16+j))
		g.reduce(avx512, j, 9) // the group sums are dead here
	}
	g.p("%s_one:", name)
	g.ins(fmt.Sprintf("TESTQ AX, AX\nJZ %s_done", name))
	g.ins(loadScalar("(R9)", "X8", f16))
	for j := 0; j < n; j++ {
		g.ins(fmt.Sprintf("VFMADD231SS %s, X8, X%d", rowAt(j, 0, "R11", "BX", "R12"), j))
	}
	g.ins(fmt.Sprintf(`
ADDQ $2, R9
ADDQ $4, R11
ADDQ $4, BX
DECQ AX
JMP %s_one`, name))
	g.p("%s_done:", name)
	g.ins("MOVQ outstride+88(FP), DX\nLEAQ (DI)(DX*2), CX")
	for j := 0; j < n; j++ {
		g.ins(fmt.Sprintf("VMOVSS X%d, %s", j, rowAt(j, 0, "DI", "CX", "DX")))
	}
	g.ins(fmt.Sprintf(`
ADDQ $4, DI
DECQ R13
JNZ %s_row
VZEROUPPER
RET`, name))
	g.p("")
}

// quantRows writes quant for n input rows at once:
//
//	func q{bits}{Scale}{ISA}x{n}(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks, xstride, sumstride, outstride int)
//
// as quantWideRows does for quantWide: each block of weights unpacked
// once for every input row (rows xstride, sumstride and outstride bytes
// apart), each row's sums formed in quant's order so that its output is
// bit for bit quant's. The bias term, an accumulator of its own in quant,
// is summed after the row's weights, in the same group order. The weight
// row count lives in its argument slot, to leave a register for the
// second pair of x rows.
//
// Registers: totals 0..n-1, group sums n+2j and n+2j+1 (bias sums reuse
// n+2j once the weights are done), weights from 4n (the first also takes
// the scale, the second the bias), nibble mask 15 (Z31 on AVX-512). x
// rows: BX, BX+R14, R13, R13+R14.
func (g *gen) quantRows(s isa, bits int, f16 bool, n int) {
	sc := "BF16"
	if f16 {
		sc = "F16"
	}
	name := fmt.Sprintf("q%d%s%sx%d", bits, sc, s.name, n)
	z := s.r
	tot := func(j int) int { return j }
	acc := func(j, half int) int { return n + 2*j + half }
	w0 := 4 * n
	mask := s.r(15)
	if s.name == "AVX512" {
		mask = "Z31"
	}
	g.p("// func %s(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks, xstride, sumstride, outstride int)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-96", name)
	g.ins(`
MOVQ w+0(FP), SI
MOVQ scales+8(FP), R8
MOVQ biases+16(FP), R9
MOVQ x+24(FP), R10
MOVQ out+40(FP), DI
MOVQ groups+56(FP), R12
MOVQ xstride+72(FP), R14`)
	g.ins(fmt.Sprintf("VPBROADCASTD nibble<>(SB), %s", mask))
	g.p("%s_row:", name)
	for j := 0; j < n; j++ {
		g.ins(fmt.Sprintf("%[1]s %[2]s, %[2]s, %[2]s", s.zero, z(tot(j))))
	}
	g.ins(`
MOVQ R10, BX
LEAQ (R10)(R14*2), R13
XORQ AX, AX`)
	g.p("%s_group:", name)
	g.ins(prefetch("SI"))
	for j := 0; j < n; j++ {
		g.ins(fmt.Sprintf("%[1]s %[2]s, %[2]s, %[2]s\n%[1]s %[3]s, %[3]s, %[3]s", s.zero, z(acc(j, 0)), z(acc(j, 1))))
	}
	g.ins("MOVQ blocks+64(FP), DX")
	g.p("%s_block:", name)
	// one block of 32 weights: unpack, then quant's multiply-adds (x
	// offset, weight register, which of the two group sums) for each row
	type fma struct{ off, w, half int }
	var fmas []fma
	vb := s.lanes * 4
	switch {
	case bits == 4 && s.name == "AVX512":
		g.ins(fmt.Sprintf(`
VPMOVZXBD (SI), %[1]s
VPSRLD $4, %[1]s, %[2]s
VPANDD %[3]s, %[1]s, %[1]s
VCVTDQ2PS %[1]s, %[1]s
VCVTDQ2PS %[2]s, %[2]s
ADDQ $16, SI`, z(w0), z(w0+1), mask))
		fmas = []fma{{0, w0, 0}, {64, w0 + 1, 1}}
	case bits == 4:
		g.ins(fmt.Sprintf(`
VPMOVZXBD (SI), %[1]s
VPMOVZXBD 8(SI), %[3]s
VPSRLD $4, %[1]s, %[2]s
VPSRLD $4, %[3]s, %[4]s
VPAND %[5]s, %[1]s, %[1]s
VPAND %[5]s, %[3]s, %[3]s
VCVTDQ2PS %[1]s, %[1]s
VCVTDQ2PS %[2]s, %[2]s
VCVTDQ2PS %[3]s, %[3]s
VCVTDQ2PS %[4]s, %[4]s
ADDQ $16, SI`, z(w0), z(w0+1), z(w0+2), z(w0+3), mask))
		fmas = []fma{{0, w0, 0}, {32, w0 + 1, 1}, {64, w0 + 2, 0}, {96, w0 + 3, 1}}
	default: // 8-bit: 32 bytes, 32 elements, in order
		per := s.lanes
		for i := 0; i < 32/per; i++ {
			r := z(w0 + i)
			g.ins(fmt.Sprintf("VPMOVZXBD %d(SI), %s\nVCVTDQ2PS %s, %s", i*per, r, r, r))
			fmas = append(fmas, fma{i * vb, w0 + i, i % 2})
		}
		g.ins("ADDQ $32, SI")
	}
	for j := 0; j < n; j++ {
		for _, f := range fmas {
			g.ins(fmt.Sprintf("VFMADD231PS %s, %s, %s", rowAt(j, f.off, "BX", "R13", "R14"), z(f.w), z(acc(j, f.half))))
		}
	}
	g.ins(fmt.Sprintf(`
ADDQ $128, BX
ADDQ $128, R13
DECQ DX
JNZ %s_block`, name))
	// end of group: total += (sum0+sum1)·scale
	g.ins(loadScalar("(R8)", fmt.Sprintf("X%d", w0), f16))
	g.ins(fmt.Sprintf("VBROADCASTSS X%d, %s", w0, z(w0)))
	for j := 0; j < n; j++ {
		g.ins(fmt.Sprintf("VADDPS %[2]s, %[1]s, %[1]s\nVFMADD231PS %[3]s, %[1]s, %[4]s", z(acc(j, 0)), z(acc(j, 1)), z(w0), z(tot(j))))
	}
	g.ins(fmt.Sprintf(`
ADDQ $2, R8
INCQ AX
CMPQ AX, R12
JLT %s_group`, name))
	// bias term: bias·xsum[g] in group order; xsum rows R11, R11+DX, BX,
	// BX+DX
	g.ins(`
MOVQ xsum+32(FP), R11
MOVQ sumstride+80(FP), DX
LEAQ (R11)(DX*2), BX
MOVQ R12, AX`)
	for j := 0; j < n; j++ {
		g.ins(fmt.Sprintf("VXORPS X%[1]d, X%[1]d, X%[1]d", acc(j, 0)))
	}
	g.p("%s_bias:", name)
	g.ins(loadScalar("(R9)", fmt.Sprintf("X%d", w0+1), f16))
	for j := 0; j < n; j++ {
		g.ins(fmt.Sprintf("VFMADD231SS %s, X%d, X%d", rowAt(j, 0, "R11", "BX", "DX"), w0+1, acc(j, 0)))
	}
	g.ins(fmt.Sprintf(`
ADDQ $2, R9
ADDQ $4, R11
ADDQ $4, BX
DECQ AX
JNZ %s_bias`, name))
	for j := 0; j < n; j++ {
		g.reduce(s, tot(j), acc(j, 1)) // a low register: VEX reaches only 16
		g.ins(fmt.Sprintf("VADDSS X%[2]d, X%[1]d, X%[1]d", tot(j), acc(j, 0)))
	}
	g.ins("MOVQ outstride+88(FP), DX\nLEAQ (DI)(DX*2), CX")
	for j := 0; j < n; j++ {
		g.ins(fmt.Sprintf("VMOVSS X%d, %s", tot(j), rowAt(j, 0, "DI", "CX", "DX")))
	}
	g.ins(fmt.Sprintf(`
ADDQ $4, DI
DECQ rows+48(FP)
JNZ %s_row
VZEROUPPER
RET`, name))
	g.p("")
}

// rowAt is input row j's operand at byte offset off, rows 0 and 1 from
// base b0, rows 2 and 3 from b2, odd rows stride further on.
func rowAt(j, off int, b0, b2, stride string) string {
	base := b0
	if j >= 2 {
		base = b2
	}
	if j%2 == 1 {
		return fmt.Sprintf("%d(%s)(%s*1)", off, base, stride)
	}
	return fmt.Sprintf("%d(%s)", off, base)
}
