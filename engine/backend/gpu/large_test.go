package gpu

import (
	"math"
	"strings"
	"testing"

	"hearth/engine/backend/cpu"
	"hearth/engine/tensor"
)

// TestLargeShapes runs ops at prefill sizes (many GEMM tiles, attention
// over several key tiles, split weights) against the cpu backend.
func TestLargeShapes(t *testing.T) {
	f := newFixture(t)
	x, h := f.randn(200*64), f.randn(100*128)
	q, k, v := f.randn(150*4*64), f.randn(300*2*64), f.randn(300*2*64)
	kl, vl := f.randn(2100*2*64), f.randn(2100*2*64)
	cases := []struct {
		name  string
		build func(g *tensor.Graph, w map[string]tensor.T, b tensor.Backend) []tensor.T
	}{
		{"gemm-q4", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.MatMul(g.Input(x, 200, 64), w["wq"])}
		}},
		{"gemm-q3q5q6", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			xt := g.Input(x[:20*64], 20, 64)
			return []tensor.T{g.MatMul(xt, w["w3"]), g.MatMul(xt, w["w5"]), g.MatMul(xt, w["w6"])}
		}},
		{"embed-q5", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.Embed(w["w5"], g.InputInts([]int32{39, 0, 17}, 3))}
		}},
		{"gemm-f16", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.MatMul(g.Input(h, 100, 128), w["down"])}
		}},
		{"attention-prefill", func(g *tensor.Graph, w map[string]tensor.T, b tensor.Backend) []tensor.T {
			kT, vT := storeKV(g, b, k, v, 300)
			return []tensor.T{g.Attention(g.Input(q, 150, 4, 64), kT, vT, tensor.AttnSpec{QueryPos: 150, KeyLen: 300})}
		}},
		{"attention-decode-split", func(g *tensor.Graph, w map[string]tensor.T, b tensor.Backend) []tensor.T {
			kT, vT := storeKV(g, b, k, v, 300)
			return []tensor.T{g.Attention(g.Input(q[:2*4*64], 2, 4, 64), kT, vT, tensor.AttnSpec{QueryPos: 298, KeyLen: 300, Window: 280})}
		}},
		// the splits of a (query, head) count themselves done in counts
		// the backend keeps between dispatches: two more attentions in one
		// graph, with other queries and other numbers of splits (5, then
		// 2), after the one above (4)
		{"attention-decode-split-again", func(g *tensor.Graph, w map[string]tensor.T, b tensor.Backend) []tensor.T {
			kT, vT := storeKV(g, b, k, v, 300)
			a := g.Attention(g.Input(q[4*4*64:5*4*64], 1, 4, 64), kT, vT, tensor.AttnSpec{QueryPos: 299, KeyLen: 300})
			return []tensor.T{a, g.Attention(g.Input(q[7*4*64:8*4*64], 1, 4, 64), kT, vT, tensor.AttnSpec{QueryPos: 99, KeyLen: 100})}
		}},
		// the merge reads the records of 8 splits at a time: 10 splits
		// (a ragged last group), 20 (a ragged third), the most (32), and
		// 32 of which 12 have no keys (a 40-key window: 2 keys a split)
		{"attention-decode-many-splits", func(g *tensor.Graph, w map[string]tensor.T, b tensor.Backend) []tensor.T {
			kT, vT := storeKV(g, b, kl, vl, 2100)
			a := g.Attention(g.Input(q[:4*64], 1, 4, 64), kT, vT, tensor.AttnSpec{QueryPos: 599, KeyLen: 600})
			return []tensor.T{a, g.Attention(g.Input(q[4*64:2*4*64], 1, 4, 64), kT, vT, tensor.AttnSpec{QueryPos: 2099, KeyLen: 2100}),
				g.Attention(g.Input(q[2*4*64:3*4*64], 1, 4, 64), kT, vT, tensor.AttnSpec{QueryPos: 2099, KeyLen: 2100, Window: 40}),
				g.Attention(g.Input(q[3*4*64:4*4*64], 1, 4, 64), kT, vT, tensor.AttnSpec{QueryPos: 1249, KeyLen: 1250})}
		}},
	}
	ref := cpu.New(cpu.Options{})
	wr := f.upload(t, ref)
	// the attention cases also with other load groupings: 4 keys a value
	// loop iteration and whole rows scored at once, and odd groups with a
	// remainder
	for _, opt := range []Options{{}, {Attn: AttnShape{Keys: 4, Score: 32}}, {Attn: AttnShape{Keys: 3, Score: 2}}} {
		b := newBackend(t, opt)
		wg := f.upload(t, b)
		for _, tc := range cases {
			if opt.Attn != (AttnShape{}) && !strings.HasPrefix(tc.name, "attention") {
				continue
			}
			largeCase(t, tc.name, ref, b, wr, wg, tc.build)
		}
	}
}

// largeCase runs build on both backends and compares every output.
func largeCase(t *testing.T, name string, ref, b tensor.Backend, wr, wg map[string]tensor.T, build func(g *tensor.Graph, w map[string]tensor.T, b tensor.Backend) []tensor.T) {
	t.Run(name, func(t *testing.T) {
		want := run(t, ref, wr, build)
		got := run(t, b, wg, build)
		for o := range want {
			for i := range want[o] {
				if d := math.Abs(float64(got[o][i]-want[o][i])) / (1 + math.Abs(float64(want[o][i]))); !(d <= 1e-4) {
					t.Fatalf("output %d[%d] = %v, want %v", o, i, got[o][i], want[o][i])
				}
			}
		}
	})
}

func TestAttnShapeCheck(t *testing.T) {
	if maxSplits%8 != 0 || maxSplits > 128 { // the merge's reads (combine)
		t.Errorf("maxSplits %d: want a multiple of 8, at most 128", maxSplits)
	}
	for _, a := range []AttnShape{{}, {Keys: 16, Score: 32}, {Keys: 3}} {
		if err := a.withDefaults().check(); err != nil {
			t.Errorf("%+v: %v", a, err)
		}
	}
	for _, a := range []AttnShape{{Keys: 17}, {Keys: -1}, {Score: 3}, {Score: 64}} {
		if err := a.withDefaults().check(); err == nil {
			t.Errorf("%+v: no error", a)
		}
	}
}

// storeKV stores n rows of k and v (2 heads of 64) into new caches and
// returns the stored tensors.
func storeKV(g *tensor.Graph, b tensor.Backend, k, v []float32, n int) (tensor.T, tensor.T) {
	kb, _ := b.Alloc([]int{n, 2, 64})
	vb, _ := b.Alloc([]int{n, 2, 64})
	return g.Store(kb, g.Input(k, n, 2, 64), 0), g.Store(vb, g.Input(v, n, 2, 64), 0)
}
