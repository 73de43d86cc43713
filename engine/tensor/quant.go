package tensor

import "fmt"

// DecodeRow writes row row of w, as float32, into dst, whose length must
// be the last dimension of w.Shape (the leading dimensions count rows). A
// dense F32, F16 or BF16 row is decoded. A quantized row computes, per
// element, float32(q)*scale + bias in float32 — scale and bias decoded from
// ScaleDType to float32 first, the product rounded before the add (no fused
// multiply-add) — which is the contract the oracle also uses. Like an
// out-of-range index, it panics when row, dst or w's buffers do not fit
// w.Shape; a Weight from a Binder or Quantize always fits.
func (w *Weight) DecodeRow(row int, dst []float32) {
	cols, rows := 1, 1
	if n := len(w.Shape); n > 0 {
		cols = w.Shape[n-1]
		rows = Elements(w.Shape[:n-1])
	}
	if len(dst) != cols || row < 0 || row >= rows {
		panic(fmt.Sprintf("tensor.DecodeRow: row %d, len(dst) %d for shape %v", row, len(dst), w.Shape))
	}
	if w.Quant == nil {
		Float32(w.DType, w.Data, row*cols, dst)
		return
	}
	bits, gs := w.Quant.Bits, w.Quant.GroupSize
	if gs <= 0 || cols%gs != 0 || cols*bits%32 != 0 {
		panic(fmt.Sprintf("tensor.DecodeRow: shape %v does not fit %d-bit quantization with group size %d", w.Shape, bits, gs))
	}
	groups := cols / gs
	rowBytes := cols * bits / 8
	ssz := w.ScaleDType.Size()
	if len(w.Data) < rows*rowBytes || len(w.Scales) < rows*groups*ssz || len(w.Biases) < rows*groups*ssz {
		panic(fmt.Sprintf("tensor.DecodeRow: buffers too short for shape %v", w.Shape))
	}
	packed := w.Data[row*rowBytes : (row+1)*rowBytes]
	for g := range groups {
		s := scalar(w.Scales, row*groups+g, w.ScaleDType)
		b := scalar(w.Biases, row*groups+g, w.ScaleDType)
		out := dst[g*gs : (g+1)*gs]
		in := packed[g*gs*bits/8 : (g+1)*gs*bits/8]
		switch bits {
		case 4:
			dequant4(in, out, s, b)
		case 8:
			for j, q := range in {
				out[j] = float32(float32(q)*s) + b
			}
		default:
			for j := range out {
				out[j] = float32(float32(Bits(in, j, bits))*s) + b
			}
		}
	}
}

// dequant4 dequantizes one 4-bit group through a 16-entry table, which gives
// the same float32 results as computing each element.
func dequant4(in []byte, out []float32, s, b float32) {
	var lut [16]float32
	for k := range lut {
		lut[k] = float32(float32(k)*s) + b
	}
	out = out[:len(in)*2]
	for j, x := range in {
		out[2*j] = lut[x&15]
		out[2*j+1] = lut[x>>4]
	}
}

// Bits reads element j of buf taken as a little-endian stream of
// bits-wide unsigned integers (MLX's packing of quantized levels).
func Bits(buf []byte, j, bits int) uint32 {
	p := j * bits
	i, sh := p>>3, uint(p&7)
	x := uint32(buf[i])
	if int(sh)+bits > 8 {
		x |= uint32(buf[i+1]) << 8
	}
	return x >> sh & (1<<uint(bits) - 1)
}

// scalar decodes element i of a float buffer of dtype dt.
func scalar(buf []byte, i int, dt DType) float32 {
	var v [1]float32
	Float32(dt, buf, i, v[:])
	return v[0]
}
