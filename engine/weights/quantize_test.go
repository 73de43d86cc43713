// Tests of Quantize and Weight.DecodeRow: groups worked out by hand from MLX's
// affine_quantize, error bounds over bits × group sizes, the bit-stream
// layout for 2/3/5/6 bits, and dequantization benchmarks.

package weights

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"hearth/engine/tensor"
)

// group32 returns 32 values: head, then fill repeated.
func group32(fill float32, head ...float32) []float32 {
	g := make([]float32, 32)
	for i := range g {
		g[i] = fill
	}
	copy(g, head)
	return g
}

// TestQuantizeMatchesMLX checks 4-bit, group-32 groups whose MLX results
// were worked out by hand from the formula in Quantize's doc comment.
func TestQuantizeMatchesMLX(t *testing.T) {
	f11, fm0275 := float32(1.1), float32(-0.1375)
	f03, m3e6 := float32(0.3), float32(-3000000)
	tests := []struct {
		name        string
		w           []float32
		scale, bias float32
		q           []uint32 // leading q values; the rest are q of the fill
		qFill       uint32
	}{
		{
			// |max| ≥ |min|: scale = (2.25+1.5)/15 = 0.25, negated; edge = 2.25,
			// q0 = round(2.25/-0.25) = -9, scale = 2.25/-9 = -0.25, bias = 2.25,
			// q = round(9 - 4w): ties at 8.5, 7.5, 6.5, 9.5, 10.5 go to even.
			name:  "max dominates, ties to even",
			w:     group32(0, 2.25, -1.5, 0, 0.125, 0.375, 0.625, 1, -1, 0.5, -0.125, -0.375),
			scale: -0.25, bias: 2.25,
			q:     []uint32{0, 15, 9, 8, 8, 6, 5, 13, 7, 10, 10},
			qFill: 9,
		},
		{
			// |min| > |max|: scale = (0.75+3)/15 = 0.25, kept positive; edge = -3,
			// q0 = round(-3/0.25) = -12, scale = -3/-12 = 0.25, bias = -3,
			// q = round(4w + 12): 6.5 → 6, 7.5 → 8.
			name:  "min dominates (sign flip)",
			w:     group32(0, -3, 0.75, 0, -1.375, -1.125, 0.5, -2),
			scale: 0.25, bias: -3,
			q:     []uint32{0, 15, 12, 6, 8, 14, 4},
			qFill: 12,
		},
		{
			// scale0 = 2.1/15 ≈ 0.14, negated; q0 = round(1.1/-0.14) = round(-7.86) = -8,
			// so the scale snaps to 1.1/-8 = -0.1375 (exact in float32: a power-of-two
			// division) and zero is exactly q = 8. -1 would need q ≈ 15.3: clipped.
			name:  "q0 snaps the scale",
			w:     group32(0, f11, -1, 0, f11/2),
			scale: fm0275, bias: f11,
			q:     []uint32{0, 15, 8, 4},
			qFill: 8,
		},
		{
			// Constant 0.3: scale = max(0, 1e-7) = 1e-7, negated; q0 =
			// round(0.3/-1e-7) = -3000000, scale = 0.3/-3000000, bias = 0.3, q = 0.
			name:  "constant group",
			w:     group32(f03),
			scale: f03 / m3e6, bias: f03,
			qFill: 0,
		},
		{
			// All zero: q0 = round(0/-1e-7) = 0, so scale stays -1e-7 and bias is 0.
			name:  "all-zero group",
			w:     group32(0),
			scale: -1e-7, bias: 0,
			qFill: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qw, err := Quantize(tt.w, 1, 32, tensor.Quant{Bits: 4, GroupSize: 32}, tensor.F32)
			if err != nil {
				t.Fatal(err)
			}
			scale := math.Float32frombits(binary.LittleEndian.Uint32(qw.Scales))
			bias := math.Float32frombits(binary.LittleEndian.Uint32(qw.Biases))
			if scale != tt.scale || bias != tt.bias {
				t.Errorf("scale, bias = %g, %g; want %g, %g", scale, bias, tt.scale, tt.bias)
			}
			for j := range 32 {
				want := tt.qFill
				if j < len(tt.q) {
					want = tt.q[j]
				}
				if got := tensor.Bits(qw.Data, j, 4); got != want {
					t.Errorf("q[%d] (w = %g) = %d, want %d", j, tt.w[j], got, want)
				}
			}
			// Dequantization is q*scale + bias; the group's zeros come back exact.
			got := make([]float32, 32)
			qw.DecodeRow(0, got)
			for j, w := range tt.w {
				if w == 0 && got[j] != 0 {
					t.Errorf("dequantized zero at %d = %g, want exactly 0", j, got[j])
				}
			}
		})
	}
}

