package cpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"hearth/engine/tensor"
)

// weightFormat makes a random weight of one stored format.
type weightFormat struct {
	name  string
	dt    tensor.DType // dense dtype, or U32 when quantized
	bits  int
	group int
	sdt   tensor.DType // scale dtype
}

var formats = []weightFormat{
	{"f32", tensor.F32, 0, 0, 0},
	{"f16", tensor.F16, 0, 0, 0},
	{"bf16", tensor.BF16, 0, 0, 0},
	{"q4g64", tensor.U32, 4, 64, tensor.BF16},
	{"q4g32", tensor.U32, 4, 32, tensor.BF16},
	{"q4g128-f16", tensor.U32, 4, 128, tensor.F16},
	{"q4g64-f32", tensor.U32, 4, 64, tensor.F32},
	{"q8g32", tensor.U32, 8, 32, tensor.BF16},
	{"q8g64-f16", tensor.U32, 8, 64, tensor.F16},
	{"q2g64", tensor.U32, 2, 64, tensor.BF16},
	{"q6g64", tensor.U32, 6, 64, tensor.BF16},
	// the other scale type of each 4-bit group size (the unrolled and
	// int8 kernels load each their own way)
	{"q4g64-f16", tensor.U32, 4, 64, tensor.F16},
	{"q4g32-f16", tensor.U32, 4, 32, tensor.F16},
	{"q4g128", tensor.U32, 4, 128, tensor.BF16},
	// groups of 16 (GGUF's Q2_K, Q3_K, Q6_K repacked by engine/gguf, and
	// the 4- and 8-bit widths the SIMD kernels take for larger groups):
	// every kernel that assumes a group of 32 or more must pass them by
	{"q6g16-f32", tensor.U32, 6, 16, tensor.F32},
	{"q3g16-f32", tensor.U32, 3, 16, tensor.F32},
	{"q2g16-f32", tensor.U32, 2, 16, tensor.F32},
	{"q4g16", tensor.U32, 4, 16, tensor.BF16},
	{"q8g16-f16", tensor.U32, 8, 16, tensor.F16},
}

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

// randomWeight makes a [rows, cols] weight of format f with random bits.
func randomWeight(rng *rand.Rand, f weightFormat, rows, cols int) tensor.Weight {
	w := tensor.Weight{Name: f.name, DType: f.dt, Shape: []int{rows, cols}}
	if f.bits == 0 {
		w.Data = make([]byte, rows*cols*f.dt.Size())
		for i := 0; i < rows*cols; i++ {
			putScalar(w.Data, i, float32(rng.NormFloat64()*0.1), f.dt)
		}
		return w
	}
	w.Data = make([]byte, rows*cols*f.bits/8)
	for i := range w.Data {
		w.Data[i] = byte(rng.Uint32())
	}
	groups := rows * cols / f.group
	w.Quant = &tensor.Quant{Bits: f.bits, GroupSize: f.group}
	w.ScaleDType = f.sdt
	w.Scales = make([]byte, groups*f.sdt.Size())
	w.Biases = make([]byte, groups*f.sdt.Size())
	for g := 0; g < groups; g++ {
		putScalar(w.Scales, g, float32(0.001+0.02*rng.Float64()), f.sdt)
		putScalar(w.Biases, g, float32(-0.15*rng.Float64()), f.sdt)
	}
	return w
}

// refMatMul is x·wᵀ in float64 over DecodeRow's values, and the scale of
// each output (Σ|x·w|) that bounds float32 rounding.
func refMatMul(x []float32, w *tensor.Weight, m, k int) (want, scale []float64) {
	n := w.Shape[0]
	row := make([]float32, k)
	want = make([]float64, m*n)
	scale = make([]float64, m*n)
	for j := 0; j < n; j++ {
		w.DecodeRow(j, row)
		for r := 0; r < m; r++ {
			var s, a float64
			for i, v := range row {
				p := float64(x[r*k+i]) * float64(v)
				s += p
				a += math.Abs(p)
			}
			want[r*n+j], scale[r*n+j] = s, a
		}
	}
	return want, scale
}

