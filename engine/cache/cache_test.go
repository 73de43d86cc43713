package cache_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"hearth/engine/backend/cpu"
	"hearth/engine/cache"
	"hearth/engine/tensor"
)

const heads, kvHeads, dim = 4, 2, 8

func randn(r *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.NormFloat64())
	}
	return out
}

// step feeds n tokens of random q/k/v to c and returns the attention output.
func step(t *testing.T, b tensor.Backend, c cache.Layer, q, k, v []float32, n, window int) []float32 {
	t.Helper()
	g := tensor.NewGraph(b)
	view, err := c.Update(g, g.Input(k, n, kvHeads, dim), g.Input(v, n, kvHeads, dim))
	if err != nil {
		t.Fatal(err)
	}
	out := g.Attention(g.Input(q, n, heads, dim), view.K, view.V, view.Spec(tensor.AttnSpec{Window: window}))
	if err := b.Run(context.Background(), g, out); err != nil {
		t.Fatal(err)
	}
	res := make([]float32, n*heads*dim)
	if err := b.Read(out, res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestRotatingMatchesPlain feeds the same chunks to a plain cache and to a
// rotating one whose ring is much shorter than the sequence: with a sliding
// window the attention outputs must be identical, including chunks that wrap.
func TestRotatingMatchesPlain(t *testing.T) {
	const window, chunk, total = 5, 3, 40
	b := cpu.New(cpu.Options{Threads: 2})
	plain, err := cache.NewKV(b, total, kvHeads, dim)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := cache.NewRotating(b, window, chunk, kvHeads, dim)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for done := 0; done < total; {
		n := 1 + r.IntN(chunk)
		n = min(n, total-done)
		q, k, v := randn(r, n*heads*dim), randn(r, n*kvHeads*dim), randn(r, n*kvHeads*dim)
		want := step(t, b, plain, q, k, v, n, window)
		got := step(t, b, ring, q, k, v, n, window)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("tokens %d..%d: rotating[%d] = %v, plain = %v", done, done+n, i, got[i], want[i])
			}
		}
		done += n
	}
	if plain.Len() != total || ring.Len() != total {
		t.Errorf("Len = %d, %d, want %d", plain.Len(), ring.Len(), total)
	}
}

func TestTrim(t *testing.T) {
	b := cpu.New(cpu.Options{Threads: 1})
	r := rand.New(rand.NewPCG(3, 4))
	feed := func(c cache.Layer, n int) {
		g := tensor.NewGraph(b)
		if _, err := c.Update(g, g.Input(randn(r, n*kvHeads*dim), n, kvHeads, dim), g.Input(randn(r, n*kvHeads*dim), n, kvHeads, dim)); err != nil {
			t.Fatal(err)
		}
		if err := b.Run(context.Background(), g); err != nil {
			t.Fatal(err)
		}
	}
	plain, _ := cache.NewKV(b, 16, kvHeads, dim)
	feed(plain, 10)
	if got := plain.Trim(4); got != 4 || plain.Len() != 6 {
		t.Errorf("plain Trim(4) = %d, Len %d; want 4, 6", got, plain.Len())
	}
	if got := plain.Trim(100); got != 6 || plain.Len() != 0 {
		t.Errorf("plain Trim(100) = %d, Len %d; want 6, 0", got, plain.Len())
	}
	// window 4, chunk 3: ring of 7 rows. After 10 tokens positions 3..9
	// are intact, so the sequence can go back to length 7 (needs 3..6).
	ring, _ := cache.NewRotating(b, 4, 3, kvHeads, dim)
	feed(ring, 3)
	feed(ring, 3)
	feed(ring, 3)
	feed(ring, 1)
	if got := ring.Trim(5); got != 3 || ring.Len() != 7 {
		t.Errorf("rotating Trim(5) = %d, Len %d; want 3, 7", got, ring.Len())
	}
	short, _ := cache.NewRotating(b, 4, 3, kvHeads, dim)
	feed(short, 3)
	if got := short.Trim(3); got != 3 || short.Len() != 0 {
		t.Errorf("short rotating Trim(3) = %d, Len %d; want 3, 0", got, short.Len())
	}
}

func TestFullCacheIsAnError(t *testing.T) {
	b := cpu.New(cpu.Options{Threads: 1})
	c, _ := cache.NewKV(b, 4, kvHeads, dim)
	g := tensor.NewGraph(b)
	x := g.Input(make([]float32, 5*kvHeads*dim), 5, kvHeads, dim)
	if _, err := c.Update(g, x, x); err == nil {
		t.Fatal("Update past capacity succeeded")
	}
	r, _ := cache.NewRotating(b, 4, 2, kvHeads, dim)
	x3 := g.Input(make([]float32, 3*kvHeads*dim), 3, kvHeads, dim)
	if _, err := r.Update(g, x3, x3); err == nil {
		t.Fatal("rotating Update of more than a chunk succeeded")
	}
}
