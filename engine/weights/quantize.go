// MLX affine quantization: Hearth's quantizer, bit-exact with MLX's
// affine_quantize, and the row dequantizer that defines what a quantized
// weight means.

package weights

import (
	"encoding/binary"
	"fmt"
	"math"

	"hearth/engine/tensor"
)

// quantEps is MLX's lower bound on a group's scale (float32(1e-7)).
const quantEps float32 = 1e-7

// Quantize quantizes the row-major [rows, cols] matrix w with MLX's affine
// scheme and returns the quantized Weight (Name empty, Shape [rows, cols],
// Data the packed uint32 words, Scales and Biases in scaleDType, which must
// be F32, F16 or BF16). cols must be a multiple of q.GroupSize, and every
// element finite.
//
// Each group of q.GroupSize consecutive elements of a row is quantized as
// MLX's affine_quantize (mlx/ops.cpp; the CPU kernel in
// mlx/backend/cpu/quantized.cpp) does it, all in float32, with round being
// round-half-to-even (std::rint):
//
//	n_bins = 2^bits - 1
//	scale  = max((w_max - w_min) / n_bins, 1e-7)
//	if |w_min| > |w_max| { edge = w_min } else { edge = w_max; scale = -scale }
//	q0     = round(edge / scale)
//	if q0 != 0 { scale = edge / q0; bias = edge } else { bias = 0 }
//	q      = clip(round((w - bias) / scale), 0, n_bins)
//
// so that w ≈ q*scale + bias with zero exactly representable. Scale and bias
// are then rounded to scaleDType for storage (the q values were computed with
// the float32 scale, as MLX does). Element j of a row occupies bits
// [j*bits, (j+1)*bits) of the row's little-endian bit stream of uint32 words;
// for 3, 5 and 6 bits an element may straddle two words, which is the layout
// MLX's byte packs produce.
func Quantize(w []float32, rows, cols int, q tensor.Quant, scaleDType tensor.DType) (tensor.Weight, error) {
	if err := checkQuant(q); err != nil {
		return tensor.Weight{}, fmt.Errorf("quantize: %w", err)
	}
	if !isFloat(scaleDType) {
		return tensor.Weight{}, fmt.Errorf("quantize: scale dtype %s is not F32, F16 or BF16", scaleDType)
	}
	if rows < 0 || cols < 0 {
		return tensor.Weight{}, fmt.Errorf("quantize: shape [%d %d] is negative", rows, cols)
	}
	if cols%q.GroupSize != 0 {
		return tensor.Weight{}, fmt.Errorf("quantize: %d columns are not a multiple of group size %d", cols, q.GroupSize)
	}
	if n, ok := mulInt64(int64(rows), int64(cols)); !ok || n != int64(len(w)) {
		return tensor.Weight{}, fmt.Errorf("quantize: %d values do not fill shape [%d %d]", len(w), rows, cols)
	}
	for i, v := range w {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return tensor.Weight{}, fmt.Errorf("quantize: element [%d %d] is %v; only finite weights quantize", i/cols, i%cols, v)
		}
	}
	gs := q.GroupSize
	out := NewAffine(rows, cols, q, scaleDType)
	nBins := float32(int(1)<<q.Bits - 1)
	for r := range rows {
		for g := range cols / gs {
			grp := w[r*cols+g*gs : r*cols+(g+1)*gs]
			scale, bias := affineParams(grp, nBins)
			for j, v := range grp {
				out.Put(r, g*gs+j, quantizeOne(v, scale, bias, nBins))
			}
			out.SetGroup(r, g, scale, bias)
		}
	}
	return out.Weight, nil
}

// Affine is a quantized weight being written code by code: what Quantize
// makes from floats, and what a converter makes from another format's
// codes (engine/gguf).
type Affine struct {
	tensor.Weight
	rowBytes, groups int
}

// NewAffine returns a zeroed [rows, cols] weight quantized as q with
// scales and biases in scaleDType (F32, F16 or BF16). cols must be a
// multiple of q.GroupSize and q valid (checkQuant).
func NewAffine(rows, cols int, q tensor.Quant, scaleDType tensor.DType) *Affine {
	groups := cols / q.GroupSize
	rowBytes := cols * q.Bits / 8
	ssz := scaleDType.Size()
	return &Affine{
		Weight: tensor.Weight{
			DType:      tensor.U32,
			Shape:      []int{rows, cols},
			Data:       make([]byte, rows*rowBytes),
			Quant:      &tensor.Quant{Bits: q.Bits, GroupSize: q.GroupSize},
			Scales:     make([]byte, rows*groups*ssz),
			Biases:     make([]byte, rows*groups*ssz),
			ScaleDType: scaleDType,
		},
		rowBytes: rowBytes,
		groups:   groups,
	}
}

// Put sets element col of row to the code v (which must fit in the bits).
func (a *Affine) Put(row, col int, v uint8) {
	putBits(a.Data[row*a.rowBytes:(row+1)*a.rowBytes], col, a.Quant.Bits, v)
}

// SetGroup sets the scale and bias of group g of row.
func (a *Affine) SetGroup(row, g int, scale, bias float32) {
	putScalar(a.Scales, row*a.groups+g, scale, a.ScaleDType)
	putScalar(a.Biases, row*a.groups+g, bias, a.ScaleDType)
}

// affineParams computes one group's scale and bias (see Quantize).
func affineParams(grp []float32, nBins float32) (scale, bias float32) {
	wMin, wMax := grp[0], grp[0]
	for _, v := range grp[1:] {
		wMin = min(wMin, v)
		wMax = max(wMax, v)
	}
	scale = (wMax - wMin) / nBins
	if scale < quantEps {
		scale = quantEps
	}
	edge := wMax
	if math.Abs(float64(wMin)) > math.Abs(float64(wMax)) {
		edge = wMin
	} else {
		scale = -scale
	}
	q0 := roundEven(edge / scale)
	if q0 != 0 {
		scale = edge / q0
		bias = edge
	}
	return scale, bias
}

// quantizeOne is clip(round((v - bias) / scale), 0, nBins).
func quantizeOne(v, scale, bias, nBins float32) uint8 {
	x := roundEven((v - bias) / scale)
	switch {
	case !(x >= 0): // also catches NaN
		return 0
	case x > nBins:
		return uint8(nBins)
	}
	return uint8(x)
}

// roundEven rounds half to even, as std::rint does in the default mode.
func roundEven(x float32) float32 { return float32(math.RoundToEven(float64(x))) }

// putBits stores the bits-wide value v as element j of the little-endian bit
// stream buf (which must start zeroed at that position).
func putBits(buf []byte, j, bits int, v uint8) {
	p := j * bits
	i, sh := p>>3, uint(p&7)
	x := uint16(v) << sh
	buf[i] |= byte(x)
	if int(sh)+bits > 8 {
		buf[i+1] |= byte(x >> 8)
	}
}

// isFloat reports whether dt is a float type Weight.DecodeRow decodes.
func isFloat(dt tensor.DType) bool {
	return dt == tensor.F32 || dt == tensor.F16 || dt == tensor.BF16
}

// putScalar stores v as element i of buf in dtype dt (F32, F16 or BF16).
func putScalar(buf []byte, i int, v float32, dt tensor.DType) {
	switch dt {
	case tensor.F32:
		binary.LittleEndian.PutUint32(buf[i*4:], math.Float32bits(v))
	case tensor.F16:
		binary.LittleEndian.PutUint16(buf[i*2:], tensor.FloatToHalf(v))
	case tensor.BF16:
		binary.LittleEndian.PutUint16(buf[i*2:], tensor.FloatToBF16(v))
	}
}
