package gguf

import (
	"encoding/binary"
	"fmt"

	"hearth/engine/tensor"
	"hearth/engine/weights"
)

// affineQuant are the GGUF types whose values are code·scale + bias over
// groups (one scale and bias each), so that they convert exactly to the
// MLX affine layout Hearth's matrix kernels take: groups of 32, and of 16
// for the k-quants whose 16-value sub-blocks each have a scale (Q2_K,
// Q3_K, Q6_K; weights.checkQuant allows that group for them).
var affineQuant = map[GGMLType]tensor.Quant{
	Q4_0: {Bits: 4, GroupSize: 32}, Q4_1: {Bits: 4, GroupSize: 32},
	Q5_0: {Bits: 5, GroupSize: 32}, Q5_1: {Bits: 5, GroupSize: 32},
	Q8_0: {Bits: 8, GroupSize: 32},
	Q4_K: {Bits: 4, GroupSize: 32}, Q5_K: {Bits: 5, GroupSize: 32},
	Q2_K: {Bits: 2, GroupSize: 16}, Q3_K: {Bits: 3, GroupSize: 16}, Q6_K: {Bits: 6, GroupSize: 16},
}

// Affine converts a GGUF tensor of rows rows of cols values (Dims
// [cols, rows]) to Hearth's MLX affine form (affineQuant), exactly: every
// value tensor.Weight.DecodeRow gives equals Dequantize's (a zero may
// lose its sign, which no product or sum can see). Scales and biases are
// F16 when every one is a half float (the legacy types), F32 otherwise
// (the k-quants' sub-block products).
func Affine(t GGMLType, data []byte, rows, cols int) (tensor.Weight, error) {
	q, ok := affineQuant[t]
	if !ok {
		return tensor.Weight{}, fmt.Errorf("gguf: %s has no exact affine form", t)
	}
	bt := blocks[t]
	if rows <= 0 || cols <= 0 || cols%bt.elems != 0 {
		return tensor.Weight{}, fmt.Errorf("gguf: %s [%d rows, %d cols]: a row must be whole blocks of %d", t, rows, cols, bt.elems)
	}
	rowBytes := cols / bt.elems * bt.bytes
	if len(data) != rows*rowBytes {
		return tensor.Weight{}, fmt.Errorf("gguf: %s [%d rows, %d cols] needs %d bytes, have %d", t, rows, cols, rows*rowBytes, len(data))
	}
	groups := cols / q.GroupSize
	scales := make([]float32, rows*groups)
	biases := make([]float32, rows*groups)
	codes := make([]uint8, rows*cols)
	for r := range rows {
		for b := range cols / bt.elems {
			blk := data[r*rowBytes+b*bt.bytes : r*rowBytes+(b+1)*bt.bytes]
			g0 := r*groups + b*bt.elems/q.GroupSize
			affineBlock(t, blk, codes[r*cols+b*bt.elems:], scales[g0:], biases[g0:])
		}
	}
	dt := tensor.F16
	for i := range scales {
		if !isHalf(scales[i]) || !isHalf(biases[i]) {
			dt = tensor.F32
			break
		}
	}
	w := weights.NewAffine(rows, cols, q, dt)
	for r := range rows {
		for c := range cols {
			w.Put(r, c, codes[r*cols+c])
		}
		for g := range groups {
			w.SetGroup(r, g, scales[r*groups+g], biases[r*groups+g])
		}
	}
	return w.Weight, nil
}

func isHalf(x float32) bool { return tensor.HalfToFloat(tensor.FloatToHalf(x)) == x }

