package gpu_test

import (
	"context"
	"testing"

	"hearth/engine/backend/cpu"
	"hearth/engine/backend/gpu"
	"hearth/engine/tower/towertest"
)

// TestGemma4Audio runs Gemma 4's audio tower over the golden clip's
// features on the gpu backend, fused and unfused: its last hidden state
// and soft tokens within the tower tolerance of the cpu backend's (which
// tower/gemma4audio's TestGolden holds to transformers, the attention's
// mask aside: docs/design/audio.md), and the golden prompt with them
// spliced in within the logit tolerance with the same greedy ids.
func TestGemma4Audio(t *testing.T) {
	g, err := towertest.LoadAudio()
	if err != nil {
		t.Fatal(err)
	}
	f, err := g.Clip.Features()
	if err != nil {
		t.Fatal(err)
	}
	c := g.Cases[0]
	row := c.AudioRow(g.SpecialTokens["<|audio|>"])
	ref := cpu.New(cpu.Options{})
	defer ref.Close()
	rb, err := towertest.BindAudio(towertest.Dir(towertest.Gemma4AudioEntry), ref)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	ctx := context.Background()
	wantHidden, wantSoft, err := rb.Run(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	wantLogits, err := rb.Decode(ctx, c, row, wantSoft)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs, err := rb.Greedy(ctx, c.PromptIDs, row, wantSoft, len(c.GreedyIDs))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name string
		opt  gpu.Options
	}{{"fused", gpu.Options{}}, {"unfused", gpu.Options{NoFusion: true}}} {
		t.Run(v.name, func(t *testing.T) {
			backend := newGPU(t, v.opt)
			defer backend.Close()
			b := &tracked{Backend: backend}
			defer b.freeAll()
			bd, err := towertest.BindAudio(towertest.Dir(towertest.Gemma4AudioEntry), b)
			if err != nil {
				t.Fatal(err)
			}
			defer bd.Close()
			hidden, soft, err := bd.Run(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			dh := within(t, "audio last hidden state", hidden, wantHidden, g.Tolerance.MaxAbsTower)
			ds := within(t, "audio soft tokens", soft, wantSoft, g.Tolerance.MaxAbsTower)
			steps, err := bd.Decode(ctx, c, row, soft)
			if err != nil {
				t.Fatal(err)
			}
			dl := 0.0
			for s := range steps {
				dl = max(dl, within(t, "logits", steps[s], wantLogits[s], g.Tolerance.MaxAbsLogit))
			}
			ids, err := bd.Greedy(ctx, c.PromptIDs, row, soft, len(c.GreedyIDs))
			if err != nil {
				t.Fatal(err)
			}
			for s := range ids {
				if ids[s] != wantIDs[s] {
					t.Fatalf("greedy ids %v, the cpu backend's %v", ids, wantIDs)
				}
			}
			t.Logf("tower max |Δ| %.3g, soft tokens %.3g, logits %.3g; greedy %v", dh, ds, dl, ids)
		})
	}
}
