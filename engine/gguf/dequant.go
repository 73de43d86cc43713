package gguf

import (
	"encoding/binary"
	"fmt"
	"math"

	"hearth/engine/tensor"
)

// Dequantize decodes n values of type t from data, as ggml's
// dequantize_row_* functions (ggml-quants.c) do, in float32 with each
// product rounded before the next operation (the explicit float32
// conversions keep the compiler from fusing them). It defines what a GGUF
// tensor means to Hearth: the repacked weights and the tests are held to
// it.
func Dequantize(t GGMLType, data []byte, n int) ([]float32, error) {
	bt, ok := t.block()
	if !ok || t == F64 || t == I8 || t == I16 || t == I32 || t == I64 {
		return nil, fmt.Errorf("dequantize %s: not a weight type", t)
	}
	if n%bt.elems != 0 || len(data) < n/bt.elems*bt.bytes {
		return nil, fmt.Errorf("dequantize %s: %d values need %d bytes in blocks of %d, have %d", t, n, n/bt.elems*bt.bytes, bt.elems, len(data))
	}
	y := make([]float32, n)
	for b := range n / bt.elems {
		decodeBlock(t, data[b*bt.bytes:(b+1)*bt.bytes], y[b*bt.elems:(b+1)*bt.elems])
	}
	return y, nil
}

func half(b []byte) float32 { return tensor.HalfToFloat(binary.LittleEndian.Uint16(b)) }

// mulSub is d*q - m with the product rounded to float32 first.
func mulSub(d, q, m float32) float32 { return float32(d*q) - m }

