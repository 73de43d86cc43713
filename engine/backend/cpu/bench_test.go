package cpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"hearth/engine/tensor"
)

// The kernel benchmarks run every kernel set on one thread over one weight
// of a Llama-3.2-1B MLP shape (8192×2048), so the weight sits in the
// last-level cache and the numbers are the kernels' compute rate. Each set
// after "generic" also reports its speed-up over the generic set measured
// in the same run ("x-generic"). End-to-end decode against DRAM is
// engine/bench's job.

type benchCase struct {
	name string
	f    weightFormat
	m    int  // input rows: 1 is decode, more is prefill
	int8 bool // Options.Int8Activations
}

func benchCases() []benchCase {
	var cs []benchCase
	for _, f := range []weightFormat{formats[3], formats[7], formats[2], formats[0]} {
		cs = append(cs, benchCase{"matvec/" + f.name, f, 1, false})
	}
	cs = append(cs, benchCase{"matvec-int8/q4g64", formats[3], 1, true}, benchCase{"matvec-int8/q8g32", formats[7], 1, true})
	for _, f := range []weightFormat{formats[3], formats[2]} {
		cs = append(cs, benchCase{"matmul64/" + f.name, f, 64, false}, benchCase{"matmul512/" + f.name, f, 512, false})
	}
	return cs
}

func BenchmarkKernels(b *testing.B) {
	const n, k = 8192, 2048
	for _, c := range benchCases() {
		var genericNs float64
		for _, ks := range KernelSets() {
			b.Run(c.name+"/"+ks, func(b *testing.B) {
				ns := benchMatMul(b, Options{Threads: 1, Kernels: ks, Int8Activations: c.int8}, c.f, c.m, n, k)
				if ks == "generic" {
					genericNs = ns
				} else if genericNs > 0 && ns > 0 {
					b.ReportMetric(genericNs/ns, "x-generic")
				}
			})
		}
	}
}

// benchMatMul times one MatMul of [m,k] by a [n,k] weight and returns the
// nanoseconds per run.
func benchMatMul(b *testing.B, opt Options, f weightFormat, m, n, k int) float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	be := New(opt)
	defer be.Close()
	w := randomWeight(rng, f, n, k)
	wt, err := be.Upload(w)
	if err != nil {
		b.Fatal(err)
	}
	x := make([]float32, m*k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	g := tensor.NewGraph(be)
	out := g.MatMul(g.Input(x, m, k), wt)
	ctx := context.Background()
	if err := be.Run(ctx, g, out); err != nil { // plan and scratch
		b.Fatal(err)
	}
	b.SetBytes(int64(w.Bytes()))
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for i := 0; i < b.N; i++ {
		if err := be.Run(ctx, g, out); err != nil {
			b.Fatal(err)
		}
	}
	el, cpu := time.Since(start), cpuTime()-cpu0
	flop := float64(m) * float64(n) * float64(k) * 2 * float64(b.N)
	b.ReportMetric(flop/el.Seconds()/1e9, "GFLOP/s")
	if cpu > 0 {
		// per CPU second: what the kernel does while it has the core, which
		// a machine shared with other work shows better than wall time
		b.ReportMetric(flop/cpu.Seconds()/1e9, "GFLOP/cpu-s")
	}
	return float64(el.Nanoseconds()) / float64(b.N)
}

// BenchmarkAttention times one decode attention step over a 1024-token
// cache with Llama-3.2-1B's heads (32 query, 8 key/value, 64 wide).
func BenchmarkAttention(b *testing.B) {
	for _, ks := range KernelSets() {
		b.Run(ks, func(b *testing.B) {
			be := New(Options{Threads: 1, Kernels: ks})
			defer be.Close()
			const keys, hq, hkv, d = 1024, 32, 8, 64
			kb, _ := be.Alloc([]int{keys, hkv, d})
			vb, _ := be.Alloc([]int{keys, hkv, d})
			q := make([]float32, hq*d)
			for i := range q {
				q[i] = float32(i%7) * 0.1
			}
			g := tensor.NewGraph(be)
			out := g.Attention(g.Input(q, 1, hq, d), kb, vb, tensor.AttnSpec{QueryPos: keys - 1, KeyLen: keys})
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := be.Run(ctx, g, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func ExampleKernelSets() {
	sets := KernelSets()
	fmt.Println(sets[len(sets)-1])
	// Output: generic
}
