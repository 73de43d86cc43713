// Package tensor is the op set model code is written against. Shapes are
// outermost first, as in PyTorch and MLX, so code reads beside the reference.
//
// Model code records a forward pass into a Graph; a Backend runs the whole
// graph at once (one submission on a GPU) and the host reads back only what
// it asks for. This file holds the host-side description of weights.
package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
)

// DType is the element type of a stored tensor.
type DType uint8

const (
	F32 DType = iota + 1
	F16
	BF16
	U32 // packed MLX quantized weights
	I32
	I64
	U8
	I8
	F64
	Bool
)

var dtypeNames = map[DType]string{
	F32: "F32", F16: "F16", BF16: "BF16", U32: "U32", I32: "I32",
	I64: "I64", U8: "U8", I8: "I8", F64: "F64", Bool: "BOOL",
}

var dtypeSizes = map[DType]int{
	F32: 4, F16: 2, BF16: 2, U32: 4, I32: 4, I64: 8, U8: 1, I8: 1, F64: 8, Bool: 1,
}

// String returns the safetensors spelling of the dtype ("F32", "BF16", …).
func (d DType) String() string {
	if s, ok := dtypeNames[d]; ok {
		return s
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// Size is the number of bytes one element takes.
func (d DType) Size() int { return dtypeSizes[d] }

// ParseDType maps a safetensors dtype string onto a DType.
func ParseDType(s string) (DType, bool) {
	for d, name := range dtypeNames {
		if name == s {
			return d, true
		}
	}
	return 0, false
}

// Quant describes MLX affine quantization of a weight: each group of
// GroupSize consecutive elements along the last axis is stored as Bits-bit
// unsigned integers q, packed little-endian into uint32 words (element i of a
// word in bits [i*Bits, (i+1)*Bits)), and dequantizes to q*scale + bias.
type Quant struct {
	Bits      int
	GroupSize int
}

// Weight is a host view of one stored tensor, as read from a checkpoint
// (usually an mmap'd region). For a quantized weight, Data holds the packed
// uint32 words, Shape is the logical (dequantized) shape, and Scales and
// Biases hold one value per group in ScaleDType.
type Weight struct {
	Name  string
	DType DType // F32, F16 or BF16 for dense weights; U32 when quantized
	Shape []int
	Data  []byte

	Quant      *Quant
	Scales     []byte
	Biases     []byte
	ScaleDType DType
}

// Elements returns the product of the shape.
func Elements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Quantized reports whether w is stored MLX-quantized.
func (w Weight) Quantized() bool { return w.Quant != nil }

// Bytes is the number of bytes the weight occupies in its stored form.
func (w Weight) Bytes() int { return len(w.Data) + len(w.Scales) + len(w.Biases) }

// Float32 decodes elements [start, start+len(dst)) of a dense F32/F16/BF16
// little-endian buffer into dst.
func Float32(dt DType, data []byte, start int, dst []float32) {
	switch dt {
	case F32:
		b := data[start*4:]
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[i*4:]))
		}
	case BF16:
		b := data[start*2:]
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[i*2:])) << 16)
		}
	case F16:
		b := data[start*2:]
		for i := range dst {
			dst[i] = HalfToFloat(binary.LittleEndian.Uint16(b[i*2:]))
		}
	default:
		panic(fmt.Sprintf("tensor.Float32: dtype %v is not a float type", dt))
	}
}

// HalfToFloat converts an IEEE 754 binary16 value to float32 exactly.
func HalfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalize
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3ff
		return math.Float32frombits(sign | e<<23 | mant<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	default:
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	}
}

// FloatToHalf converts float32 to binary16 with round-to-nearest-even.
func FloatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case b&0x7fffffff > 0x7f800000: // NaN
		return sign | 0x7e00
	case exp >= 0x1f: // overflow or Inf
		return sign | 0x7c00
	case exp <= 0: // subnormal or zero
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		h := uint16(mant >> shift)
		rem := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | h
	}
	h := sign | uint16(exp)<<10 | uint16(mant>>13)
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, which is the right result
	}
	return h
}

// FloatToBF16 converts float32 to bfloat16 with round-to-nearest-even, as
// PyTorch does.
func FloatToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
