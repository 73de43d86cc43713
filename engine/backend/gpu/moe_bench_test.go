package gpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"hearth/engine/backend/cpu"
	"hearth/engine/tensor"
	"hearth/engine/tensor/tensortest"
	"hearth/engine/weights"
)

// TestExpertMatMulKernels runs the conformance cases with each
// ExpertMatMul kernel forced, so both see every weight kind and shape
// whatever the choice between them would be.
func TestExpertMatMulKernels(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kernel int
	}{{"per-slot", -1}, {"grouped", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			expertKernel = tc.kernel
			defer func() { expertKernel = 0 }()
			for _, opt := range []Options{{}, {WeightBlockBytes: 1024}} {
				tensortest.Check(t, newBackend(t, opt))
			}
		})
	}
}

// TestExpertMatMulBits checks both ExpertMatMul kernels on every quantized
// width (3, 5 and 6 bits straddle words, which the conformance cases do
// not reach), group sizes 16 (GGUF's Q2_K, Q3_K and Q6_K) to 128 and each
// scale dtype, with whole and split weights, against the cpu backend.
func TestExpertMatMulBits(t *testing.T) {
	const experts, k, out, in, n = 5, 2, 70, 128, 40
	rng := rand.New(rand.NewPCG(3, 5))
	x := make([]float32, n*in)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	route := randRoute(rng, n, k, experts)
	ref := cpu.New(cpu.Options{})
	for i, bits := range []int{2, 3, 4, 5, 6, 8, 6, 3, 2} {
		group := []int{32, 64, 128}[i%3]
		if i >= 6 {
			group = 16
		}
		sdt := []tensor.DType{tensor.BF16, tensor.F16, tensor.F32}[i%3]
		v := make([]float32, experts*out*in)
		for j := range v {
			v[j] = float32(rng.NormFloat64() * 0.2)
		}
		w, err := weights.Quantize(v, experts*out, in, tensor.Quant{Bits: bits, GroupSize: group}, sdt)
		if err != nil {
			t.Fatal(err)
		}
		w.Name, w.Shape = "experts", []int{experts, out, in}
		build := func(g *tensor.Graph, ws map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.ExpertMatMul(g.Input(x, n, in), ws["experts"], g.Input(route, n, 2*k))}
		}
		upload := func(b tensor.Backend) map[string]tensor.T {
			id, err := b.Upload(w)
			if err != nil {
				t.Fatal(err)
			}
			return map[string]tensor.T{"experts": id}
		}
		want := run(t, ref, upload(ref), build)[0]
		for _, kernel := range []int{-1, 1} {
			for _, opt := range []Options{{}, {WeightBlockBytes: 2048}} {
				t.Run(fmt.Sprintf("q%dg%d-%v/kernel%+d/block%d", bits, group, sdt, kernel, opt.WeightBlockBytes), func(t *testing.T) {
					expertKernel = kernel
					defer func() { expertKernel = 0 }()
					b := newBackend(t, opt)
					got := run(t, b, upload(b), build)[0]
					for j := range want {
						if d := math.Abs(float64(got[j]-want[j])) / (1 + math.Abs(float64(want[j]))); !(d <= 1e-4) {
							t.Fatalf("output %d = %v, want %v", j, got[j], want[j])
						}
					}
				})
			}
		}
	}
}

// BenchmarkExpertMatMul times one ExpertMatMul at a MoE shape scaled for
// lavapipe (16 experts, top 4, [512, 1024] 4-bit experts, group 64: a
// gate or up projection) with each kernel on the same inputs: the
// per-slot matrix-vector kernel (expertmm, which reads an expert's matrix
// once per slot routed to it) and the expert-major one (expertgemm, once
// per block of up to 32 such slots). Each iteration runs both, a Run and
// a Read of the [n, k, out] result each; it reports both times and their
// ratio, and fails if the two results differ.
//
//	go test ./engine/backend/gpu/ -run '^$' -bench ExpertMatMul -benchtime 3x
func BenchmarkExpertMatMul(b *testing.B) {
	const experts, k, out, in, group = 16, 4, 512, 1024, 64
	w := benchQuantExperts(experts, out, in, group)
	for _, n := range []int{1, 4, 16, 64, 256} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			x := make([]float32, n*in)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			route := randRoute(rng, n, k, experts)
			// one backend per kernel: a plan keeps the kernels it was
			// compiled with, whatever expertKernel says later
			kinds := []int{-1, 1} // per-slot, grouped
			var times [2]time.Duration
			var res [2][]float32
			bes := make([]*Backend, len(kinds))
			wts := make([]tensor.T, len(kinds))
			for i := range kinds {
				bes[i] = newBackend(b, Options{})
				var err error
				if wts[i], err = bes[i].Upload(w); err != nil {
					b.Fatal(err)
				}
				res[i] = make([]float32, n*k*out)
			}
			step := func(i int) time.Duration {
				expertKernel = kinds[i]
				defer func() { expertKernel = 0 }()
				g := tensor.NewGraph(bes[i])
				y := g.ExpertMatMul(g.Input(x, n, in), wts[i], g.Input(route, n, 2*k))
				if err := g.Err(); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := bes[i].Run(context.Background(), g, y); err != nil {
					b.Fatal(err)
				}
				if err := bes[i].Read(y, res[i]); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			for i := range kinds {
				step(i) // compile the pipelines and the plan
			}
			for j, v := range res[0] {
				if d := math.Abs(float64(res[1][j]-v)) / (1 + math.Abs(float64(v))); !(d <= 1e-4) {
					b.Fatalf("output %d: grouped %v, per-slot %v", j, res[1][j], v)
				}
			}
			b.ResetTimer()
			for range b.N {
				for i := range kinds {
					times[i] += step(i)
				}
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
			b.ReportMetric(ms(times[0]), "per-slot-ms/op")
			b.ReportMetric(ms(times[1]), "grouped-ms/op")
			b.ReportMetric(float64(times[0])/float64(times[1]), "per-slot/grouped")
		})
	}
}

// randRoute is a route table (Graph.Route's layout) of n rows, each
// routed to k distinct random experts with random weights.
func randRoute(rng *rand.Rand, n, k, experts int) []float32 {
	route := make([]float32, n*2*k)
	for r := 0; r < n; r++ {
		for j, e := range rng.Perm(experts)[:k] {
			route[r*2*k+j] = float32(0.1 + rng.Float64())
			route[r*2*k+k+j] = float32(e)
		}
	}
	return route
}

// benchQuantExperts is a stacked 4-bit weight [experts, out, in] of random
// levels with BF16 scales and biases that vary by group.
func benchQuantExperts(experts, out, in, group int) tensor.Weight {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, experts*out*in/2)
	for i := 0; i+4 <= len(data); i += 4 {
		binary.LittleEndian.PutUint32(data[i:], rng.Uint32())
	}
	groups := experts * out * in / group
	scales, biases := make([]byte, 2*groups), make([]byte, 2*groups)
	for i := 0; i < groups; i++ {
		binary.LittleEndian.PutUint16(scales[2*i:], tensor.FloatToBF16(float32(0.001+0.004*rng.Float64())))
		binary.LittleEndian.PutUint16(biases[2*i:], tensor.FloatToBF16(float32(-0.03*rng.Float64())))
	}
	return tensor.Weight{Name: "experts", DType: tensor.U32, Shape: []int{experts, out, in}, Data: data,
		Quant: &tensor.Quant{Bits: 4, GroupSize: group}, Scales: scales, Biases: biases, ScaleDType: tensor.BF16}
}
