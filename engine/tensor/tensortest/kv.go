package tensortest

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"hearth/engine/cache"
	"hearth/engine/tensor"
)

// KVTolerance bounds |got - want| / (1 + |want|) of attention over a
// cache of type t against attention over the unquantized keys and values:
// q8 rounds each element by at most half a step, max|x|/254 of its group
// (about 0.012 for the unit normal data here), q4 by max|x|/14 (about
// 0.2), and softmax averages that.
func KVTolerance(t tensor.KVType) float64 {
	switch t {
	case tensor.KVQ8:
		return 0.03
	case tensor.KVQ4:
		return 0.3
	}
	return Tolerance
}

// CheckKV runs plain and rotating caches whose buffers hold elements of
// type t on b (cache.WithType), through several steps of Update and
// Attention with odd shapes, a Trim and a ring that wraps. Each step's
// output must equal, within Tolerance, the float64 attention over the keys
// and values as the quantization rule leaves them (tensor.KVType.Round),
// and lie within KVTolerance of the attention over the exact ones.
func CheckKV(t *testing.T, b tensor.Backend, typ tensor.KVType) {
	for _, tc := range []struct {
		name           string
		hq, hkv, d     int
		window, chunk  int
		capTokens      int
		steps          []int // new tokens per step; a negative step trims
		softcap, scale float32
	}{
		{"plain", 4, 2, 40, 0, 16, 40, []int{13, 1, 1, -2, 3, 1}, 0, 0},
		{"plain-d72-gqa", 6, 2, 72, 0, 16, 64, []int{16, 16, 1, -5, 2}, 0, 0},
		{"plain-d8-mha", 3, 3, 8, 0, 8, 24, []int{7, 1, 1}, 1.5, 0.3},
		{"plain-d256", 4, 1, 256, 0, 16, 24, []int{12, 1}, 0, 0},
		{"ring", 4, 2, 24, 5, 4, 64, []int{4, 3, 4, 1, 1, 4, 2, 1, -1, 1}, 0, 0},
	} {
		t.Run(typ.String()+"/"+tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.d), uint64(tc.hq)))
			randn := func(n int) []float32 {
				out := make([]float32, n)
				for i := range out {
					out[i] = float32(rng.NormFloat64())
				}
				return out
			}
			layer, err := cache.NewAttention(cache.WithType(b, typ), tc.capTokens, tc.window, tc.chunk, tc.hkv, tc.d)
			if err != nil {
				t.Fatal(err)
			}
			defer layer.Free()
			row := tc.hkv * tc.d
			if want := int64(tc.capTokens) * int64(tc.hkv) * 2 * typ.RowBytes(tc.d); tc.window == 0 && layer.Bytes() != want {
				t.Errorf("Bytes() = %d, want %d", layer.Bytes(), want)
			}
			// exact and as-quantized keys and values by position
			var kx, vx, kq, vq []float32
			quant := func(x []float32) []float32 {
				out := make([]float32, len(x))
				for h := 0; h*tc.d < len(x); h++ {
					typ.Round(x[h*tc.d:(h+1)*tc.d], out[h*tc.d:(h+1)*tc.d])
				}
				return out
			}
			for si, n := range tc.steps {
				if n < 0 {
					if got := layer.Trim(-n); got != -n {
						t.Fatalf("step %d: Trim(%d) dropped %d", si, -n, got)
					}
					kx, vx = kx[:len(kx)+n*row], vx[:len(vx)+n*row]
					kq, vq = kq[:len(kq)+n*row], vq[:len(vq)+n*row]
					continue
				}
				k, v, q := randn(n*row), randn(n*row), randn(n*tc.hq*tc.d)
				kx, vx = append(kx, k...), append(vx, v...)
				kq, vq = append(kq, quant(k)...), append(vq, quant(v)...)
				g := tensor.NewGraph(b)
				// keys made by a kernel, as a model's RoPE makes them (a
				// backend may have that kernel write the cache directly)
				view, err := layer.Update(g, g.Scale(g.Input(k, n, tc.hkv, tc.d), 1), g.Input(v, n, tc.hkv, tc.d))
				if err != nil {
					t.Fatalf("step %d: %v", si, err)
				}
				spec := view.Spec(tensor.AttnSpec{Window: tc.window, Softcap: tc.softcap, Scale: tc.scale})
				out := g.Attention(g.Input(q, n, tc.hq, tc.d), view.K, view.V, spec)
				if err := g.Err(); err != nil {
					t.Fatalf("step %d: %v", si, err)
				}
				if err := b.Run(context.Background(), g, out); err != nil {
					t.Fatalf("step %d: %v", si, err)
				}
				got := make([]float32, n*tc.hq*tc.d)
				if err := b.Read(out, got); err != nil {
					t.Fatalf("step %d: %v", si, err)
				}
				if spec.Scale == 0 {
					spec.Scale = float32(1 / math.Sqrt(float64(tc.d)))
				}
				wantQ := kvAttnRef(q, kq, vq, n, tc.hq, tc.hkv, tc.d, spec)
				wantX := kvAttnRef(q, kx, vx, n, tc.hq, tc.hkv, tc.d, spec)
				var worst float64
				for i := range got {
					e := math.Abs(float64(got[i])-wantQ[i]) / (1 + math.Abs(wantQ[i]))
					if !(e <= Tolerance) {
						t.Fatalf("step %d: out[%d] = %v, want %v over the quantized cache (relative error %.3g)", si, i, got[i], wantQ[i], e)
					}
					worst = max(worst, math.Abs(float64(got[i])-wantX[i])/(1+math.Abs(wantX[i])))
				}
				if !(worst <= KVTolerance(typ)) {
					t.Fatalf("step %d: relative error %.3g against the exact keys and values, want ≤ %g", si, worst, KVTolerance(typ))
				}
				if typ != tensor.KVF32 && worst == 0 {
					t.Fatalf("step %d: no quantization error at all: the cache is not quantized", si)
				}
			}
		})
	}
}

// kvAttnRef is causal attention in float64 of q [n, hq, d] at positions
// s.QueryPos.. over keys and values by position ([positions, hkv, d]).
func kvAttnRef(q, k, v []float32, n, hq, hkv, d int, s tensor.AttnSpec) []float64 {
	out := make([]float64, n*hq*d)
	for i := 0; i < n; i++ {
		qp := s.QueryPos + i
		lo := 0
		if s.Window > 0 {
			lo = max(0, qp-s.Window+1)
		}
		for h := 0; h < hq; h++ {
			kvh := h / (hq / hkv)
			sc := make([]float64, qp+1-lo)
			mx := math.Inf(-1)
			for p := lo; p <= qp; p++ {
				var dot float64
				for j := 0; j < d; j++ {
					dot += float64(q[(i*hq+h)*d+j]) * float64(k[(p*hkv+kvh)*d+j])
				}
				dot *= float64(s.Scale)
				if s.Softcap > 0 {
					dot = float64(s.Softcap) * math.Tanh(dot/float64(s.Softcap))
				}
				sc[p-lo] = dot
				mx = max(mx, dot)
			}
			var sum float64
			for j := range sc {
				sc[j] = math.Exp(sc[j] - mx)
				sum += sc[j]
			}
			for p := lo; p <= qp; p++ {
				for j := 0; j < d; j++ {
					out[(i*hq+h)*d+j] += sc[p-lo] / sum * float64(v[(p*hkv+kvh)*d+j])
				}
			}
		}
	}
	return out
}
