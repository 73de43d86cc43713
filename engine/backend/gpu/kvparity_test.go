package gpu_test

import (
	"context"
	"testing"

	"hearth/engine/backend/gpu"
	"hearth/engine/cache"
	"hearth/engine/tensor"
	"hearth/internal/testmodels"
)

// kvTolerance is engine/parity's KVToleranceOf: the largest |Δlogit|
// against the oracle with a KV cache of type kv (docs/design/kv-quant.md).
func kvTolerance(kv tensor.KVType, name string) float64 {
	switch {
	case kv == tensor.KVQ4 && name == "qwen3_moe-f32":
		return 7.5
	case kv == tensor.KVQ4:
		return 3.0
	case name == "gemma4_moe-f32":
		return 0.75
	}
	return 0.13
}

// TestManifestKVQuant runs every f32 entry with q8 and q4 KV caches on the
// gpu backend, as engine/parity's TestKVQuant does on the cpu: logits
// within the tolerance by teacher forcing, greedy ids held where the
// oracle's margin exceeds twice the tolerance.
func TestManifestKVQuant(t *testing.T) {
	man, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	b := newGPU(t, gpu.Options{})
	defer b.Close()
	for _, e := range man.Entries {
		if e.Variant != "f32" {
			continue
		}
		for _, kv := range []tensor.KVType{tensor.KVQ8, tensor.KVQ4} {
			t.Run(e.Name+"/"+kv.String(), func(t *testing.T) { checkKVEntry(t, e, b, kv) })
		}
	}
}

// checkKVEntry is TestManifestKVQuant's check of entry e.
func checkKVEntry(t *testing.T, e testmodels.Entry, b *gpu.Backend, kv tensor.KVType) {
	g, err := e.Golden()
	if err != nil {
		t.Fatal(err)
	}
	m, err := load(e.Path(), b)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	const chunk = 5
	caches, err := m.impl.NewCaches(cache.WithType(m.b.Backend, kv), len(g.PromptIDs)+len(g.GreedyIDs)+4, chunk)
	if err != nil {
		t.Fatal(err)
	}
	s := &seq{m: m, caches: caches, chunk: chunk}
	defer s.close()
	ctx := context.Background()
	logits, err := s.forward(ctx, g.PromptIDs)
	if err != nil {
		t.Fatal(err)
	}
	tol := kvTolerance(kv, e.Name)
	worst := 0.0
	for step, want := range g.Logits {
		worst = max(worst, testmodels.CheckStep(t, step, logits, want, tol))
		if testmodels.Margin(want) > 2*tol {
			if id := argmax(logits); id != g.GreedyIDs[step] {
				t.Fatalf("step %d: greedy id %d, want %d", step, id, g.GreedyIDs[step])
			}
		}
		if step+1 < len(g.Logits) {
			if logits, err = s.forward(ctx, []int32{g.GreedyIDs[step]}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%s kv %v: %d steps, max |Δlogit| %.3g (tolerance %.3g)", e.Name, kv, len(g.Logits), worst, tol)
}
