package gpu_test

import (
	"context"
	"testing"

	"hearth/engine/backend/gpu"
	"hearth/engine/tensor"
	"hearth/engine/tower/towertest"
)

// TestGemma3Vision runs Gemma 3's vision golden through the gpu backend,
// fused and unfused: the tower's last hidden state and the projector's
// output within the tower tolerance, and each image prompt (the soft
// tokens spliced in, the pictures' tokens seeing each other both ways)
// within the logit tolerance with the greedy ids exact.
func TestGemma3Vision(t *testing.T) { visionOnGPU(t, towertest.Gemma3Entry) }

// TestQwen35Vision is the same for Qwen 3.5's: the Qwen-VL tower and
// merger, and image prompts with their mRoPE positions.
func TestQwen35Vision(t *testing.T) { visionOnGPU(t, towertest.Qwen35Entry) }

// TestQwen35MoeVision is the same for Qwen 3.5 MoE's: the same tower,
// its soft tokens spliced into the sparse decoder.
func TestQwen35MoeVision(t *testing.T) { visionOnGPU(t, towertest.Qwen35MoeEntry) }

// TestGemma4Vision is the same for Gemma 4's: the tower with its clipped
// linears, 2-D rotary and pooler, the embedder, and image prompts whose
// pictures see each other on the sliding layers.
func TestGemma4Vision(t *testing.T) { visionOnGPU(t, towertest.Gemma4Entry) }

func visionOnGPU(t *testing.T, entry string) {
	g, err := towertest.Load(entry)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name string
		opt  gpu.Options
	}{{"fused", gpu.Options{}}, {"unfused", gpu.Options{NoFusion: true}}} {
		t.Run(v.name, func(t *testing.T) {
			b := newGPU(t, v.opt)
			defer b.Close()
			checkVision(t, entry, g, b)
		})
	}
}

func checkVision(t *testing.T, entry string, g *towertest.Golden, backend tensor.Backend) {
	b := &tracked{Backend: backend}
	defer b.freeAll()
	bd, err := towertest.Bind(towertest.Dir(entry), b)
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	ctx := context.Background()
	feats := make([][]float32, len(g.Images))
	for i, im := range g.Images {
		hidden, f, err := bd.Run(ctx, im)
		if err != nil {
			t.Fatal(err)
		}
		within(t, "image last_hidden_state", hidden, im.Hidden, g.Tolerance.MaxAbsTower)
		within(t, "image features", f, im.Features, g.Tolerance.MaxAbsTower)
		feats[i] = f
	}
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			steps, err := bd.Decode(ctx, g, c, feats)
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for s, want := range c.Logits {
				worst = max(worst, within(t, "logits", steps[s], want, g.Tolerance.MaxAbsLogit))
				if id := argmax(steps[s]); id != c.GreedyIDs[s] {
					t.Fatalf("step %d: greedy id %d, want %d", s, id, c.GreedyIDs[s])
				}
			}
			t.Logf("%s: %d steps, max |Δlogit| %.3g", c.Name, len(c.Logits), worst)
		})
	}
}

// within fails t when got and want differ by more than tol anywhere, and
// returns the largest difference.
func within(t *testing.T, what string, got, want []float32, tol float64) float64 {
	t.Helper()
	worst, err := towertest.Compare(got, want, tol)
	if err != nil {
		t.Fatalf("%s%v", what, err)
	}
	return worst
}
