package gpu_test

import (
	"context"
	"testing"

	"hearth/engine/backend/gpu"
	"hearth/engine/tower/towertest"
)

// TestGemma4Video runs Gemma 4's video golden through the gpu backend,
// fused and unfused: the tower frame by frame (each frame a picture)
// within the tower tolerance, and the video prompt (each frame's soft
// tokens a bidirectional block of its own on the sliding layers) within
// the logit tolerance with the greedy ids exact.
func TestGemma4Video(t *testing.T) {
	g, err := towertest.Load(towertest.Gemma4Entry)
	if err != nil {
		t.Fatal(err)
	}
	gv, err := towertest.LoadGemma4Video()
	if err != nil {
		t.Fatal(err)
	}
	vg := &towertest.VideoGolden{Tolerance: gv.Tolerance, Cases: gv.Cases}
	for _, v := range gv.Videos {
		vg.Videos = append(vg.Videos, v.Video())
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
			bd, err := towertest.Bind(towertest.Dir(towertest.Gemma4Entry), b)
			if err != nil {
				t.Fatal(err)
			}
			defer bd.Close()
			ctx := context.Background()
			clips := make([][]float32, len(gv.Videos))
			for i, vid := range gv.Videos {
				for f := range vid.FrameGrids {
					im := vid.Frame(f)
					hidden, feats, err := bd.Run(ctx, im)
					if err != nil {
						t.Fatal(err)
					}
					h := within(t, "frame last_hidden_state", hidden, im.Hidden, gv.Tolerance.MaxAbsTower)
					m := within(t, "frame features", feats, im.Features, gv.Tolerance.MaxAbsTower)
					t.Logf("video %d frame %d: max |Δ| last_hidden_state %.3g, features %.3g", i, f, h, m)
					clips[i] = append(clips[i], feats...)
				}
			}
			for _, c := range vg.Cases {
				t.Run(c.Name, func(t *testing.T) {
					steps, err := bd.DecodeVideo(ctx, g, vg, c, nil, clips)
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
