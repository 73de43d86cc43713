package tensortest

import (
	"fmt"
	"math"

	"hearth/engine/tensor"
)

func cases() []opCase {
	var cs []opCase
	add := func(op tensor.Op, name string, f func(c *checker, g *tensor.Graph) (tensor.T, []float64)) {
		cs = append(cs, opCase{op: op, name: name, build: f})
	}
	add(tensor.OpInput, "Input", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		x := c.randn(7 * 3)
		return g.Input(x, 7, 3), widen(x)
	})
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16} {
		add(tensor.OpEmbed, "Embed/"+dt.String(), func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
			table, ref := c.upload("table", dt, c.randn(37*24), 37, 24)
			ids := []int32{0, 36, 5, 5, 17}
			var want []float64
			for _, id := range ids {
				want = append(want, ref[int(id)*24:(int(id)+1)*24]...)
			}
			return g.Embed(table, g.InputInts(ids, len(ids))), want
		})
	}
	add(tensor.OpEmbed, "Embed/q8g32", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		table, ref := c.uploadQuant(8, 32, 19, 64)
		ids := []int32{18, 0, 7}
		var want []float64
		for _, id := range ids {
			want = append(want, ref[int(id)*64:(int(id)+1)*64]...)
		}
		return g.Embed(table, g.InputInts(ids, len(ids))), want
	})
	// ids on the backend as float32: an Argmax (a greedy token), and a
	// buffer a token was stored into (the next decode step's input)
	add(tensor.OpEmbed, "Embed/argmax-ids", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		table, ref := c.upload("table", tensor.F32, c.randn(37*24), 37, 24)
		x := c.randn(4 * 37)
		var want []float64
		for r := 0; r < 4; r++ {
			id := int(argmaxRef(widen(x[r*37 : (r+1)*37])))
			want = append(want, ref[id*24:(id+1)*24]...)
		}
		return g.Embed(table, g.Reshape(g.Argmax(g.Input(x, 4, 37)), 4)), want
	})
	add(tensor.OpEmbed, "Embed/buffer-ids", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		table, ref := c.uploadQuant(4, 64, 41, 64)
		buf, err := c.b.Alloc([]int{3})
		if err != nil {
			c.t.Fatal(err)
		}
		ids := []float32{40, 0, 7}
		var want []float64
		for _, id := range ids {
			want = append(want, ref[int(id)*64:(int(id)+1)*64]...)
		}
		return g.Embed(table, g.Store(buf, g.Input(ids, 3), 0)), want
	})
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16} {
		add(tensor.OpMatMul, "MatMul/"+dt.String(), func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
			x := c.randn(5 * 40)
			w, wr := c.upload("w", dt, c.randn(33*40), 33, 40)
			return g.MatMul(g.Input(x, 5, 40), w), matmulRef(widen(x), wr, 5, 40, 33)
		})
	}
	for _, q := range []struct{ bits, group int }{{4, 64}, {8, 32}, {4, 128}, {2, 64}, {8, 64}, {4, 32}} {
		add(tensor.OpMatMul, "MatMul/quant", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
			x := c.randn(3 * 256)
			w, wr := c.uploadQuant(q.bits, q.group, 21, 256)
			return g.MatMul(g.Input(x, 3, 256), w), matmulRef(widen(x), wr, 3, 256, 21)
		})
	}
	add(tensor.OpMatMul, "MatMul/node", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		x, y := c.randn(4*9), c.randn(6*9)
		return g.MatMul(g.Input(x, 4, 9), g.Input(y, 6, 9)), matmulRef(widen(x), widen(y), 4, 9, 6)
	})
	binary := func(op tensor.Op, name string, f func(a, b float64) float64, rec func(g *tensor.Graph, a, b tensor.T) tensor.T) {
		add(op, name, func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
			a, b := c.randn(3*4*5), c.randn(4*5)
			want := make([]float64, len(a))
			for i := range a {
				want[i] = f(float64(a[i]), float64(b[i%len(b)]))
			}
			return rec(g, g.Input(a, 3, 4, 5), g.Input(b, 4, 5)), want
		})
	}
	binary(tensor.OpAdd, "Add/broadcast", func(a, b float64) float64 { return a + b }, (*tensor.Graph).Add)
	binary(tensor.OpMul, "Mul/broadcast", func(a, b float64) float64 { return a * b }, (*tensor.Graph).Mul)
	add(tensor.OpAdd, "Add/weight", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		x := c.randn(3 * 10)
		b, br := c.upload("bias", tensor.BF16, c.randn(10), 10)
		want := widen(x)
		for i := range want {
			want[i] += br[i%10]
		}
		return g.Add(g.Input(x, 3, 10), b), want
	})
	unary := func(op tensor.Op, name string, f func(float64) float64, rec func(g *tensor.Graph, x tensor.T) tensor.T) {
		add(op, name, func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
			x := c.randn(6 * 11)
			for i := range x {
				x[i] *= 3
			}
			return rec(g, g.Input(x, 6, 11)), mapRef(widen(x), f)
		})
	}
	unary(tensor.OpScale, "Scale", func(x float64) float64 { return x * float64(float32(0.37)) },
		func(g *tensor.Graph, x tensor.T) tensor.T { return g.Scale(x, 0.37) })
	unary(tensor.OpSiLU, "SiLU", func(x float64) float64 { return x / (1 + math.Exp(-x)) }, (*tensor.Graph).SiLU)
	unary(tensor.OpGELU, "GELU", func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }, (*tensor.Graph).GELU)
	unary(tensor.OpGELUTanh, "GELUTanh", func(x float64) float64 {
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
	}, (*tensor.Graph).GELUTanh)
	unary(tensor.OpTanhCap, "TanhCap", func(x float64) float64 { return 2.5 * math.Tanh(x/2.5) },
		func(g *tensor.Graph, x tensor.T) tensor.T { return g.TanhCap(x, 2.5) })
	unary(tensor.OpSoftmax, "Softmax", nil, (*tensor.Graph).Softmax)
	cs[len(cs)-1].build = func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		x := c.randn(6 * 11)
		want := widen(x)
		for r := 0; r < 6; r++ {
			row := want[r*11 : (r+1)*11]
			var s float64
			for _, v := range row {
				s += math.Exp(v)
			}
			for i, v := range row {
				row[i] = math.Exp(v) / s
			}
		}
		return g.Softmax(g.Input(x, 6, 11)), want
	}
	for _, tc := range []struct {
		name       string
		weight     bool
		shift, eps float32
	}{{"RMSNorm", true, 0, 1e-6}, {"RMSNorm/shift", true, 1, 1e-5}, {"RMSNorm/noweight", false, 0, 1e-6}} {
		add(tensor.OpRMSNorm, tc.name, func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
			x := c.randn(4 * 3 * 13)
			var w tensor.T
			wr := make([]float64, 13)
			if tc.weight {
				w, wr = c.upload("w", tensor.BF16, c.randn(13), 13)
			}
			want := widen(x)
			for r := 0; r < len(want); r += 13 {
				row := want[r : r+13]
				var ss float64
				for _, v := range row {
					ss += v * v
				}
				inv := 1 / math.Sqrt(ss/13+float64(tc.eps))
				for i := range row {
					s := 1.0
					if tc.weight {
						s = wr[i] + float64(tc.shift)
					}
					row[i] *= inv * s
				}
			}
			return g.RMSNorm(g.Input(x, 4, 3, 13), w, tc.eps, tc.shift), want
		})
	}
	add(tensor.OpLayerNorm, "LayerNorm", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		x := c.randn(5 * 17)
		for i := range x {
			x[i] = x[i]*2 + 1.5
		}
		w, wr := c.upload("w", tensor.F32, c.randn(17), 17)
		b, br := c.upload("b", tensor.F32, c.randn(17), 17)
		want := widen(x)
		for r := 0; r < len(want); r += 17 {
			row := want[r : r+17]
			var mean, vr float64
			for _, v := range row {
				mean += v
			}
			mean /= 17
			for _, v := range row {
				vr += (v - mean) * (v - mean)
			}
			inv := 1 / math.Sqrt(vr/17+1e-5)
			for i := range row {
				row[i] = (row[i]-mean)*inv*wr[i] + br[i]
			}
		}
		return g.LayerNorm(g.Input(x, 5, 17), w, b, 1e-5), want
	})
	for _, tc := range []struct {
		name        string
		dims        int
		traditional bool
		scale       float32
	}{{"RoPE", 16, false, 1}, {"RoPE/traditional", 16, true, 1}, {"RoPE/partial", 8, false, 1}, {"RoPE/scaled", 16, false, 1.2}} {
		add(tensor.OpRoPE, tc.name, func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
			const n, heads, hd = 5, 3, 16
			x := c.randn(n * heads * hd)
			pos := []int32{0, 1, 7, 300, 4095}
			inv := make([]float32, tc.dims/2)
			for i := range inv {
				inv[i] = float32(1 / math.Pow(10000, float64(2*i)/float64(tc.dims)))
			}
			r := &tensor.Rope{InvFreq: inv, Dims: tc.dims, Traditional: tc.traditional, Scale: tc.scale}
			want := widen(x)
			for t, p := range pos {
				for h := 0; h < heads; h++ {
					v := want[(t*heads+h)*hd:]
					for j := 0; j < tc.dims/2; j++ {
						a := float64(float32(p) * inv[j])
						cs, sn := math.Cos(a)*float64(tc.scale), math.Sin(a)*float64(tc.scale)
						i1, i2 := j, j+tc.dims/2
						if tc.traditional {
							i1, i2 = 2*j, 2*j+1
						}
						x1, x2 := v[i1], v[i2]
						v[i1], v[i2] = x1*cs-x2*sn, x2*cs+x1*sn
					}
				}
			}
			return g.RoPE(g.Input(x, n, heads, hd), g.InputInts(pos, n), r), want
		})
	}
	add(tensor.OpReshape, "Reshape", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		x := c.randn(6 * 4)
		return g.Reshape(g.Input(x, 6, 4), 3, 8), widen(x)
	})
	add(tensor.OpSlice, "Slice/rows", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		x := c.randn(6 * 4)
		return g.Slice(g.Input(x, 6, 4), 0, 2, 5), widen(x[8:20])
	})
	add(tensor.OpSlice, "Slice/last", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		x := c.randn(3 * 2 * 7)
		var want []float64
		for r := 0; r < 6; r++ {
			want = append(want, widen(x[r*7+2:r*7+6])...)
		}
		return g.Slice(g.Input(x, 3, 2, 7), -1, 2, 6), want
	})
	add(tensor.OpStore, "Store", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		buf, err := c.b.Alloc([]int{6, 3, 4})
		if err != nil {
			c.t.Fatal(err)
		}
		src := c.randn(2 * 3 * 4)
		want := make([]float64, 6*3*4)
		copy(want[3*12:], widen(src))
		return g.Store(buf, g.Input(src, 2, 3, 4), 3), want
	})
	attention(add)
	media(add)
	moe(add)
	deltanet(add)
	argmax(func(name string, f func(c *checker, g *tensor.Graph) (tensor.T, []float64)) {
		cs = append(cs, opCase{op: tensor.OpArgmax, name: name, build: f, exact: true})
	})
	return cs
}

