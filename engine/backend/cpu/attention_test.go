package cpu

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"hearth/engine/tensor"
)

// refAttention is the op's documented meaning in float64.
func refAttention(q, k, v []float32, n, hq, hkv, d int, s tensor.AttnSpec) []float64 {
	out := make([]float64, n*hq*d)
	for i := 0; i < n; i++ {
		qp := s.QueryPos + i
		for h := 0; h < hq; h++ {
			kvh := h / (hq / hkv)
			lo, hi := 0, s.KeyLen-1
			if !s.Bidirectional {
				hi = qp
				if s.Window > 0 {
					lo = max(0, qp-s.Window+1)
				}
			}
			var sc []float64
			mx := math.Inf(-1)
			for p := lo; p <= hi; p++ {
				row := p
				if s.Ring > 0 {
					row = p % s.Ring
				}
				var dot float64
				for j := 0; j < d; j++ {
					dot += float64(q[(i*hq+h)*d+j]) * float64(k[(row*hkv+kvh)*d+j])
				}
				dot *= float64(s.Scale)
				if s.Softcap > 0 {
					dot = float64(s.Softcap) * math.Tanh(dot/float64(s.Softcap))
				}
				sc = append(sc, dot)
				mx = max(mx, dot)
			}
			var sum float64
			for j := range sc {
				sc[j] = math.Exp(sc[j] - mx)
				sum += sc[j]
			}
			for p := lo; p <= hi; p++ {
				row := p
				if s.Ring > 0 {
					row = p % s.Ring
				}
				for j := 0; j < d; j++ {
					out[(i*hq+h)*d+j] += sc[p-lo] / sum * float64(v[(row*hkv+kvh)*d+j])
				}
			}
		}
	}
	return out
}

// TestAttentionShapes runs prefill- and decode-sized attention (the blocked
// and the per-query path) on every kernel set with real head sizes, head
// dimensions that are not a multiple of the vector, windows, rings and
// softcapping.
func TestAttentionShapes(t *testing.T) {
	cases := []struct {
		n, hq, hkv, d, rows int
		spec                tensor.AttnSpec
	}{
		{37, 8, 2, 64, 100, tensor.AttnSpec{QueryPos: 50, KeyLen: 87}},
		{1, 8, 2, 64, 100, tensor.AttnSpec{QueryPos: 86, KeyLen: 87}},
		{29, 6, 3, 80, 64, tensor.AttnSpec{QueryPos: 0, KeyLen: 29, Window: 7}},
		{30, 4, 4, 32, 40, tensor.AttnSpec{QueryPos: 70, KeyLen: 100, Window: 9, Ring: 40}},
		{25, 4, 1, 48, 25, tensor.AttnSpec{QueryPos: 0, KeyLen: 25, Bidirectional: true, Softcap: 3}},
		{300, 2, 1, 16, 300, tensor.AttnSpec{QueryPos: 0, KeyLen: 300}},
	}
	for _, ks := range KernelSets() {
		for ci, c := range cases {
			t.Run(fmt.Sprintf("%s/%d", ks, ci), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(ci), 9))
				b := New(Options{Threads: 2, Kernels: ks})
				defer b.Close()
				s := c.spec
				if s.Scale == 0 {
					s.Scale = float32(1 / math.Sqrt(float64(c.d)))
				}
				randn := func(n int) []float32 {
					x := make([]float32, n)
					for i := range x {
						x[i] = float32(rng.NormFloat64())
					}
					return x
				}
				q, kd, vd := randn(c.n*c.hq*c.d), randn(c.rows*c.hkv*c.d), randn(c.rows*c.hkv*c.d)
				kb, _ := b.Alloc([]int{c.rows, c.hkv, c.d})
				vb, _ := b.Alloc([]int{c.rows, c.hkv, c.d})
				g := tensor.NewGraph(b)
				kT := g.Store(kb, g.Input(kd, c.rows, c.hkv, c.d), 0)
				vT := g.Store(vb, g.Input(vd, c.rows, c.hkv, c.d), 0)
				out := g.Attention(g.Input(q, c.n, c.hq, c.d), kT, vT, s)
				if err := b.Run(context.Background(), g, out); err != nil {
					t.Fatal(err)
				}
				got := make([]float32, c.n*c.hq*c.d)
				if err := b.Read(out, got); err != nil {
					t.Fatal(err)
				}
				want := refAttention(q, kd, vd, c.n, c.hq, c.hkv, c.d, s)
				for i := range want {
					if d := math.Abs(float64(got[i]) - want[i]); !(d <= 2e-5*(1+math.Abs(want[i]))) {
						t.Fatalf("out[%d] = %v, want %v (|Δ| %.3g)", i, got[i], want[i], d)
					}
				}
			})
		}
	}
}

func TestExpSum(t *testing.T) {
	for _, ks := range KernelSets() {
		k, _ := kernelsNamed(ks)
		x := make([]float32, 53)
		for i := range x {
			x[i] = float32(i)*-2.1 + 3
		}
		x[7] = -1e30 // flushes to zero
		want := make([]float64, len(x))
		var sum float64
		for i, v := range x {
			want[i] = math.Exp(float64(v) - 3)
			sum += want[i]
		}
		got := k.expSum(x, 3)
		if d := math.Abs(float64(got)-sum) / sum; d > 1e-6 {
			t.Errorf("%s: expSum = %v, want %v", ks, got, sum)
		}
		for i := range x {
			if d := math.Abs(float64(x[i]) - want[i]); d > 3e-7*want[i] && !(want[i] < 1e-37 && x[i] == 0) {
				t.Errorf("%s: x[%d] = %v, want %v", ks, i, x[i], want[i])
			}
		}
	}
}
