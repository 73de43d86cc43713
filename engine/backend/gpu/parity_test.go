package gpu_test

import (
	"context"
	"testing"

	"hearth/engine/backend/gpu"
	"hearth/internal/testmodels"
)

// TestManifest runs every oracle-checked model of testdata/models through
// the gpu backend, fused and unfused, and holds it to the golden logits
// within the entry's tolerance and to the greedy ids exactly. The f32
// entries also run with a prefill chunk of 3 tokens, so prompts cross chunk
// boundaries and rotating caches wrap mid-prompt.
func TestManifest(t *testing.T) {
	man, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Entries) == 0 {
		t.Fatal("manifest has no entries")
	}
	// one device per variant, shared by the entries in turn
	fused, unfused := newGPU(t, gpu.Options{}), newGPU(t, gpu.Options{NoFusion: true})
	defer fused.Close()
	defer unfused.Close()
	for _, e := range man.Entries {
		for _, v := range []struct {
			name  string
			b     *gpu.Backend
			chunk int
		}{{"fused", fused, 512}, {"unfused", unfused, 512}, {"chunk3", fused, 3}} {
			if v.chunk == 3 && e.Variant != "f32" {
				continue
			}
			t.Run(e.Name+"/"+v.name, func(t *testing.T) { checkEntry(t, e, v.b, v.chunk) })
		}
	}
}

func checkEntry(t *testing.T, e testmodels.Entry, b *gpu.Backend, chunk int) {
	g, err := e.Golden()
	if err != nil {
		t.Fatal(err)
	}
	m, err := load(e.Path(), b)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	s, err := m.newSeq(len(g.PromptIDs)+len(g.GreedyIDs)+4, chunk)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	logits, err := s.forward(ctx, g.PromptIDs)
	if err != nil {
		t.Fatal(err)
	}
	tol := e.Tolerance.MaxAbsLogit
	worst := 0.0
	for step, want := range g.Logits {
		worst = max(worst, testmodels.CheckStep(t, step, logits, want, tol))
		id := argmax(logits)
		if id != g.GreedyIDs[step] {
			t.Fatalf("step %d: greedy id %d, want %d", step, id, g.GreedyIDs[step])
		}
		if step+1 < len(g.Logits) {
			if logits, err = s.forward(ctx, []int32{id}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%s: %d steps, max |Δlogit| %.3g (tolerance %.3g)", e.Name, len(g.Logits), worst, tol)
}

func argmax(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}
