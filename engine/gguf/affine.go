package gguf

import (
	"encoding/binary"
	"fmt"

	"hearth/engine/tensor"
	"hearth/engine/weights"
)

// affineBits are the GGUF types whose values are code·scale + bias over
// groups of 32 (one scale and bias each), so that they convert exactly to
// the MLX affine layout Hearth's matrix kernels already take.
var affineBits = map[GGMLType]int{Q4_0: 4, Q4_1: 4, Q5_0: 5, Q5_1: 5, Q8_0: 8, Q4_K: 4, Q5_K: 5}

// Affine converts a GGUF tensor of rows rows of cols values (Dims
// [cols, rows]) to Hearth's MLX affine form with groups of 32, exactly:
// every value tensor.Weight.DecodeRow gives equals Dequantize's (a zero
// may lose its sign, which no product or sum can see). Scales
// and biases are F16 when every one is a half float (the legacy types),
// F32 otherwise (the k-quants' sub-block products).
//
// Q2_K, Q3_K and Q6_K have sub-blocks of 16 values; they have no exact
// form with groups of 32 and are not converted here.
func Affine(t GGMLType, data []byte, rows, cols int) (tensor.Weight, error) {
	bits, ok := affineBits[t]
	if !ok {
		return tensor.Weight{}, fmt.Errorf("gguf: %s has no exact affine form with groups of 32", t)
	}
	bt := blocks[t]
	if rows <= 0 || cols <= 0 || cols%bt.elems != 0 {
		return tensor.Weight{}, fmt.Errorf("gguf: %s [%d rows, %d cols]: a row must be whole blocks of %d", t, rows, cols, bt.elems)
	}
	rowBytes := cols / bt.elems * bt.bytes
	if len(data) != rows*rowBytes {
		return tensor.Weight{}, fmt.Errorf("gguf: %s [%d rows, %d cols] needs %d bytes, have %d", t, rows, cols, rows*rowBytes, len(data))
	}
	groups := cols / 32
	scales := make([]float32, rows*groups)
	biases := make([]float32, rows*groups)
	codes := make([]uint8, rows*cols)
	for r := range rows {
		for b := range cols / bt.elems {
			blk := data[r*rowBytes+b*bt.bytes : r*rowBytes+(b+1)*bt.bytes]
			g0 := r*groups + b*bt.elems/32
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
	w := weights.NewAffine(rows, cols, tensor.Quant{Bits: bits, GroupSize: 32}, dt)
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

// affineBlock writes one block's codes and, per group of 32, its scale and
// bias (value = float32(scale·code) + bias, as Dequantize computes it).
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
	}
}
