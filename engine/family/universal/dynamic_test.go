package universal_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/internal/testmodels"
)

// TestDynamicRopePastMaxPositions loads llama_dynamic-f32 (dynamic NTK,
// max_position_embeddings 32): one pass from position 0 may run past 32
// (its table is recomputed for the pass's length, as transformers does),
// but a cached pass that reaches past 32 is refused, since its cached keys
// were rotated with another table.
func TestDynamicRopePastMaxPositions(t *testing.T) {
	m, err := engine.Load(filepath.Join(testmodels.Root(), "llama_dynamic-f32"), engine.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ids := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(3 + i)
		}
		return out
	}
	ctx := context.Background()
	one, err := m.NewSequence(64)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if _, err := one.Forward(ctx, ids(40), false); err != nil {
		t.Fatalf("one pass of 40 tokens from position 0: %v", err)
	}
	seq, err := m.NewSequence(64)
	if err != nil {
		t.Fatal(err)
	}
	defer seq.Close()
	if _, err := seq.Forward(ctx, ids(30), false); err != nil {
		t.Fatal(err)
	}
	if _, err := seq.Forward(ctx, ids(2), false); err != nil {
		t.Fatalf("cached pass up to position 32: %v", err)
	}
	if _, err := seq.Forward(ctx, ids(1), false); err == nil || !strings.Contains(err.Error(), "max_position_embeddings 32") {
		t.Fatalf("cached pass past max positions: error %v, want a dynamic rope refusal", err)
	}
}
