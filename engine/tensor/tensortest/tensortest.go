// Package tensortest is the conformance check every backend runs on itself,
// like testing/fstest: each op of tensor.Ops() on random inputs with odd
// shapes, compared with a plain float64 implementation written here from the
// op's documented meaning. A backend that lacks an op, or computes it
// differently, fails here rather than in a user's run.
package tensortest

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"hearth/engine/tensor"
)

// Tolerance is the largest |got - want| / (1 + |want|) a backend may show.
// float32 arithmetic with float32 accumulation lands near 1e-6 on these
// sizes; 1e-4 leaves room for a GPU's fused multiply-adds and tree
// reductions without hiding a wrong formula.
const Tolerance = 1e-4

type opCase struct {
	op   tensor.Op
	name string
	// build records the op on g from inputs it makes, returns the output
	// and the float64 reference of it.
	build func(c *checker, g *tensor.Graph) (tensor.T, []float64)
	// exact: the output must equal want bit for bit (indices, not
	// arithmetic), where Tolerance would let a near index pass
	exact bool
}

type checker struct {
	t   *testing.T
	b   tensor.Backend
	rng *rand.Rand
}

// Check runs every op case on b.
func Check(t *testing.T, b tensor.Backend) {
	covered := map[tensor.Op]bool{}
	for _, oc := range cases() {
		covered[oc.op] = true
		t.Run(oc.name, func(t *testing.T) {
			c := &checker{t: t, b: b, rng: rand.New(rand.NewPCG(uint64(oc.op), 99))}
			g := tensor.NewGraph(b)
			out, want := oc.build(c, g)
			if err := g.Err(); err != nil {
				t.Fatalf("building %s: %v", oc.name, err)
			}
			if err := b.Run(context.Background(), g, out); err != nil {
				t.Fatalf("running %s: %v", oc.name, err)
			}
			got := make([]float32, len(want))
			if err := b.Read(out, got); err != nil {
				t.Fatalf("reading %s: %v", oc.name, err)
			}
			for i := range want {
				if oc.exact {
					if float64(got[i]) != want[i] {
						t.Fatalf("%s: out[%d] = %v, want exactly %v", oc.name, i, got[i], want[i])
					}
					continue
				}
				d := math.Abs(float64(got[i])-want[i]) / (1 + math.Abs(want[i]))
				if !(d <= Tolerance) {
					t.Fatalf("%s: out[%d] = %v, want %v (relative error %.3g)", oc.name, i, got[i], want[i], d)
				}
			}
		})
	}
	for _, op := range tensor.Ops() {
		if !covered[op] {
			t.Errorf("op %v has no conformance case", op)
		}
	}
}

func (c *checker) randn(n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(c.rng.NormFloat64())
	}
	return out
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// upload makes a dense weight of dtype dt from values (rounded to dt) and
// returns the rounded values.
func (c *checker) upload(name string, dt tensor.DType, vals []float32, shape ...int) (tensor.T, []float64) {
	data := make([]byte, len(vals)*dt.Size())
	rounded := make([]float32, len(vals))
	for i, v := range vals {
		switch dt {
		case tensor.F32:
			binary.LittleEndian.PutUint32(data[i*4:], math.Float32bits(v))
		case tensor.F16:
			binary.LittleEndian.PutUint16(data[i*2:], tensor.FloatToHalf(v))
		case tensor.BF16:
			binary.LittleEndian.PutUint16(data[i*2:], tensor.FloatToBF16(v))
		}
	}
	tensor.Float32(dt, data, 0, rounded)
	t, err := c.b.Upload(tensor.Weight{Name: name, DType: dt, Shape: shape, Data: data})
	if err != nil {
		c.t.Fatalf("upload %s: %v", name, err)
	}
	return t, widen(rounded)
}

// uploadQuant packs random levels for an MLX-quantized weight of shape
// ([rows, cols], or stacked experts [experts, out, in]: the last axis is
// the quantized one) and returns the dequantized values the op must use.
func (c *checker) uploadQuant(bits, group int, shape ...int) (tensor.T, []float64) {
	cols := shape[len(shape)-1]
	rows := tensor.Elements(shape) / cols
	perWord := 32 / bits
	words := make([]byte, rows*cols/perWord*4)
	levels := make([]uint32, rows*cols)
	for i := range levels {
		levels[i] = uint32(c.rng.IntN(1 << bits))
	}
	for w := 0; w < len(words)/4; w++ {
		var word uint32
		for e := 0; e < perWord; e++ {
			word |= levels[w*perWord+e] << (e * bits)
		}
		binary.LittleEndian.PutUint32(words[w*4:], word)
	}
	groups := rows * cols / group
	scales := make([]byte, groups*2)
	biases := make([]byte, groups*2)
	sf := make([]float32, groups)
	bf := make([]float32, groups)
	for i := 0; i < groups; i++ {
		s := tensor.FloatToBF16(float32(0.01 + 0.05*c.rng.Float64()))
		b := tensor.FloatToBF16(float32(-0.3 * c.rng.Float64()))
		binary.LittleEndian.PutUint16(scales[i*2:], s)
		binary.LittleEndian.PutUint16(biases[i*2:], b)
		sf[i] = math.Float32frombits(uint32(s) << 16)
		bf[i] = math.Float32frombits(uint32(b) << 16)
	}
	w := tensor.Weight{Name: fmt.Sprintf("q%dg%d", bits, group), DType: tensor.U32, Shape: append([]int(nil), shape...), Data: words,
		Quant: &tensor.Quant{Bits: bits, GroupSize: group}, Scales: scales, Biases: biases, ScaleDType: tensor.BF16}
	t, err := c.b.Upload(w)
	if err != nil {
		c.t.Fatalf("upload quantized: %v", err)
	}
	deq := make([]float64, rows*cols)
	for i := range deq {
		gi := i / group
		deq[i] = float64(float32(levels[i])*sf[gi] + bf[gi])
	}
	return t, deq
}

func matmulRef(x, w []float64, m, k, n int) []float64 {
	out := make([]float64, m*n)
	for r := 0; r < m; r++ {
		for j := 0; j < n; j++ {
			var s float64
			for i := 0; i < k; i++ {
				s += x[r*k+i] * w[j*k+i]
			}
			out[r*n+j] = s
		}
	}
	return out
}

func mapRef(x []float64, f func(float64) float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = f(v)
	}
	return out
}
