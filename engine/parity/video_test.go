package parity

import (
	"context"
	"fmt"
	"testing"

	"hearth/engine"
	"hearth/engine/backend/cpu"
	"hearth/engine/tower/towertest"
)

// TestQwen35VideoTower holds Qwen 3.5's vision tower to transformers on
// a clip of two temporal patches: the blocks' last_hidden_state and the
// merger's soft tokens (get_video_features), each patch attending within
// itself.
func TestQwen35VideoTower(t *testing.T) {
	vg, err := towertest.LoadVideo()
	if err != nil {
		t.Fatal(err)
	}
	b := cpu.New(cpu.Options{})
	defer b.Close()
	bd, err := towertest.Bind(towertest.Dir(towertest.Qwen35Entry), b)
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	for i, v := range vg.Videos {
		if v.Grid[0] < 2 {
			t.Fatalf("video %d: grid %v has one temporal patch: it tests no video", i, v.Grid)
		}
		hidden, feats, err := bd.RunVideo(context.Background(), v)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []struct {
			name      string
			got, want []float32
		}{{"last_hidden_state", hidden, v.Hidden}, {"video_features", feats, v.Features}} {
			worst, err := towertest.Compare(o.got, o.want, vg.Tolerance.MaxAbsTower)
			if err != nil {
				t.Fatalf("video %d %s%v", i, o.name, err)
			}
			t.Logf("video %d (grid %v) %s: max |Δ| %.3g", i, v.Grid, o.name, worst)
		}
	}
}

// TestQwen35VideoPrompt holds video prompts to transformers through the
// engine's sequence: the clip's soft tokens spliced in per temporal patch
// (with the golden pictures' where the case has one), get_rope_index's
// positions, then decode steps; every logit within the tolerance and the
// greedy ids exact, in one pass and in chunks of 5 that end before each
// media run.
func TestQwen35VideoPrompt(t *testing.T) {
	g, err := towertest.Load(towertest.Qwen35Entry)
	if err != nil {
		t.Fatal(err)
	}
	vg, err := towertest.LoadVideo()
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{512, 5} {
		t.Run(fmt.Sprintf("chunk%d", chunk), func(t *testing.T) {
			model, err := engine.Load(towertest.Dir(towertest.Qwen35Entry), engine.Options{Backend: "cpu", ChunkTokens: chunk})
			if err != nil {
				t.Fatal(err)
			}
			defer model.Close()
			ctx := context.Background()
			hidden := model.Checkpoint.Config.HiddenSize
			for _, c := range vg.Cases {
				t.Run(c.Name, func(t *testing.T) {
					seq, err := model.NewSequence(len(c.PromptIDs) + len(c.GreedyIDs) + 4)
					if err != nil {
						t.Fatal(err)
					}
					defer seq.Close()
					irows, _ := c.Runs(1)
					for k, i := range c.Images {
						px := g.Images[i].Pixels()
						embeds, err := model.EncodeImage(ctx, px)
						if err != nil {
							t.Fatal(err)
						}
						if err := seq.AddMedia(engine.Media{Pos: irows[k], Embeds: embeds, Grid: model.ImageGrid(px)}); err != nil {
							t.Fatal(err)
						}
					}
					vrows, _ := c.Runs(2)
					k := 0
					for _, j := range c.Videos {
						px := vg.Videos[j].Pixels()
						embeds, err := model.EncodeImage(ctx, px)
						if err != nil {
							t.Fatal(err)
						}
						grid := model.ImageGrid(px)
						per := grid[1] * grid[2] * hidden
						for f := 0; f < grid[0]; f++ {
							m := engine.Media{Pos: vrows[k], Embeds: embeds[f*per : (f+1)*per], Grid: [3]int{1, grid[1], grid[2]}}
							if err := seq.AddMedia(m); err != nil {
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
