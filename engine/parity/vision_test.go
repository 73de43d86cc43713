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
	"hearth/engine/checkpoint"
	"hearth/engine/nn"
	"hearth/engine/tensor"
	"hearth/engine/tower/siglip"
	"hearth/engine/tower/towertest"
	"hearth/engine/weights"
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

// checkTower binds the tower of the checkpoint in dir on b and compares
// its outputs with g's.
func checkTower(t *testing.T, g *towertest.Golden, dir string, b tensor.Backend) {
	ck, err := checkpoint.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	set, err := weights.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	defer b.Close()
	v, err := siglip.LoadGemma3(ck.ConfigJSON, ck.Config, &nn.Loader{B: b, W: weights.NewBinder(set, ck.Quant)})
	if err != nil {
		t.Fatal(err)
	}
	m := v.(*siglip.Gemma3)
	for i, im := range g.Images {
		gr := tensor.NewGraph(b)
		hidden, err := m.Tower().Forward(gr, im.Pixels())
		if err != nil {
			t.Fatal(err)
		}
		feats, err := m.Encode(gr, im.Pixels())
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Run(context.Background(), gr, hidden, feats); err != nil {
			t.Fatal(err)
		}
		for _, o := range []struct {
			name  string
			t     tensor.T
			shape []int
			want  []float32
		}{{"last_hidden_state", hidden, im.HiddenShape, im.Hidden}, {"image_features", feats, im.FeatureShape, im.Features}} {
			if s := gr.Shape(o.t); fmt.Sprint(s) != fmt.Sprint(o.shape) {
				t.Fatalf("image %d %s: shape %v, want %v", i, o.name, s, o.shape)
			}
			got := make([]float32, len(o.want))
			if err := b.Read(o.t, got); err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for j := range got {
				d := math.Abs(float64(got[j] - o.want[j]))
				if !(d <= g.Tolerance.MaxAbsTower) {
					t.Fatalf("image %d %s[%d] = %v, want %v (|Δ| %.3g > %.3g)", i, o.name, j, got[j], o.want[j], d, g.Tolerance.MaxAbsTower)
				}
				worst = max(worst, d)
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
				embeds, err := model.EncodeImage(ctx, g.Images[i].Pixels())
				if err != nil {
					t.Fatal(err)
				}
				if err := seq.AddMedia(engine.Media{Pos: rows[k], Embeds: embeds}); err != nil {
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
