package tensortest

import (
	"math"
	"sort"

	"hearth/engine/tensor"
)

// moe adds cases for the mixture-of-experts ops: the router with each
// scoring and normalisation, the expert-gathered matmul on dense and
// quantized stacked weights (shared and per-slot inputs, one row and
// many, empty experts and experts with hundreds of rows), and the
// weighted sum.
func moe(add func(tensor.Op, string, func(*checker, *tensor.Graph) (tensor.T, []float64))) {
	for _, tc := range []struct {
		name       string
		n, e, k    int
		scoring    int
		norm       bool
		scoreScale float32
		scaled     bool // RouteScaled, with a per-expert factor
	}{
		{"Route/softmax", 5, 7, 3, tensor.RouteSoftmax, false, 2, false},
		{"Route/softmax-norm", 6, 8, 2, tensor.RouteSoftmax, true, 3, false},
		{"Route/sigmoid-norm", 4, 9, 4, tensor.RouteSigmoid, true, 2, false},
		{"Route/sigmoid-top1", 3, 5, 1, tensor.RouteSigmoid, false, 1, false},
		{"Route/wide", 2, 67, 8, tensor.RouteSoftmax, true, 4, false},
		{"Route/softmax-norm-scaled", 5, 6, 2, tensor.RouteSoftmax, true, 2, true},
	} {
		add(tensor.OpRoute, tc.name, func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
			s := c.randn(tc.n * tc.e)
			for i := range s {
				s[i] *= tc.scoreScale
			}
			scale := c.randn(tc.e)
			for i := range scale {
				scale[i] = 1 + scale[i]/4
			}
			want := make([]float64, 0, tc.n*2*tc.k)
			for r := 0; r < tc.n; r++ {
				row := widen(s[r*tc.e : (r+1)*tc.e])
				if tc.scoring == tensor.RouteSigmoid {
					for i, v := range row {
						row[i] = 1 / (1 + math.Exp(-v))
					}
				} else {
					var sum float64
					for _, v := range row {
						sum += math.Exp(v)
					}
					for i, v := range row {
						row[i] = math.Exp(v) / sum
					}
				}
				ids := make([]int, tc.e)
				for i := range ids {
					ids[i] = i
				}
				sort.SliceStable(ids, func(a, b int) bool { return row[ids[a]] > row[ids[b]] })
				var top float64
				for _, id := range ids[:tc.k] {
					top += row[id]
				}
				for _, id := range ids[:tc.k] {
					w := row[id]
					if tc.norm {
						w /= top
					}
					if tc.scaled {
						w *= float64(scale[id])
					}
					want = append(want, w)
				}
				for _, id := range ids[:tc.k] {
					want = append(want, float64(id))
				}
			}
			if tc.scaled {
				return g.RouteScaled(g.Input(s, tc.n, tc.e), tc.k, tc.scoring, tc.norm, g.Input(scale, tc.e)), want
			}
			return g.Route(g.Input(s, tc.n, tc.e), tc.k, tc.scoring, tc.norm), want
		})
	}
	type wcase struct {
		name        string
		dt          tensor.DType
		bits, group int
		n, k, e     int
		out, in     int
		slots       bool // x is [n, k, in]
	}
	for _, tc := range []wcase{
		{"ExpertMatMul/F32", tensor.F32, 0, 0, 3, 2, 4, 11, 40, false},
		{"ExpertMatMul/BF16-slots", tensor.BF16, 0, 0, 5, 3, 6, 9, 64, true},
		{"ExpertMatMul/F16", tensor.F16, 0, 0, 2, 2, 3, 7, 32, false},
		{"ExpertMatMul/F32-many-rows", tensor.F32, 0, 0, 37, 2, 3, 19, 24, false},
		{"ExpertMatMul/q4g64", 0, 4, 64, 3, 2, 5, 13, 128, false},
		{"ExpertMatMul/q4g64-many-rows-slots", 0, 4, 64, 41, 2, 3, 21, 128, true},
		{"ExpertMatMul/q8g32-slots", 0, 8, 32, 4, 3, 4, 10, 96, true},
		{"ExpertMatMul/q2g64", 0, 2, 64, 2, 2, 3, 6, 64, false},
		// one row (decode); most experts get no slot
		{"ExpertMatMul/q4g64-one-row", 0, 4, 64, 1, 4, 9, 70, 128, false},
		// widths off 32 and 64, most experts empty
		{"ExpertMatMul/F32-odd-sparse", tensor.F32, 0, 0, 3, 2, 16, 67, 37, false},
		// ~87 slots per expert and ragged 64-row tiles: several blocks of slots
		{"ExpertMatMul/q4g32-many-pairs", 0, 4, 32, 130, 4, 6, 130, 96, false},
		{"ExpertMatMul/q8g128-many-pairs-slots", 0, 8, 128, 60, 3, 4, 33, 256, true},
		// every row picks both experts: 700 slots each, more than one
		// pass over a kernel's slot list
		{"ExpertMatMul/BF16-every-row-slots", tensor.BF16, 0, 0, 700, 2, 2, 20, 34, true},
		{"ExpertMatMul/F16-every-row", tensor.F16, 0, 0, 900, 3, 3, 9, 64, false},
	} {
		add(tensor.OpExpertMatMul, tc.name, func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
			var w tensor.T
			var wr []float64
			if tc.bits > 0 {
				w, wr = c.uploadQuant(tc.bits, tc.group, tc.e, tc.out, tc.in)
			} else {
				w, wr = c.upload("experts", tc.dt, c.randn(tc.e*tc.out*tc.in), tc.e, tc.out, tc.in)
			}
			route, ids := c.randomRoute(tc.n, tc.k, tc.e)
			xrows := tc.n
			if tc.slots {
				xrows = tc.n * tc.k
			}
			x := c.randn(xrows * tc.in)
			want := make([]float64, tc.n*tc.k*tc.out)
			for t := 0; t < tc.n; t++ {
				for j := 0; j < tc.k; j++ {
					xr := t
					if tc.slots {
						xr = t*tc.k + j
					}
					e := ids[t*tc.k+j]
					for o := 0; o < tc.out; o++ {
						var s float64
						for i := 0; i < tc.in; i++ {
							s += float64(x[xr*tc.in+i]) * wr[(e*tc.out+o)*tc.in+i]
						}
						want[(t*tc.k+j)*tc.out+o] = s
					}
				}
			}
			xshape := []int{tc.n, tc.in}
			if tc.slots {
				xshape = []int{tc.n, tc.k, tc.in}
			}
			xt := g.Input(x, xshape...)
			return g.ExpertMatMul(xt, w, g.Input(route, tc.n, 2*tc.k)), want
		})
	}
	add(tensor.OpExpertSum, "ExpertSum", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		const n, k, d = 5, 3, 13
		route, _ := c.randomRoute(n, k, 6)
		y := c.randn(n * k * d)
		want := make([]float64, n*d)
		for t := 0; t < n; t++ {
			for j := 0; j < k; j++ {
				for i := 0; i < d; i++ {
					want[t*d+i] += float64(route[t*2*k+j]) * float64(y[(t*k+j)*d+i])
				}
			}
		}
		return g.ExpertSum(g.Input(y, n, k, d), g.Input(route, n, 2*k)), want
	})
}

// randomRoute makes a router output [n, 2k] by hand: k distinct experts of
// e per row (ids as floats after the weights) and positive weights. It also
// returns the ids, row-major.
func (c *checker) randomRoute(n, k, e int) ([]float32, []int) {
	route := make([]float32, n*2*k)
	ids := make([]int, 0, n*k)
	for t := 0; t < n; t++ {
		perm := c.rng.Perm(e)
		for j := 0; j < k; j++ {
			route[t*2*k+j] = float32(0.1 + c.rng.Float64())
			route[t*2*k+k+j] = float32(perm[j])
			ids = append(ids, perm[j])
		}
	}
	return route, ids
}
