package parity

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/backend/cpu"
	"hearth/engine/tensor"
	"hearth/engine/tower/towertest"
	"hearth/internal/testmodels"
)

// TestGemma3VisionTower holds Gemma 3's vision tower to transformers: for
// each golden picture, SigLIP's last_hidden_state and the projector's
// output (get_image_features) from the processor's pixel_values.
func TestGemma3VisionTower(t *testing.T) {
	g, err := towertest.Load(towertest.Gemma3Entry)
	if err != nil {
		t.Fatal(err)
	}
	checkTower(t, g, towertest.Dir(towertest.Gemma3Entry), cpu.New(cpu.Options{}))
}

// checkTower binds the checkpoint in dir on b as the engine does and
// compares its tower's outputs with g's.
func checkTower(t *testing.T, g *towertest.Golden, dir string, b tensor.Backend) {
	defer b.Close()
	bd, err := towertest.Bind(dir, b)
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	for i, im := range g.Images {
		hidden, feats, err := bd.Run(context.Background(), im)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []struct {
			name      string
			got, want []float32
		}{{"last_hidden_state", hidden, im.Hidden}, {"image_features", feats, im.Features}} {
			worst, err := towertest.Compare(o.got, o.want, g.Tolerance.MaxAbsTower)
			if err != nil {
				t.Fatalf("image %d %s%v", i, o.name, err)
			}
			t.Logf("image %d (%dx%d) %s: max |Δ| %.3g", i, im.Width, im.Height, o.name, worst)
		}
	}
}

// TestGemma3VisionPrompt holds image prompts to transformers: the golden
// conversations' expanded prompt ids with each picture's soft tokens (the
// tower run by the engine) spliced in, decoded greedily; every logit
// within the tolerance, the greedy ids exact. A prefill chunk of 5 tokens
// makes the passes end before a picture and resume at its end.
func TestGemma3VisionPrompt(t *testing.T) {
	g, err := towertest.Load(towertest.Gemma3Entry)
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{512, 5} {
		t.Run(fmt.Sprintf("chunk%d", chunk), func(t *testing.T) {
			checkVisionPrompts(t, g, towertest.Dir(towertest.Gemma3Entry), engine.Options{Backend: "cpu", ChunkTokens: chunk})
		})
	}
}

// TestQwen35VisionTower holds Qwen 3.5's vision tower to transformers:
// for each golden picture, the blocks' last_hidden_state and the merger's
// soft tokens (pooler_output) from the processor's pixel_values and
// grid_thw.
func TestQwen35VisionTower(t *testing.T) {
	g, err := towertest.Load(towertest.Qwen35Entry)
	if err != nil {
		t.Fatal(err)
	}
	checkTower(t, g, towertest.Dir(towertest.Qwen35Entry), cpu.New(cpu.Options{}))
}

// TestQwen35VisionPrompt holds Qwen 3.5's image prompts to transformers:
// the soft tokens spliced in with get_rope_index's three position
// streams, then decode steps shifted by the pictures (rope deltas); every
// logit within the tolerance, the greedy ids exact, in one pass and in
// chunks of 5 that end before each picture.
func TestQwen35VisionPrompt(t *testing.T) {
	g, err := towertest.Load(towertest.Qwen35Entry)
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{512, 5} {
		t.Run(fmt.Sprintf("chunk%d", chunk), func(t *testing.T) {
			checkVisionPrompts(t, g, towertest.Dir(towertest.Qwen35Entry), engine.Options{Backend: "cpu", ChunkTokens: chunk})
		})
	}
}