// TestMatMulKernels checks every kernel set against a float64 reference on
// shapes with tails (rows not a multiple of the tile, columns not a
// multiple of the vector) and on both the matrix–vector and the GEMM path.
func TestMatMulKernels(t *testing.T) {
	shapes := []struct{ m, n, k int }{
		{1, 37, 256}, {3, 100, 384}, {gemmMinRows, 33, 320}, {41, 70, 640}, {1, 5, 2048 + 128}, {29, 64, 4096 + 64},
		{2, 9, 200}, {gemmMinRows + 1, 11, 200}, // dense only: columns not a multiple of any vector
		{1, 13, 208}, {gemmMinRows + 2, 7, 208}, // groups of 16 only: 13 of them a row
	}
	for _, ks := range KernelSets() {
		for _, f := range formats {
			for _, sh := range shapes {
				if f.group > 0 && (sh.k%f.group != 0 || sh.k*f.bits%32 != 0) {
					continue // the format does not fit this width
				}
				name := fmt.Sprintf("%s/%s/%dx%dx%d", ks, f.name, sh.m, sh.n, sh.k)
				t.Run(name, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(sh.m*7+sh.n), uint64(sh.k)))
					b := New(Options{Threads: 2, Kernels: ks})
					defer b.Close()
					w := randomWeight(rng, f, sh.n, sh.k)
					wt, err := b.Upload(w)
					if err != nil {
						t.Fatal(err)
					}
					x := make([]float32, sh.m*sh.k)
					for i := range x {
						x[i] = float32(rng.NormFloat64())
					}
					g := tensor.NewGraph(b)
					out := g.MatMul(g.Input(x, sh.m, sh.k), wt)
					if err := b.Run(context.Background(), g, out); err != nil {
						t.Fatal(err)
					}
					got := make([]float32, sh.m*sh.n)
					if err := b.Read(out, got); err != nil {
						t.Fatal(err)
					}
					want, scale := refMatMul(x, &w, sh.m, sh.k)
					for i := range want {
						if d := math.Abs(float64(got[i]) - want[i]); !(d <= 2e-6*scale[i]+1e-6) {
							t.Fatalf("out[%d] = %v, want %v (|Δ| %.3g, Σ|x·w| %.3g)", i, got[i], want[i], d, scale[i])
						}
					}
				})
			}
		}
	}
}

// TestFusedMatMul runs three MatMuls of one input (the plan computes them in
// one loop) plus one on a node weight, and checks each; also with groups of
// 16 beside groups of 64, first and second (the loop sums x per group for
// the first weight's group size only).
func TestFusedMatMul(t *testing.T) {
	mixes := [][]weightFormat{{formats[3], formats[7], formats[2]}, {formats[17], formats[3], formats[14]}, {formats[3], formats[17], formats[7]}}
	for _, ks := range KernelSets() {
		for mi, m := range []int{1, 2, gemmMinRows + 3, 1, gemmMinRows, 2} {
			fs := mixes[0]
			if mi >= 3 {
				fs = mixes[1+(mi-3)%2]
			}
			t.Run(fmt.Sprintf("%s/m%d/%s+%s", ks, m, fs[0].name, fs[1].name), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(1, uint64(m)))
				b := New(Options{Threads: 3, Kernels: ks})
				defer b.Close()
				const k = 128
				var ws []tensor.Weight
				var ts []tensor.T
				for i, f := range fs {
					w := randomWeight(rng, f, 24+8*i, k)
					wt, err := b.Upload(w)
					if err != nil {
						t.Fatal(err)
					}
					ws, ts = append(ws, w), append(ts, wt)
				}
				x := make([]float32, m*k)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				g := tensor.NewGraph(b)
				in := g.Input(x, m, k)
				var outs []tensor.T
				for _, wt := range ts {
					outs = append(outs, g.MatMul(in, wt))
				}
				sum := g.Add(outs[0], outs[0]) // a reader between the fused MatMuls and their use
				if err := b.Run(context.Background(), g, append(outs, sum)...); err != nil {
					t.Fatal(err)
				}
				for i, o := range outs {
					got := make([]float32, m*ws[i].Shape[0])
					if err := b.Read(o, got); err != nil {
						t.Fatal(err)
					}
					want, scale := refMatMul(x, &ws[i], m, k)
					for j := range want {
						if d := math.Abs(float64(got[j]) - want[j]); !(d <= 2e-6*scale[j]+1e-6) {
							t.Fatalf("matmul %d: out[%d] = %v, want %v", i, j, got[j], want[j])
						}
					}
				}
			})
		}
	}
}

