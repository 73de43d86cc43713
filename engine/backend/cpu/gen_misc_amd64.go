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