// attention adds cases for causal GQA with window, ring and softcap, for
// spans of positions that see each other (with a window, a ring, one
// query at a time), and for bidirectional attention over buffers and over
// keys and values that are graph nodes (an encoder's).
func attention(add func(tensor.Op, string, func(*checker, *tensor.Graph) (tensor.T, []float64))) {
	for _, tc := range []struct {
		name  string
		spec  tensor.AttnSpec
		rows  int
		nodes bool // keys and values are computed nodes, not a cache
	}{
		{"Attention/causal", tensor.AttnSpec{QueryPos: 6, KeyLen: 10}, 12, false},
		{"Attention/window", tensor.AttnSpec{QueryPos: 6, KeyLen: 10, Window: 3}, 12, false},
		{"Attention/ring", tensor.AttnSpec{QueryPos: 16, KeyLen: 20, Window: 5, Ring: 9}, 9, false},
		{"Attention/softcap", tensor.AttnSpec{QueryPos: 6, KeyLen: 10, Softcap: 1.5, Scale: 0.3}, 12, false},
		{"Attention/bidirectional", tensor.AttnSpec{QueryPos: 0, KeyLen: 10, Bidirectional: true}, 10, false},
		{"Attention/encoder", tensor.AttnSpec{QueryPos: 0, KeyLen: 13, Bidirectional: true}, 13, true},
		{"Attention/spans", tensor.AttnSpec{QueryPos: 2, KeyLen: 14, Spans: []tensor.Span{{Start: 3, End: 7}, {Start: 9, End: 12}}}, 14, false},
		{"Attention/spans-window", tensor.AttnSpec{QueryPos: 2, KeyLen: 14, Window: 3, Spans: []tensor.Span{{Start: 1, End: 9}, {Start: 10, End: 14}}}, 14, false},
		{"Attention/spans-ring", tensor.AttnSpec{QueryPos: 16, KeyLen: 24, Window: 5, Ring: 13, Spans: []tensor.Span{{Start: 10, End: 15}, {Start: 17, End: 22}}}, 13, false},
		{"Attention/spans-decode", tensor.AttnSpec{QueryPos: 5, KeyLen: 7, Spans: []tensor.Span{{Start: 4, End: 7}}}, 8, false},
	} {
		add(tensor.OpAttention, tc.name, func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
			const hq, hkv, d = 4, 2, 8
			n := tc.spec.KeyLen - tc.spec.QueryPos
			kd, vd, q := c.randn(tc.rows*hkv*d), c.randn(tc.rows*hkv*d), c.randn(n*hq*d)
			var kT, vT tensor.T
			if tc.nodes {
				kT = g.Scale(g.Input(kd, tc.rows, hkv, d), 1)
				vT = g.Scale(g.Input(vd, tc.rows, hkv, d), 1)
			} else {
				kb, _ := c.b.Alloc([]int{tc.rows, hkv, d})
				vb, _ := c.b.Alloc([]int{tc.rows, hkv, d})
				kT = g.Store(kb, g.Input(kd, tc.rows, hkv, d), 0)
				vT = g.Store(vb, g.Input(vd, tc.rows, hkv, d), 0)
			}
			s := tc.spec
			scale := float64(s.Scale)
			if scale == 0 {
				scale = float64(float32(1 / math.Sqrt(d)))
			}
			// sees is the mask from its definition: causal or in the
			// query's span, and within the window; everything when
			// bidirectional
			sees := func(qp, p int) bool {
				if s.Bidirectional {
					return true
				}
				ok := p <= qp
				for _, sp := range s.Spans {
					ok = ok || sp.Start <= qp && qp < sp.End && sp.Start <= p && p < sp.End
				}
				return ok && (s.Window == 0 || p > qp-s.Window)
			}
			want := make([]float64, n*hq*d)
			for i := 0; i < n; i++ {
				qp := s.QueryPos + i
				for h := 0; h < hq; h++ {
					kvh := h / (hq / hkv)
					var keys []int
					for p := 0; p < s.KeyLen; p++ {
						if sees(qp, p) {
							keys = append(keys, p)
						}
					}
					row := func(p int) int {
						if s.Ring > 0 {
							return p % s.Ring
						}
						return p
					}
					var sc []float64
					mx := math.Inf(-1)
					for _, p := range keys {
						var dot float64
						for j := 0; j < d; j++ {
							dot += float64(q[(i*hq+h)*d+j]) * float64(kd[(row(p)*hkv+kvh)*d+j])
						}
						dot *= scale
						if s.Softcap > 0 {
							dot = float64(s.Softcap) * math.Tanh(dot/float64(s.Softcap))
						}
						sc = append(sc, dot)
						mx = max(mx, dot)
					}
					var sum float64
					for k := range sc {
						sc[k] = math.Exp(sc[k] - mx)
						sum += sc[k]
					}
					for k, p := range keys {
						for j := 0; j < d; j++ {
							want[(i*hq+h)*d+j] += sc[k] / sum * float64(vd[(row(p)*hkv+kvh)*d+j])
						}
					}
				}
			}
			return g.Attention(g.Input(q, n, hq, d), kT, vT, s), want
		})
	}
}

