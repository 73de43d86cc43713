package tensor

import (
	"fmt"
	"math"
)

// KVType is the element type of a KV cache buffer (docs/design/kv-quant.md).
type KVType uint8

const (
	// KVF32 keeps keys and values in float32: the default, exact.
	KVF32 KVType = iota
	// KVQ8 keeps int8 codes and one float32 scale per group of KVGroup
	// elements along the head dimension (symmetric, like llama.cpp's
	// q8_0): x ≈ code·scale, scale = max|x|/127.
	KVQ8
	// KVQ4 keeps 4-bit codes, two to a byte (the even element in the low
	// nibble), and one float32 scale per group of KVGroup: x ≈ code·scale,
	// scale = max|x|/7, codes in [-7, 7].
	KVQ4
)

// KVGroup is the elements of a head row that share one scale. A head row
// whose length is not a multiple of it ends in a shorter group.
const KVGroup = 32

// ParseKVType reads a --kv value; "" is f32.
func ParseKVType(s string) (KVType, error) {
	switch s {
	case "", "f32":
		return KVF32, nil
	case "q8":
		return KVQ8, nil
	case "q4":
		return KVQ4, nil
	}
	return 0, fmt.Errorf("unknown kv cache type %q (f32, q8 or q4)", s)
}

func (t KVType) String() string {
	switch t {
	case KVF32:
		return "f32"
	case KVQ8:
		return "q8"
	case KVQ4:
		return "q4"
	}
	return fmt.Sprintf("KVType(%d)", uint8(t))
}

// MarshalText writes the type's name (a bench report's engine options).
func (t KVType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads a name ParseKVType takes.
func (t *KVType) UnmarshalText(b []byte) error {
	v, err := ParseKVType(string(b))
	*t = v
	return err
}

// KVGroups is the number of scales of one head row of headDim elements.
func KVGroups(headDim int) int { return (headDim + KVGroup - 1) / KVGroup }

// RowBytes is the memory of one head row of headDim elements.
func (t KVType) RowBytes(headDim int) int64 {
	switch t {
	case KVQ8:
		return int64(headDim) + 4*int64(KVGroups(headDim))
	case KVQ4:
		return int64(headDim+1)/2 + 4*int64(KVGroups(headDim))
	}
	return 4 * int64(headDim)
}

// KVAllocator is implemented by backends that hold quantized KV buffers.
// AllocKV makes a zeroed buffer of logical shape [rows, heads, headDim]
// whose elements are of type t. Store into it quantizes each head row of
// the source; Attention reads it as keys or values, dequantizing. No
// other op reads it, and Backend.Read refuses it.
type KVAllocator interface {
	AllocKV(shape []int, t KVType) (T, error)
}

// QuantizeQ8 quantizes one head row x into codes (len(x)) and scales
// (KVGroups(len(x))): the rule every backend follows.
func QuantizeQ8(x []float32, codes []int8, scales []float32) {
	quantize(x, 127, scales, func(j int, c int8) { codes[j] = c })
}

// QuantizeQ4 is QuantizeQ8's rule with codes in [-7, 7], packed two to a
// byte into codes ((len(x)+1)/2 bytes).
func QuantizeQ4(x []float32, codes []byte, scales []float32) {
	clear(codes[:(len(x)+1)/2])
	quantize(x, 7, scales, func(j int, c int8) { codes[j/2] |= byte(c&0xf) << (4 * (j % 2)) })
}

// quantize is the symmetric rule of both: per group, scale = max|x|/top
// and code = round(x/scale), half away from zero, clamped to ±top.
func quantize(x []float32, top float32, scales []float32, put func(j int, c int8)) {
	for g := 0; g*KVGroup < len(x); g++ {
		j0 := g * KVGroup
		grp := x[j0:min(len(x), j0+KVGroup)]
		var amax float32
		for _, v := range grp {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / top
		scales[g] = d
		if d == 0 {
			for j := range grp {
				put(j0+j, 0)
			}
			continue
		}
		inv := 1 / d
		t := float64(top)
		for j, v := range grp {
			put(j0+j, int8(max(-t, min(t, math.Round(float64(v*inv))))))
		}
	}
}

// DequantizeQ4 is the inverse of QuantizeQ4 into dst (len(dst) elements).
func DequantizeQ4(codes []byte, scales []float32, dst []float32) {
	for g, sc := range scales {
		j0 := g * KVGroup
		d := dst[j0:min(len(dst), j0+KVGroup)]
		for k, b := range codes[j0/2 : j0/2+(len(d)+1)/2] {
			d[2*k] = float32(int8(b<<4)>>4) * sc
			if 2*k+1 < len(d) {
				d[2*k+1] = float32(int8(b)>>4) * sc
			}
		}
	}
}

// Round leaves x (one head row) as a cache of type t holds it: quantized
// and dequantized (a copy for f32). Tests compare backends with it.
func (t KVType) Round(x, dst []float32) {
	scales := make([]float32, KVGroups(len(x)))
	switch t {
	case KVQ8:
		codes := make([]int8, len(x))
		QuantizeQ8(x, codes, scales)
		DequantizeQ8(codes, scales, dst)
	case KVQ4:
		codes := make([]byte, (len(x)+1)/2)
		QuantizeQ4(x, codes, scales)
		DequantizeQ4(codes, scales, dst)
	default:
		copy(dst, x)
	}
}

// DequantizeQ8 is the inverse of QuantizeQ8 into dst (len(codes)).
func DequantizeQ8(codes []int8, scales []float32, dst []float32) {
	for g, sc := range scales {
		j0 := g * KVGroup
		c := codes[j0:min(len(codes), j0+KVGroup)]
		d := dst[j0 : j0+len(c)]
		for j, v := range c {
			d[j] = float32(v) * sc
		}
	}
}