func TestQuantizePacking(t *testing.T) {
	// The first word of "max dominates" holds q = 0 15 9 8 8 6 5 13, element i
	// in bits [4i, 4i+4): nibbles from the low end 0 F 9 8 8 6 5 D.
	qw, err := Quantize(group32(0, 2.25, -1.5, 0, 0.125, 0.375, 0.625, 1, -1), 1, 32, tensor.Quant{Bits: 4, GroupSize: 32}, tensor.F32)
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(qw.Data); got != 0xD56889F0 {
		t.Errorf("first word = %#08x, want 0xd56889f0", got)
	}
	if len(qw.Data) != 16 || qw.DType != tensor.U32 || qw.Shape[0] != 1 || qw.Shape[1] != 32 {
		t.Errorf("packed %d bytes, dtype %v, shape %v; want 16, U32, [1 32]", len(qw.Data), qw.DType, qw.Shape)
	}
	// 3 bits: eight values fill 3 bytes as one little-endian 24-bit number,
	// as MLX's byte packs do: sum of q[k] << 3k.
	buf := make([]byte, 3)
	var want uint32
	for k, v := range []uint8{1, 2, 3, 4, 5, 6, 7, 0} {
		putBits(buf, k, 3, v)
		want |= uint32(v) << (3 * k)
	}
	if got := uint32(buf[0]) | uint32(buf[1])<<8 | uint32(buf[2])<<16; got != want {
		t.Errorf("3-bit pack = %#06x, want %#06x", got, want)
	}
	// Every width round-trips through the bit stream.
	rng := rand.New(rand.NewPCG(21, 22))
	for _, bits := range validBits {
		vals := make([]uint8, 64)
		buf := make([]byte, 64*bits/8)
		for j := range vals {
			vals[j] = uint8(rng.IntN(1 << bits))
			putBits(buf, j, bits, vals[j])
		}
		for j, v := range vals {
			if got := tensor.Bits(buf, j, bits); got != uint32(v) {
				t.Errorf("%d-bit element %d = %d, want %d", bits, j, got, v)
			}
		}
	}
}

// TestQuantizeErrorBound checks |w - dequant(w)| per element. Inside the
// group's grid the error is at most |scale|/2 (round to nearest). An element
// clipped at the far end can be off by more: snapping the scale to edge/q0
// shrinks |scale| by up to a factor 1/(2|q0|), so the grid may stop short of
// the far extreme — by at most |scale|/2 more (|q0| ≥ n_bins/2 when the
// group straddles zero), so the bound there is |scale|.
func TestQuantizeErrorBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	const rows, cols = 16, 256
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
		if i/cols == 3 { // an all-positive row
			w[i] = 5 + w[i]*w[i]
		}
	}
	for _, bits := range validBits {
		for _, gs := range validGroups {
			for _, sdt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16} {
				t.Run(fmt.Sprintf("q%dg%d/%v", bits, gs, sdt), func(t *testing.T) {
					checkErrorBound(t, w, rows, cols, tensor.Quant{Bits: bits, GroupSize: gs}, sdt)
				})
			}
		}
	}
}

// checkErrorBound quantizes w and checks every element against the bound
// TestQuantizeErrorBound describes, widened by the scale dtype's rounding.
func checkErrorBound(t *testing.T, w []float32, rows, cols int, q tensor.Quant, sdt tensor.DType) {
	qw, err := Quantize(w, rows, cols, q, sdt)
	if err != nil {
		t.Fatal(err)
	}
	nBins := float64(int(1)<<q.Bits - 1)
	// Relative rounding of a stored scale or bias.
	rel := map[tensor.DType]float64{tensor.F32: 0, tensor.F16: 1.0 / 2048, tensor.BF16: 1.0 / 256}[sdt]
	groups := cols / q.GroupSize
	got := make([]float32, cols)
	clipped := 0
	for r := range rows {
		qw.DecodeRow(r, got)
		for g := range groups {
			s := float64(getScalar(qw.Scales, r*groups+g, sdt))
			b := float64(getScalar(qw.Biases, r*groups+g, sdt))
			slack := 1e-6*(math.Abs(b)+nBins*math.Abs(s)) + rel*(math.Abs(b)+nBins*math.Abs(s))
			for j := g * q.GroupSize; j < (g+1)*q.GroupSize; j++ {
				x := float64(w[r*cols+j])
				raw := (x - b) / s
				bound := math.Abs(s)/2 + slack
				if raw < -0.5 || raw > nBins+0.5 {
					bound = math.Abs(s) + slack
					clipped++
				}
				if e := math.Abs(x - float64(got[j])); e > bound {
					t.Fatalf("row %d col %d: |%g - %g| = %g > bound %g (scale %g, bias %g)", r, j, x, got[j], e, bound, s, b)
				}
			}
		}
	}
	t.Logf("%d of %d elements clipped at the far end of their group", clipped, rows*cols)
}