// media adds the cases of the splice and the average pool.
func media(add func(tensor.Op, string, func(*checker, *tensor.Graph) (tensor.T, []float64))) {
	add(tensor.OpSplice, "Splice", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		const n, m, d = 9, 4, 12
		x, src := c.randn(n*d), c.randn(m*d)
		from := []int32{-1, 2, 3, -1, -1, 0, 1, -1, 2}
		var want []float64
		for r, f := range from {
			if f < 0 {
				want = append(want, widen(x[r*d:(r+1)*d])...)
			} else {
				want = append(want, widen(src[int(f)*d:(int(f)+1)*d])...)
			}
		}
		return g.Splice(g.Input(x, n, d), g.Input(src, m, d), g.InputInts(from, n)), want
	})
	for _, tc := range []struct{ h, w, k, c int }{{8, 8, 2, 5}, {6, 9, 3, 7}, {4, 4, 1, 3}} {
		add(tensor.OpAvgPool2d, fmt.Sprintf("AvgPool2d/%dx%d-k%d", tc.h, tc.w, tc.k), func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
			x := c.randn(tc.h * tc.w * tc.c)
			oh, ow := tc.h/tc.k, tc.w/tc.k
			want := make([]float64, oh*ow*tc.c)
			for oy := 0; oy < oh; oy++ {
				for ox := 0; ox < ow; ox++ {
					for j := 0; j < tc.c; j++ {
						var s float64
						for y := oy * tc.k; y < (oy+1)*tc.k; y++ {
							for xx := ox * tc.k; xx < (ox+1)*tc.k; xx++ {
								s += float64(x[(y*tc.w+xx)*tc.c+j])
							}
						}
						want[(oy*ow+ox)*tc.c+j] = s / float64(tc.k*tc.k)
					}
				}
			}
			return g.AvgPool2d(g.Input(x, tc.h*tc.w, tc.c), tc.h, tc.w, tc.k), want
		})
	}
	add(tensor.OpClamp, "Clamp", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		x := c.randn(5 * 13)
		var want []float64
		for _, v := range x {
			want = append(want, math.Min(math.Max(float64(v), -0.5), 0.75))
		}
		return g.Clamp(g.Input(x, 5, 13), -0.5, 0.75), want
	})
	add(tensor.OpClamp, "Clamp/relu", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		x := c.randn(37)
		var want []float64
		for _, v := range x {
			want = append(want, math.Max(float64(v), 0))
		}
		return g.Clamp(g.Input(x, 37), 0, float32(math.Inf(1))), want
	})
	for _, tc := range []struct {
		n, h, d, p, left, right int
		softcap                 float32
	}{{29, 2, 8, 13, 12, 0, 2}, {7, 3, 5, 4, 6, 3, 0}, {1, 1, 4, 2, 3, 0, 5}} {
		add(tensor.OpRelAttention, fmt.Sprintf("RelAttention/n%d-l%d-r%d", tc.n, tc.left, tc.right), func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
			n, h, d := tc.n, tc.h, tc.d
			q, k, v, rel := c.randn(n*h*d), c.randn(n*h*d), c.randn(n*h*d), c.randn(tc.p*h*d)
			dot := func(a, b []float32) float64 {
				var s float64
				for e := range a {
					s += float64(a[e]) * float64(b[e])
				}
				return s
			}
			want := make([]float64, n*h*d)
			for i := range n {
				for hh := range h {
					row := func(x []float32, r int) []float32 { return x[(r*h+hh)*d : (r*h+hh+1)*d] }
					var keys []int
					var sc []float64
					m := math.Inf(-1)
					for j := range n {
						dist := i - j
						if !(dist >= 0 && dist < tc.left || dist < 0 && -dist < tc.right) {
							continue
						}
						s := dot(row(q, i), row(k, j))
						if r := tc.left - dist; r < tc.p {
							s += dot(row(q, i), row(rel, r))
						}
						if tc.softcap > 0 {
							s = float64(tc.softcap) * math.Tanh(s/float64(tc.softcap))
						}
						keys, sc = append(keys, j), append(sc, s)
						m = math.Max(m, s)
					}
					var sum float64
					for x := range sc {
						sc[x] = math.Exp(sc[x] - m)
						sum += sc[x]
					}
					for x, j := range keys {
						for e, val := range row(v, j) {
							want[(i*h+hh)*d+e] += sc[x] / sum * float64(val)
						}
					}
				}
			}
			return g.RelAttention(g.Input(q, n, h, d), g.Input(k, n, h, d), g.Input(v, n, h, d), g.Input(rel, tc.p, h, d), tc.left, tc.right, tc.softcap), want
		})
	}
}