func checkVisionPrompts(t *testing.T, g *towertest.Golden, dir string, opt engine.Options) {
	model, err := engine.Load(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	if !model.HasVision() {
		t.Fatal("the vision tower did not load")
	}
	ctx := context.Background()
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			seq, err := model.NewSequence(len(c.PromptIDs) + len(c.GreedyIDs) + 4)
			if err != nil {
				t.Fatal(err)
			}
			defer seq.Close()
			rows := c.ImageRows()
			if len(rows) != len(c.Images) {
				t.Fatalf("%d image runs for %d images", len(rows), len(c.Images))
			}
			for k, i := range c.Images {
				px := g.Images[i].Pixels()
				embeds, err := model.EncodeImage(ctx, px)
				if err != nil {
					t.Fatal(err)
				}
				if err := seq.AddMedia(engine.Media{Pos: rows[k], Embeds: embeds, Grid: model.ImageGrid(px)}); err != nil {
					t.Fatal(err)
				}
			}
			logits, err := seq.Forward(ctx, c.PromptIDs, false)
			if err != nil {
				t.Fatal(err)
			}
			worst := compareSteps(t, seq, logits, c.Logits, c.GreedyIDs, g.Tolerance.MaxAbsLogit)
			t.Logf("%s: %d steps, max |Δlogit| %.3g, min oracle margin %.3g", c.Name, len(c.Logits), worst, c.MinMargin)
		})
	}
}

