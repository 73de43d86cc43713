package tensortest

import (
	"math"

	"hearth/engine/tensor"
)

// deltanet adds cases for the linear-attention ops: Sigmoid and Softplus
// (across softplus's threshold), the causal convolution (a prompt longer
// than the kernel, one shorter, one token; dense and BF16 taps; its output
// and the state it leaves), and the gated delta rule (grouped key heads,
// several tokens and one; its output and the state it leaves).
func deltanet(add func(tensor.Op, string, func(*checker, *tensor.Graph) (tensor.T, []float64))) {
	add(tensor.OpSigmoid, "Sigmoid", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		x := c.randn(5 * 9)
		want := make([]float64, len(x))
		for i := range x {
			x[i] *= 4
			want[i] = 1 / (1 + math.Exp(-float64(x[i])))
		}
		return g.Sigmoid(g.Input(x, 5, 9)), want
	})
	add(tensor.OpSoftplus, "Softplus", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		x := c.randn(4 * 11)
		copy(x, []float32{25, 20.5, 19.5, -30, -12, 1e-3, 0})
		want := make([]float64, len(x))
		for i := range x {
			if i >= 7 {
				x[i] *= 6
			}
			v := float64(x[i])
			want[i] = math.Log1p(math.Exp(v))
			if v > 20 {
				want[i] = v
			}
		}
		return g.Softplus(g.Input(x, 4, 11)), want
	})
	for _, tc := range []struct {
		name    string
		n, c, k int
		dt      tensor.DType
		state   bool // read the state left behind, not the output
	}{
		{"CausalConv1d/prompt", 9, 70, 4, tensor.F32, false},
		{"CausalConv1d/prompt-state", 9, 70, 4, tensor.F32, true},
		{"CausalConv1d/short-bf16", 2, 13, 4, tensor.BF16, false},
		{"CausalConv1d/short-state", 2, 13, 4, tensor.F32, true},
		{"CausalConv1d/token", 1, 33, 3, tensor.F32, false},
		{"CausalConv1d/token-state", 1, 33, 3, tensor.BF16, true},
	} {
		add(tensor.OpCausalConv1d, tc.name, func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
			n, ch, k := tc.n, tc.c, tc.k
			x, st := c.randn(n*ch), c.randn((k-1)*ch)
			w, wr := c.upload("conv", tc.dt, c.randn(ch*k), ch, k)
			sb, _ := c.b.Alloc([]int{k - 1, ch})
			nb, _ := c.b.Alloc([]int{k - 1, ch})
			state := g.Store(sb, g.Input(st, k-1, ch), 0)
			y := g.CausalConv1d(g.Input(x, n, ch), w, state, nb)
			xs := append(widen(st), widen(x)...) // [k-1+n, ch]
			if tc.state {
				return nb, xs[n*ch:]
			}
			want := make([]float64, n*ch)
			for t := 0; t < n; t++ {
				for cc := 0; cc < ch; cc++ {
					for j := 0; j < k; j++ {
						want[t*ch+cc] += wr[cc*k+j] * xs[(t+j)*ch+cc]
					}
				}
			}
			return y, want
		})
	}
	for _, tc := range []struct {
		name              string
		n, hk, hv, dk, dv int
		state             bool
	}{
		{"GatedDeltaRule/prompt", 7, 2, 4, 8, 6, false},
		{"GatedDeltaRule/prompt-state", 7, 2, 4, 8, 6, true},
		{"GatedDeltaRule/token", 1, 1, 3, 32, 40, false},
		{"GatedDeltaRule/token-state", 1, 1, 3, 32, 40, true},
		{"GatedDeltaRule/wide", 3, 2, 2, 128, 70, false},
	} {
		add(tensor.OpGatedDeltaRule, tc.name, func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
			n, hk, hv, dk, dv := tc.n, tc.hk, tc.hv, tc.dk, tc.dv
			q, k, v := c.randn(n*hk*dk), c.randn(n*hk*dk), c.randn(n*hv*dv)
			decay, beta := c.randn(n*hv), c.randn(n*hv)
			for i := range decay {
				decay[i] = -float32(math.Log1p(math.Exp(float64(decay[i])))) / 2
				beta[i] = float32(1 / (1 + math.Exp(-float64(beta[i]))))
			}
			st := c.randn(hv * dk * dv)
			for i := range st {
				st[i] /= 4
			}
			sb, _ := c.b.Alloc([]int{hv, dk, dv})
			nb, _ := c.b.Alloc([]int{hv, dk, dv})
			state := g.Store(sb, g.Input(st, hv, dk, dv), 0)
			y := g.GatedDeltaRule(g.Input(q, n, hk, dk), g.Input(k, n, hk, dk), g.Input(v, n, hv, dv),
				g.Input(decay, n, hv), g.Input(beta, n, hv), state, nb)
			s := widen(st)
			want := make([]float64, n*hv*dv)
			norm := func(x []float32) []float64 {
				var ss float64
				for _, e := range x {
					ss += float64(e) * float64(e)
				}
				out := widen(x)
				for i := range out {
					out[i] /= math.Sqrt(ss + tensor.DeltaRuleEps)
				}
				return out
			}
			for h := 0; h < hv; h++ {
				S := s[h*dk*dv : (h+1)*dk*dv]
				kh := h / (hv / hk)
				for t := 0; t < n; t++ {
					qn := norm(q[(t*hk+kh)*dk : (t*hk+kh+1)*dk])
					kn := norm(k[(t*hk+kh)*dk : (t*hk+kh+1)*dk])
					d := math.Exp(float64(decay[t*hv+h]))
					for i := range S {
						S[i] *= d
					}
					for j := 0; j < dv; j++ {
						var mem float64
						for i := 0; i < dk; i++ {
							mem += S[i*dv+j] * kn[i]
						}
						delta := (float64(v[(t*hv+h)*dv+j]) - mem) * float64(beta[t*hv+h])
						var y float64
						for i := 0; i < dk; i++ {
							S[i*dv+j] += kn[i] * delta
							y += S[i*dv+j] * qn[i] / math.Sqrt(float64(dk))
						}
						want[(t*hv+h)*dv+j] = y
					}
				}
			}
			if tc.state {
				return nb, s
			}
			return y, want
		})
	}
}