// affineBlock writes one block's codes and, per group, its scale and bias
// (value = float32(scale·code) + bias, as Dequantize computes it).
func affineBlock(t GGMLType, x []byte, codes []uint8, scales, biases []float32) {
	switch t {
	case Q8_0:
		d := half(x)
		for j := range 32 {
			codes[j] = uint8(int8(x[2+j])) + 128 // q+128, mod 256
		}
		scales[0], biases[0] = d, -128*d
	case Q4_0, Q4_1, Q5_0, Q5_1:
		d, qs := half(x), x[2:]
		var bias float32
		switch t {
		case Q4_0:
			bias = -8 * d
		case Q5_0:
			bias = -16 * d
		default:
			bias, qs = half(x[2:]), x[4:]
		}
		var qh uint32
		if t == Q5_0 || t == Q5_1 {
			qh, qs = binary.LittleEndian.Uint32(qs), qs[4:]
		}
		for j := range 16 {
			codes[j] = qs[j]&0xf | uint8((qh>>j)<<4&0x10)
			codes[j+16] = qs[j]>>4 | uint8(qh>>(j+12)&0x10)
		}
		scales[0], biases[0] = d, bias
	case Q4_K, Q5_K:
		d, dmin, sc := half(x), half(x[2:]), x[4:16]
		ql, qh := x[16:], []byte(nil)
		if t == Q5_K {
			qh, ql = x[16:48], x[48:]
		}
		for c := range 4 { // 64-value chunks: low nibbles, then high
			for h := range 2 {
				g := 2*c + h
				s, m := scaleMinK4(g, sc)
				scales[g], biases[g] = float32(d*float32(s)), -float32(dmin*float32(m))
				for l := range 32 {
					v := ql[32*c+l] >> (4 * h) & 0xf
					if qh != nil && qh[l]>>g&1 != 0 {
						v += 16
					}
					codes[32*g+l] = v
				}
			}
		}
	case Q6_K:
		// value = (d·sc)·(u-32) with u the 6-bit level: d·sc has at most
		// 18 significant bits and u 6, so u·(d·sc) and its sum with
		// -32·(d·sc) are exact, and equal the rounded product
		ql, qh, sc, d := x[:128], x[128:192], x[192:208], half(x[208:])
		for n := 0; n < qkK; n += 128 {
			for l := range 32 {
				codes[n+l] = ql[l]&0xf | (qh[l]>>0&3)<<4
				codes[n+l+32] = ql[l+32]&0xf | (qh[l]>>2&3)<<4
				codes[n+l+64] = ql[l]>>4 | (qh[l]>>4&3)<<4
				codes[n+l+96] = ql[l+32]>>4 | (qh[l]>>6&3)<<4
			}
			ql, qh = ql[64:], qh[32:]
		}
		for g := range 16 { // element e = n+l+32k takes sc[8·n/128 + 2k + l/16] = sc[e/16]
			s := float32(d * float32(int8(sc[g])))
			scales[g], biases[g] = s, -32*s
		}
	case Q3_K:
		// value = (d·(sc-32))·v with v = level-4 (the high bit clear
		// subtracts 4): 17 significant bits times 3, exact as above
		hm, q, d := x[:32], x[32:96], half(x[108:])
		sc := q3kScales(x[96:108])
		is, out, m := 0, 0, byte(1)
		for n := 0; n < qkK; n += 128 {
			for shift := 0; shift < 8; shift += 2 {
				for h := range 2 {
					s := float32(d * float32(sc[is]-32))
					scales[is], biases[is] = s, -4*s
					is++
					for l := range 16 {
						v := q[l+16*h] >> shift & 3
						if hm[l+16*h]&m != 0 {
							v += 4
						}
						codes[out] = v
						out++
					}
				}
				m <<= 1
			}
			q = q[32:]
		}
	case Q2_K:
		// value = float32(dl·q) - ml: the affine form itself
		sc, q := x[:16], x[16:80]
		d, dmin := half(x[80:]), half(x[82:])
		is, out := 0, 0
		for n := 0; n < qkK; n += 128 {
			for shift := 0; shift < 8; shift += 2 {
				for h := range 2 {
					scales[is] = float32(d * float32(sc[is]&0xf))
					biases[is] = -float32(dmin * float32(sc[is]>>4))
					is++
					for l := range 16 {
						codes[out] = q[l+16*h] >> shift & 3
						out++
					}
				}
			}
			q = q[32:]
		}
	}
}