func TestExp32(t *testing.T) {
	for x := float32(-87); x < 88; x += 0.0137 {
		got, want := float64(exp32(x)), math.Exp(float64(x))
		if d := math.Abs(got-want) / want; d > 3e-7 {
			t.Fatalf("exp32(%v) = %v, want %v (relative error %.3g)", x, got, want, d)
		}
	}
	for _, tc := range []struct{ x, want float32 }{{-200, 0}, {0, 1}, {float32(math.Inf(-1)), 0}} {
		if got := exp32(tc.x); got != tc.want {
			t.Errorf("exp32(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
	if got := exp32(100); !math.IsInf(float64(got), 1) {
		t.Errorf("exp32(100) = %v, want +Inf", got)
	}
}

// refInt8 is the int8-activation product in float64 from the same
// quantized input (Σ_g s·Σ_b d_b·Σ q·xq + b·Σ_g x), and the most it may
// differ from the exact product: Σ |w|·d_b/2, each input moving by at most
// half a quantization step.
func refInt8(x []float32, w *tensor.Weight) (out, bound []float64) {
	return refInt8Block(x, w, 32)
}

// refInt8Block is refInt8 with the input quantized per block of ab.
func refInt8Block(x []float32, w *tensor.Weight, ab int) (out, bound []float64) {
	n, k := w.Shape[0], w.Shape[1]
	xq := make([]float64, k)
	step := make([]float64, k)
	for b := 0; b < k/ab; b++ {
		var amax float32
		for _, v := range x[b*ab : b*ab+ab] {
			amax = max(amax, v, -v)
		}
		d, inv := amax/127, float32(0)
		if amax > 0 {
			inv = 127 / amax
		}
		for i := b * ab; i < b*ab+ab; i++ {
			xq[i] = float64(d) * max(-127, min(127, math.RoundToEven(float64(x[i]*inv))))
			step[i] = float64(d) / 2
		}
	}
	m := newMat(w)
	out, bound = make([]float64, n), make([]float64, n)
	row := make([]float32, k)
	gs := m.group
	for r := 0; r < n; r++ {
		for g := 0; g < k/gs; g++ {
			s, bias := float64(m.scale(r*(k/gs)+g)), float64(m.bias(r*(k/gs)+g))
			var dq, xs float64
			for i := g * gs; i < (g+1)*gs; i++ {
				dq += float64(tensor.Bits(m.data[r*m.rowBytes:], i, m.bits)) * xq[i]
				xs += float64(x[i])
			}
			out[r] += s*dq + bias*xs
		}
		w.DecodeRow(r, row)
		for i, v := range row {
			bound[r] += math.Abs(float64(v)) * step[i]
		}
	}
	return out, bound
}

// TestInt8Activations checks the int8-activation kernels against the
// same arithmetic in float64, and their distance from the exact product
// against the bound the input rounding allows.
func TestInt8Activations(t *testing.T) {
	var sets []string
	for _, ks := range KernelSets() {
		if k, _ := kernelsNamed(ks); k.i8 != nil {
			sets = append(sets, ks)
		}
	}
	if len(sets) == 0 {
		t.Skip("no kernel set with int8 activations on this CPU (needs AVX-512 VNNI)")
	}
	for _, ks := range sets {
		// every scale type and group size of the 4-bit kernels, odd and
		// even 128-element chunk counts
		fs := append([]weightFormat{formats[3], formats[4], formats[5], formats[7], formats[8]}, formats[11:]...)
		for _, f := range fs {
			for _, k := range []int{64, 128, 192, 256, 384, 2048} {
				if k%f.group != 0 {
					continue // the format does not fit this width
				}
				t.Run(fmt.Sprintf("%s/%s/k%d", ks, f.name, k), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(3, uint64(k)))
					b := New(Options{Threads: 2, Kernels: ks, Int8Activations: true})
					defer b.Close()
					if !b.Int8Activations() {
						t.Fatal("Int8Activations() = false on a set with int8 kernels")
					}
					const n = 45
					w := randomWeight(rng, f, n, k)
					wt, err := b.Upload(w)
					if err != nil {
						t.Fatal(err)
					}
					x := make([]float32, k)
					for i := range x {
						x[i] = float32(rng.NormFloat64())
					}
					g := tensor.NewGraph(b)
					out := g.MatMul(g.Input(x, 1, k), wt)
					if err := b.Run(context.Background(), g, out); err != nil {
						t.Fatal(err)
					}
					got := make([]float32, n)
					if err := b.Read(out, got); err != nil {
						t.Fatal(err)
					}
					want, bound := refInt8(x, &w)
					exact, scale := refMatMul(x, &w, 1, k)
					kern, _ := kernelsNamed(ks)
					half := f.bits == 4 && (k%128 != 0 || kern.i8half)
					if kern.i8[i8key{f.bits, f.group, f.sdt == tensor.F16, half}] == nil {
						// this set has no int8 kernel for the format: exact
						for i := range exact {
							if d := math.Abs(float64(got[i]) - exact[i]); !(d <= 2e-6*scale[i]+1e-6) {
								t.Fatalf("out[%d] = %v, want the exact %v", i, got[i], exact[i])
							}
						}
						return
					}
					for i := range want {
						if d := math.Abs(float64(got[i]) - want[i]); !(d <= 2e-6*scale[i]+1e-5) {
							t.Fatalf("out[%d] = %v, int8 reference %v (|Δ| %.3g)", i, got[i], want[i], d)
						}
						if d := math.Abs(float64(got[i]) - exact[i]); !(d <= bound[i]+2e-6*scale[i]+1e-5) {
							t.Fatalf("out[%d] = %v, exact %v: |Δ| %.3g is past the int8 bound", i, got[i], exact[i], d)
						}
					}
				})
			}
		}
	}
}

// TestInt8GEMM checks the int8-activation GEMM (prefill with
// Int8Activations) against the same arithmetic in float64, and its
// distance from the exact product against the bound the input rounding
// allows: each input moves by at most half a step, max|x|/254 of its
// block (32 elements, or 64 where the kernel set and the group size allow).
// Formats the set's int8 GEMM does not take must stay exact.
func TestInt8GEMM(t *testing.T) {
	var sets []*kernels
	for _, ks := range KernelSets() {
		if k, _ := kernelsNamed(ks); k.gemmI8 != nil {
			sets = append(sets, k)
		}
	}
	// the driver with the Go microkernel at each assembly kernel's shape
	// (avx2's 2×16 with blocks of 32; avx512vnni's 6×32 with blocks of 64
	// and 8-bit weights), so both shapes run on every machine
	for _, sh := range []struct {
		name          string
		mr, nr, steps int
		eight         bool
	}{{"go2x16", 2, 16, 8, false}, {"go6x32", 6, 32, 16, true}} {
		k := *generic
		k.name, k.i8mr, k.i8nr, k.i8steps, k.i8gemm8 = sh.name, sh.mr, sh.nr, sh.steps, sh.eight
		mr, nr := sh.mr, sh.nr
		k.gemmI8 = func(blocks, steps int, w []uint32, sc, bi []float32, x []uint32, d, xs, c []float32, accumulate bool) {
			gemmI8Go(mr, nr, blocks, steps, w, sc, bi, x, d, xs, c, accumulate)
		}
		sets = append(sets, &k)
	}
	shapes := []struct{ m, n, k int }{
		{gemmMinRows, 33, 256}, {29, 70, 640}, {41, 64, 1024 + 128}, {gemmMinRows + 1, 16, 2048}, {64, 100, 128},
	}
	fs := []weightFormat{formats[3], formats[4], formats[5], formats[6], formats[7], formats[8], formats[9], formats[11], formats[13], formats[17], formats[18]}
	for _, kern := range sets {
		for _, f := range fs {
			for _, sh := range shapes {
				if sh.k%f.group != 0 {
					continue
				}
				t.Run(fmt.Sprintf("%s/%s/%dx%dx%d", kern.name, f.name, sh.m, sh.n, sh.k), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(sh.m), uint64(sh.k+sh.n)))
					b := New(Options{Threads: 3, Kernels: "generic"})
					defer b.Close()
					b.k, b.int8 = kern, true
					// a fused pair of weights of the format, so items span two
					w1, w2 := randomWeight(rng, f, sh.n, sh.k), randomWeight(rng, f, sh.n+5, sh.k)
					t1, err := b.Upload(w1)
					if err != nil {
						t.Fatal(err)
					}
					t2, err := b.Upload(w2)
					if err != nil {
						t.Fatal(err)
					}
					x := make([]float32, sh.m*sh.k)
					for i := range x {
						x[i] = float32(rng.NormFloat64())
					}
					for i := 0; i < 40 && i < sh.k; i++ {
						x[i] = 0 // an all-zero block in the first row
					}
					g := tensor.NewGraph(b)
					in := g.Input(x, sh.m, sh.k)
					o1, o2 := g.MatMul(in, t1), g.MatMul(in, t2)
					if err := b.Run(context.Background(), g, o1, o2); err != nil {
						t.Fatal(err)
					}
					ab := kern.gemmI8Block([]*mat{newMat(&w1)})
					for wi, c := range []struct {
						w   *tensor.Weight
						out tensor.T
					}{{&w1, o1}, {&w2, o2}} {
						n := c.w.Shape[0]
						got := make([]float32, sh.m*n)
						if err := b.Read(c.out, got); err != nil {
							t.Fatal(err)
						}
						exact, scale := refMatMul(x, c.w, sh.m, sh.k)
						for r := 0; r < sh.m; r++ {
							var want, bound []float64
							if ab > 0 {
								want, bound = refInt8Block(x[r*sh.k:(r+1)*sh.k], c.w, ab)
							}
							for j := 0; j < n; j++ {
								i := r*n + j
								d := math.Abs(float64(got[i]) - exact[i])
								if ab == 0 {
									if !(d <= 2e-6*scale[i]+1e-6) {
										t.Fatalf("weight %d out[%d,%d] = %v, want the exact %v", wi, r, j, got[i], exact[i])
									}
									continue
								}
								if dq := math.Abs(float64(got[i]) - want[j]); !(dq <= 2e-6*scale[i]+1e-5) {
									t.Fatalf("weight %d out[%d,%d] = %v, int8 reference %v (|Δ| %.3g)", wi, r, j, got[i], want[j], dq)
								}
								if !(d <= bound[j]+2e-6*scale[i]+1e-5) {
									t.Fatalf("weight %d out[%d,%d] = %v, exact %v: |Δ| %.3g is past the int8 bound %.3g", wi, r, j, got[i], exact[i], d, bound[j])
								}
							}
						}
					}
				})
			}
		}
	}
}

