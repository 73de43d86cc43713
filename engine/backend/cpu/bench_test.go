package cpu

import (
	"context"
	"fmt"
	"math"
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
	// the int8-activation GEMM (prefill with Int8Activations)
	cs = append(cs, benchCase{"matmul512-int8/q4g64", formats[3], 512, true}, benchCase{"matmul512-int8/q8g32", formats[7], 512, true})
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

// prefillVariants are the paths the prefill benchmarks compare: exact,
// int8 with the set's GEMM kernel, and, on avx512vnni, int8 with the AVX2
// kernel (ymm VPMADDUBSW), the kernel that set ran before its own.
func prefillVariants() []string {
	vs := []string{"exact", "int8"}
	for _, ks := range KernelSets() {
		if ks == "avx512vnni" {
			vs = append(vs, "int8-avx2")
		}
	}
	return vs
}

// newPrefillBackend makes the backend for a prefill benchmark variant.
func newPrefillBackend(variant string) *Backend {
	be := New(Options{Int8Activations: variant != "exact"})
	if variant == "int8-avx2" {
		k := *be.k
		a := avx2KernelsOrNil()
		k.i8mr, k.i8nr, k.i8steps, k.i8gemm8, k.gemmI8 = a.i8mr, a.i8nr, a.i8steps, a.i8gemm8, a.gemmI8
		be.k = &k
	}
	return be
}

// BenchmarkPrefillLayer times the MatMuls of one Llama-3.2-1B layer (q, k
// and v fused, o, gate and up fused, down; q4g64 weights) on a 512-token
// prefill chunk, on every thread of the default count, for each of
// prefillVariants. It reports the tokens per second of a 16-layer model's
// MatMuls (about 75% of its prefill time on the exact path; the rest is
// attention, norms and the other elementwise ops).
func BenchmarkPrefillLayer(b *testing.B) {
	const m, hidden, kv, inter = 512, 2048, 512, 8192
	rng := rand.New(rand.NewPCG(5, 6))
	f := formats[3]
	shapes := [][2]int{{hidden, hidden}, {kv, hidden}, {kv, hidden}, {hidden, hidden}, {inter, hidden}, {inter, hidden}, {hidden, inter}}
	ws := make([]tensor.Weight, len(shapes))
	for i, s := range shapes {
		ws[i] = randomWeight(rng, f, s[0], s[1])
	}
	x := make([]float32, m*hidden)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for _, name := range prefillVariants() {
		b.Run(name, func(b *testing.B) {
			be := newPrefillBackend(name)
			defer be.Close()
			var ts []tensor.T
			for _, w := range ws {
				t, err := be.Upload(w)
				if err != nil {
					b.Fatal(err)
				}
				ts = append(ts, t)
			}
			g := tensor.NewGraph(be)
			in := g.Input(x, m, hidden)
			q, k, v := g.MatMul(in, ts[0]), g.MatMul(in, ts[1]), g.MatMul(in, ts[2])
			o := g.MatMul(q, ts[3])
			gate, up := g.MatMul(in, ts[4]), g.MatMul(in, ts[5])
			down := g.MatMul(gate, ts[6])
			outs := []tensor.T{k, v, o, up, down}
			ctx := context.Background()
			if err := be.Run(ctx, g, outs...); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime()
			for i := 0; i < b.N; i++ {
				if err := be.Run(ctx, g, outs...); err != nil {
					b.Fatal(err)
				}
			}
			el, cpu := time.Since(start), cpuTime()-cpu0
			var macs float64
			for _, s := range shapes {
				macs += float64(m) * float64(s[0]) * float64(s[1])
			}
			b.ReportMetric(float64(m*b.N)/el.Seconds()/16, "tok/s-16-layers")
			b.ReportMetric(2*macs*float64(b.N)/el.Seconds()/1e9, "GOP/s")
			if cpu > 0 {
				b.ReportMetric(2*macs*float64(b.N)/cpu.Seconds()/1e9, "GOP/cpu-s")
			}
			b.ReportMetric(float64(be.Threads()), "threads")
		})
	}
}

// BenchmarkPrefillLlama prefills 512 tokens into an empty cache through
// the whole graph of a 16-layer decoder of Llama-3.2-1B's shape (hidden
// 2048, MLP 8192, 32 query and 8 key/value heads of 64; q4g64 weights;
// the graph and ops of TestDecodeAllocs' decoder, so norms, RoPE, KV
// stores and attention run too), on every thread of the default count,
// for each of prefillVariants. The vocabulary is cut to 8192 (the head
// runs on the last token only, as in the engine). tok/s is the prefill
// rate: 512 over one run's wall time.
func BenchmarkPrefillLlama(b *testing.B) {
	const hidden, inter, heads, kv, hd, vocab, layers, n = 2048, 8192, 32, 8, 64, 8192, 16, 512
	for _, name := range prefillVariants() {
		b.Run(name, func(b *testing.B) {
			be := newPrefillBackend(name)
			defer be.Close()
			rng := rand.New(rand.NewPCG(7, 8))
			up := func(f weightFormat, rows, cols int) tensor.T {
				w, err := be.Upload(randomWeight(rng, f, rows, cols))
				if err != nil {
					b.Fatal(err)
				}
				return w
			}
			vec := func(size int) tensor.T {
				w := randomWeight(rng, formats[2], 1, size)
				w.Shape = []int{size}
				v, err := be.Upload(w)
				if err != nil {
					b.Fatal(err)
				}
				return v
			}
			q4 := formats[3]
			d := &decoderStep{embed: up(q4, vocab, hidden), head: up(q4, vocab, hidden), norm: vec(hidden),
				hidden: hidden, heads: heads, kv: kv, hd: hd}
			inv := make([]float32, hd/2)
			for i := range inv {
				inv[i] = float32(1 / math.Pow(500000, float64(2*i)/hd))
			}
			d.rope = &tensor.Rope{InvFreq: inv, Dims: hd, Scale: 1}
			for i := 0; i < layers; i++ {
				kc, _ := be.Alloc([]int{n, kv, hd})
				vc, _ := be.Alloc([]int{n, kv, hd})
				d.layers = append(d.layers, decoderLayer{
					q: up(q4, heads*hd, hidden), k: up(q4, kv*hd, hidden), v: up(q4, kv*hd, hidden), o: up(q4, hidden, heads*hd),
					gate: up(q4, inter, hidden), up: up(q4, inter, hidden), down: up(q4, hidden, inter),
					n1: vec(hidden), n2: vec(hidden), kc: kc, vc: vc,
				})
			}
			tokens := make([]int32, n)
			for i := range tokens {
				tokens[i] = int32(rng.IntN(vocab))
			}
			ctx := context.Background()
			run := func() {
				g, out := d.graph(be, tokens, 0)
				if err := be.Run(ctx, g, out); err != nil {
					b.Fatal(err)
				}
			}
			run() // plan and scratch
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime()
			for i := 0; i < b.N; i++ {
				run()
			}
			el, cpu := time.Since(start), cpuTime()-cpu0
			b.ReportMetric(float64(n*b.N)/el.Seconds(), "tok/s")
			if cpu > 0 {
				b.ReportMetric(float64(n*b.N)/cpu.Seconds(), "tok/cpu-s")
			}
			b.ReportMetric(float64(be.Threads()), "threads")
		})
	}
}
