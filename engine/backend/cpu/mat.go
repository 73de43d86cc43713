package cpu

import (
	"encoding/binary"
	"math"
	"unsafe"

	"hearth/engine/tensor"
)

// mat is a 2-D weight as the matmul kernels see it: rows of packed
// quantized bits with per-group scales and biases, or dense rows of F32,
// F16 or BF16, or (for a MatMul whose second operand is a node) float32
// rows already in memory.
type mat struct {
	rows, cols int
	data       []byte
	rowBytes   int

	quant          bool
	bits, group    int
	scales, biases []byte
	sdt            tensor.DType

	dt int       // dense: dtF32, dtF16 or dtBF16
	f  []float32 // float32 rows of a node operand (data is nil then)
}

func newMat(w *tensor.Weight) *mat {
	m := &mat{rows: w.Shape[0], cols: w.Shape[1], data: w.Data}
	if w.Quant != nil {
		m.quant = true
		m.bits, m.group = w.Quant.Bits, w.Quant.GroupSize
		m.scales, m.biases, m.sdt = w.Scales, w.Biases, w.ScaleDType
		m.rowBytes = m.cols * m.bits / 8
		return m
	}
	switch w.DType {
	case tensor.F32:
		m.dt = dtF32
	case tensor.F16:
		m.dt = dtF16
	case tensor.BF16:
		m.dt = dtBF16
	}
	m.rowBytes = m.cols * w.DType.Size()
	return m
}

// floatMat views float32 rows [rows, cols] as a mat.
func floatMat(f []float32, rows, cols int) mat {
	return mat{rows: rows, cols: cols, f: f}
}

// bytes is the size of the weight in memory as the kernels read it.
func (m *mat) bytes() int { return len(m.data) + len(m.scales) + len(m.biases) }

// scale and bias decode group i's parameters to float32.
func (m *mat) scale(i int) float32 { return scalarAt(m.scales, i, m.sdt) }
func (m *mat) bias(i int) float32  { return scalarAt(m.biases, i, m.sdt) }

func scalarAt(buf []byte, i int, dt tensor.DType) float32 {
	switch dt {
	case tensor.BF16:
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(buf[i*2:])) << 16)
	case tensor.F16:
		return tensor.HalfToFloat(binary.LittleEndian.Uint16(buf[i*2:]))
	default:
		return math.Float32frombits(binary.LittleEndian.Uint32(buf[i*4:]))
	}
}

// decodeSeg writes elements [k0, k0+len(dst)) of row r as float32, with
// exactly tensor.Weight.DecodeRow's arithmetic, using the kernel set's
// dequantizer where it has one.
func (m *mat) decodeSegWith(k *kernels, r, k0 int, dst []float32) {
	if k.deq != nil && k.deq(m, r, k0, dst) {
		return
	}
	m.decodeSeg(r, k0, dst)
}

// decodeSeg writes elements [k0, k0+len(dst)) of row r as float32, with
// exactly tensor.Weight.DecodeRow's arithmetic.
func (m *mat) decodeSeg(r, k0 int, dst []float32) {
	switch {
	case m.f != nil:
		copy(dst, m.f[r*m.cols+k0:])
	case !m.quant:
		var dt tensor.DType
		switch m.dt {
		case dtF32:
			dt = tensor.F32
		case dtF16:
			dt = tensor.F16
		default:
			dt = tensor.BF16
		}
		tensor.Float32(dt, m.data, r*m.cols+k0, dst)
	default:
		gs, bits := m.group, m.bits
		groups := m.cols / gs
		row := m.data[r*m.rowBytes : (r+1)*m.rowBytes]
		var lut [16]float32
		for e := k0; e < k0+len(dst); {
			g := e / gs
			end := min((g+1)*gs, k0+len(dst))
			s := m.scale(r*groups + g)
			b := m.bias(r*groups + g)
			out := dst[e-k0 : end-k0]
			switch {
			case bits == 4 && e%2 == 0 && end%2 == 0:
				for k := range lut {
					lut[k] = float32(float32(k)*s) + b
				}
				in := row[e/2 : end/2]
				for j, v := range in {
					out[2*j] = lut[v&15]
					out[2*j+1] = lut[v>>4]
				}
			case bits == 8:
				for j, q := range row[e:end] {
					out[j] = float32(float32(q)*s) + b
				}
			default:
				for j := range out {
					out[j] = float32(float32(tensor.Bits(row, e+j, bits))*s) + b
				}
			}
			e = end
		}
	}
}

func addrOf(s []float32) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(s))) }