// TestInt8GEMMAllocs checks that an int8 GEMM allocates nothing once its
// plan and scratch exist (on one thread: with more, a worker that took no
// item yet grows its scratch when it first does).
func TestInt8GEMMAllocs(t *testing.T) {
	for _, ks := range KernelSets() {
		if k, _ := kernelsNamed(ks); k.gemmI8 == nil {
			continue
		}
		rng := rand.New(rand.NewPCG(31, 32))
		b := New(Options{Threads: 1, Kernels: ks, Int8Activations: true})
		wt, err := b.Upload(randomWeight(rng, formats[3], 40, 256))
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, 20*256)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		g := tensor.NewGraph(b)
		out := g.MatMul(g.Input(x, 20, 256), wt)
		run := func() {
			if err := b.Run(context.Background(), g, out); err != nil {
				t.Fatal(err)
			}
		}
		run()
		if n := testing.AllocsPerRun(3, run); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", ks, n)
		}
		b.Close()
	}
}

// TestGemmI8Kernels checks each int8 GEMM microkernel this CPU runs
// against gemmI8Go on random levels,
// activations, scales and sums, with and without accumulating: the same
// integer sums, and float results equal up to rounding (the assembly
// fuses multiply and add).
func TestGemmI8Kernels(t *testing.T) {
	type kern struct {
		name          string
		mr, nr, steps int
		levels        int
		fn            func(blocks, steps int, w []uint32, sc, bi []float32, x []uint32, d, xs, c []float32, accumulate bool)
	}
	var ks []kern
	for _, name := range KernelSets() {
		k, _ := kernelsNamed(name)
		if k.gemmI8 != nil {
			ks = append(ks, kern{name, k.i8mr, k.i8nr, k.i8steps, 16, k.gemmI8})
		}
		if name == "avx512vnni" {
			// also with 8-bit levels (the set's entry above checks 4-bit)
			ks = append(ks, kern{"vnni-8bit", 6, 32, 16, 256, gemmI8VNNIKernelOrNil()})
		}
	}
	if len(ks) == 0 {
		t.Skip("no int8 GEMM microkernel on this CPU")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for _, k := range ks {
		for _, steps := range []int{k.steps, 8} {
			for _, acc := range []bool{false, true} {
				const blocks = 3
				w := make([]uint32, blocks*steps*k.nr)
				for i := range w {
					for b := 0; b < 4; b++ {
						w[i] |= uint32(rng.IntN(k.levels)) << (8 * b)
					}
				}
				x := make([]uint32, blocks*steps*k.mr)
				for i := range x {
					for b := 0; b < 4; b++ {
						x[i] |= uint32(uint8(int8(rng.IntN(255)-127))) << (8 * b)
					}
				}
				rnd := func(n int, s float64) []float32 {
					v := make([]float32, n)
					for i := range v {
						v[i] = float32(rng.NormFloat64() * s)
					}
					return v
				}
				sc, bi := rnd(blocks*k.nr, 0.01), rnd(blocks*k.nr, 0.1)
				d, xs := rnd(blocks*k.mr, 0.02), rnd(blocks*k.mr, 3)
				c0 := rnd(k.mr*k.nr, 1)
				got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
				k.fn(blocks, steps, w, sc, bi, x, d, xs, got, acc)
				gemmI8Go(k.mr, k.nr, blocks, steps, w, sc, bi, x, d, xs, want, acc)
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*(1+math.Abs(float64(want[i]))) {
						t.Fatalf("%s steps %d accumulate %v: c[%d] = %v, Go kernel %v", k.name, steps, acc, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestDequantize checks each set's row dequantizer against DecodeRow bit
// for bit (it feeds the GEMM path, which promises DecodeRow's values).
func TestDequantize(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, ks := range KernelSets() {
		k, _ := kernelsNamed(ks)
		for _, f := range formats {
			w := randomWeight(rng, f, 3, 512)
			m := newMat(&w)
			want := make([]float32, 512)
			got := make([]float32, 512)
			for r := 0; r < 3; r++ {
				w.DecodeRow(r, want)
				for _, seg := range [][2]int{{0, 512}, {128, 256}, {384, 128}, {64, 40}} {
					if f.group > 0 && seg[1]%f.group != 0 {
						continue // quantized segments start and end on groups
					}
					dst := got[seg[0] : seg[0]+seg[1]]
					m.decodeSegWith(k, r, seg[0], dst)
					for i, v := range dst {
						if v != want[seg[0]+i] {
							t.Fatalf("%s %s row %d: element %d = %v, DecodeRow %v", ks, f.name, r, seg[0]+i, v, want[seg[0]+i])
						}
					}
				}
			}
		}
	}
}

// TestQuantizeInput checks the vector int8 quantizer against the Go one.
func TestQuantizeInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, ks := range KernelSets() {
		k, _ := kernelsNamed(ks)
		if k.quantI8 == nil {
			continue
		}
		for _, n := range []int{128, 192, 2048} {
			for _, c4 := range []int{64, 128} {
				if n%c4 != 0 {
					continue
				}
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(rng.NormFloat64() * 3)
				}
				for i := 64; i < 96 && i < n; i++ {
					x[i] = 0 // an all-zero block
				}
				quant := func(kern *kernels) ([]int8, []int8, []float32, []float32) {
					b := &Backend{k: kern}
					half := kern.i8half
					kern2 := *kern
					kern2.i8half = half || c4 == 64
					b.k = &kern2
					tk := &mvTask{b: b, m: 1, k: n, x: x}
					tk.quantizeInput(&scratch{})
					return tk.xq8, tk.xq4, tk.dv8, tk.dv4
				}
				goKern := *k
				goKern.quantI8 = nil
				a8, a4, ad8, ad4 := quant(k)
				b8, b4, bd8, bd4 := quant(&goKern)
				for i := range a8 {
					if a8[i] != b8[i] || a4[i] != b4[i] {
						t.Fatalf("%s n=%d c4=%d: element %d: vector %d/%d, Go %d/%d", ks, n, c4, i, a8[i], a4[i], b8[i], b4[i])
					}
				}
				for i := range ad8 {
					if ad8[i] != bd8[i] {
						t.Fatalf("%s: dv8[%d] = %v, Go %v", ks, i, ad8[i], bd8[i])
					}
				}
				for i := range ad4 {
					if ad4[i] != bd4[i] {
						t.Fatalf("%s: dv4[%d] = %v, Go %v", ks, i, ad4[i], bd4[i])
					}
				}
			}
		}
	}
}

func TestSiLU(t *testing.T) {
	x := make([]float32, 77)
	for i := range x {
		x[i] = float32(i-38) * 2.7
	}
	x[3], x[4] = -1000, 1000
	for _, ks := range KernelSets() {
		k, _ := kernelsNamed(ks)
		if k.silu == nil {
			continue
		}
		out := make([]float32, len(x))
		k.silu(x, out)
		for i, v := range x {
			want := float64(v) / (1 + math.Exp(-float64(v)))
			if d := math.Abs(float64(out[i]) - want); d > 1e-6*(1+math.Abs(want)) {
				t.Errorf("%s: silu(%v) = %v, want %v", ks, v, out[i], want)
			}
		}
	}
}

// gemmI8Go is the int8 GEMM microkernel in Go, for any mr×nr: what the
// assembly kernels compute, in the same order per lane (the tests run the
// driver with it at the assembly kernels' shapes).
func gemmI8Go(mr, nr, blocks, steps int, w []uint32, sc, bi []float32, x []uint32, d, xs, c []float32, accumulate bool) {
	acc := make([]float32, mr*nr)
	sum := make([]int32, mr*nr)
	for blk := 0; blk < blocks; blk++ {
		clear(sum)
		for s := 0; s < steps; s++ {
			ws := w[(blk*steps+s)*nr : (blk*steps+s+1)*nr]
			xv := x[(blk*steps+s)*mr : (blk*steps+s+1)*mr]
			for i := 0; i < mr; i++ {
				for j, v := range ws {
					for b := 0; b < 4; b++ {
						sum[i*nr+j] += int32(uint8(v>>(8*b))) * int32(int8(xv[i]>>(8*b)))
					}
				}
			}
		}
		for i := 0; i < mr; i++ {
			for j := 0; j < nr; j++ {
				f := sc[blk*nr+j] * d[blk*mr+i]
				a := float32(float32(sum[i*nr+j])*f) + acc[i*nr+j]
				acc[i*nr+j] = float32(bi[blk*nr+j]*xs[blk*mr+i]) + a
			}
		}
	}
	for i := range acc {
		if accumulate {
			c[i] += acc[i]
		} else {
			c[i] = acc[i]
		}
	}
}

// TestMatVecRowsTogether holds a matrix–vector product of several input
// rows (a batched decode step: the sets with q4rows unpack each weight
// block once for 2 or 4 rows) to the same rows run one at a time, bit for
// bit: a sequence decoded beside others must get exactly the logits it
// gets alone. The widths cover 16-group bias steps with and without a
// tail of single groups, rows that are not a multiple of 128, and the
// row counts (up to 27 where the set keeps them off the GEMM) every split into 4s, 2s and
// a last single row.
func TestMatVecRowsTogether(t *testing.T) {
	var quant []weightFormat
	for _, f := range formats {
		if f.bits == 4 || f.bits == 8 {
			quant = append(quant, f)
		}
	}
	ran := false
	for _, ks := range KernelSets() {
		for _, f := range quant {
			// 320 and 1088 are not multiples of 128: the one-row kernels
			// that need whole 128s pass them by
			for _, k := range []int{64, 128, 320, 384, 1088, 2048, 2048 + 384} {
				if k%f.group != 0 {
					continue
				}
				for _, m := range []int{2, 3, 4, 5, 7, gemmMinRows - 1, 27} {
					rng := rand.New(rand.NewPCG(uint64(m), uint64(k)))
					b := New(Options{Threads: 2, Kernels: ks})
					ran = ran || b.k.qrows != nil
					w := randomWeight(rng, f, 37, k)
					wt, err := b.Upload(w)
					if err != nil {
						t.Fatal(err)
					}
					if m >= gemmMinRows && !b.rowsTogetherWin(m, []*mat{b.bufs[wt.Buffer()].m}) {
						b.Close()
						continue // the GEMM's rows, summed in another order
					}
					x := make([]float32, m*k)
					for i := range x {
						x[i] = float32(rng.NormFloat64())
					}
					run := func(x []float32, rows int) []float32 {
						g := tensor.NewGraph(b)
						out := g.MatMul(g.Input(x, rows, k), wt)
						if err := b.Run(context.Background(), g, out); err != nil {
							t.Fatal(err)
						}
						got := make([]float32, rows*37)
						if err := b.Read(out, got); err != nil {
							t.Fatal(err)
						}
						return got
					}
					together := run(x, m)
					for r := 0; r < m; r++ {
						alone := run(x[r*k:(r+1)*k], 1)
						for j, v := range alone {
							if got := together[r*37+j]; math.Float32bits(got) != math.Float32bits(v) {
								t.Fatalf("%s/%s/k=%d/m=%d: row %d out[%d] = %v together, %v alone", ks, f.name, k, m, r, j, got, v)
							}
						}
					}
					b.Close()
				}
			}
		}
	}
	if !ran {
		t.Log("no kernel set here computes several rows together; the per-row path was checked")
	}
}
