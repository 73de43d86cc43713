package cpu

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"hearth/engine/tensor"
)

// decoderStep records one decode step of a two-layer Llama-like decoder at
// position pos: the ops, fusions and shapes a real decode graph has.
type decoderStep struct {
	embed, head, norm tensor.T
	layers            []decoderLayer
	rope              *tensor.Rope
	hidden, heads, kv int
	hd                int
}

type decoderLayer struct {
	q, k, v, o, gate, up, down tensor.T
	n1, n2                     tensor.T
	kc, vc                     tensor.T
}

func newDecoder(t testing.TB, b *Backend, rng *rand.Rand) *decoderStep {
	const hidden, inter, heads, kv, hd, vocab, ctx = 128, 256, 4, 2, 32, 96, 16
	up := func(f weightFormat, rows, cols int) tensor.T {
		w, err := b.Upload(randomWeight(rng, f, rows, cols))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	vec := func(n int) tensor.T {
		w := randomWeight(rng, formats[2], 1, n)
		w.Shape = []int{n}
		v, err := b.Upload(w)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	q4 := formats[3]
	d := &decoderStep{embed: up(q4, vocab, hidden), head: up(formats[7], vocab, hidden), norm: vec(hidden),
		hidden: hidden, heads: heads, kv: kv, hd: hd}
	inv := make([]float32, hd/2)
	for i := range inv {
		inv[i] = float32(1 / math.Pow(10000, float64(2*i)/hd))
	}
	d.rope = &tensor.Rope{InvFreq: inv, Dims: hd, Scale: 1}
	for i := 0; i < 2; i++ {
		kc, _ := b.Alloc([]int{ctx, kv, hd})
		vc, _ := b.Alloc([]int{ctx, kv, hd})
		d.layers = append(d.layers, decoderLayer{
			q: up(q4, heads*hd, hidden), k: up(q4, kv*hd, hidden), v: up(q4, kv*hd, hidden), o: up(q4, hidden, heads*hd),
			gate: up(q4, inter, hidden), up: up(q4, inter, hidden), down: up(q4, hidden, inter),
			n1: vec(hidden), n2: vec(hidden), kc: kc, vc: vc,
		})
	}
	return d
}

// logits runs one step of tokens at pos on b and reads its output.
func (d *decoderStep) logits(t testing.TB, b *Backend, tokens []int32, pos int) []float32 {
	g, out := d.graph(b, tokens, pos)
	if err := b.Run(context.Background(), g, out); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, tensor.Elements(g.Shape(out)))
	if err := b.Read(out, got); err != nil {
		t.Fatal(err)
	}
	return got
}

func (d *decoderStep) graph(b *Backend, tokens []int32, pos int) (*tensor.Graph, tensor.T) {
	g := tensor.NewGraph(b)
	n := len(tokens)
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(pos + i)
	}
	posT := g.InputInts(p, n)
	x := g.Embed(d.embed, g.InputInts(tokens, n))
	for _, l := range d.layers {
		h := g.RMSNorm(x, l.n1, 1e-5, 0)
		q := g.RoPE(g.Reshape(g.MatMul(h, l.q), n, d.heads, d.hd), posT, d.rope)
		k := g.RoPE(g.Reshape(g.MatMul(h, l.k), n, d.kv, d.hd), posT, d.rope)
		v := g.Reshape(g.MatMul(h, l.v), n, d.kv, d.hd)
		kb := g.Store(l.kc, k, pos)
		vb := g.Store(l.vc, v, pos)
		a := g.Attention(q, kb, vb, tensor.AttnSpec{QueryPos: pos, KeyLen: pos + n})
		x = g.Add(x, g.MatMul(g.Reshape(a, n, d.heads*d.hd), l.o))
		h = g.RMSNorm(x, l.n2, 1e-5, 0)
		x = g.Add(x, g.MatMul(g.Mul(g.SiLU(g.MatMul(h, l.gate)), g.MatMul(h, l.up)), l.down))
	}
	x = g.Slice(x, 0, n-1, n)
	return g, g.MatMul(g.RMSNorm(x, d.norm, 1e-5, 0), d.head)
}

// TestDecodeAllocs checks that a decode step allocates nothing once its
// plan and scratch exist, on every kernel set, inline and on the pool.
func TestDecodeAllocs(t *testing.T) {
	for _, ks := range KernelSets() {
		for _, threads := range []int{1, 2} {
			for _, int8 := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/t%d/int8=%v", ks, threads, int8), func(t *testing.T) {
					b := New(Options{Threads: threads, Kernels: ks, Int8Activations: int8})
					defer b.Close()
					d := newDecoder(t, b, rand.New(rand.NewPCG(5, 6)))
					ctx := context.Background()
					g, out := d.graph(b, []int32{3, 1, 4, 1, 5}, 0) // prefill
					if err := b.Run(ctx, g, out); err != nil {
						t.Fatal(err)
					}
					g, out = d.graph(b, []int32{9}, 5)
					if err := b.Run(ctx, g, out); err != nil {
						t.Fatal(err)
					}
					allocs := testing.AllocsPerRun(20, func() {
						if err := b.Run(ctx, g, out); err != nil {
							t.Fatal(err)
						}
					})
					if allocs != 0 {
						t.Errorf("a decode step allocates %v times, want 0", allocs)
					}
					// four rows at once: the several-rows kernels (a batched
					// step, a speculative verify) allocate nothing either
					g, out = d.graph(b, []int32{9, 2, 6, 5}, 5)
					if err := b.Run(ctx, g, out); err != nil {
						t.Fatal(err)
					}
					if allocs := testing.AllocsPerRun(20, func() {
						if err := b.Run(ctx, g, out); err != nil {
							t.Fatal(err)
						}
					}); allocs != 0 {
						t.Errorf("a four-row step allocates %v times, want 0", allocs)
					}
				})
			}
		}
	}
}

// TestPlanReuse checks that a run on a cached plan gives the same logits as
// a fresh backend, so reused arena memory never leaks between nodes.
func TestPlanReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	b := New(Options{Threads: 2})
	defer b.Close()
	d := newDecoder(t, b, rng)
	run := func(tokens []int32, pos int) []float32 { return d.logits(t, b, tokens, pos) }
	run([]int32{1, 2, 3}, 0)
	first := run([]int32{7}, 3)
	run([]int32{8}, 4) // same plan, different data
	run([]int32{7}, 3) // rewrite position 3 as it was
	again := run([]int32{7}, 3)
	for i := range first {
		if first[i] != again[i] {
			t.Fatalf("logit %d: %v on the first run, %v on a reused plan", i, first[i], again[i])
		}
	}
	if len(b.plans) != 2 {
		t.Errorf("%d plans cached for two graph shapes, want 2", len(b.plans))
	}
}