func TestQuantizeFarEndClip(t *testing.T) {
	// max = 1, min = -0.99: q0 = round(1/-(1.99/15)) = round(-7.54) = -8, so
	// scale = -0.125 and the grid reaches only 1 - 15*0.125 = -0.875; -0.99
	// comes back as -0.875, an error of 0.115 — more than |scale|/2, less than |scale|.
	qw, err := Quantize(group32(0, 1, -0.99), 1, 32, tensor.Quant{Bits: 4, GroupSize: 32}, tensor.F32)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 32)
	qw.DecodeRow(0, got)
	if got[0] != 1 || got[1] != -0.875 || got[2] != 0 {
		t.Errorf("dequantized = %g, %g, %g; want 1, -0.875, 0", got[0], got[1], got[2])
	}
}

func TestQuantizeErrors(t *testing.T) {
	tests := []struct {
		name       string
		w          []float32
		rows, cols int
		q          tensor.Quant
		sdt        tensor.DType
		want       string
	}{
		{"bits", make([]float32, 32), 1, 32, tensor.Quant{Bits: 7, GroupSize: 32}, tensor.F32, "bits 7 is not supported"},
		{"group", make([]float32, 32), 1, 32, tensor.Quant{Bits: 4, GroupSize: 24}, tensor.F32, "group_size 24 is not supported"},
		{"cols", make([]float32, 48), 1, 48, tensor.Quant{Bits: 4, GroupSize: 32}, tensor.F32, "48 columns are not a multiple of group size 32"},
		{"length", make([]float32, 31), 1, 32, tensor.Quant{Bits: 4, GroupSize: 32}, tensor.F32, "31 values do not fill shape [1 32]"},
		{"negative", nil, -1, 32, tensor.Quant{Bits: 4, GroupSize: 32}, tensor.F32, "is negative"},
		{"scale dtype", make([]float32, 32), 1, 32, tensor.Quant{Bits: 4, GroupSize: 32}, tensor.I32, "scale dtype I32 is not F32, F16 or BF16"},
		{"nan", group32(0, 0, float32(math.NaN())), 1, 32, tensor.Quant{Bits: 4, GroupSize: 32}, tensor.F32, "element [0 1] is NaN"},
		{"inf", group32(0, float32(math.Inf(-1))), 1, 32, tensor.Quant{Bits: 4, GroupSize: 32}, tensor.F32, "element [0 0] is -Inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Quantize(tt.w, tt.rows, tt.cols, tt.q, tt.sdt)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Quantize error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestDequantizeRowDense(t *testing.T) {
	w := f32("x", []int{2, 3}, 1, 2, 3, 4, 5, 6)
	got := make([]float32, 3)
	w.DecodeRow(1, got)
	if got[0] != 4 || got[1] != 5 || got[2] != 6 {
		t.Errorf("row 1 = %v, want [4 5 6]", got)
	}
	bf := tensor.Weight{DType: tensor.BF16, Shape: []int{2}, Data: []byte{0x80, 0x3f, 0x00, 0xc0}} // 1, -2
	got = make([]float32, 2)
	bf.DecodeRow(0, got)
	if got[0] != 1 || got[1] != -2 {
		t.Errorf("bf16 row = %v, want [1 -2]", got)
	}
}

func TestDequantizeRowPanicsOnMisuse(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("DequantizeRow with a short dst did not panic")
		}
	}()
	w := f32("x", []int{2, 3}, 1, 2, 3, 4, 5, 6)
	w.DecodeRow(0, make([]float32, 2))
}

func BenchmarkDequantizeRow(b *testing.B) {
	const rows, cols = 8, 4096
	rng := rand.New(rand.NewPCG(41, 42))
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	for _, q := range []tensor.Quant{{Bits: 4, GroupSize: 64}, {Bits: 8, GroupSize: 32}} {
		qw, err := Quantize(w, rows, cols, q, tensor.BF16)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("q%dg%d", q.Bits, q.GroupSize), func(b *testing.B) {
			dst := make([]float32, cols)
			b.SetBytes(int64(qw.Bytes() / rows)) // stored bytes of one row: packed words, scales, biases
			for i := 0; b.Loop(); i++ {
				qw.DecodeRow(i%rows, dst)
			}
		})
	}
}

// getScalar decodes element i of buf in dtype dt (F32, F16 or BF16).
func getScalar(buf []byte, i int, dt tensor.DType) float32 {
	switch dt {
	case tensor.F32:
		return math.Float32frombits(binary.LittleEndian.Uint32(buf[i*4:]))
	case tensor.F16:
		return tensor.HalfToFloat(binary.LittleEndian.Uint16(buf[i*2:]))
	case tensor.BF16:
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(buf[i*2:])) << 16)
	}
	panic(fmt.Sprintf("weights: scale dtype %v is not a float type", dt))
}