// compareSteps checks logits against each step's golden, feeding the
// greedy id back, and returns the largest difference.
func compareSteps(t *testing.T, seq *engine.Sequence, logits []float32, golden [][]float32, greedy []int32, tol float64) float64 {
	worst := 0.0
	for step, want := range golden {
		if len(logits) != len(want) {
			t.Fatalf("step %d: %d logits, want %d", step, len(logits), len(want))
		}
		for i := range want {
			d := math.Abs(float64(logits[i] - want[i]))
			if !(d <= tol) {
				t.Fatalf("step %d: logit[%d] = %v, want %v (|Δ| %.3g > %.3g)", step, i, logits[i], want[i], d, tol)
			}
			worst = max(worst, d)
		}
		id := argmax(logits)
		if id != greedy[step] {
			t.Fatalf("step %d: greedy id %d, want %d", step, id, greedy[step])
		}
		if step+1 < len(golden) {
			var err error
			if logits, err = seq.Forward(context.Background(), []int32{id}, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	return worst
}

// TestGemma3VisionLayouts holds the same goldens with the checkpoint in
// the other layouts Gemma 3 ships in. transformers 5.17 saves
// language_model.model., vision_tower. and multi_modal_projector. (the
// golden entry); the hub's older saves and mlx-vlm keep SigLIP under
// vision_tower.vision_model., mlx-vlm with the patch embedding's
// convolution weight channels-last, [out, kh, kw, in]; transformers 5's
// in-memory names put model. before all three.
func TestGemma3VisionLayouts(t *testing.T) {
	g, err := towertest.Load(towertest.Gemma3Entry)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		renames      [][2]string
		channelsLast bool
		quantConfig  bool // config.json declares MLX quantization; these tensors stay dense
	}{
		{"hub", [][2]string{{"vision_tower.", "vision_tower.vision_model."}}, false, false},
		{"mlx-vlm", [][2]string{{"vision_tower.", "vision_tower.vision_model."}}, true, false},
		// mlx-community's quantized repos keep much of the tower dense
		// (what the quantizer skips): dense tensors under a quantized
		// config load as they are
		{"mlx-vlm-quantized-config", [][2]string{{"vision_tower.", "vision_tower.vision_model."}}, true, true},
		{"transformers-modules", [][2]string{
			{"language_model.model.", "model.language_model."},
			{"vision_tower.", "model.vision_tower.vision_model."},
			{"multi_modal_projector.", "model.multi_modal_projector."},
		}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testmodels.Copy(t, towertest.Gemma3Entry)
			if tc.quantConfig {
				path := filepath.Join(dir, "config.json")
				raw, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var cfg map[string]any
				if err := json.Unmarshal(raw, &cfg); err != nil {
					t.Fatal(err)
				}
				cfg["quantization"] = map[string]any{"group_size": 64, "bits": 4}
				if raw, err = json.Marshal(cfg); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, raw, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			renamed := 0
			testmodels.Rewrite(t, dir, func(ws []tensor.Weight) []tensor.Weight {
				for i := range ws {
					w := &ws[i]
					for _, r := range tc.renames {
						if rest, ok := strings.CutPrefix(w.Name, r[0]); ok {
							w.Name = r[1] + rest
							renamed++
							break
						}
					}
					if tc.channelsLast && strings.HasSuffix(w.Name, "patch_embedding.weight") {
						toChannelsLast(t, w)
					}
				}
				return ws
			})
			if renamed == 0 {
				t.Fatal("no tensor was renamed: the entry's layout changed")
			}
			checkTower(t, g, dir, cpu.New(cpu.Options{}))
			checkVisionPrompts(t, g, dir, engine.Options{Backend: "cpu"})
		})
	}
}

// toChannelsLast turns an F32 convolution weight [out, in, kh, kw] into
// MLX's [out, kh, kw, in].
func toChannelsLast(t *testing.T, w *tensor.Weight) {
	if w.DType != tensor.F32 || len(w.Shape) != 4 {
		t.Fatalf("%s: %s %v", w.Name, w.DType, w.Shape)
	}
	o, in, kh, kw := w.Shape[0], w.Shape[1], w.Shape[2], w.Shape[3]
	out := make([]byte, len(w.Data))
	for a := 0; a < o; a++ {
		for c := 0; c < in; c++ {
			for y := 0; y < kh; y++ {
				for x := 0; x < kw; x++ {
					src := (((a*in+c)*kh+y)*kw + x) * 4
					dst := (((a*kh+y)*kw+x)*in + c) * 4
					copy(out[dst:dst+4], w.Data[src:src+4])
				}
			}
		}
	}
	w.Data, w.Shape = out, []int{o, kh, kw, in}
}

// TestQwen35VisionLayouts holds the Qwen 3.5 goldens with the checkpoint
// laid out otherwise than transformers 5.17 saves it (the golden entry:
// model.visual., model.language_model.): the tower under vision_tower. and
// the decoder under language_model.model., with the patch embedding's
// conv3d weight channels-last, [out, T, p, p, C], as MLX stores
// convolutions.
func TestQwen35VisionLayouts(t *testing.T) {
	g, err := towertest.Load(towertest.Qwen35Entry)
	if err != nil {
		t.Fatal(err)
	}
	dir := testmodels.Copy(t, towertest.Qwen35Entry)
	renamed := 0
	testmodels.Rewrite(t, dir, func(ws []tensor.Weight) []tensor.Weight {
		for i := range ws {
			w := &ws[i]
			for _, r := range [][2]string{{"model.visual.", "vision_tower."}, {"model.language_model.", "language_model.model."}} {
				if rest, ok := strings.CutPrefix(w.Name, r[0]); ok {
					w.Name = r[1] + rest
					renamed++
					break
				}
			}
			if strings.HasSuffix(w.Name, "patch_embed.proj.weight") {
				conv3dChannelsLast(t, w)
			}
		}
		return ws
	})
	if renamed == 0 {
		t.Fatal("no tensor was renamed: the entry's layout changed")
	}
	checkTower(t, g, dir, cpu.New(cpu.Options{}))
	checkVisionPrompts(t, g, dir, engine.Options{Backend: "cpu"})
}

// conv3dChannelsLast turns an F32 conv3d weight [out, in, kt, kh, kw] into
// [out, kt, kh, kw, in].
func conv3dChannelsLast(t *testing.T, w *tensor.Weight) {
	if w.DType != tensor.F32 || len(w.Shape) != 5 {
		t.Fatalf("%s: %s %v", w.Name, w.DType, w.Shape)
	}
	o, in := w.Shape[0], w.Shape[1]
	rest := w.Shape[2] * w.Shape[3] * w.Shape[4]
	out := make([]byte, len(w.Data))
	for a := 0; a < o; a++ {
		for c := 0; c < in; c++ {
			for r := 0; r < rest; r++ {
				src := ((a*in+c)*rest + r) * 4
				dst := ((a*rest+r)*in + c) * 4
				copy(out[dst:dst+4], w.Data[src:src+4])
			}
		}
	}
	w.Data, w.Shape = out, []int{o, w.Shape[2], w.Shape[3], w.Shape[4], in}
}
