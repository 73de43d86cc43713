package parity

import (
	"context"
	"fmt"
	"testing"

	"hearth/engine"
	"hearth/engine/backend/cpu"
	"hearth/engine/tower/towertest"
)

// TestGemma4VideoTower holds Gemma 4's vision tower to transformers on a
// clip: each sampled frame run alone as a picture gives its share of
// get_video_features (the vision model's last_hidden_state and the
// embedder's output over the frames as one batch).
func TestGemma4VideoTower(t *testing.T) {
	vg, err := towertest.LoadGemma4Video()
	if err != nil {
		t.Fatal(err)
	}
	b := cpu.New(cpu.Options{})
	defer b.Close()
	bd, err := towertest.Bind(towertest.Dir(towertest.Gemma4Entry), b)
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	for i, v := range vg.Videos {
		if len(v.FrameGrids) < 2 {
			t.Fatalf("video %d has %d frames: it tests no video", i, len(v.FrameGrids))
		}
		for f := range v.FrameGrids {
			im := v.Frame(f)
			hidden, feats, err := bd.Run(context.Background(), im)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range []struct {
				name      string
				got, want []float32
			}{{"last_hidden_state", hidden, im.Hidden}, {"video_features", feats, im.Features}} {
				worst, err := towertest.Compare(o.got, o.want, vg.Tolerance.MaxAbsTower)
				if err != nil {
					t.Fatalf("video %d frame %d %s%v", i, f, o.name, err)
				}
				t.Logf("video %d frame %d (%v patches) %s: max |Δ| %.3g", i, f, v.FrameGrids[f], o.name, worst)
			}
		}
	}
}

// TestGemma4VideoPrompt holds Gemma 4 video prompts to transformers
// through the engine's sequence: each frame's soft tokens (the tower run
// frame by frame) spliced in as a picture of its own, so that each
// frame's tokens see each other on the sliding layers, then decode
// steps; every logit within the tolerance and the greedy ids exact, in
// one pass and in chunks of 5 that end before each frame.
func TestGemma4VideoPrompt(t *testing.T) {
	vg, err := towertest.LoadGemma4Video()
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{512, 5} {
		t.Run(fmt.Sprintf("chunk%d", chunk), func(t *testing.T) {
			model, err := engine.Load(towertest.Dir(towertest.Gemma4Entry), engine.Options{Backend: "cpu", ChunkTokens: chunk})
			if err != nil {
				t.Fatal(err)
			}
			defer model.Close()
			ctx := context.Background()
			for _, c := range vg.Cases {
				t.Run(c.Name, func(t *testing.T) {
					seq, err := model.NewSequence(len(c.PromptIDs) + len(c.GreedyIDs) + 4)
					if err != nil {
						t.Fatal(err)
					}
					defer seq.Close()
					if len(c.Images) > 0 {
						t.Fatalf("%s: pictures are not handled here", c.Name)
					}
					vrows, vlens := c.Runs(2)
					k := 0
					for _, j := range c.Videos {
						v := vg.Videos[j]
						for f := range v.FrameGrids {
							px := v.Frame(f).Pixels()
							embeds, err := model.EncodeImage(ctx, px)
							if err != nil {
								t.Fatal(err)
							}
							grid := model.ImageGrid(px)
							if k >= len(vrows) || vlens[k] != grid[1]*grid[2] {
								t.Fatalf("video run %d (of %v) is not frame %d's %v", k, vlens, f, grid)
							}
							if err := seq.AddMedia(engine.Media{Pos: vrows[k], Embeds: embeds, Grid: grid}); err != nil {
								t.Fatal(err)
							}
							k++
						}
					}
					if k != len(vrows) {
						t.Fatalf("%d video runs for %d frames", len(vrows), k)
					}
					logits, err := seq.Forward(ctx, c.PromptIDs, false)
					if err != nil {
						t.Fatal(err)
					}
					worst := compareSteps(t, seq, logits, c.Logits, c.GreedyIDs, vg.Tolerance.MaxAbsLogit)
					t.Logf("%s: %d steps, max |Δlogit| %.3g, min oracle margin %.3g", c.Name, len(c.Logits), worst, c.MinMargin)
				})
			}
		})
	}
}
