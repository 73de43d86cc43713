package cpu

import (
	"encoding/binary"
	"math"

	"hearth/engine/tensor"
)

// The pure-Go kernels: the fallback on every CPU and the baseline the
// SIMD sets are benchmarked against.

// dotGo is a float32 dot product with eight partial sums, which keeps the
// rounding error close to a blocked SIMD kernel's.
func dotGo(a, b []float32) float32 {
	var s [8]float32
	n := len(a)
	b = b[:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		s[0] += a[i] * b[i]
		s[1] += a[i+1] * b[i+1]
		s[2] += a[i+2] * b[i+2]
		s[3] += a[i+3] * b[i+3]
		s[4] += a[i+4] * b[i+4]
		s[5] += a[i+5] * b[i+5]
		s[6] += a[i+6] * b[i+6]
		s[7] += a[i+7] * b[i+7]
	}
	for ; i < n; i++ {
		s[0] += a[i] * b[i]
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}

// axpyGo is y += alpha·x.
func axpyGo(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// denseGo decodes each row in blocks and dots it with x.
func denseGo(a dargs) {
	var buf [256]float32
	esz := 4
	if a.dt != dtF32 {
		esz = 2
	}
	for r := 0; r < a.rows; r++ {
		row := a.w[r*a.cols*esz : (r+1)*a.cols*esz]
		var sum float32
		for k0 := 0; k0 < a.cols; k0 += len(buf) {
			n := min(len(buf), a.cols-k0)
			dst := buf[:n]
			switch a.dt {
			case dtF32:
				for i := range dst {
					dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(row[(k0+i)*4:]))
				}
			case dtBF16:
				for i := range dst {
					dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(row[(k0+i)*2:])) << 16)
				}
			case dtF16:
				for i := range dst {
					dst[i] = tensor.HalfToFloat(binary.LittleEndian.Uint16(row[(k0+i)*2:]))
				}
			}
			sum += dotGo(a.x[k0:k0+n], dst)
		}
		a.out[r] = sum
	}
}

// qmvGo computes out[r-r0] = row r of m · x for rows [r0, r1) of a
// quantized matrix, dequantizing exactly as tensor.Weight.DecodeRow does
// (float32(q)*scale + bias, rounded before the multiply-add with x).
func qmvGo(m *mat, x, out []float32, r0, r1 int) {
	gs, bits := m.group, m.bits
	groups := m.cols / gs
	var lut [256]float32
	for r := r0; r < r1; r++ {
		row := m.data[r*m.rowBytes : (r+1)*m.rowBytes]
		var total float32
		for g := 0; g < groups; g++ {
			s := m.scale(r*groups + g)
			b := m.bias(r*groups + g)
			xs := x[g*gs : (g+1)*gs]
			in := row[g*gs*bits/8 : (g+1)*gs*bits/8]
			var acc [4]float32
			switch bits {
			case 4:
				for k := 0; k < 16; k++ {
					lut[k] = float32(float32(k)*s) + b
				}
				for j := 0; j+1 < len(in); j += 2 {
					v0, v1 := in[j], in[j+1]
					acc[0] += xs[2*j] * lut[v0&15]
					acc[1] += xs[2*j+1] * lut[v0>>4]
					acc[2] += xs[2*j+2] * lut[v1&15]
					acc[3] += xs[2*j+3] * lut[v1>>4]
				}
			case 8:
				for j := 0; j+1 < len(in); j += 2 {
					acc[0] += xs[j] * (float32(float32(in[j])*s) + b)
					acc[1] += xs[j+1] * (float32(float32(in[j+1])*s) + b)
				}
			// 2, 3 and 6 bits (GGUF's Q2_K, Q3_K and Q6_K repacked): whole
			// bytes, or 3-byte units, of levels at a time (a group of 16
			// or more is whole units), each element into the sum the
			// default loop gives it
			case 2:
				for k := 0; k < 4; k++ {
					lut[k] = float32(float32(k)*s) + b
				}
				for j, v := range in {
					e := 4 * j
					acc[0] += xs[e] * lut[v&3]
					acc[1] += xs[e+1] * lut[v>>2&3]
					acc[2] += xs[e+2] * lut[v>>4&3]
					acc[3] += xs[e+3] * lut[v>>6]
				}
			case 3:
				for k := 0; k < 8; k++ {
					lut[k] = float32(float32(k)*s) + b
				}
				for j, e := 0, 0; j+2 < len(in); j, e = j+3, e+8 {
					v := uint32(in[j]) | uint32(in[j+1])<<8 | uint32(in[j+2])<<16
					acc[0] += xs[e] * lut[v&7]
					acc[1] += xs[e+1] * lut[v>>3&7]
					acc[2] += xs[e+2] * lut[v>>6&7]
					acc[3] += xs[e+3] * lut[v>>9&7]
					acc[0] += xs[e+4] * lut[v>>12&7]
					acc[1] += xs[e+5] * lut[v>>15&7]
					acc[2] += xs[e+6] * lut[v>>18&7]
					acc[3] += xs[e+7] * lut[v>>21]
				}
			case 6:
				for j, e := 0, 0; j+2 < len(in); j, e = j+3, e+4 {
					v := uint32(in[j]) | uint32(in[j+1])<<8 | uint32(in[j+2])<<16
					acc[0] += xs[e] * (float32(float32(v&63)*s) + b)
					acc[1] += xs[e+1] * (float32(float32(v>>6&63)*s) + b)
					acc[2] += xs[e+2] * (float32(float32(v>>12&63)*s) + b)
					acc[3] += xs[e+3] * (float32(float32(v>>18)*s) + b)
				}
			default:
				for j := range xs {
					acc[j&3] += xs[j] * (float32(float32(tensor.Bits(in, j, bits))*s) + b)
				}
			}
			total += (acc[0] + acc[1]) + (acc[2] + acc[3])
		}
		out[r-r0] = total
	}
}

// gemmGo is the 4×4 register-blocked microkernel: C[4×4] (+)= A·B with A
// 4 rows of stride lda and B packed [kc][4].
func gemmGo(kc int, a []float32, lda int, b, c []float32, ldc int, accumulate bool) {
	var c00, c01, c02, c03, c10, c11, c12, c13 float32
	var c20, c21, c22, c23, c30, c31, c32, c33 float32
	a0s, a1s, a2s, a3s := a[:kc], a[lda:lda+kc], a[2*lda:2*lda+kc], a[3*lda:3*lda+kc]
	b = b[:kc*4]
	for k := 0; k < kc; k++ {
		bk := b[k*4 : k*4+4]
		a0, a1, a2, a3 := a0s[k], a1s[k], a2s[k], a3s[k]
		b0, b1, b2, b3 := bk[0], bk[1], bk[2], bk[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	rows := [4][4]float32{{c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23}, {c30, c31, c32, c33}}
	for i := range rows {
		dst := c[i*ldc : i*ldc+4]
		if accumulate {
			for j := range dst {
				dst[j] += rows[i][j]
			}
		} else {
			copy(dst, rows[i][:])
		}
	}
}