func decodeBlock(t GGMLType, x []byte, y []float32) {
	switch t {
	case F32:
		y[0] = math.Float32frombits(binary.LittleEndian.Uint32(x))
	case F16:
		y[0] = half(x)
	case BF16:
		y[0] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(x)) << 16)
	case Q4_0, Q4_1:
		d, m, qs := half(x), float32(0), x[2:]
		if t == Q4_1 {
			m, qs = half(x[2:]), x[4:]
		}
		for j := range 16 {
			lo, hi := float32(qs[j]&0xf), float32(qs[j]>>4)
			if t == Q4_0 {
				y[j], y[j+16] = float32((lo-8)*d), float32((hi-8)*d)
			} else {
				y[j], y[j+16] = float32(lo*d)+m, float32(hi*d)+m
			}
		}
	case Q5_0, Q5_1:
		d, m, rest := half(x), float32(0), x[2:]
		if t == Q5_1 {
			m, rest = half(x[2:]), x[4:]
		}
		qh, qs := binary.LittleEndian.Uint32(rest), rest[4:]
		for j := range 16 {
			x0 := uint32(qs[j]&0xf) | (qh>>j)<<4&0x10
			x1 := uint32(qs[j]>>4) | qh>>(j+12)&0x10
			if t == Q5_0 {
				y[j], y[j+16] = float32(float32(int32(x0)-16)*d), float32(float32(int32(x1)-16)*d)
			} else {
				y[j], y[j+16] = float32(float32(x0)*d)+m, float32(float32(x1)*d)+m
			}
		}
	case Q8_0, Q8_1:
		d, qs := half(x), x[2:]
		if t == Q8_1 {
			qs = x[4:]
		}
		for j := range 32 {
			y[j] = float32(float32(int8(qs[j])) * d)
		}
	case Q2_K:
		scales, q := x[:16], x[16:80]
		d, dmin := half(x[80:]), half(x[82:])
		is, out := 0, 0
		for n := 0; n < qkK; n += 128 {
			for shift := 0; shift < 8; shift += 2 {
				for h := range 2 {
					sc := scales[is]
					is++
					dl, ml := float32(d*float32(sc&0xf)), float32(dmin*float32(sc>>4))
					for l := range 16 {
						y[out] = mulSub(dl, float32(q[l+16*h]>>shift&3), ml)
						out++
					}
				}
			}
			q = q[32:]
		}
	case Q3_K:
		hm, q, d := x[:32], x[32:96], half(x[108:])
		sc := q3kScales(x[96:108])
		is, out, m := 0, 0, byte(1)
		for n := 0; n < qkK; n += 128 {
			for shift := 0; shift < 8; shift += 2 {
				for h := range 2 {
					dl := float32(d * float32(sc[is]-32))
					is++
					for l := range 16 {
						v := int32(q[l+16*h] >> shift & 3)
						if hm[l+16*h]&m == 0 {
							v -= 4
						}
						y[out] = float32(dl * float32(v))
						out++
					}
				}
				m <<= 1
			}
			q = q[32:]
		}
	case Q4_K, Q5_K:
		d, dmin, scales := half(x), half(x[2:]), x[4:16]
		ql, qh := x[16:], []byte(nil)
		if t == Q5_K {
			qh, ql = x[16:48], x[48:]
		}
		out := 0
		u1, u2 := byte(1), byte(2)
		for j, is := 0, 0; j < qkK; j, is = j+64, is+2 {
			s1, m1 := scaleMinK4(is, scales)
			s2, m2 := scaleMinK4(is+1, scales)
			d1, mm1 := float32(d*float32(s1)), float32(dmin*float32(m1))
			d2, mm2 := float32(d*float32(s2)), float32(dmin*float32(m2))
			for l := range 32 {
				v := ql[l] & 0xf
				if qh != nil && qh[l]&u1 != 0 {
					v += 16
				}
				y[out] = mulSub(d1, float32(v), mm1)
				out++
			}
			for l := range 32 {
				v := ql[l] >> 4
				if qh != nil && qh[l]&u2 != 0 {
					v += 16
				}
				y[out] = mulSub(d2, float32(v), mm2)
				out++
			}
			ql = ql[32:]
			u1, u2 = u1<<2, u2<<2
		}
	case Q6_K:
		ql, qh, sc, d := x[:128], x[128:192], x[192:208], half(x[208:])
		for n := 0; n < qkK; n += 128 {
			for l := range 32 {
				is := l / 16
				q1 := int32(ql[l]&0xf|(qh[l]>>0&3)<<4) - 32
				q2 := int32(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
				q3 := int32(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int32(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				y[n+l] = float32(float32(d*float32(int8(sc[is]))) * float32(q1))
				y[n+l+32] = float32(float32(d*float32(int8(sc[is+2]))) * float32(q2))
				y[n+l+64] = float32(float32(d*float32(int8(sc[is+4]))) * float32(q3))
				y[n+l+96] = float32(float32(d*float32(int8(sc[is+6]))) * float32(q4))
			}
			ql, qh, sc = ql[64:], qh[32:], sc[8:]
		}
	case Q8_K:
		d := math.Float32frombits(binary.LittleEndian.Uint32(x))
		for j := range qkK {
			y[j] = float32(d * float32(int8(x[4+j])))
		}
	}
}

// scaleMinK4 unpacks sub-block j's 6-bit scale and min of a Q4_K/Q5_K
// block (ggml's get_scale_min_k4).
func scaleMinK4(j int, q []byte) (d, m byte) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// q3kScales unpacks a Q3_K block's sixteen 6-bit scales (stored biased by
// 32) as ggml's dequantize_row_q3_K does.
func q3kScales(s []byte) [16]int8 {
	const kmask1, kmask2 = 0x03030303, 0x0f0f0f0f
	var aux [4]uint32
	for i := range 3 {
		aux[i] = binary.LittleEndian.Uint32(s[4*i:])
	}
	tmp := aux[2]
	aux[2] = (aux[0]>>4)&kmask2 | ((tmp>>4)&kmask1)<<4
	aux[3] = (aux[1]>>4)&kmask2 | ((tmp>>6)&kmask1)<<4
	aux[0] = aux[0]&kmask2 | ((tmp>>0)&kmask1)<<4
	aux[1] = aux[1]&kmask2 | ((tmp>>2)&kmask1)<<4
	var out [16]int8
	for i := range 16 {
		out[i] = int8(aux[i/4] >> (8 * (i % 4)))
	}
	return out
}
