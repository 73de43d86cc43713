package cpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"hearth/engine/tensor"
)

// TestMoEDecodeAllocs holds the mixture-of-experts ops to the backend's
// rule that a decode step allocates nothing once its plan exists: router,
// gathered gate/up/down on 4-bit stacked experts, weighted sum.
func TestMoEDecodeAllocs(t *testing.T) {
	const experts, hidden, inter, k = 8, 128, 64, 2
	rng := rand.New(rand.NewPCG(5, 6))
	b := New(Options{Threads: 2})
	defer b.Close()
	stacked := func(rows, cols int) tensor.T {
		w := randomWeight(rng, formats[3], experts*rows, cols)
		w.Shape = []int{experts, rows, cols}
		t2, err := b.Upload(w)
		if err != nil {
			t.Fatal(err)
		}
		return t2
	}
	gate, up, down := stacked(inter, hidden), stacked(inter, hidden), stacked(hidden, inter)
	router, err := b.Upload(randomWeight(rng, formats[0], experts, hidden))
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, hidden)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	step := func() {
		g := tensor.NewGraph(b)
		h := g.Input(x, 1, hidden)
		r := g.Route(g.MatMul(h, router), k, tensor.RouteSoftmax, true)
		a := g.Mul(g.SiLU(g.ExpertMatMul(h, gate, r)), g.ExpertMatMul(h, up, r))
		out := g.ExpertSum(g.ExpertMatMul(a, down, r), r)
		if err := b.Run(context.Background(), g, out); err != nil {
			t.Fatal(err)
		}
	}
	step()
	// the graph itself is built per step, as the engine does; count only
	// what Run adds on top of building it
	build := testing.AllocsPerRun(20, func() {
		g := tensor.NewGraph(b)
		h := g.Input(x, 1, hidden)
		r := g.Route(g.MatMul(h, router), k, tensor.RouteSoftmax, true)
		a := g.Mul(g.SiLU(g.ExpertMatMul(h, gate, r)), g.ExpertMatMul(h, up, r))
		g.ExpertSum(g.ExpertMatMul(a, down, r), r)
	})
	total := testing.AllocsPerRun(20, step)
	if total > build {
		t.Errorf("a MoE decode step allocates %.0f times in Run (%.0f in all, %.0f building the graph)", total-build, total, build)
	}
}
