package gpu_test

import (
	"context"
	"testing"

	"hearth/engine/backend/gpu"
	"hearth/engine/tower/towertest"
)

// TestQwen35Video runs Qwen 3.5's video golden through the gpu backend,
// fused and unfused: the tower over a clip of two temporal patches (each
// attending within itself) within the tower tolerance, and each video
// prompt (every temporal patch's soft tokens spliced in at its own mRoPE
// start) within the logit tolerance with the greedy ids exact.
func TestQwen35Video(t *testing.T) {
	g, err := towertest.Load(towertest.Qwen35Entry)
	if err != nil {
		t.Fatal(err)
	}
	vg, err := towertest.LoadVideo()
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
			bd, err := towertest.Bind(towertest.Dir(towertest.Qwen35Entry), b)
			if err != nil {
				t.Fatal(err)
			}
			defer bd.Close()
			ctx := context.Background()
			images := make([][]float32, len(g.Images))
			for i, im := range g.Images {
				if _, images[i], err = bd.Run(ctx, im); err != nil {
					t.Fatal(err)
				}
			}
			clips := make([][]float32, len(vg.Videos))
			for i, vid := range vg.Videos {
				hidden, f, err := bd.RunVideo(ctx, vid)
				if err != nil {
					t.Fatal(err)
				}
				h := within(t, "video last_hidden_state", hidden, vid.Hidden, vg.Tolerance.MaxAbsTower)
				m := within(t, "video features", f, vid.Features, vg.Tolerance.MaxAbsTower)
				t.Logf("video %d: max |Δ| last_hidden_state %.3g, features %.3g", i, h, m)
				clips[i] = f
			}
			for _, c := range vg.Cases {
				t.Run(c.Name, func(t *testing.T) {
					steps, err := bd.DecodeVideo(ctx, g, vg, c, images, clips)
					if err != nil {
						t.Fatal(err)
					}
					worst := 0.0
					for s, want := range c.Logits {
						worst = max(worst, within(t, "logits", steps[s], want, vg.Tolerance.MaxAbsLogit))
						if id := argmax(steps[s]); id != c.GreedyIDs[s] {
							t.Fatalf("step %d: greedy id %d, want %d", s, id, c.GreedyIDs[s])
						}
					}
					t.Logf("%s: %d steps, max |Δlogit| %.3g", c.Name, len(c.Logits), worst)
				})
			}
		})
	}
}
